//! The launcher's failure detection and cleanup (issue 18), one test per path: a rank killed
//! or stopped during setup (the others' bootstrap wait fails at once, naming it), the normal end,
//! the timeout (whole process groups killed), and the launcher itself killed by SIGKILL, SIGINT
//! or SIGTERM. Each asserts the time to the end of the job and that no process of the job and no
//! run directory is left.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use unpinned_live::launch::{launch, LaunchOptions};

const SELFTEST: &str = env!("CARGO_BIN_EXE_unpinned-live-selftest");

/// A fresh directory for the ranks' reports, removed on drop.
struct Reports(PathBuf);

impl Reports {
    fn new(name: &str) -> Reports {
        let d = std::env::temp_dir().join(format!("unpinned-fd-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Reports(d)
    }
    fn read(&self, file: &str) -> String {
        std::fs::read_to_string(self.0.join(file)).unwrap_or_default()
    }
    /// The (rank, child) process ids the `hang` scenario wrote, once all `n` ranks did.
    fn pids(&self, n: u32, within: Duration) -> Vec<u32> {
        let t = Instant::now();
        loop {
            let v: Vec<String> = (0..n).map(|r| self.read(&format!("pid-{r}"))).collect();
            if v.iter().all(|s| s.split(' ').count() == 2) {
                return v
                    .iter()
                    .flat_map(|s| s.split(' ').map(|p| p.parse::<u32>().unwrap()))
                    .collect();
            }
            assert!(t.elapsed() < within, "the ranks did not start: {v:?}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Reports {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn opts(n: u32, scenario: &str, reports: &Reports) -> LaunchOptions {
    let mut o = LaunchOptions::new(n, SELFTEST);
    o.args = vec![scenario.into()];
    o.timeout = Duration::from_secs(30);
    o.grace = Duration::from_secs(1);
    o.env = vec![(
        "SELFTEST_REPORT_DIR".into(),
        reports.0.display().to_string(),
    )];
    o
}

/// Is `pid` a live process (not gone, not a zombie)?
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(s) => {
            let state = s.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
    }
}

/// Wait until none of `pids` lives and `dir` is gone; the time it took.
fn all_gone(pids: &[u32], dir: &Path, within: Duration) -> Duration {
    let t = Instant::now();
    loop {
        let left: Vec<u32> = pids.iter().copied().filter(|p| alive(*p)).collect();
        if left.is_empty() && !dir.exists() {
            return t.elapsed();
        }
        assert!(
            t.elapsed() < within,
            "left after {within:?}: processes {left:?}, run directory {} exists: {}",
            dir.display(),
            dir.exists()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn normal_end_leaves_nothing() {
    let rep = Reports::new("normal");
    let r = launch(&opts(3, "barrier", &rep)).unwrap();
    assert!(r.success(), "{:?}", r.failures());
    assert!(!r.run_dir.exists(), "{} left", r.run_dir.display());
}

#[test]
fn a_rank_killed_in_setup_ends_the_others_at_once_naming_it() {
    let rep = Reports::new("die");
    let r = launch(&opts(3, "die-in-setup", &rep)).unwrap();
    println!("rank killed in setup: job ended after {:?}", r.elapsed);
    assert_eq!(r.first_failure, Some(2), "{:?}", r.failures());
    for rank in 0..2 {
        let m = rep.read(&format!("rank-{rank}.txt"));
        assert!(
            m.contains("rank 2 died of signal 9 (SIGKILL)"),
            "rank {rank}: {m:?}"
        );
        assert!(
            !r.ranks[rank].killed_by_launcher,
            "rank {rank} had to be killed"
        );
    }
    // The survivors notice within milliseconds (not after the 30 s bootstrap timeout); the
    // margin is for a loaded machine.
    assert!(r.elapsed < Duration::from_secs(5), "{:?}", r.elapsed);
    assert!(!r.run_dir.exists());
}

#[test]
fn a_stopped_rank_ends_the_others_naming_it_and_is_killed() {
    let rep = Reports::new("stop");
    let r = launch(&opts(2, "stop-in-setup", &rep)).unwrap();
    println!("rank stopped in setup: job ended after {:?}", r.elapsed);
    assert_eq!(r.first_failure, Some(1), "{:?}", r.failures());
    let m = rep.read("rank-0.txt");
    assert!(
        m.contains("rank 1 was stopped by signal 19 (SIGSTOP)"),
        "{m:?}"
    );
    assert_eq!(r.ranks[1].stopped_by, Some(libc::SIGSTOP));
    assert!(r.ranks[1].killed_by_launcher);
    // Rank 0 fails at once; the stopped rank is killed after the 1 s grace.
    assert!(r.elapsed < Duration::from_secs(6), "{:?}", r.elapsed);
    assert!(!r.run_dir.exists());
}

#[test]
fn the_timeout_kills_whole_process_groups() {
    let rep = Reports::new("timeout");
    let mut o = opts(2, "hang", &rep);
    o.timeout = Duration::from_millis(1500);
    let r = launch(&o).unwrap();
    println!("timeout 1.5 s: job ended after {:?}", r.elapsed);
    assert!(r.timed_out);
    assert!(r.elapsed < Duration::from_secs(5), "{:?}", r.elapsed);
    let pids = rep.pids(2, Duration::ZERO);
    all_gone(&pids, &r.run_dir, Duration::from_secs(1));
}

/// Start the selftest as a launcher of 2 `hang` ranks, wait until they run, send `sig` to the
/// launcher; return how it ended and the time until nothing of the job was left.
fn kill_launcher(name: &str, sig: i32) -> (std::process::ExitStatus, Duration) {
    let rep = Reports::new(name);
    let mut cmd = Command::new(SELFTEST);
    cmd.args(["launch", "2", "30", "hang"])
        .env("SELFTEST_REPORT_DIR", &rep.0);
    // A launcher keeps ignoring what it inherits as ignored (as under `nohup`, or a shell's
    // background job, which ignores SIGINT): give it the default dispositions, as a terminal
    // would, so that the test does not depend on how the suite was started.
    // SAFETY: signal() is async-signal-safe; the closure allocates nothing.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(|| {
            for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                libc::signal(s, libc::SIG_DFL);
            }
            Ok(())
        });
    }
    let mut l = cmd.spawn().unwrap();
    let pids = rep.pids(2, Duration::from_secs(20));
    let dir = PathBuf::from(format!("/dev/shm/unpinned-{}-0", l.id()));
    assert!(dir.exists(), "{}", dir.display());
    let t = Instant::now();
    // SAFETY: signalling the child we started.
    unsafe { libc::kill(l.id() as i32, sig) };
    let status = l.wait().unwrap();
    all_gone(&pids, &dir, Duration::from_secs(3));
    (status, t.elapsed())
}

#[test]
fn a_launcher_killed_with_sigkill_takes_its_ranks_and_directory_along() {
    let (status, took) = kill_launcher("sigkill", libc::SIGKILL);
    println!("launcher SIGKILLed: ranks, children and run directory gone after {took:?}");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGKILL));
    assert!(took < Duration::from_secs(4), "{took:?}");
}

#[test]
fn sigint_and_sigterm_to_the_launcher_clean_up_then_end_it_by_that_signal() {
    use std::os::unix::process::ExitStatusExt;
    for (name, sig) in [("sigint", libc::SIGINT), ("sigterm", libc::SIGTERM)] {
        let (status, took) = kill_launcher(name, sig);
        println!("launcher got {name}: ranks, children and run directory gone after {took:?}");
        assert_eq!(status.signal(), Some(sig), "{name}: {status:?}");
        assert!(took < Duration::from_secs(4), "{name}: {took:?}");
    }
}
