//! Ranks placed in network namespaces (`LaunchOptions::netns`): rank `r` runs in namespace
//! `r % len`, entered with `setns(CLONE_NEWNET)` between fork and exec, so that a job's ranks
//! talk over a real (virtual) network, e.g. two namespaces joined by a veth pair.
//!
//! Over UDP each rank's address is the first IPv4 address of an interface that is up and not
//! loopback in the rank's namespace, with a port free there: a short-lived thread enters the
//! namespace (`setns` applies to the calling thread only), reads its interfaces
//! (`getifaddrs`: a netlink socket, created in the thread's namespace) and binds the ports.
//! The namespace's own files are opened once; the ranks inherit nothing else from them.

use std::fs::File;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::path::PathBuf;

/// An opened network namespace, by the name the user gave.
pub(super) struct Netns {
    /// The name or path given.
    pub(super) name: String,
    file: File,
}

impl Netns {
    /// Open a namespace named by `ip netns` (a file under `/run/netns`) or by a path
    /// (`/proc/PID/ns/net`).
    pub(super) fn open(name: &str) -> Result<Netns, String> {
        let path = if name.contains('/') {
            PathBuf::from(name)
        } else {
            PathBuf::from("/run/netns").join(name)
        };
        let file = File::open(&path).map_err(|e| {
            format!(
                "network namespace {name:?} ({}): {e} (create it with `ip netns add {name}`; entering one needs root)",
                path.display()
            )
        })?;
        Ok(Netns {
            name: name.to_string(),
            file,
        })
    }

    /// The descriptor a rank's `pre_exec` passes to `setns` (closed at exec: `File::open`
    /// sets `O_CLOEXEC`).
    pub(super) fn fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }

    /// Run `f` on a thread that entered this namespace.
    fn within<T: Send>(&self, f: impl FnOnce() -> Result<T, String> + Send) -> Result<T, String> {
        let fd = self.fd();
        std::thread::scope(|s| {
            s.spawn(|| {
                // SAFETY: `fd` is an open namespace file (owned by `self`, alive for the scope);
                // setns changes the network namespace of this short-lived thread only.
                if unsafe { libc::setns(fd, libc::CLONE_NEWNET) } != 0 {
                    return Err(format!(
                        "entering network namespace {:?}: {} (needs root)",
                        self.name,
                        std::io::Error::last_os_error()
                    ));
                }
                f()
            })
            .join()
            .map_err(|_| "the namespace thread panicked".to_string())?
        })
    }
}

/// Enter the namespace `fd` in a forked child before exec (async-signal-safe: one system call).
pub(super) fn enter(fd: RawFd) -> std::io::Result<()> {
    // SAFETY: setns on a descriptor the parent opened; no memory is touched.
    if unsafe { libc::setns(fd, libc::CLONE_NEWNET) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The first IPv4 address of an interface that is up and not loopback, in the calling
/// thread's network namespace.
fn first_ipv4() -> Result<Option<Ipv4Addr>, String> {
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `list` with a linked list that we free below.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return Err(format!("getifaddrs: {}", std::io::Error::last_os_error()));
    }
    let mut found = None;
    let mut p = list;
    while !p.is_null() {
        // SAFETY: `p` is a node of the list getifaddrs returned, not freed yet.
        let ifa = unsafe { &*p };
        p = ifa.ifa_next;
        let flags = ifa.ifa_flags as libc::c_int;
        if ifa.ifa_addr.is_null() || flags & libc::IFF_UP == 0 || flags & libc::IFF_LOOPBACK != 0 {
            continue;
        }
        // SAFETY: ifa_addr is non-null and points to a sockaddr of at least sa_family.
        if unsafe { (*ifa.ifa_addr).sa_family } as libc::c_int != libc::AF_INET {
            continue;
        }
        // SAFETY: an AF_INET address is a sockaddr_in.
        let sin = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in) };
        found = Some(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)));
        break;
    }
    // SAFETY: `list` came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(list) };
    Ok(found)
}

/// One UDP address per rank, rank `r` in `spaces[r % len]`: that namespace's address and a
/// port free there (the ports of one namespace are held together, so they differ).
pub(super) fn udp_addrs(spaces: &[Netns], ranks: u32) -> Result<Vec<SocketAddr>, String> {
    let mut addrs = vec![None; ranks as usize];
    for (i, ns) in spaces.iter().enumerate() {
        let mine: Vec<usize> = (0..ranks as usize)
            .filter(|r| r % spaces.len() == i)
            .collect();
        if mine.is_empty() {
            continue;
        }
        let got = ns.within(|| {
            let ip = first_ipv4()?.ok_or_else(|| {
                format!(
                    "network namespace {:?} has no IPv4 address on an interface that is up (other than lo)",
                    ns.name
                )
            })?;
            let socks: Vec<UdpSocket> = mine
                .iter()
                .map(|_| UdpSocket::bind(SocketAddrV4::new(ip, 0)))
                .collect::<Result<_, _>>()
                .map_err(|e| format!("binding a UDP port on {ip} in {:?}: {e}", ns.name))?;
            socks
                .iter()
                .map(|s| s.local_addr().map_err(|e| e.to_string()))
                .collect::<Result<Vec<_>, _>>()
        })?;
        for (r, a) in mine.into_iter().zip(got) {
            addrs[r] = Some(a);
        }
    }
    Ok(addrs
        .into_iter()
        .map(|a| a.expect("every rank has a namespace"))
        .collect())
}
