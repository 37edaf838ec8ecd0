//! How engine packets move between ranks.
//!
//! A [`Transport`] is a datagram service between the ranks of one job: unreliable in principle
//! (the PART engine recovers losses with its block timers), ordered per pair in practice.
//!
//! - [`shm`]: ranks on one host, one lock-free single-producer / single-consumer ring per
//!   ordered pair of ranks in a shared file mapping, with a futex doorbell per rank so an idle
//!   engine sleeps in the kernel and is woken by the first packet.
//! - [`udp`]: one non-blocking UDP socket per rank, peers by address.
//! - [`mem`]: ranks as threads of one process (tests): queues behind a mutex.
//! - [`faulty`]: a wrapper around any of them that drops, duplicates, reorders and corrupts
//!   what a rank sends (the `transport.inject_*` knobs).

pub mod faulty;
pub mod mem;
pub mod shm;
pub mod udp;

use std::sync::Arc;
use std::time::Duration;

use unpinned_core::api::NodeId;

/// Wakes a transport's [`Transport::wait`] from another thread of the same process.
pub type Waker = Arc<dyn Fn() + Send + Sync>;

/// Sleeps like [`Transport::wait`] without borrowing the transport: the runtime's progress
/// thread sleeps through it while API threads may drive the transport themselves (caller-driven
/// progress, see [`crate::runtime`]). Woken by a packet, the [`Waker`], or the timeout;
/// spurious returns are allowed.
pub type Sleeper = Box<dyn FnMut(Duration) + Send>;

/// Why a packet was not sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// No room right now (ring full, socket buffer full): retry later, or drop.
    #[error("transport full towards the destination")]
    Full,
    /// The destination does not exist or cannot be reached: the packet is lost (the engine's
    /// timers turn a dead peer into `RetryExceeded` completions).
    #[error("destination unreachable")]
    Unreachable,
}

/// Outcome of [`Transport::send_in_place`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InPlace {
    /// The packet was written in place and sent to this destination.
    Sent(NodeId),
    /// The producer had nothing to send.
    Empty,
    /// No in-place buffer now (unsupported, or no room towards the hint): nothing was asked
    /// of the producer; use [`Transport::send`].
    Unavailable,
    /// The producer wrote a packet for another destination than the hint: its `len` bytes
    /// were copied into the spill buffer and must be sent with [`Transport::send`].
    Misdirected(NodeId, usize),
}

/// Writes one packet into the buffer it is given: `Some((dst, len))`, or `None` if there is
/// nothing to send.
pub type Fill<'a> = dyn FnMut(&mut [u8]) -> Option<(NodeId, usize)> + 'a;

/// A datagram transport between the ranks of one job.
pub trait Transport: Send {
    /// This rank.
    fn rank(&self) -> NodeId;
    /// Ranks in the job.
    fn size(&self) -> u32;
    /// Largest packet this transport carries, in bytes.
    fn max_packet(&self) -> usize;
    /// Send one packet to `dst`. [`SendError::Full`] means "try again later"; nothing was sent.
    fn send(&mut self, dst: NodeId, bytes: &[u8]) -> Result<(), SendError>;
    /// Receive one packet into `buf` if one is waiting: its source and length. A packet longer
    /// than `buf` is dropped, never truncated: a valid packet followed by junk would otherwise
    /// pass as the valid packet (the wire parser rejects trailing bytes, but cannot see bytes
    /// the transport cut off).
    fn recv(&mut self, buf: &mut [u8]) -> Option<(NodeId, usize)>;
    /// Block until a packet may be waiting, the waker is called, or `timeout` passes.
    /// Spurious returns are allowed.
    fn wait(&mut self, timeout: Duration);
    /// A handle that makes a concurrent [`Transport::wait`] return.
    fn waker(&self) -> Waker;
    /// Receive one packet, if one is waiting, and hand it to `f` where it lies when the
    /// transport can (the shm ring slot itself), else after a copy into `buf`. Returns whether
    /// a packet was handled. Same dropping rules as [`Transport::recv`].
    fn recv_with(&mut self, buf: &mut [u8], f: &mut dyn FnMut(NodeId, &[u8])) -> bool {
        match self.recv(buf) {
            Some((src, len)) => {
                f(src, &buf[..len]);
                true
            }
            None => false,
        }
    }
    /// Let `fill` write the next packet straight into the transport's buffer towards `hint`
    /// (the destination the caller expects), saving the copy of [`Transport::send`]. The
    /// default never does ([`InPlace::Unavailable`]).
    fn send_in_place(&mut self, hint: NodeId, spill: &mut [u8], fill: &mut Fill<'_>) -> InPlace {
        let _ = (hint, spill, fill);
        InPlace::Unavailable
    }
    /// Whether the medium delivers every byte as written (memory shared between processes):
    /// then the engines skip the software CRC32 of every packet, a full pass over each payload
    /// at both ends (a NIC computes its CRC in hardware). The default: no (UDP keeps it).
    fn reliable(&self) -> bool {
        false
    }
    /// Whether rank `peer` is known to be gone, and how (`"exited or was killed"`, `"left
    /// the job"`): its requests then fail with `PeerGone` instead of waiting for the
    /// protocol's retry limit. Asked only when a peer is silent or refused a request. The
    /// default knows nothing (UDP, in-process queues).
    fn gone(&mut self, peer: NodeId) -> Option<&'static str> {
        let _ = peer;
        None
    }
    /// This rank is leaving the job (its runtime is closing, or the application bails out):
    /// tell the peers where the transport can. The default cannot.
    fn leave(&mut self) {}
    /// A [`Sleeper`] for this rank. The default cannot see packets arrive: it sleeps at most
    /// 100 us, so a transport without its own sleeper costs at most that in wake-up latency.
    fn sleeper(&self) -> Sleeper {
        Box::new(|timeout: Duration| std::thread::sleep(timeout.min(Duration::from_micros(100))))
    }
}
