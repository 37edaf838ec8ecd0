//! `unpinned bench shmem`: the OpenSHMEM benchmark (bench/shmem/osu_shmem.c) built with
//! unpinned's `oshcc` and with Open MPI's, run with 2 PEs in five configurations in one
//! command, rounds alternating their order, and the comparisons of the OpenSHMEM issue as
//! tables of median ratios: (a) defaults, and (b) PART against Open MPI on TCP twice, once
//! with `UCX_TLS=tcp,self` alone (its world collectives then still use shared memory: they
//! are MPI collectives over the BTLs, not UCX) and once with all its traffic on TCP.

mod compare;
mod exec;
mod tools;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Args;
use serde_json::json;
use unpinned_report::{write_experiment, Metadata, Table};

use compare::{compare, display_value, size_label, Row, Samples, Target};
use exec::{Config, OPENMPI, OPENMPI_ALLTCP, OPENMPI_TCP, UNPINNED, UNPINNED_PART};
use tools::{Implementation, Toolchain};

/// Arguments of `unpinned bench shmem`.
#[derive(Args, Debug)]
pub struct BenchShmemArgs {
    /// Rounds: each runs every configuration once (alternating their order); the tables show
    /// medians over the rounds.
    #[arg(long, default_value_t = 3)]
    pub repeat: usize,
    /// Quick mode: sizes up to 4 KiB, few iterations (a smoke test of seconds).
    #[arg(long)]
    pub quick: bool,
    /// Largest message size, bytes (a multiple of 8).
    #[arg(long, default_value_t = 4 << 20)]
    pub max_bytes: u64,
    /// Size steps: 4 (8 B, then MAX / 4^k) or 2 (every power of 2).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(2..=4))]
    pub factor: u64,
    /// Only these tests (comma list of put_lat, get_lat, put_bw, get_bw, put_rate, fadd_lat,
    /// cswap_lat, barrier_lat, bcast_lat).
    #[arg(long)]
    pub tests: Option<String>,
    /// Output directory: bench-shmem.csv (the comparisons), bench-shmem.json (metadata),
    /// bench-shmem-runs.csv (every run's lines), build/ (the programs), logs/ (each run's
    /// stdout and stderr).
    #[arg(long, default_value = "results/bench-shmem")]
    pub out: PathBuf,
    /// Directory of unpinned's oshcc and oshrun (default: this binary's directory; measure a
    /// release build: `cargo build --release -p unpinned-shmem`).
    #[arg(long, value_name = "DIR")]
    pub unpinned_bin: Option<PathBuf>,
    /// Directory of Open MPI's oshcc and oshrun.
    #[arg(long, value_name = "DIR", default_value = "/usr/bin")]
    pub openmpi_bin: PathBuf,
    /// Time limit of one run, seconds.
    #[arg(long, default_value_t = 900)]
    pub timeout_s: u64,
}

/// The comparisons of the issue: (name, title, unpinned's configuration, the peer's, target).
/// (b) is made against two peers: with UCX_TLS alone Open MPI's collectives are not on TCP.
const COMPARISONS: [(&str, &str, Config, Config, Target); 3] = [
    (
        "default",
        "(a) default settings, 2 PEs on this host: unpinned vs Open MPI's OpenSHMEM (UCX defaults)",
        UNPINNED,
        OPENMPI,
        Target::AtMost(1.5),
    ),
    (
        "part",
        "(b) every transfer through PART over shared memory vs Open MPI over TCP on loopback (UCX_TLS=tcp,self; its collectives stay on shared memory)",
        UNPINNED_PART,
        OPENMPI_TCP,
        Target::Ahead,
    ),
    (
        "part-alltcp",
        "(b') every transfer through PART over shared memory vs Open MPI with all traffic over TCP on loopback (UCX_TLS=tcp,self, OMPI_MCA_btl=self,tcp)",
        UNPINNED_PART,
        OPENMPI_ALLTCP,
        Target::Ahead,
    ),
];

