//! The userfaultfd ABI (`<linux/userfaultfd.h>`), which the `libc` crate does not carry: the
//! constants and `#[repr(C)]` structures that the residency cache
//! ([`crate::residency_cache`]) and crates/dsm-live's write-protection primitive both use.

/// `UFFD_API`.
pub const UFFD_API: u64 = 0xAA;
/// `UFFD_USER_MODE_ONLY` (flag of the `userfaultfd` system call).
pub const UFFD_USER_MODE_ONLY: libc::c_int = 1;
/// `UFFD_FEATURE_EVENT_REMAP`: `mremap` events.
pub const UFFD_FEATURE_EVENT_REMAP: u64 = 1 << 2;
/// `UFFD_FEATURE_EVENT_REMOVE`: `madvise(DONTNEED / FREE / REMOVE)` events.
pub const UFFD_FEATURE_EVENT_REMOVE: u64 = 1 << 3;
/// `UFFD_FEATURE_EVENT_UNMAP`: `munmap` events.
pub const UFFD_FEATURE_EVENT_UNMAP: u64 = 1 << 6;
/// `UFFD_FEATURE_WP_HUGETLBFS_SHMEM`: write-protection of shared memory and hugetlbfs.
pub const UFFD_FEATURE_WP_HUGETLBFS_SHMEM: u64 = 1 << 12;
/// `UFFDIO_API = _IOWR(0xAA, 0x3F, struct uffdio_api)`.
pub const UFFDIO_API: libc::c_ulong = 0xc018_aa3f;
/// `UFFDIO_REGISTER = _IOWR(0xAA, 0x00, struct uffdio_register)`.
pub const UFFDIO_REGISTER: libc::c_ulong = 0xc020_aa00;
/// `UFFDIO_UNREGISTER = _IOR(0xAA, 0x01, struct uffdio_range)`.
pub const UFFDIO_UNREGISTER: libc::c_ulong = 0x8010_aa01;
/// `UFFDIO_WRITEPROTECT = _IOWR(0xAA, 0x06, struct uffdio_writeprotect)`.
pub const UFFDIO_WRITEPROTECT: libc::c_ulong = 0xc018_aa06;
/// `UFFDIO_REGISTER_MODE_WP`.
pub const UFFDIO_REGISTER_MODE_WP: u64 = 2;
/// `UFFDIO_WRITEPROTECT_MODE_WP`: set (rather than clear) write protection.
pub const UFFDIO_WRITEPROTECT_MODE_WP: u64 = 1;
/// `UFFD_EVENT_PAGEFAULT`.
pub const UFFD_EVENT_PAGEFAULT: u8 = 0x12;
/// `UFFD_EVENT_REMAP`.
pub const UFFD_EVENT_REMAP: u8 = 0x14;
/// `UFFD_EVENT_REMOVE`.
pub const UFFD_EVENT_REMOVE: u8 = 0x15;
/// `UFFD_EVENT_UNMAP`.
pub const UFFD_EVENT_UNMAP: u8 = 0x16;

/// `struct uffdio_api`.
#[repr(C)]
pub struct UffdioApi {
    /// `UFFD_API`.
    pub api: u64,
    /// Features asked for (in) and available (out).
    pub features: u64,
    /// Supported ioctls (out).
    pub ioctls: u64,
}

/// `struct uffdio_range`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct UffdioRange {
    /// Start address, page aligned.
    pub start: u64,
    /// Length in bytes, page aligned.
    pub len: u64,
}

/// `struct uffdio_register`.
#[repr(C)]
pub struct UffdioRegister {
    /// The range to register.
    pub range: UffdioRange,
    /// `UFFDIO_REGISTER_MODE_*`.
    pub mode: u64,
    /// Ioctls available on the range (out).
    pub ioctls: u64,
}

/// `struct uffdio_writeprotect`.
#[repr(C)]
pub struct UffdioWriteprotect {
    /// The range.
    pub range: UffdioRange,
    /// `UFFDIO_WRITEPROTECT_MODE_*`.
    pub mode: u64,
}
