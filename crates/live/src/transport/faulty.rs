//! Fault injection as a transport wrapper: drop, duplicate, reorder and corrupt the packets a
//! rank sends, on any [`Transport`].
//!
//! Loss between hosts can be made with the kernel (an nftables drop rule), but this kernel has
//! no `netem`, so reordering and duplication cannot; a wrapper makes all four on every
//! transport, seeded and per rank, so a run with faults can be repeated. Only the sending side
//! is touched: each packet suffers at most one fault, chosen in the order drop, corrupt,
//! duplicate, reorder.
//!
//! - **drop**: the packet is not sent (the send still reports success, as a lossy link would).
//! - **corrupt**: one byte of a copy is flipped; the engines' CRC32 must catch it, so the
//!   wrapper reports the medium as unreliable ([`Transport::reliable`]) and the engines keep
//!   their checksums even on shared memory.
//! - **duplicate**: the packet is sent twice.
//! - **reorder**: the packet is held back and sent after the next packet this rank sends, or
//!   after [`HOLD`] if no other packet follows, so it arrives after a packet sent later.
//!
//! Configured by the `transport.inject_*` knobs ([`crate::config::TransportSection`]).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use unpinned_core::api::NodeId;
use unpinned_core::rng::{Rng, SimRng};

use super::{SendError, Sleeper, Transport, Waker};

/// Longest time a reordered packet is held when no later packet overtakes it.
pub const HOLD: Duration = Duration::from_millis(1);
/// Most packets held at once; a packet drawn for reordering beyond this is sent at once.
pub const MAX_HELD: usize = 64;

/// Fractions of sent packets that suffer each fault, and the seed of the draws.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FaultRates {
    /// Fraction of packets not sent.
    pub drop: f64,
    /// Fraction of packets sent twice.
    pub duplicate: f64,
    /// Fraction of packets held back behind a later one.
    pub reorder: f64,
    /// Fraction of packets with one byte flipped.
    pub corrupt: f64,
    /// Seed of the draws (the wrapper mixes in the rank, so ranks draw differently).
    pub seed: u64,
}

impl FaultRates {
    /// Whether any fault is injected.
    pub fn any(&self) -> bool {
        self.drop > 0.0 || self.duplicate > 0.0 || self.reorder > 0.0 || self.corrupt > 0.0
    }

    /// The first rate outside `0..=1`, as (name, value).
    pub fn invalid(&self) -> Option<(&'static str, f64)> {
        [
            ("inject_drop", self.drop),
            ("inject_duplicate", self.duplicate),
            ("inject_reorder", self.reorder),
            ("inject_corrupt", self.corrupt),
        ]
        .into_iter()
        .find(|(_, v)| !(0.0..=1.0).contains(v))
    }
}

/// Counts of the faults injected so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FaultCounts {
    /// Packets the inner transport was asked to send (each copy of a duplicate counts).
    pub sent: u64,
    /// Packets dropped.
    pub dropped: u64,
    /// Packets sent twice.
    pub duplicated: u64,
    /// Packets held back behind a later one.
    pub reordered: u64,
    /// Packets with a byte flipped.
    pub corrupted: u64,
}

struct Held {
    dst: NodeId,
    bytes: Vec<u8>,
    since: Instant,
}

/// A [`Transport`] that injects [`FaultRates`] into what it sends.
pub struct FaultyTransport {
    inner: Box<dyn Transport>,
    rates: FaultRates,
    rng: SimRng,
    held: VecDeque<Held>,
    counts: FaultCounts,
}

impl FaultyTransport {
    /// Wrap `inner`; draws are seeded from `rates.seed` and the rank.
    pub fn new(inner: Box<dyn Transport>, rates: FaultRates) -> FaultyTransport {
        let rng = unpinned_core::rng::rng_for(rates.seed, &format!("inject/{}", inner.rank()));
        FaultyTransport {
            inner,
            rates,
            rng,
            held: VecDeque::new(),
            counts: FaultCounts::default(),
        }
    }

    /// The faults injected so far.
    pub fn counts(&self) -> FaultCounts {
        self.counts
    }

    /// Send held packets that a later packet has overtaken (`all`) or that waited [`HOLD`].
    /// A full transport keeps them for the next try.
    fn release(&mut self, all: bool) {
        let now = Instant::now();
        while let Some(h) = self.held.front() {
            if !all && now.duration_since(h.since) < HOLD {
                break;
            }
            match self.inner.send(h.dst, &h.bytes) {
                Err(SendError::Full) => break,
                _ => {
                    self.counts.sent += 1;
                    self.held.pop_front();
                }
            }
        }
    }

    fn draw(&mut self, rate: f64) -> bool {
        rate > 0.0 && self.rng.gen_bool(rate.min(1.0))
    }
}

