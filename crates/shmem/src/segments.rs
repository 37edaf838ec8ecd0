//! The main executable's writable data segments (`.data`, `.bss`), found with
//! `dl_iterate_phdr`: PT_LOAD segments with PF_W, without the part the dynamic linker makes
//! read-only after relocation (PT_GNU_RELRO). Global and static variables of the program are
//! symmetric: the same offset from the segment start on every PE.

use std::ffi::c_int;

/// One writable range of the executable (page-aligned).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Start address.
    pub base: usize,
    /// Length in bytes.
    pub len: usize,
}

const PT_LOAD: u32 = 1;
const PT_GNU_RELRO: u32 = 0x6474_e552;
const PF_W: u32 = 2;

unsafe extern "C" fn first_object(
    info: *mut libc::dl_phdr_info,
    _size: libc::size_t,
    data: *mut libc::c_void,
) -> c_int {
    // SAFETY: the loader passes a valid info; `data` is our Vec.
    let (info, out) = unsafe { (&*info, &mut *(data as *mut Vec<Segment>)) };
    let page = 4096usize;
    // SAFETY: dlpi_phdr points at dlpi_phnum headers.
    let phdrs = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) };
    let relro = phdrs.iter().find(|p| p.p_type == PT_GNU_RELRO).map(|p| {
        // The loader protects [align_down(start), align_down(start + size)).
        let s = info.dlpi_addr as usize + p.p_vaddr as usize;
        (s & !(page - 1), (s + p.p_memsz as usize) & !(page - 1))
    });
    for p in phdrs {
        if p.p_type != PT_LOAD || p.p_flags & PF_W == 0 {
            continue;
        }
        let mut start = (info.dlpi_addr as usize + p.p_vaddr as usize) & !(page - 1);
        let end = (info.dlpi_addr as usize + p.p_vaddr as usize + p.p_memsz as usize)
            .next_multiple_of(page);
        if let Some((rs, re)) = relro {
            if rs <= start && re > start {
                start = re;
            }
        }
        if end > start {
            out.push(Segment {
                base: start,
                len: end - start,
            });
        }
    }
    1 // the first object is the executable: stop
}

/// The executable's writable data segments.
pub fn data_segments() -> Vec<Segment> {
    let mut v: Vec<Segment> = Vec::new();
    // SAFETY: the callback only reads the loader's data and writes `v`.
    unsafe { libc::dl_iterate_phdr(Some(first_object), &mut v as *mut Vec<Segment> as *mut _) };
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    static mut IN_DATA: u64 = 7;

    #[test]
    fn a_static_is_inside_a_segment() {
        let a = std::ptr::addr_of!(IN_DATA) as usize;
        let segs = data_segments();
        assert!(
            segs.iter().any(|s| s.base <= a && a < s.base + s.len),
            "{a:#x} not in {segs:x?}"
        );
    }
}
