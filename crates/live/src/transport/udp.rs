//! UDP transport: one non-blocking socket per rank, peers by address.
//!
//! A packet is one datagram. Sources are identified by their address (a datagram from an
//! unknown address is ignored). An idle engine sleeps in `ppoll` on the socket; a thread of the
//! same process wakes it by sending an empty datagram to the socket itself.

use std::collections::HashMap;
use std::io::ErrorKind;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::Duration;

use unpinned_core::api::NodeId;

use super::{SendError, Sleeper, Transport, Waker};

/// One rank's UDP endpoint.
pub struct UdpTransport {
    sock: UdpSocket,
    rank: NodeId,
    peers: Vec<SocketAddr>,
    by_addr: HashMap<SocketAddr, NodeId>,
    max_packet: usize,
    /// Receive buffer one byte longer than the caller's, so that a datagram too long for the
    /// caller is seen whole-or-longer and dropped instead of silently truncated.
    scratch: Vec<u8>,
}

impl UdpTransport {
    /// Bind `peers[rank]` and talk to the others. `max_packet` is the largest packet sent.
    pub fn bind(
        rank: NodeId,
        peers: Vec<SocketAddr>,
        max_packet: usize,
    ) -> std::io::Result<UdpTransport> {
        let me = *peers.get(rank as usize).ok_or_else(|| {
            std::io::Error::new(
                ErrorKind::InvalidInput,
                format!("rank {rank} has no address among {} peers", peers.len()),
            )
        })?;
        let sock = UdpSocket::bind(me)?;
        sock.set_nonblocking(true)?;
        set_buffers(&sock, SOCKET_BUFFER_BYTES);
        let by_addr = peers
            .iter()
            .enumerate()
            .map(|(i, a)| (*a, i as NodeId))
            .collect();
        Ok(UdpTransport {
            sock,
            rank,
            peers,
            by_addr,
            max_packet,
            scratch: Vec::new(),
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.sock.local_addr()
    }
}

impl Transport for UdpTransport {
    fn rank(&self) -> NodeId {
        self.rank
    }
    fn size(&self) -> u32 {
        self.peers.len() as u32
    }
    fn max_packet(&self) -> usize {
        self.max_packet
    }
    fn send(&mut self, dst: NodeId, bytes: &[u8]) -> Result<(), SendError> {
        let addr = self.peers.get(dst as usize).ok_or(SendError::Unreachable)?;
        match self.sock.send_to(bytes, addr) {
            Ok(_) => Ok(()),
            Err(e) if e.kind() == ErrorKind::WouldBlock => Err(SendError::Full),
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => Err(SendError::Full),
            // ECONNREFUSED (a dead peer's ICMP port-unreachable) and the like: the packet is lost.
            Err(_) => Err(SendError::Unreachable),
        }
    }
    fn recv(&mut self, buf: &mut [u8]) -> Option<(NodeId, usize)> {
        if self.scratch.len() <= buf.len() {
            self.scratch.resize(buf.len() + 1, 0);
        }
        loop {
            match self.sock.recv_from(&mut self.scratch[..buf.len() + 1]) {
                Ok((n, from)) => match self.by_addr.get(&from) {
                    // Longer than `buf`: dropped, not truncated (see `Transport::recv`).
                    Some(&src) if src != self.rank && n > 0 && n <= buf.len() => {
                        buf[..n].copy_from_slice(&self.scratch[..n]);
                        return Some((src, n));
                    }
                    _ => continue, // a wake-up datagram, a stranger, or too long
                },
                Err(e) if e.kind() == ErrorKind::WouldBlock => return None,
                Err(_) => continue, // e.g. ECONNREFUSED reported on the socket: ignore
            }
        }
    }
    fn wait(&mut self, timeout: Duration) {
        poll_readable(&self.sock, timeout);
    }
    fn sleeper(&self) -> Sleeper {
        // A duplicate descriptor of the same socket: readiness is the socket's, and the
        // sleeper owns its descriptor, so it stays valid whatever happens to the transport.
        match self.sock.try_clone() {
            Ok(sock) => Box::new(move |timeout| poll_readable(&sock, timeout)),
            Err(_) => Box::new(|timeout: Duration| {
                std::thread::sleep(timeout.min(Duration::from_micros(100)))
            }),
        }
    }
    fn waker(&self) -> Waker {
        let sock = self.sock.try_clone().expect("clone UDP socket");
        let me = self.peers[self.rank as usize];
        Arc::new(move || {
            let _ = sock.send_to(&[], me);
        })
    }
}

/// Socket buffer size asked for, each direction. A rank's window is up to
/// `max_outstanding_blocks` blocks per transfer and many transfers at once: 16 writes of 16
/// blocks of 16 KiB are 4 MiB in flight, sent in a burst. With the default receive buffer
/// (208 KiB on Linux) most of such a burst overflowed the receiver's socket and was dropped
/// before any injected loss (a 0 % loss run of `live-loss` resent 12 times its bytes under the
/// block policy and failed 15 of 16 writes). The kernel caps the value at
/// `net.core.rmem_max` / `wmem_max`.
const SOCKET_BUFFER_BYTES: usize = 8 << 20;

/// Ask for `bytes` of send and receive buffer (best effort: the kernel caps it silently).
fn set_buffers(sock: &UdpSocket, bytes: usize) {
    let v = bytes.min(i32::MAX as usize) as libc::c_int;
    for opt in [libc::SO_RCVBUF, libc::SO_SNDBUF] {
        // SAFETY: a valid socket descriptor we own, a pointer to a c_int and its size.
        unsafe {
            libc::setsockopt(
                sock.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&v as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
    }
}

fn poll_readable(sock: &UdpSocket, timeout: Duration) {
    let mut pfd = libc::pollfd {
        fd: sock.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: one valid pollfd for an open socket we own, a valid timespec, no signal mask.
    unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
}

/// Find `n` free UDP ports on 127.0.0.1 (bind port 0, note the port, release it). Another
/// process could take one before the rank binds it; the rank then fails with a clear error.
pub fn free_local_addrs(n: u32) -> std::io::Result<Vec<SocketAddr>> {
    let socks: Vec<UdpSocket> = (0..n)
        .map(|_| UdpSocket::bind("127.0.0.1:0"))
        .collect::<Result<_, _>>()?;
    socks.iter().map(|s| s.local_addr()).collect()
}
