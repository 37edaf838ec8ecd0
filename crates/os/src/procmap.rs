//! One mapping of this process by address, from the kernel's `PROCMAP_QUERY` ioctl on
//! `/proc/self/maps` (Linux 6.11+): what [`crate::maps::check_mapped_kind`] needs for an
//! exposure without reading and parsing the whole maps file, whose cost grows with the number
//! of mappings (the message layer's rendezvous exposes a buffer per large send).
//!
//! Older kernels answer `ENOTTY`; the caller then parses `/proc/self/maps` as before. The file
//! is opened per query, never cached: after `fork()` a cached descriptor would still describe
//! the parent's address space.

use std::os::fd::AsRawFd;

/// `struct procmap_query` of `include/uapi/linux/fs.h` (Linux 6.11), field for field.
#[repr(C)]
#[derive(Default)]
struct ProcmapQuery {
    size: u64,
    query_flags: u64,
    query_addr: u64,
    vma_start: u64,
    vma_end: u64,
    vma_flags: u64,
    vma_page_size: u64,
    vma_offset: u64,
    inode: u64,
    dev_major: u32,
    dev_minor: u32,
    vma_name_size: u32,
    build_id_size: u32,
    vma_name_addr: u64,
    build_id_addr: u64,
}

/// `_IOWR('f', 17, struct procmap_query)`.
const PROCMAP_QUERY: libc::c_ulong =
    (3 << 30) | ((std::mem::size_of::<ProcmapQuery>() as libc::c_ulong) << 16) | (0x66 << 8) | 17;
/// The mapping that covers the address or, if none does, the next one above it.
const QUERY_COVERING_OR_NEXT_VMA: u64 = 0x10;
const VMA_READABLE: u64 = 0x01;
const VMA_WRITABLE: u64 = 0x02;
const VMA_SHARED: u64 = 0x08;

/// One mapping as the kernel reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Vma {
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
    /// Readable.
    pub read: bool,
    /// Writable.
    pub write: bool,
    /// Shared (`MAP_SHARED`) rather than private.
    pub shared: bool,
    /// Inode of the file behind it (0: none).
    pub inode: u64,
    /// Its name in `/proc/self/maps` (a path, `[heap]`, `[anon:...]`, or empty).
    pub name: String,
}

/// Why a query gave no mapping.
#[derive(Debug, PartialEq, Eq)]
pub enum QueryError {
    /// No mapping at or above the address.
    NoneAbove,
    /// The kernel cannot answer (no `PROCMAP_QUERY`, or a name too long for the buffer): parse
    /// `/proc/self/maps` instead.
    Unsupported,
}

/// Queries of this process's mappings through one open `/proc/self/maps`.
pub struct Procmap {
    file: std::fs::File,
    name: Vec<u8>,
}

impl Procmap {
    /// Open `/proc/self/maps` for queries (`None`: it cannot be opened).
    pub fn open() -> Option<Procmap> {
        let file = std::fs::File::open("/proc/self/maps").ok()?;
        Some(Procmap {
            file,
            name: vec![0; 4096],
        })
    }

    /// The mapping that covers `addr`, or the first one above it.
    pub fn covering_or_next(&mut self, addr: u64) -> Result<Vma, QueryError> {
        let mut q = ProcmapQuery {
            size: std::mem::size_of::<ProcmapQuery>() as u64,
            query_flags: QUERY_COVERING_OR_NEXT_VMA,
            query_addr: addr,
            vma_name_size: self.name.len() as u32,
            vma_name_addr: self.name.as_mut_ptr() as u64,
            ..ProcmapQuery::default()
        };
        // SAFETY: PROCMAP_QUERY reads and writes `q` (its size is in `q.size`) and writes at
        // most `vma_name_size` bytes to `vma_name_addr`, our live buffer of that length.
        let rc = unsafe { libc::ioctl(self.file.as_raw_fd(), PROCMAP_QUERY as _, &mut q) };
        if rc != 0 {
            return Err(match std::io::Error::last_os_error().raw_os_error() {
                Some(libc::ENOENT) => QueryError::NoneAbove,
                _ => QueryError::Unsupported,
            });
        }
        // The name's size includes its NUL terminator; 0: no name.
        let len = (q.vma_name_size as usize)
            .saturating_sub(1)
            .min(self.name.len());
        Ok(Vma {
            start: q.vma_start,
            end: q.vma_end,
            read: q.vma_flags & VMA_READABLE != 0,
            write: q.vma_flags & VMA_WRITABLE != 0,
            shared: q.vma_flags & VMA_SHARED != 0,
            inode: q.inode,
            name: String::from_utf8_lossy(&self.name[..len]).into_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every mapping `/proc/self/maps` lists is found by address with the same bounds,
    /// permissions, inode and name (when the kernel has the ioctl at all).
    #[test]
    fn query_agrees_with_the_maps_file() {
        let Some(mut pm) = Procmap::open() else {
            return;
        };
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let mut checked = 0;
        for line in maps.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (s, e) = f[0].split_once('-').unwrap();
            let (s, e) = (
                u64::from_str_radix(s, 16).unwrap(),
                u64::from_str_radix(e, 16).unwrap(),
            );
            // [vsyscall] lies outside what the ioctl walks; mappings may change between the
            // read and the query (other test threads): compare those that are still there.
            let Ok(v) = pm.covering_or_next(s) else {
                continue;
            };
            if v.start != s || v.end != e {
                continue;
            }
            let p = f[1].as_bytes();
            assert_eq!(
                (v.read, v.write, v.shared),
                (p[0] == b'r', p[1] == b'w', p[3] == b's'),
                "{line}"
            );
            assert_eq!(v.inode.to_string(), f[4], "{line}");
            assert_eq!(
                v.name,
                f.get(5..).map(|n| n.join(" ")).unwrap_or_default(),
                "{line}"
            );
            checked += 1;
        }
        match pm.covering_or_next(0) {
            Err(QueryError::Unsupported) => {}
            _ => assert!(checked > 3, "only {checked} mappings compared"),
        }
    }
}
