//! Whether an address range is mapped in this process and with which permissions, and
//! whether it is private anonymous memory: `mincore` for one page, `PROCMAP_QUERY`
//! ([`crate::procmap`], Linux 6.11+) or a parse of `/proc/self/maps` for a range.

use crate::{page_of, PAGE_BYTES};

/// Whether the page holding `addr` is mapped in this process (`mincore` fails with `ENOMEM` on
/// unmapped addresses). Does not touch the page.
pub fn is_mapped(addr: u64) -> bool {
    let mut v = 0u8;
    // SAFETY: mincore only inspects the page tables / VMAs for the given range and writes one
    // byte per page into `v` (exactly one page here); it never accesses the page itself.
    let r = unsafe {
        libc::mincore(
            page_of(addr) as usize as *mut libc::c_void,
            PAGE_BYTES as usize,
            &mut v,
        )
    };
    r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ENOMEM)
}

/// Why a range cannot be exposed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MapsError {
    /// Part of the range is not mapped.
    #[error("address {0:#x} is not mapped in this process; expose only memory you have mapped (mmap / a live allocation)")]
    Unmapped(u64),
    /// Part of the range lacks a permission the exposure grants.
    #[error(
        "mapping at {addr:#x} is not {need}; expose it with fewer permissions or mprotect it first"
    )]
    Protection {
        /// Start of the offending mapping (or of the range).
        addr: u64,
        /// "readable" or "writable".
        need: &'static str,
    },
    /// /proc/self/maps could not be read.
    #[error("cannot read /proc/self/maps: {0}")]
    Io(String),
}

/// Check from `/proc/self/maps` that `[addr, addr+len)` is mapped with the permissions asked
/// (called once per exposure; costs tens of microseconds, not per access).
pub fn check_mapped(addr: u64, len: u64, read: bool, write: bool) -> Result<(), MapsError> {
    check_mapped_kind(addr, len, read, write).map(|_| ())
}

/// [`check_mapped`], also telling whether every mapping of the range is private anonymous
/// memory (no file behind it, so a missing page is a zero-fill minor fault, never a disk read).
///
/// Asks the kernel mapping by mapping (`PROCMAP_QUERY`, [`crate::procmap`]) where it can, and
/// parses `/proc/self/maps` otherwise (kernels before 6.11); both give the same answers, except
/// for `[vsyscall]`, which the query does not see (nobody exposes it).
pub fn check_mapped_kind(addr: u64, len: u64, read: bool, write: bool) -> Result<bool, MapsError> {
    if len == 0 {
        return Ok(false);
    }
    match check_mapped_kind_query(addr, len, read, write) {
        Some(answer) => answer,
        None => check_mapped_kind_parse(addr, len, read, write),
    }
}

/// Whether a mapping with these properties is private anonymous memory.
fn is_anonymous(shared: bool, inode: u64, name: &str) -> bool {
    !shared && inode == 0 && (name.is_empty() || name == "[heap]" || name.starts_with("[anon:"))
}

/// [`check_mapped_kind`] through `PROCMAP_QUERY` (`None`: the kernel cannot answer).
fn check_mapped_kind_query(
    addr: u64,
    len: u64,
    read: bool,
    write: bool,
) -> Option<Result<bool, MapsError>> {
    use crate::procmap::{Procmap, QueryError};
    let mut maps = Procmap::open()?;
    let end = addr.saturating_add(len);
    let (mut cur, mut anon) = (addr, true);
    loop {
        let vma = match maps.covering_or_next(cur) {
            Ok(vma) => vma,
            Err(QueryError::NoneAbove) => return Some(Err(MapsError::Unmapped(cur))),
            Err(QueryError::Unsupported) => return None,
        };
        if vma.start > cur {
            return Some(Err(MapsError::Unmapped(cur)));
        }
        let at = vma.start.max(addr);
        if read && !vma.read {
            return Some(Err(MapsError::Protection {
                addr: at,
                need: "readable",
            }));
        }
        if write && !vma.write {
            return Some(Err(MapsError::Protection {
                addr: at,
                need: "writable",
            }));
        }
        anon &= is_anonymous(vma.shared, vma.inode, &vma.name);
        cur = vma.end;
        if cur >= end {
            return Some(Ok(anon));
        }
    }
}

