//! `unpinned sweep`: the same table locally and on a local Dask cluster (scheduler and two
//! worker processes on 127.0.0.1); `unpinned replay` of the shipped GOAL trace.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn unpinned(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_unpinned"))
        .args(args)
        .output()
        .expect("binary runs")
}

fn scratch(tag: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let d = std::env::temp_dir().join(format!(
        "unpinned-sweep-{tag}-{}-{nanos}",
        std::process::id()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

const SPEC: &str = r#"
experiment = "part-apps"
seeds = [1, 2]
[grid]
"exp.apps" = ["lammps", "hpcg"]
"exp.nodes" = ["2", "4"]
[set]
"exp.seeds" = 1
"exp.lammps_steps" = 10
"exp.hpcg_iterations" = 1
"#;

fn sweep(dir: &PathBuf, extra: &[&str]) -> String {
    let spec = dir.join("spec.toml");
    std::fs::write(&spec, SPEC).unwrap();
    let out = dir.join("out");
    let mut args = vec![
        "sweep",
        spec.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = unpinned(&args);
    assert!(
        o.status.success(),
        "sweep failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::read_to_string(out.join("sweep-part-apps.csv")).unwrap()
}

#[test]
fn local_sweep_merges_every_point() {
    let dir = scratch("local");
    let csv = sweep(&dir, &["--jobs", "2"]);
    let lines: Vec<&str> = csv.lines().collect();
    assert!(
        lines[0].starts_with(
            "sweep_seed,sweep_exp_apps,sweep_exp_nodes,app,nodes,mode,seed,time_s,slowdown"
        ),
        "{}",
        lines[0]
    );
    // 2 apps x 2 node counts x 2 seeds points, each 2 rows (part, pretouch).
    assert_eq!(lines.len(), 1 + 2 * 2 * 2 * 2);
    // The same sweep with one job gives the same table.
    assert_eq!(sweep(&scratch("local1"), &["--jobs", "1"]), csv);
}

#[test]
fn bad_sweep_specs_are_usage_errors() {
    let dir = scratch("bad");
    for (i, text) in [
        "experiment = \"nope\"",
        "experiment = \"part-apps\"\n[grid]\n\"exp.apps\" = []",
        "seeds = [1]",
        "experiment = \"part-apps\"\nbogus = 1",
    ]
    .iter()
    .enumerate()
    {
        let spec = dir.join(format!("bad{i}.toml"));
        std::fs::write(&spec, text).unwrap();
        let o = unpinned(&[
            "sweep",
            spec.to_str().unwrap(),
            "--out",
            dir.to_str().unwrap(),
        ]);
        assert_eq!(
            o.status.code(),
            Some(2),
            "{text:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let spec = dir.join("ok.toml");
    std::fs::write(&spec, SPEC).unwrap();
    let o = unpinned(&[
        "sweep",
        spec.to_str().unwrap(),
        "--cluster",
        "http://x",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
}

/// Stops its process (by id) when dropped: SIGTERM (a nanny then stops its workers), SIGKILL
/// after 10 s.
struct Proc(Child);
impl Drop for Proc {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn cluster_sweep_equals_local_sweep() {
    let python = std::env::var("UNPINNED_PYTHON").unwrap_or_else(|_| "python3".into());
    let probe = Command::new(&python)
        .args(["-c", "import distributed"])
        .output();
    if !probe.as_ref().is_ok_and(|o| o.status.success()) {
        eprintln!("SKIPPED cluster_sweep_equals_local_sweep: {python} cannot import dask.distributed (pip install -r tools/requirements-sweep.txt)");
        return;
    }
    let port = free_port();
    let addr = format!("tcp://127.0.0.1:{port}");
    let dir = scratch("cluster");
    let _scheduler = Proc(
        Command::new(&python)
            .args([
                "-m",
                "distributed.cli.dask_scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                &port.to_string(),
                "--dashboard-address",
                ":0",
                "--no-show",
            ])
            .current_dir(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("scheduler starts"),
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "the Dask scheduler did not listen on {addr}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let _workers = Proc(
        Command::new(&python)
            .args([
                "-m",
                "distributed.cli.dask_worker",
                &addr,
                "--nworkers",
                "2",
                "--nthreads",
                "1",
                "--host",
                "127.0.0.1",
                "--dashboard-address",
                ":0",
            ])
            .current_dir(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("workers start"),
    );
    let local = sweep(&scratch("cmp-local"), &[]);
    let cluster = sweep(&dir, &["--cluster", &addr, "--python", &python]);
    assert_eq!(cluster, local, "the cluster's table equals the local one");
}

#[test]
fn replay_of_the_shipped_goal_trace() {
    let goal = concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench/traces/ring.goal");
    let o = unpinned(&["replay", goal]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    let rows: Vec<Vec<&str>> = out
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0][2], "part");
    assert_eq!(rows[0][7], "8", "8 sends");
    assert_eq!(rows[0][9], "0", "no message errors");
    assert!(rows[0][4].parse::<f64>().unwrap() >= 1.0);
    let bad = unpinned(&["replay", "/nonexistent.goal"]);
    assert_eq!(bad.status.code(), Some(2));
}
