//! `unpinned sweep SPEC.toml`: a parameter sweep of one experiment, merged into one tidy
//! table. Points run locally in parallel by default; with `--cluster tcp://HOST:PORT` they fan
//! out over a Dask cluster (tools/sweep_dask.py submits one `unpinned run-point` invocation
//! per point to the workers). Both paths compute each point with the same function and merge
//! the same way, so the tables are identical.
//!
//! Why Dask (not Ray): Dask's distributed scheduler is a small pure-Python package whose
//! scheduler and workers are plain processes started with `dask scheduler` / `dask worker`
//! and addressed as `tcp://host:port`; it needs no daemons beyond those and runs a
//! subprocess per task without ceremony. Ray brings a much larger runtime (GCS, raylets,
//! object store) for features a sweep of independent runs does not use.
//!
//! Spec:
//! ```toml
//! experiment = "part-apps"
//! seeds = [1, 2]                     # master seeds (default [1])
//! [grid]                             # every combination of these --set values
//! "exp.apps" = ["lammps", "hpcg"]
//! "engine.packet_bytes" = [1024, 4096]
//! [set]                              # fixed --set values for every point
//! "exp.seeds" = 1
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use clap::Args;
use unpinned_report::{Cell, Metadata, Table};

use crate::args::ProfileArgs;
use crate::error::CliError;
use crate::run::{find_experiment, resolve, setup_for};

/// Arguments of `unpinned sweep`.
#[derive(Args, Debug)]
pub struct SweepArgs {
    /// The sweep specification (TOML).
    pub spec: PathBuf,
    /// Run the points on this Dask scheduler (`tcp://HOST:PORT`) instead of locally.
    #[arg(long, value_name = "tcp://HOST:PORT")]
    pub cluster: Option<String>,
    /// Local parallelism (default: the machine's cores).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Output directory (gets sweep-NAME.csv and .json).
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// Python interpreter with `distributed` installed (tools/requirements-sweep.txt).
    #[arg(long, default_value = "python3")]
    pub python: String,
}

/// Arguments of `unpinned run-point` (one point of a sweep; prints its table as JSON).
#[derive(Args, Debug)]
pub struct RunPointArgs {
    /// Experiment name.
    pub experiment: String,
    #[command(flatten)]
    pub profile: ProfileArgs,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Spec {
    experiment: String,
    #[serde(default)]
    profile: Option<String>,
    #[serde(default)]
    seeds: Option<Vec<u64>>,
    #[serde(default)]
    grid: BTreeMap<String, Vec<toml::Value>>,
    #[serde(default)]
    set: BTreeMap<String, toml::Value>,
}

/// A point's table, as text (what crosses process boundaries).
#[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
pub struct PointTable {
    /// Column names.
    pub columns: Vec<String>,
    /// Rows, every cell as text.
    pub rows: Vec<Vec<String>>,
}

fn value_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Run one point in this process: the experiment's table as text.
pub fn run_point(experiment: &str, profile: &ProfileArgs) -> Result<PointTable, CliError> {
    let spec = find_experiment(experiment)?;
    let s = setup_for(spec, profile)?;
    let ctx = resolve(spec, &s)?.context(&s, &|_, _| {});
    let out = (spec.run)(&ctx)
        .map_err(|e| CliError::Run(format!("{experiment} (seed {}): {e}", s.seed)))?;
    Ok(PointTable {
        columns: out.table.columns.clone(),
        rows: out
            .table
            .rows
            .iter()
            .map(|r| r.iter().map(|c| c.to_text()).collect())
            .collect(),
    })
}

/// `unpinned run-point`.
pub fn run_point_cmd(a: &RunPointArgs) -> Result<(), CliError> {
    let t = run_point(&a.experiment, &a.profile)?;
    println!(
        "{}",
        serde_json::to_string(&t).map_err(|e| CliError::Run(e.to_string()))?
    );
    Ok(())
}

struct Point {
    seed: u64,
    values: Vec<String>,
    args: ProfileArgs,
}

fn points(spec: &Spec) -> Vec<Point> {
    let keys: Vec<&String> = spec.grid.keys().collect();
    let mut combos: Vec<Vec<String>> = vec![Vec::new()];
    for k in &keys {
        combos = combos
            .into_iter()
            .flat_map(|c| {
                spec.grid[*k]
                    .iter()
                    .map(move |v| [c.clone(), vec![value_text(v)]].concat())
            })
            .collect();
    }
    let seeds = spec.seeds.clone().unwrap_or_else(|| vec![1]);
    let mut out = Vec::new();
    for c in &combos {
        for &seed in &seeds {
            let mut sets: Vec<String> = spec
                .set
                .iter()
                .map(|(k, v)| format!("{k}={}", value_text(v)))
                .collect();
            sets.extend(keys.iter().zip(c).map(|(k, v)| format!("{k}={v}")));
            out.push(Point {
                seed,
                values: c.clone(),
                args: ProfileArgs {
                    profile: spec.profile.clone().unwrap_or_else(|| "forth-arm".into()),
                    sets,
                    seed,
                },
            });
        }
    }
    out
}

fn invocation(experiment: &str, p: &Point) -> Vec<String> {
    let mut v = vec![
        experiment.to_string(),
        "--profile".into(),
        p.args.profile.clone(),
        "--seed".into(),
        p.seed.to_string(),
    ];
    for s in &p.args.sets {
        v.push("--set".into());
        v.push(s.clone());
    }
    v
}

fn run_local(experiment: &str, pts: &[Point], jobs: usize) -> Result<Vec<PointTable>, CliError> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<Option<Result<PointTable, CliError>>>> =
        Mutex::new((0..pts.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..jobs.clamp(1, pts.len().max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= pts.len() {
                    break;
                }
                let r = run_point(experiment, &pts[i].args);
                out.lock().expect("no panic holding the lock")[i] = Some(r);
            });
        }
    });
    out.into_inner()
        .expect("lock")
        .into_iter()
        .map(|r| r.expect("every point ran"))
        .collect()
}