/// [`check_mapped_kind`] by parsing `/proc/self/maps` (`len` > 0).
fn check_mapped_kind_parse(
    addr: u64,
    len: u64,
    read: bool,
    write: bool,
) -> Result<bool, MapsError> {
    let mut anon = true;
    let maps =
        std::fs::read_to_string("/proc/self/maps").map_err(|e| MapsError::Io(e.to_string()))?;
    let end = addr.saturating_add(len);
    let mut cur = addr;
    for line in maps.lines() {
        let mut it = line.split_whitespace();
        let (Some(range), Some(perms)) = (it.next(), it.next()) else {
            continue;
        };
        let Some((s, e)) = range.split_once('-') else {
            continue;
        };
        let (Ok(s), Ok(e)) = (u64::from_str_radix(s, 16), u64::from_str_radix(e, 16)) else {
            continue;
        };
        if e <= cur {
            continue;
        }
        if s > cur {
            return Err(MapsError::Unmapped(cur));
        }
        let p = perms.as_bytes();
        if read && p.first() != Some(&b'r') {
            return Err(MapsError::Protection {
                addr: s.max(addr),
                need: "readable",
            });
        }
        if write && p.get(1) != Some(&b'w') {
            return Err(MapsError::Protection {
                addr: s.max(addr),
                need: "writable",
            });
        }
        // Fields after perms: offset, device, inode, then the path (if any).
        let inode = it.nth(2).and_then(|i| i.parse::<u64>().ok());
        let path = it.next().unwrap_or("");
        let private = p.get(3) == Some(&b'p');
        anon &= inode.is_some_and(|i| is_anonymous(!private, i, path));
        cur = e;
        if cur >= end {
            return Ok(anon);
        }
    }
    Err(MapsError::Unmapped(cur))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn anon(pages: usize) -> u64 {
        // SAFETY: a fresh private anonymous mapping; the tests own it and unmap it.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                pages * 4096,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        p as u64
    }

    /// The kernel query and the maps-file parse answer alike: anonymous, file-backed,
    /// read-only, a hole, a range across two mappings.
    #[test]
    fn query_and_parse_agree() {
        let _map_lock = crate::MAP_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let base = anon(4);
        // SAFETY: changing the protection of / unmapping pages of our own mapping.
        unsafe {
            libc::mprotect((base + 4096) as *mut libc::c_void, 4096, libc::PROT_READ);
            libc::munmap((base + 3 * 4096) as *mut libc::c_void, 4096);
        }
        let exe = std::fs::read_to_string("/proc/self/maps")
            .unwrap()
            .lines()
            .find(|l| l.contains('/'))
            .and_then(|l| u64::from_str_radix(l.split('-').next()?, 16).ok())
            .unwrap();
        for (a, l) in [
            (base, 4096),
            (base, 8192),
            (base + 4096, 4096),
            (base, 3 * 4096),
            (base, 4 * 4096),
            (base + 3 * 4096, 1),
            (exe, 4096),
        ] {
            for (r, w) in [(true, false), (false, true), (true, true)] {
                let parsed = check_mapped_kind_parse(a, l, r, w);
                if let Some(queried) = check_mapped_kind_query(a, l, r, w) {
                    assert_eq!(queried, parsed, "{a:#x}+{l} read {r} write {w}");
                }
            }
        }
        // SAFETY: unmapping the rest of our own mapping.
        unsafe { libc::munmap(base as *mut libc::c_void, 3 * 4096) };
    }

    #[test]
    fn file_mapping_is_not_anonymous() {
        let path = std::env::temp_dir().join(format!("unpinned-kind-{}", std::process::id()));
        std::fs::write(&path, [0u8; 4096]).unwrap();
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        // SAFETY: a private mapping of our own temporary file, unmapped below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE,
                std::os::fd::AsRawFd::as_raw_fd(&f),
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        assert_eq!(check_mapped_kind(p as u64, 4096, true, true), Ok(false));
        // SAFETY: unmapping our own mapping.
        unsafe { libc::munmap(p, 4096) };
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn read_only_mapping_is_refused_for_write_exposure() {
        let _map_lock = crate::MAP_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: a fresh read-only anonymous mapping owned by the test.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert!(check_mapped(p as u64, 4096, true, false).is_ok());
        assert!(matches!(
            check_mapped(p as u64, 4096, false, true),
            Err(MapsError::Protection {
                need: "writable",
                ..
            })
        ));
        // SAFETY: unmapping our own mapping.
        unsafe { libc::munmap(p, 4096) };
    }
}
