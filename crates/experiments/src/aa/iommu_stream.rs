//! `aa-iommu-stream`: the bandwidth cost of putting the IOMMU in the DMA path at all (spec
//! "Calibration: ... netperf-like streams"). One process streams plain puts of one size to a
//! process on the other node, with the IOMMU in the path (translation through the IOTLB, 5 ns
//! plus 70 ns per memory access) and without (the NIC writes memory directly), over the
//! spec's 1 Gb/s Ethernet pair and over the torus.

use serde_json::json;
use unpinned_report::{PlotSpec, Table};
use unpinned_sim::aa::stream::run_stream;
use unpinned_sim::aa::{Scheme, WorldConfig};

use crate::part::harness::par_map;
use crate::{ExperimentError, ExperimentOutput, ExperimentSpec, RunContext};

pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "aa-iommu-stream",
    system: "aa",
    description: "Netperf-like put streams with and without the IOMMU in the DMA path (1 Gb/s Ethernet and torus)",
    profile: crate::ProfileKind::Aa,
    backends: crate::Backends::Sim,
    params: Some(<Params as crate::Declared>::PARAMS),
    fixed: &[],
    every_builtin_by_default: false,
    run,
};

crate::declare_params! {
    /// Parameters of `aa-iommu-stream`.
    pub struct Params {
        sizes: Vec<u32> {
            default: "64,256,1024,4096,16384,65536",
            unit: "bytes",
            check: crate::params::int(1, 1 << 30),
            doc: "Access sizes",
        },
        stream_bytes: u64 {
            default: "4194304",
            unit: "bytes",
            check: crate::params::int(1, 1 << 40),
            doc: "Bytes streamed per size",
        },
    }
}

fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let Params {
        sizes,
        stream_bytes,
    } = ctx.params()?;
    let prof = ctx.aa_profile()?;
    let mut points = Vec::new();
    for net in ["ethernet", "torus"] {
        for &s in &sizes {
            for iommu in [true, false] {
                points.push((net, s, iommu));
            }
        }
    }
    let results = par_map(&points, ctx.progress, |&(net, s, iommu)| {
        let mut cfg = WorldConfig::new(&prof, 2, Scheme::Rma, ctx.seed);
        cfg.ethernet = net == "ethernet";
        cfg.window = if cfg.ethernet {
            prof.ethernet.window
        } else {
            prof.net.window
        };
        cfg.iommu = iommu;
        let messages = (stream_bytes / s as u64).max(64);
        run_stream(&prof, cfg, s, messages).map_err(ExperimentError::Sim)
    });
    let mut table = Table::new(&[
        "network",
        "iommu",
        "size_bytes",
        "throughput_mb_per_s",
        "overhead_pct",
    ]);
    let mut events = 0;
    let mut rates = Vec::new();
    for r in results {
        let (rate, st) = r?;
        events += st.events;
        rates.push(rate);
    }
    for (i, &(net, s, iommu)) in points.iter().enumerate() {
        // Points come in (on, off) pairs: the overhead of the IOMMU relative to none.
        let off = rates[i | 1];
        let overhead = (1.0 - rates[i] / off) * 100.0;
        table.push(vec![
            net.into(),
            if iommu { "on" } else { "off" }.into(),
            s.into(),
            (rates[i] / 1e6).into(),
            overhead.into(),
        ]);
    }
    Ok(ExperimentOutput {
        table,
        plots: vec![
            PlotSpec::line(
                "Put stream over 1 Gb/s Ethernet, IOMMU on / off",
                "size_bytes",
                "throughput_mb_per_s",
                Some("iommu"),
            )
            .log(true, false)
            .only("network", "ethernet"),
            PlotSpec::line(
                "Put stream over the torus, IOMMU on / off",
                "size_bytes",
                "throughput_mb_per_s",
                Some("iommu"),
            )
            .log(true, true)
            .only("network", "torus")
            .suffix("torus"),
        ],
        sim_events: events,
        meta: json!({ "profile": prof.name, "stream_bytes": stream_bytes, "messages_min": 64 }),
    })
}
