//! With the load/store path off, a remote PE's puts into never-touched heap pages and
//! never-touched static (.bss) pages arrive byte for byte, and the pages were brought in by
//! PART's fault path at the target (resident before the target's CPU touched them, page-ins
//! counted by its runtime), with nothing registered or pinned.
//!
//! The test launches this test binary twice under the launcher (2 PEs), running the ignored
//! test `pe_program` in each.

mod support;

use unpinned_live::launch::LaunchTransport;
use unpinned_shmem::{rma, state, sync};

const HEAP_BYTES: usize = 4 << 20;
const BSS_BYTES: usize = 2 << 20;
static mut BSS: [u8; BSS_BYTES] = [0; BSS_BYTES];

fn pattern(i: usize) -> u8 {
    (i.wrapping_mul(31) >> 3) as u8 ^ 0x5a
}

/// Pages of `[p, p+len)` that are resident (mincore).
fn resident_pages(p: *const u8, len: usize) -> usize {
    let pages = len.div_ceil(4096);
    let mut v = vec![0u8; pages];
    // SAFETY: a mapped, page-aligned range of ours; `v` has one byte per page.
    let r = unsafe { libc::mincore(p as *mut libc::c_void, len, v.as_mut_ptr()) };
    assert_eq!(r, 0, "mincore: {}", std::io::Error::last_os_error());
    v.iter().filter(|&&b| b & 1 == 1).count()
}

#[test]
#[ignore = "one PE of `part_fault_path_brings_in_untouched_pages`, run under the launcher"]
fn pe_program() {
    state::init("pe_program", 0);
    let st = state::state("pe_program");
    assert_eq!(st.npes, 2);
    let off = st.alloc.lock().unwrap().alloc(HEAP_BYTES, 4096).unwrap();
    // SAFETY: inside the heap.
    let heap = unsafe { st.heap.base.add(off) };
    let bss = std::ptr::addr_of_mut!(BSS) as *mut u8;
    // Checked before the barrier: PE 1 starts writing as soon as it leaves the barrier, which
    // can be before this PE, descheduled on a loaded host, has looked.
    if st.me == 0 {
        assert_eq!(
            resident_pages(heap, HEAP_BYTES),
            0,
            "the heap range was touched"
        );
    }
    sync::barrier_all(st);
    if st.me == 1 {
        let src: Vec<u8> = (0..HEAP_BYTES).map(pattern).collect();
        // SAFETY: symmetric targets (heap offset, static array), local source.
        unsafe {
            rma::put(
                st,
                &st.default_ctx,
                "put",
                0,
                heap,
                src.as_ptr(),
                HEAP_BYTES,
            );
            rma::put(st, &st.default_ctx, "put", 0, bss, src.as_ptr(), BSS_BYTES);
        }
        st.default_ctx.quiet();
    }
    sync::barrier_all(st);
    if st.me == 0 {
        // Resident before this CPU touched them: PART brought them in.
        assert_eq!(resident_pages(heap, HEAP_BYTES), HEAP_BYTES / 4096);
        let bss_start = (bss as usize).next_multiple_of(4096);
        let bss_len = (bss as usize + BSS_BYTES - bss_start) & !4095;
        assert_eq!(
            resident_pages(bss_start as *const u8, bss_len),
            bss_len / 4096
        );
        let s = st.rt.stats().unwrap();
        let paged = s.handler.pages + s.handler.inline_page_ins + s.memory.filled_pages;
        assert!(
            paged > 0 && s.handler.records + s.handler.inline_page_ins > 0,
            "no page-in at the target: {:?}",
            s.handler
        );
        // SAFETY: the puts are complete (barrier) and nobody writes any more.
        let (h, b) = unsafe {
            (
                std::slice::from_raw_parts(heap, HEAP_BYTES),
                std::slice::from_raw_parts(bss, BSS_BYTES),
            )
        };
        assert!(
            h.iter().enumerate().all(|(i, &x)| x == pattern(i)),
            "heap bytes differ"
        );
        assert!(
            b.iter().enumerate().all(|(i, &x)| x == pattern(i)),
            "static bytes differ"
        );
        println!(
            "PE 0: {} heap + {} static bytes arrived; page-in thread: {} records, {} pages; inline page-ins {}",
            HEAP_BYTES, BSS_BYTES, s.handler.records, s.handler.pages, s.handler.inline_page_ins
        );
    }
    state::finalize();
}

#[test]
fn part_fault_path_brings_in_untouched_pages() {
    support::run_pe_program(2, LaunchTransport::Shm);
}