impl Transport for FaultyTransport {
    fn rank(&self) -> NodeId {
        self.inner.rank()
    }
    fn size(&self) -> u32 {
        self.inner.size()
    }
    fn max_packet(&self) -> usize {
        self.inner.max_packet()
    }
    fn send(&mut self, dst: NodeId, bytes: &[u8]) -> Result<(), SendError> {
        let r = self.rates;
        let result = if self.draw(r.drop) {
            self.counts.dropped += 1;
            Ok(())
        } else if self.draw(r.corrupt) && !bytes.is_empty() {
            let mut copy = bytes.to_vec();
            let i = self.rng.gen_range(0..copy.len());
            copy[i] ^= 1 << self.rng.gen_range(0..8);
            let sent = self.inner.send(dst, &copy);
            if sent.is_ok() {
                self.counts.corrupted += 1;
                self.counts.sent += 1;
            }
            sent
        } else if self.draw(r.duplicate) {
            let sent = self.inner.send(dst, bytes);
            if sent.is_ok() {
                self.counts.sent += 1;
                // The second copy may find the transport full: then it is simply lost.
                if self.inner.send(dst, bytes).is_ok() {
                    self.counts.duplicated += 1;
                    self.counts.sent += 1;
                }
            }
            sent
        } else if self.held.len() < MAX_HELD && self.draw(r.reorder) {
            self.counts.reordered += 1;
            self.held.push_back(Held {
                dst,
                bytes: bytes.to_vec(),
                since: Instant::now(),
            });
            // Not released now: the next packet overtakes it.
            return Ok(());
        } else {
            let sent = self.inner.send(dst, bytes);
            if sent.is_ok() {
                self.counts.sent += 1;
            }
            sent
        };
        // Whatever was held is overtaken by the packet just handled.
        self.release(true);
        result
    }
    fn recv(&mut self, buf: &mut [u8]) -> Option<(NodeId, usize)> {
        self.release(false);
        self.inner.recv(buf)
    }
    fn recv_with(&mut self, buf: &mut [u8], f: &mut dyn FnMut(NodeId, &[u8])) -> bool {
        self.release(false);
        self.inner.recv_with(buf, f)
    }
    fn wait(&mut self, timeout: Duration) {
        self.release(false);
        // A held packet must not wait out a long sleep.
        let timeout = if self.held.is_empty() {
            timeout
        } else {
            timeout.min(HOLD)
        };
        self.inner.wait(timeout);
        self.release(false);
    }
    fn waker(&self) -> Waker {
        self.inner.waker()
    }
    fn reliable(&self) -> bool {
        // Corrupted bytes must meet the engines' CRC32.
        self.inner.reliable() && self.rates.corrupt == 0.0
    }
    fn gone(&mut self, peer: NodeId) -> Option<&'static str> {
        self.inner.gone(peer)
    }
    fn leave(&mut self) {
        self.release(true);
        self.inner.leave()
    }
    fn sleeper(&self) -> Sleeper {
        if self.rates.reorder > 0.0 {
            // The progress thread sleeps through the sleeper without the transport: bound
            // its sleep so a held packet is released within about HOLD.
            let mut inner = self.inner.sleeper();
            Box::new(move |timeout: Duration| inner(timeout.min(HOLD)))
        } else {
            self.inner.sleeper()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::mem;

    fn pair(rates: FaultRates) -> (FaultyTransport, Box<dyn Transport>) {
        let mut ts = mem::network(2, 64).into_iter();
        let a: Box<dyn Transport> = Box::new(ts.next().unwrap());
        let b: Box<dyn Transport> = Box::new(ts.next().unwrap());
        (FaultyTransport::new(a, rates), b)
    }

    fn received(b: &mut Box<dyn Transport>) -> Vec<Vec<u8>> {
        let mut buf = [0u8; 64];
        let mut out = Vec::new();
        while let Some((_, n)) = b.recv(&mut buf) {
            out.push(buf[..n].to_vec());
        }
        out
    }

    #[test]
    fn no_rates_pass_everything_in_order() {
        let (mut a, mut b) = pair(FaultRates::default());
        for i in 0..100u8 {
            a.send(1, &[i; 4]).unwrap();
        }
        let got = received(&mut b);
        assert_eq!(got, (0..100u8).map(|i| vec![i; 4]).collect::<Vec<_>>());
        assert_eq!(a.counts().sent, 100);
    }

    #[test]
    fn each_fault_happens_near_its_rate_and_is_counted() {
        let rates = FaultRates {
            drop: 0.1,
            duplicate: 0.1,
            reorder: 0.1,
            corrupt: 0.1,
            seed: 7,
        };
        let (mut a, mut b) = pair(rates);
        let n = 10_000u32;
        for i in 0..n {
            a.send(1, &i.to_le_bytes()).unwrap();
        }
        a.release(true);
        let c = a.counts();
        for (what, count) in [
            ("dropped", c.dropped),
            ("corrupted", c.corrupted),
            ("duplicated", c.duplicated),
            ("reordered", c.reordered),
        ] {
            // Each fault is drawn only if the ones before it were not: 10 % of what is left.
            assert!((500..1_300).contains(&count), "{what}: {count} of {n}");
        }
        let got = received(&mut b);
        assert_eq!(got.len() as u64, c.sent);
        assert_eq!(c.sent, n as u64 - c.dropped + c.duplicated);
        let values: Vec<u32> = got
            .iter()
            .map(|p| u32::from_le_bytes(p[..4].try_into().unwrap()))
            .collect();
        let out_of_order = values.windows(2).filter(|w| w[1] < w[0]).count();
        assert!(out_of_order > 300, "{out_of_order} inversions");
        assert!(!a.reliable());
    }

    #[test]
    fn a_held_packet_is_released_after_hold_without_later_traffic() {
        let rates = FaultRates {
            reorder: 1.0,
            seed: 1,
            ..FaultRates::default()
        };
        let (mut a, mut b) = pair(rates);
        a.send(1, b"late").unwrap();
        assert!(received(&mut b).is_empty());
        std::thread::sleep(HOLD + Duration::from_millis(1));
        a.wait(Duration::from_millis(0));
        assert_eq!(received(&mut b), vec![b"late".to_vec()]);
    }

    #[test]
    fn rates_outside_zero_to_one_are_named() {
        let r = FaultRates {
            duplicate: 1.5,
            ..FaultRates::default()
        };
        assert_eq!(r.invalid(), Some(("inject_duplicate", 1.5)));
        assert_eq!(FaultRates::default().invalid(), None);
    }
}
