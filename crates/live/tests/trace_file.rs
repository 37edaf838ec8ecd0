//! `trace.file`: each rank writes its trace records (the points of the live path,
//! `unpinned_live::trace`) to `FILE.rank<R>.csv` when its runtime is dropped. Its own test
//! binary: the trace is process-wide, and a file holds the records of its rank number.

use unpinned_live::{Perms, Runtime};
use unpinned_os::mapping::Mapping;

#[test]
fn each_rank_writes_its_trace_when_dropped() {
    let dir = std::env::temp_dir().join(format!("unpinned-trace-file-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let base = dir.join("t");
    let rts = Runtime::in_process(2, |c| c.trace.file = Some(base.clone())).expect("runtimes");
    let dst = Mapping::anon(4096).unwrap();
    let src = vec![7u8; 64];
    // SAFETY: `dst` outlives the runtimes' use of it; read only after the write completed.
    let key = unsafe { rts[1].expose(dst.ptr(), dst.len(), Perms::RW).unwrap() };
    // SAFETY: `src` lives until the wait below.
    let id = unsafe {
        rts[0]
            .write(1, src.as_ptr(), dst.addr(), key, src.len())
            .unwrap()
    };
    rts[0].wait(id).unwrap();
    drop(rts);
    for (rank, must) in [(0, ["Post", "TxSent"]), (1, ["RxStart", "RxEnd"])] {
        let f = dir.join(format!("t.rank{rank}.csv"));
        let csv = std::fs::read_to_string(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let mut lines = csv.lines();
        assert_eq!(lines.next(), Some("at_ns,rank,point,arg"));
        let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
        assert!(
            rows.iter()
                .all(|r| r.len() == 4 && r[1] == rank.to_string()),
            "{csv}"
        );
        for p in must {
            assert!(rows.iter().any(|r| r[2] == p), "rank {rank}: no {p}: {csv}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
