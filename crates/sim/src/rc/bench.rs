//! The micro-benchmarks of odp.md, on the RC simulator.
//!
//! - [`run_reads`]: a client posts `num_ops` RDMA READs of 100 B to consecutive addresses of a
//!   page-aligned buffer, `interval` apart, then waits for all completions; ODP on the server,
//!   the client, or both ("The pitfall to reproduce").
//! - [`measure_t_o`]: a READ on a QP connected to a wrong destination QP, so every packet is
//!   lost; `T_o` = time to RETRY_EXC_ERR / (retry count + 1) (`odp-timeout-floor`).

use unpinned_core::api::Perms;
use unpinned_core::memory::Memory;
use unpinned_core::rng::{rng_for, Rng};
use unpinned_core::time::{Duration, Instant};
use unpinned_ib::{
    ConnectAttrs, FixConfig, IbOp, LossModelConfig, MrAttrs, Psn, QpAttrs, RcStats, Region, SendWr,
    VendorProfile, WcError,
};

use super::{RcSim, RcSimConfig, TraceRecord};

/// Client buffer (page-aligned).
pub const CLIENT_BUF: u64 = 0x10_0000_0000;
/// Server buffer (page-aligned).
pub const SERVER_BUF: u64 = 0x20_0000_0000;
/// Bytes per READ (odp.md: 100 B).
pub const READ_BYTES: u32 = 100;

/// Where ODP is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OdpSide {
    /// Server (responder) only: remote faults.
    Remote,
    /// Client (requester) only: local faults.
    Local,
    /// Both.
    Both,
    /// Neither (pinned both sides).
    None,
}

impl OdpSide {
    /// Name as in the CSVs.
    pub fn name(self) -> &'static str {
        match self {
            OdpSide::Remote => "remote",
            OdpSide::Local => "local",
            OdpSide::Both => "both",
            OdpSide::None => "none",
        }
    }
    fn server(self) -> bool {
        matches!(self, OdpSide::Remote | OdpSide::Both)
    }
    fn client(self) -> bool {
        matches!(self, OdpSide::Local | OdpSide::Both)
    }
}

/// One run of the READ benchmark.
#[derive(Clone, Debug)]
pub struct ReadBench {
    /// Vendor profile.
    pub profile: VendorProfile,
    /// Where ODP is on.
    pub odp: OdpSide,
    /// READs posted.
    pub num_ops: u32,
    /// Time between posts.
    pub interval: Duration,
    /// Minimal RNR NAK delay of the server's QP.
    pub min_rnr_delay: Duration,
    /// Override the profile's loss model (None: keep it).
    pub loss_model: Option<bool>,
    /// The software-timer fix.
    pub fix: Option<FixConfig>,
    /// Master seed.
    pub seed: u64,
    /// Record the packet trace.
    pub trace: bool,
    /// Implicit (whole address space) instead of explicit ODP regions.
    pub implicit: bool,
}

impl ReadBench {
    /// Defaults: 2 READs, remote ODP, 1.28 ms minimal RNR delay, profile's loss model.
    pub fn new(
        profile: VendorProfile,
        odp: OdpSide,
        num_ops: u32,
        interval: Duration,
        seed: u64,
    ) -> ReadBench {
        ReadBench {
            profile,
            odp,
            num_ops,
            interval,
            min_rnr_delay: Duration::from_us(1280),
            loss_model: None,
            fix: None,
            seed,
            trace: false,
            implicit: false,
        }
    }
}