fn run_cluster(
    experiment: &str,
    pts: &[Point],
    address: &str,
    python: &str,
) -> Result<Vec<PointTable>, CliError> {
    if !address.starts_with("tcp://") {
        return Err(CliError::Usage(format!(
            "--cluster {address:?}: expected tcp://HOST:PORT"
        )));
    }
    let exe = std::env::current_exe()
        .map_err(|e| CliError::Run(format!("cannot find this executable: {e}")))?;
    let script =
        std::env::temp_dir().join(format!("unpinned-sweep-dask-{}.py", std::process::id()));
    std::fs::write(&script, include_str!("../../../tools/sweep_dask.py"))
        .map_err(|e| CliError::Run(format!("cannot write {}: {e}", script.display())))?;
    let input: Vec<Vec<String>> = pts.iter().map(|p| invocation(experiment, p)).collect();
    let mut child = Command::new(python)
        .arg(&script)
        .arg(address)
        .arg(&exe)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| CliError::Run(format!("cannot start {python}: {e}")))?;
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("piped");
        stdin
            .write_all(serde_json::to_string(&input).expect("strings").as_bytes())
            .map_err(|e| CliError::Run(e.to_string()))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| CliError::Run(e.to_string()))?;
    let _ = std::fs::remove_file(&script);
    if !out.status.success() {
        return Err(CliError::Run(format!(
            "the Dask driver failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let texts: Vec<String> = serde_json::from_slice(&out.stdout)
        .map_err(|e| CliError::Run(format!("the Dask driver's output: {e}")))?;
    if texts.len() != pts.len() {
        return Err(CliError::Run(format!(
            "the Dask driver returned {} results for {} points",
            texts.len(),
            pts.len()
        )));
    }
    texts
        .iter()
        .map(|t| {
            serde_json::from_str(t.trim())
                .map_err(|e| CliError::Run(format!("a point's output: {e}")))
        })
        .collect()
}

/// Merge the points' tables: one row per row of each point, prefixed with the point's seed
/// and grid values.
fn merge(keys: &[&String], pts: &[Point], tables: &[PointTable]) -> Result<Table, CliError> {
    let cols = tables
        .first()
        .map(|t| t.columns.clone())
        .unwrap_or_default();
    let mut names: Vec<String> = vec!["sweep_seed".into()];
    names.extend(
        keys.iter()
            .map(|k| format!("sweep_{}", k.replace('.', "_"))),
    );
    names.extend(cols.iter().cloned());
    let refs: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
    let mut table = Table::new(&refs);
    for (p, t) in pts.iter().zip(tables) {
        if t.columns != cols {
            return Err(CliError::Run(
                "points produced tables with different columns".into(),
            ));
        }
        for row in &t.rows {
            let mut r: Vec<Cell> = vec![Cell::from(p.seed)];
            r.extend(p.values.iter().map(|v| Cell::from(v.clone())));
            r.extend(row.iter().map(|c| Cell::from(c.clone())));
            table.push(r);
        }
    }
    Ok(table)
}

/// `unpinned sweep`.
pub fn run(a: &SweepArgs) -> Result<(), CliError> {
    let text = std::fs::read_to_string(&a.spec)
        .map_err(|e| CliError::Usage(format!("cannot read {}: {e}", a.spec.display())))?;
    let spec: Spec =
        toml::from_str(&text).map_err(|e| CliError::Usage(format!("{}: {e}", a.spec.display())))?;
    find_experiment(&spec.experiment)?;
    if spec.grid.values().any(|v| v.is_empty()) || spec.seeds.as_ref().is_some_and(|s| s.is_empty())
    {
        return Err(CliError::Usage(format!(
            "{}: every grid list and seeds must be non-empty",
            a.spec.display()
        )));
    }
    let pts = points(&spec);
    let keys: Vec<&String> = spec.grid.keys().collect();
    let wall = std::time::Instant::now();
    let tables = match &a.cluster {
        None => run_local(
            &spec.experiment,
            &pts,
            a.jobs.unwrap_or_else(|| {
                std::thread::available_parallelism()
                    .map(|n| n.get())
                    .unwrap_or(1)
            }),
        )?,
        Some(addr) => run_cluster(&spec.experiment, &pts, addr, &a.python)?,
    };
    let table = merge(&keys, &pts, &tables)?;
    let name = format!("sweep-{}", spec.experiment);
    let mut meta = Metadata::new(&name, "sweep");
    meta.wall_time_s = wall.elapsed().as_secs_f64();
    meta.extra = serde_json::json!({
        "spec": a.spec.display().to_string(), "experiment": spec.experiment, "points": pts.len(),
        "grid": spec.grid.iter().map(|(k, v)| (k.clone(), v.iter().map(value_text).collect::<Vec<_>>())).collect::<BTreeMap<_, _>>(),
        "set": spec.set.iter().map(|(k, v)| (k.clone(), value_text(v))).collect::<BTreeMap<_, _>>(),
        "seeds": pts.iter().map(|p| p.seed).collect::<std::collections::BTreeSet<_>>(),
        "executor": a.cluster.clone().unwrap_or_else(|| "local".into()),
    });
    let files = unpinned_report::write_experiment(&a.out, &name, &table, &[], &meta)
        .map_err(|e| CliError::Run(format!("writing {}: {e}", a.out.display())))?;
    println!(
        "{}: {} points, {} rows",
        files.csv.display(),
        pts.len(),
        table.rows.len()
    );
    Ok(())
}