/// Run `unpinned bench shmem`.
pub fn run(args: &BenchShmemArgs) -> Result<(), String> {
    if args.repeat == 0 {
        return Err("bench shmem: --repeat must be >= 1".into());
    }
    if args.max_bytes < 8 || !args.max_bytes.is_multiple_of(8) {
        return Err("bench shmem: --max-bytes must be a multiple of 8, at least 8".into());
    }
    let started = Instant::now();
    let ours = tools::unpinned(args.unpinned_bin.as_deref())?;
    let peer = tools::openmpi(&args.openmpi_bin);
    let build_dir = args.out.join("build");
    let logs = args.out.join("logs");
    std::fs::create_dir_all(&logs).map_err(|e| format!("cannot create {}: {e}", logs.display()))?;
    if ours.oshcc.parent().is_some_and(|d| d.ends_with("debug")) {
        eprintln!("bench shmem: note: {} is a debug build; measure a release build (`cargo build --release -p unpinned-shmem`, then --unpinned-bin target/release)", ours.oshcc.display());
    }
    let ours_prog = tools::build(&ours, &build_dir)?;
    eprintln!(
        "bench shmem: built {} with {}",
        ours_prog.display(),
        ours.oshcc.display()
    );
    let (peer, skipped) = match peer {
        Ok(t) => match tools::build(&t, &build_dir) {
            Ok(b) => {
                eprintln!(
                    "bench shmem: built {} with {}",
                    b.display(),
                    t.oshcc.display()
                );
                (Some((t, b)), String::new())
            }
            Err(e) => (
                None,
                format!("Open MPI's oshcc could not build the benchmark: {e}"),
            ),
        },
        Err(e) => (None, e),
    };
    if !skipped.is_empty() {
        eprintln!("bench shmem: {skipped}; running unpinned only");
    }

    let mut bench_args: Vec<String> = Vec::new();
    if args.quick {
        bench_args.push("-q".into());
    }
    if !args.quick || args.max_bytes != 4 << 20 {
        bench_args.extend(["-m".into(), args.max_bytes.to_string()]);
    }
    bench_args.extend(["-f".into(), args.factor.to_string()]);
    if let Some(t) = &args.tests {
        bench_args.extend(["-t".into(), t.clone()]);
    }
    let timeout = Duration::from_secs(args.timeout_s);

    let configs: Vec<&Config> = [
        &UNPINNED,
        &OPENMPI,
        &UNPINNED_PART,
        &OPENMPI_TCP,
        &OPENMPI_ALLTCP,
    ]
    .into_iter()
    .filter(|c| c.implementation == Implementation::Unpinned || peer.is_some())
    .collect();
    let program = |c: &Config| -> (&Toolchain, &std::path::Path) {
        match (c.implementation, &peer) {
            (Implementation::OpenMpi, Some((t, p))) => (t, p.as_path()),
            _ => (&ours, ours_prog.as_path()),
        }
    };
    eprintln!(
        "bench shmem: 2 PEs, {} round(s) of {} configuration(s), order alternating; Open MPI runs with OMPI_MCA_osc=^rdma (its shmem_finalize crashes otherwise)",
        args.repeat,
        configs.len()
    );
    let mut samples: Vec<Samples> = vec![Samples::default(); configs.len()];
    let mut runs = Table::new(&[
        "round",
        "configuration",
        "implementation",
        "test",
        "size_bytes",
        "iterations",
        "time_per_op_us",
    ]);
    let mut failures: Vec<String> = Vec::new();
    let mut ours_failed = 0;
    let mut commands = serde_json::Map::new();
    for round in 0..args.repeat {
        let order: Vec<usize> = if round % 2 == 0 {
            (0..configs.len()).collect()
        } else {
            (0..configs.len()).rev().collect()
        };
        for i in order {
            let c = configs[i];
            let (t, prog) = program(c);
            let cmd = exec::command_line(t, prog, &bench_args, timeout);
            commands.insert(c.name.into(), json!(cmd.join(" ")));
            let stem = format!("round{}-{}", round + 1, c.name);
            let t0 = Instant::now();
            eprint!("  round {}/{}: {:<14} ", round + 1, args.repeat, c.name);
            let out = exec::run(
                c,
                &cmd,
                &logs.join(format!("{stem}.csv")),
                &logs.join(format!("{stem}.stderr")),
                timeout,
            )
            .and_then(|text| compare::parse(&text));
            match out {
                Ok(lines) => {
                    eprintln!(
                        "{} lines in {:.1} s",
                        lines.len(),
                        t0.elapsed().as_secs_f64()
                    );
                    for l in &lines {
                        runs.push(vec![
                            (round as u64 + 1).into(),
                            c.name.into(),
                            c.implementation.name().into(),
                            l.test.clone().into(),
                            l.size_bytes.into(),
                            l.iterations.into(),
                            l.time_per_op_us.into(),
                        ]);
                    }
                    samples[i].add(&lines);
                }
                Err(e) => {
                    eprintln!("FAILED");
                    eprintln!("    {e}");
                    failures.push(format!("round {} {}: {e}", round + 1, c.name));
                    if c.implementation == Implementation::Unpinned {
                        ours_failed += 1;
                    }
                }
            }
        }
    }

    let samples_of = |c: &Config| -> Samples {
        configs
            .iter()
            .position(|k| k.name == c.name)
            .map(|i| samples[i].clone())
            .unwrap_or_default()
    };
    let mut summary = Table::new(&[
        "comparison",
        "test",
        "size_bytes",
        "unpinned_configuration",
        "peer_configuration",
        "unpinned_time_per_op_us",
        "peer_time_per_op_us",
        "time_ratio",
        "target_time_ratio",
        "target_met",
        "unpinned_rounds",
        "peer_rounds",
    ]);
    let mut verdicts = Vec::new();
    for (name, title, ours_c, peer_c, target) in &COMPARISONS {
        let rows = compare(&samples_of(ours_c), &samples_of(peer_c), *target);
        print_table(title, ours_c, peer_c, *target, &rows, peer.is_some());
        let missed: Vec<String> = rows
            .iter()
            .filter(|r| r.met == Some(false))
            .map(|r| format!("{} {}", r.test, size_label(r.size_bytes)))
            .collect();
        let judged = rows.iter().filter(|r| r.met.is_some()).count();
        verdicts.push(json!({
            "comparison": name, "lines": rows.len(), "judged": judged,
            "met": judged - missed.len(), "missed": missed,
        }));
        for r in &rows {
            let opt = |v: Option<f64>| v.map_or_else(|| "".into(), Into::into);
            summary.push(vec![
                (*name).into(),
                r.test.clone().into(),
                r.size_bytes.into(),
                ours_c.name.into(),
                peer_c.name.into(),
                r.ours_us.into(),
                opt(r.peer_us),
                opt(r.ratio),
                target.bound().into(),
                r.met.map_or("", |m| if m { "yes" } else { "no" }).into(),
                r.rounds.0.into(),
                r.rounds.1.into(),
            ]);
        }
    }

    let mut meta = Metadata::new("bench-shmem", "shmem");
    meta.wall_time_s = started.elapsed().as_secs_f64();
    meta.parameters = [
        ("repeat", args.repeat.to_string()),
        ("quick", args.quick.to_string()),
        ("max_bytes", args.max_bytes.to_string()),
        ("factor", args.factor.to_string()),
        ("tests", args.tests.clone().unwrap_or_else(|| "all".into())),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let config_json: Vec<serde_json::Value> = configs
        .iter()
        .map(|c| {
            json!({
                "name": c.name, "implementation": c.implementation.name(),
                "description": c.description,
                "env": c.env.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>(),
                "env_removed": c.env_removed,
                "command": commands.get(c.name),
            })
        })
        .collect();
    meta.extra = json!({
        "pes": 2,
        "ratio": "time_ratio = unpinned time per operation / peer time per operation (for bandwidth and message rate: the peer's throughput / unpinned's); < 1 means unpinned is faster",
        "median_over": "rounds (each round runs every configuration once; the order alternates between rounds)",
        "configurations": config_json,
        "comparisons": verdicts,
        "unpinned_oshcc": ours.oshcc.display().to_string(),
        "openmpi_oshcc": peer.as_ref().map(|(t, _)| tools::describe(t)),
        "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "failures": failures,
        "skipped": skipped,
    });
    write_experiment(&args.out, "bench-shmem", &summary, &[], &meta)
        .map_err(|e| format!("cannot write {}: {e}", args.out.display()))?;
    let runs_path = args.out.join("bench-shmem-runs.csv");
    write_csv(&runs_path, &runs)?;
    eprintln!(
        "bench shmem: wrote {}/bench-shmem.{{csv,json}} and {} ({:.0} s)",
        args.out.display(),
        runs_path.display(),
        started.elapsed().as_secs_f64()
    );
    if ours_failed > 0 {
        return Err(format!(
            "bench shmem: {ours_failed} run(s) of unpinned failed (see above and {})",
            logs.display()
        ));
    }
    Ok(())
}

/// Print one comparison: a line per (test, size) with both medians and the ratio, misses
/// marked.
fn print_table(
    title: &str,
    ours: &Config,
    peer: &Config,
    target: Target,
    rows: &[Row],
    has_peer: bool,
) {
    println!();
    println!("{title}");
    println!("  unpinned: {}", ours.description);
    if has_peer {
        println!("  peer:     {}", peer.description);
        println!("  target: {}; ratio = unpinned time / peer time (bandwidth, rate: peer / unpinned), medians over rounds", target.describe());
    } else {
        println!("  peer:     not run (see above)");
    }
    println!(
        "  {:<12} {:>8} {:>14} {:>14} {:>8}",
        "test", "size", "unpinned", "peer", "ratio"
    );
    for r in rows {
        let (v, unit) = display_value(&r.test, r.size_bytes, r.ours_us);
        let peer_text = r.peer_us.map_or_else(
            || "-".to_string(),
            |p| {
                let (pv, _) = display_value(&r.test, r.size_bytes, p);
                format!("{} {unit}", num(pv))
            },
        );
        let ratio = r
            .ratio
            .map_or_else(|| "-".into(), |x| format!("{}x", num(x)));
        let mark = match r.met {
            Some(false) => "  MISS",
            _ => "",
        };
        println!(
            "  {:<12} {:>8} {:>14} {:>14} {:>8}{mark}",
            r.test,
            size_label(r.size_bytes),
            format!("{} {unit}", num(v)),
            peer_text,
            ratio
        );
    }
    let judged = rows.iter().filter(|r| r.met.is_some()).count();
    let met = rows.iter().filter(|r| r.met == Some(true)).count();
    if judged > 0 {
        println!("  target met on {met} of {judged} lines");
    }
}

/// A value with 3 significant digits (no exponent).
fn num(v: f64) -> String {
    if !(v.is_finite() && v > 0.0) {
        return format!("{v}");
    }
    let decimals = (2 - v.log10().floor() as i32).max(0) as usize;
    format!("{v:.decimals$}")
}

/// `table` as CSV (the same text as the experiments' tables).
fn write_csv(path: &std::path::Path, table: &Table) -> Result<(), String> {
    let mut s = table.columns.join(",");
    s.push('\n');
    for row in &table.rows {
        let cells: Vec<String> = row.iter().map(|c| c.to_text()).collect();
        s.push_str(&cells.join(","));
        s.push('\n');
    }
    std::fs::write(path, s).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn numbers_keep_three_significant_digits() {
        assert_eq!(super::num(0.000123), "0.000123");
        assert_eq!(super::num(0.0304), "0.0304");
        assert_eq!(super::num(1.5), "1.50");
        assert_eq!(super::num(81.31), "81.3");
        assert_eq!(super::num(3845.2), "3845");
    }
}