/// What a run measured.
#[derive(Clone, Debug)]
pub struct ReadResult {
    /// First post to last completion.
    pub exec_time: Duration,
    /// The client's ACK timer expired at least once.
    pub timed_out: bool,
    /// Expiries of the client's ACK timer before the last application completion: the
    /// execution time includes a hardware timeout (a stall).
    pub stall_timeouts: u64,
    /// Expiries after the last application completion: the timer fired on a request left
    /// over when the application's READs were done (the fix's dummy), which the execution
    /// time does not include.
    pub late_timeouts: u64,
    /// Every READ completed successfully with the server's bytes.
    pub all_ok: bool,
    /// Client counters.
    pub client: RcStats,
    /// Server counters.
    pub server: RcStats,
    /// Packet trace (if requested).
    pub trace: Vec<TraceRecord>,
    /// PSN of the first READ (to label packets by operation).
    pub first_psn: u32,
    /// Dummies posted by the fix.
    pub dummies: u64,
    /// Simulated events.
    pub events: u64,
}

/// A fresh two-node RC simulator set up for the READ benchmark: returns it, the client QP and
/// the server region's rkey.
pub fn setup_reads(b: &ReadBench) -> (RcSim, u32, u32) {
    setup_reads_with(b, |_| {})
}

/// Like [`setup_reads`], with a last change to the simulator configuration (e.g. link faults).
pub fn setup_reads_with(b: &ReadBench, tweak: impl FnOnce(&mut RcSimConfig)) -> (RcSim, u32, u32) {
    let mut profile = b.profile.clone();
    if let Some(on) = b.loss_model {
        profile.odp.loss_model = if on {
            LossModelConfig {
                enabled: true,
                ..profile.odp.loss_model
            }
        } else {
            LossModelConfig {
                enabled: false,
                ..profile.odp.loss_model
            }
        };
    }
    let mut cfg = RcSimConfig::two_nodes(profile, b.seed);
    cfg.fix = b.fix;
    cfg.trace = b.trace;
    tweak(&mut cfg);
    let mut sim = RcSim::new(cfg);
    let span = u64::from(b.num_ops.max(1)) * u64::from(READ_BYTES) + 4096;
    let region = |base| {
        if b.implicit {
            Region::Implicit
        } else {
            Region::Explicit { base, len: span }
        }
    };
    // The client's buffer is pinned unless client ODP; an implicit region needs ODP.
    let client_region = if b.odp.client() {
        region(CLIENT_BUF)
    } else {
        Region::Explicit {
            base: CLIENT_BUF,
            len: span,
        }
    };
    let server_region = if b.odp.server() {
        region(SERVER_BUF)
    } else {
        Region::Explicit {
            base: SERVER_BUF,
            len: span,
        }
    };
    sim.register(
        0,
        MrAttrs {
            pdid: 1,
            region: client_region,
            access: Perms::RW,
            odp: b.odp.client(),
        },
    );
    let mr = sim.register(
        1,
        MrAttrs {
            pdid: 1,
            region: server_region,
            access: Perms::R,
            odp: b.odp.server(),
        },
    );
    let mut fill = vec![0u8; span as usize];
    let mut rng = rng_for(b.seed, "rc-bench-data");
    rng.fill(&mut fill[..]);
    sim.node_mut(1)
        .mem
        .write(1, SERVER_BUF, &fill)
        .expect("fill");
    let mut server_attrs = QpAttrs::odp_default(1);
    server_attrs.min_rnr_delay = b.min_rnr_delay;
    let first = rng_for(b.seed, "rc-bench-psn").gen_range(0..=0x00ff_ffffu32);
    let (qc, _qs) = sim.connect_pair(0, QpAttrs::odp_default(1), 1, server_attrs, Psn::new(first));
    (sim, qc, mr.rkey)
}

/// The `i`-th READ of the benchmark (wr_id = i + 1).
pub fn read_wr(i: u32, rkey: u32) -> SendWr {
    let off = u64::from(i) * u64::from(READ_BYTES);
    SendWr {
        wr_id: u64::from(i) + 1,
        op: IbOp::Read,
        local_addr: CLIENT_BUF + off,
        len: READ_BYTES,
        remote_addr: SERVER_BUF + off,
        rkey,
    }
}

