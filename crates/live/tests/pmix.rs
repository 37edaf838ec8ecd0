//! Jobs started by Open MPI's `mpirun` (a PMIx launcher): the selftest's rank program joins
//! through PMIx (rank, size, endpoints, bootstrap collectives) over shm and udp with 2 and 4
//! ranks; a rank killed during setup ends the others with a message naming it; nothing stays
//! in /dev/shm. Skipped, with a message, when `mpirun` is not installed.

use std::process::{Command, Output};
use std::sync::Mutex;
use std::time::Instant;

const SELFTEST: &str = env!("CARGO_BIN_EXE_unpinned-live-selftest");

/// One mpirun job at a time (2 cores; and the /dev/shm check sees only this file's jobs).
static SERIAL: Mutex<()> = Mutex::new(());

fn have_mpirun() -> bool {
    let ok = Command::new("mpirun")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("SKIPPED: mpirun is not installed (apt-get install openmpi-bin libpmix2)");
    }
    ok
}

fn segments() -> Vec<String> {
    std::fs::read_dir("/dev/shm")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with("unpinned-pmix-"))
        .collect()
}

/// `mpirun -n N selftest SCENARIO` with `UNPINNED_TRANSPORT=transport`; output and seconds.
fn mpirun(n: u32, transport: &str, scenario: &str) -> (Output, f64) {
    // A long bootstrap timeout (the dead-rank test must not pass by timing out), and a patient
    // engine: a rank descheduled on a loaded machine is not a dead peer here.
    mpirun_with(
        n,
        transport,
        scenario,
        "timeouts.bootstrap_ms=60000,engine.max_timeouts=300",
    )
}

/// [`mpirun`] with `UNPINNED_SET=set`.
fn mpirun_with(n: u32, transport: &str, scenario: &str, set: &str) -> (Output, f64) {
    let t = Instant::now();
    let out = Command::new("timeout")
        .args([
            "120",
            "mpirun",
            "--allow-run-as-root",
            "--oversubscribe",
            "-n",
        ])
        .arg(n.to_string())
        .args(["-x", "UNPINNED_TRANSPORT", "-x", "UNPINNED_SET"])
        .arg(SELFTEST)
        .arg(scenario)
        .env("UNPINNED_TRANSPORT", transport)
        .env("UNPINNED_SET", set)
        .env_remove("UNPINNED_RANK")
        .output()
        .expect("running mpirun");
    (out, t.elapsed().as_secs_f64())
}

fn job(n: u32, transport: &str, scenario: &str) {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let before = segments();
    let (out, s) = mpirun(n, transport, scenario);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!(
        "mpirun -n {n} {transport} {scenario}: {:?} in {s:.2} s",
        out.status.code()
    );
    assert!(out.status.success(), "{text}");
    let oks = text.lines().filter(|l| l.contains(": ok;")).count();
    if scenario == "transfers" {
        assert_eq!(oks, n as usize, "every rank checks its bytes:\n{text}");
    }
    let after: Vec<String> = segments()
        .into_iter()
        .filter(|s| !before.contains(s))
        .collect();
    assert!(after.is_empty(), "left in /dev/shm: {after:?}");
}

#[test]
fn mpirun_two_ranks_over_shm() {
    if have_mpirun() {
        job(2, "shm", "transfers");
    }
}

#[test]
fn mpirun_four_ranks_over_shm() {
    if have_mpirun() {
        job(4, "shm", "transfers");
    }
}

#[test]
fn mpirun_two_ranks_over_udp() {
    if have_mpirun() {
        job(2, "udp", "transfers");
    }
}

#[test]
fn mpirun_four_ranks_over_udp() {
    if have_mpirun() {
        job(4, "udp", "transfers");
    }
}

#[test]
fn under_mpirun_a_rank_killed_in_setup_is_named_and_ends_the_job() {
    if !have_mpirun() {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let before = segments();
    let (out, s) = mpirun(3, "shm", "die-in-setup");
    let err = String::from_utf8_lossy(&out.stderr);
    println!("mpirun -n 3 die-in-setup: ended in {s:.2} s");
    assert!(!out.status.success());
    // The survivors' fence fails naming rank 2, unless mpirun, which ends the job when a rank
    // dies, killed them first: then mpirun's own report names it.
    let survivors: Vec<&str> = err.lines().filter(|l| l.contains(": FAILED")).collect();
    for line in &survivors {
        assert!(
            line.contains("rank 2 ended before reaching the fence"),
            "{line}"
        );
    }
    assert!(
        !survivors.is_empty() || err.contains("process rank 2 with PID"),
        "nobody named rank 2:\n{err}"
    );
    println!(
        "survivors that named rank 2 themselves: {}",
        survivors.len()
    );
    assert!(s < 20.0, "{s} s");
    let after: Vec<String> = segments()
        .into_iter()
        .filter(|s| !before.contains(s))
        .collect();
    assert!(after.is_empty(), "left in /dev/shm: {after:?}");
}

#[test]
fn under_mpirun_a_stopped_rank_is_named_after_the_bootstrap_timeout() {
    if !have_mpirun() {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (out, s) = mpirun_with(2, "shm", "stop-in-setup", "timeouts.bootstrap_ms=2000");
    let err = String::from_utf8_lossy(&out.stderr);
    println!("mpirun -n 2 stop-in-setup (2 s bootstrap timeout): ended in {s:.2} s");
    assert!(!out.status.success());
    let line = err
        .lines()
        .find(|l| l.starts_with("selftest rank 0: FAILED"))
        .unwrap_or_else(|| panic!("rank 0 did not report:\n{err}"));
    assert!(
        line.contains("rank 1 did not reach the fence within 2 s"),
        "{line}"
    );
    assert!(s < 15.0, "{s} s");
}

/// Is `pid` a live process (not gone, not a zombie)?
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        let state = s.rsplit(')').next().unwrap_or("").trim_start();
        !state.starts_with('Z') && !state.starts_with('X')
    })
}

#[test]
fn when_mpirun_is_killed_the_ranks_and_their_children_end() {
    if !have_mpirun() {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let rep = std::env::temp_dir().join(format!("unpinned-pmix-kill-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&rep);
    std::fs::create_dir_all(&rep).unwrap();
    let mut mp = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-n", "2"])
        .args(["-x", "SELFTEST_REPORT_DIR", SELFTEST, "hang"])
        .env("SELFTEST_REPORT_DIR", &rep)
        .env_remove("UNPINNED_RANK")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("running mpirun");
    let t = Instant::now();
    let pids: Vec<u32> = loop {
        let v: Vec<String> = (0..2)
            .map(|r| std::fs::read_to_string(rep.join(format!("pid-{r}"))).unwrap_or_default())
            .collect();
        if v.iter().all(|s| s.split(' ').count() == 2) {
            break v
                .iter()
                .flat_map(|s| s.split(' ').map(|p| p.parse().unwrap()))
                .collect();
        }
        assert!(t.elapsed().as_secs() < 30, "the ranks did not start: {v:?}");
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    // SAFETY: signalling the child we started.
    unsafe { libc::kill(mp.id() as i32, libc::SIGKILL) };
    let _ = mp.wait();
    let t = Instant::now();
    while pids.iter().any(|p| alive(*p)) && t.elapsed().as_secs() < 10 {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let took = t.elapsed();
    let left: Vec<u32> = pids.iter().copied().filter(|p| alive(*p)).collect();
    let _ = std::fs::remove_dir_all(&rep);
    println!("mpirun SIGKILLed: ranks and their children gone after {took:?}");
    assert!(
        left.is_empty(),
        "still running 10 s after mpirun died: {left:?}"
    );
}
