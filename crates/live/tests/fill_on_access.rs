//! Page-in on access (`LoopOptions::fill_on_access_max_pages`): a small remote write into
//! missing private anonymous memory is paged in by the engine before the write (no page-fault
//! NACK, no ERR); larger transfers, file-backed memory and the option switched off keep the
//! protocol's NACK / page-in / ERR path.

use unpinned_live::{Perms, Runtime};
use unpinned_os::mapping::Mapping;

fn pair(fill_pages: u64) -> Vec<Runtime> {
    Runtime::in_process(2, |c| c.progress.fill_on_access_max_pages = fill_pages).expect("runtimes")
}

/// Write `len` bytes into fresh memory of `len` bytes (anonymous, or a file mapping whose
/// pages are not mapped); returns (bytes correct, NACKs sent by the target, pages filled on
/// access by the target).
fn write_fresh(fill_pages: u64, len: usize, file: bool) -> (bool, u64, u64) {
    let rts = pair(fill_pages);
    let path = std::env::temp_dir().join(format!(
        "unpinned-fill-{}-{len}-{fill_pages}",
        std::process::id()
    ));
    let dst = if file {
        let m = Mapping::file(&path, len, |_| 0).unwrap();
        m.drop_cache().unwrap();
        m
    } else {
        Mapping::anon(len).unwrap()
    };
    let _ = std::fs::remove_file(&path);
    // SAFETY: the runtimes are dropped below, before `dst`.
    let key = unsafe { rts[1].expose(dst.ptr(), len, Perms::RW).unwrap() };
    let src: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
    rts[0].write_blocking(1, &src, dst.addr(), key).unwrap();
    // SAFETY: the write completed; nothing writes `dst` any more.
    let ok = unsafe { dst.as_slice() } == &src[..];
    let s = rts[1].stats().unwrap();
    drop(rts);
    (ok, s.engine.nacks_fault_sent, s.memory.filled_pages)
}

#[test]
fn small_anonymous_write_pages_in_on_access() {
    let (ok, nacks, filled) = write_fresh(4, 4096, false);
    assert!(ok);
    assert_eq!((nacks, filled), (0, 1));
    let (ok, nacks, filled) = write_fresh(4, 16384, false);
    assert!(ok);
    assert_eq!((nacks, filled), (0, 4));
}

#[test]
fn off_large_or_file_backed_keep_the_nack_path() {
    // Switched off.
    let (ok, nacks, filled) = write_fresh(0, 4096, false);
    assert!(ok);
    assert!(nacks > 0 && filled == 0, "nacks {nacks}, filled {filled}");
    // A transfer larger than the bound.
    let (ok, nacks, filled) = write_fresh(4, 5 * 4096, false);
    assert!(ok);
    assert!(nacks > 0 && filled == 0, "nacks {nacks}, filled {filled}");
    // File-backed memory could need a disk read: never paged in by the engine.
    let (ok, nacks, filled) = write_fresh(4, 4096, true);
    assert!(ok);
    assert!(nacks > 0 && filled == 0, "nacks {nacks}, filled {filled}");
}