/// Run the READ benchmark once.
pub fn run_reads(b: &ReadBench) -> ReadResult {
    let (mut sim, qc, rkey) = setup_reads(b);
    for i in 0..b.num_ops {
        sim.post(
            Instant::ZERO + b.interval.times(u64::from(i)),
            0,
            qc,
            read_wr(i, rkey),
        );
    }
    sim.run_until_idle(Duration::from_ms(60_000))
        .expect("the READ benchmark ends");
    let comps: Vec<_> = sim
        .completions()
        .iter()
        .filter(|c| c.node == 0)
        .map(|c| c.wc)
        .collect();
    let end = comps.iter().map(|c| c.at).max().unwrap_or(Instant::ZERO);
    let mut all_ok = comps.len() == b.num_ops as usize && comps.iter().all(|c| c.status.is_ok());
    let n = (b.num_ops * READ_BYTES) as usize;
    let (mut got, mut want) = (vec![0u8; n], vec![0u8; n]);
    sim.node_mut(0)
        .mem
        .read(1, CLIENT_BUF, &mut got)
        .expect("read");
    sim.node_mut(1)
        .mem
        .read(1, SERVER_BUF, &mut want)
        .expect("read");
    all_ok &= got == want;
    let first_psn = setup_first_psn(b.seed);
    let stall_timeouts = sim.timeouts_at(0).iter().filter(|t| **t < end).count() as u64;
    ReadResult {
        exec_time: end - Instant::ZERO,
        timed_out: sim.stats(0).timeouts > 0,
        stall_timeouts,
        late_timeouts: sim.stats(0).timeouts - stall_timeouts,
        all_ok,
        client: sim.stats(0),
        server: sim.stats(1),
        trace: sim.trace().to_vec(),
        first_psn,
        dummies: sim.dummies(0),
        events: sim.events(),
    }
}

fn setup_first_psn(seed: u64) -> u32 {
    rng_for(seed, "rc-bench-psn").gen_range(0..=0x00ff_ffffu32)
}

/// Measure `T_o` for `c_ack` on `profile` (odp.md, `odp-timeout-floor`): one READ on a QP
/// whose peer QP number does not exist, retry count 7; returns time to RETRY_EXC_ERR / 8 and
/// the simulated events.
pub fn measure_t_o(profile: &VendorProfile, c_ack: u8, seed: u64) -> (Duration, u64) {
    let mut sim = RcSim::new(RcSimConfig::two_nodes(profile.clone(), seed));
    sim.register(
        0,
        MrAttrs {
            pdid: 1,
            region: Region::Explicit {
                base: CLIENT_BUF,
                len: 4096,
            },
            access: Perms::RW,
            odp: false,
        },
    );
    let mut attrs = QpAttrs::odp_default(1);
    attrs.c_ack = c_ack;
    let q = sim.node_mut(0).engine.create_qp(attrs);
    // Wrong destination: node 1 has no such QP, so it drops every packet.
    sim.node_mut(0)
        .engine
        .connect(
            q,
            ConnectAttrs {
                peer_node: 1,
                peer_qpn: 0xdead,
                sq_psn: Psn::new(0),
                rq_psn: Psn::new(0),
            },
        )
        .expect("qp");
    let start = Instant(rng_for(seed, "t_o-start").gen_range(0..1_000_000_000));
    sim.post(
        start,
        0,
        q,
        SendWr {
            wr_id: 1,
            op: IbOp::Read,
            local_addr: CLIENT_BUF,
            len: 8,
            remote_addr: 0,
            rkey: 0,
        },
    );
    sim.run_until_idle(Duration::from_ms(10_000_000))
        .expect("ends");
    let c = sim.completions()[0].wc;
    assert_eq!(c.status, Err(WcError::RetryExceeded));
    (
        Duration((c.at - start).0 / (u64::from(attrs.retry_cnt) + 1)),
        sim.events(),
    )
}
