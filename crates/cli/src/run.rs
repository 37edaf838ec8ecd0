//! Running experiments: profile + overrides + parameters, progress, files. Used by both
//! `unpinned sim` and `unpinned reproduce`.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::time::{Instant, SystemTime};

use unpinned_core::profile::Profile;
use unpinned_experiments::{ExperimentError, ExperimentSpec, RunContext};
use unpinned_report::{
    rfc3339_utc, write_experiment, ExperimentFiles, Metadata, ReportEntry, Table,
};

use crate::args::ProfileArgs;
use crate::error::CliError;
use crate::progress::Progress;

/// A resolved configuration: profile after overrides, experiment parameters, seed.
#[derive(Clone, Debug)]
pub struct Setup {
    /// The profile after all profile overrides.
    pub profile: Profile,
    /// `exp.NAME=VALUE` assignments, without the `exp.` prefix.
    pub params: BTreeMap<String, String>,
    /// Master seed.
    pub seed: u64,
    /// All `--set` assignments as given.
    pub sets: Vec<String>,
}

/// Load the profile and apply `--set`: keys starting with `exp.` become experiment
/// parameters, the others profile overrides (in order). Errors are usage errors.
pub fn setup(args: &ProfileArgs) -> Result<Setup, CliError> {
    let mut profile = Profile::load(&args.profile).map_err(|e| CliError::Usage(e.to_string()))?;
    let mut params = BTreeMap::new();
    for set in &args.sets {
        if let Some(rest) = set.trim().strip_prefix("exp.") {
            let (k, v) = rest.split_once('=').ok_or_else(|| {
                CliError::Usage(format!("bad --set {set:?}: expected exp.NAME=VALUE"))
            })?;
            let k = k.trim();
            if k.is_empty() {
                return Err(CliError::Usage(format!(
                    "bad --set {set:?}: empty parameter name"
                )));
            }
            params.insert(k.to_string(), v.trim().to_string());
        } else {
            profile = profile
                .with_override(set)
                .map_err(|e| CliError::Usage(e.to_string()))?;
        }
    }
    Ok(Setup {
        profile,
        params,
        seed: args.seed,
        sets: args.sets.clone(),
    })
}

/// Levenshtein distance (names are short).
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Names among `names` close to `wanted` (typos, or one containing the other), best first.
pub fn close_names<'a>(wanted: &str, names: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut scored: Vec<(usize, &str)> = names
        .into_iter()
        .filter_map(|n| {
            let d = distance(wanted, n);
            let near = d <= (wanted.len() / 3).max(2)
                || (wanted.len() >= 3 && (n.contains(wanted) || wanted.contains(n)));
            near.then_some((d, n))
        })
        .collect();
    scored.sort();
    scored.into_iter().take(5).map(|(_, n)| n).collect()
}

/// The registered experiment called `name`, or a usage error suggesting close names.
pub fn find_experiment(name: &str) -> Result<&'static ExperimentSpec, CliError> {
    if let Some(e) = unpinned_experiments::find(name) {
        return Ok(e);
    }
    let all = unpinned_experiments::all();
    let close = close_names(name, all.iter().map(|e| e.name));
    let mut msg = format!("no experiment named {name:?}");
    if !close.is_empty() {
        msg.push_str(&format!("; did you mean {}?", close.join(", ")));
    }
    if all.is_empty() {
        msg.push_str(" (no experiments are registered yet)");
    }
    msg.push_str("\nsee `unpinned sim --list` for all experiments");
    Err(CliError::Usage(msg))
}

/// What one run produced and where it was written.
pub struct Outcome {
    /// Files written.
    pub files: ExperimentFiles,
    /// The table.
    pub table: Table,
    /// Its metadata (also in the JSON file).
    pub meta: Metadata,
}

impl Outcome {
    /// The entry of this run in the HTML report.
    pub fn into_entry(self, spec: &ExperimentSpec) -> ReportEntry {
        ReportEntry {
            name: spec.name.to_string(),
            system: spec.system.to_string(),
            description: spec.description.to_string(),
            files: self.files,
            table: self.table,
            meta: self.meta,
        }
    }

    /// Paths written, one per line, then a one-line summary.
    pub fn print(&self) {
        println!("{}", self.files.csv.display());
        println!("{}", self.files.json.display());
        for p in &self.files.svgs {
            println!("{}", p.display());
        }
        println!(
            "{}: {} rows, {} simulated events, {:.2} s",
            self.meta.experiment,
            self.table.rows.len(),
            self.meta.sim_events,
            self.meta.wall_time_s
        );
    }
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

/// Run `spec` with `setup`, showing progress (hidden when `quiet`), and write its files to
/// `out`. A bad experiment parameter is a usage error; a simulation failure, a panic (a bug)
/// or a file error is a run error.
pub fn run_experiment(
    spec: &ExperimentSpec,
    setup: &Setup,
    out: &Path,
    quiet: bool,
) -> Result<Outcome, CliError> {
    let progress = Progress::new(spec.name, quiet);
    let callback = |done: u64, total: u64| progress.update(done, total);
    let ctx = RunContext {
        profile: setup.profile.clone(),
        seed: setup.seed,
        params: setup.params.clone(),
        progress: &callback,
    };
    let start = Instant::now();
    let result = catch_unwind(AssertUnwindSafe(|| (spec.run)(&ctx)));
    let wall = start.elapsed().as_secs_f64();
    progress.finish();
    let output = match result {
        Ok(Ok(o)) => o,
        Ok(Err(e @ ExperimentError::BadParam(..))) => {
            return Err(CliError::Usage(format!("{}: {e}", spec.name)))
        }
        Ok(Err(e)) => {
            return Err(CliError::Run(format!(
                "{} (seed {}): {e}",
                spec.name, setup.seed
            )))
        }
        Err(p) => {
            return Err(CliError::Run(format!(
                "{} (seed {}) panicked: {} (this is a bug)",
                spec.name,
                setup.seed,
                panic_message(p.as_ref())
            )))
        }
    };
    let meta = Metadata {
        experiment: spec.name.to_string(),
        system: spec.system.to_string(),
        version: unpinned_report::VERSION.to_string(),
        profile_name: setup.profile.name.clone(),
        profile: serde_json::to_value(&setup.profile).map_err(|e| CliError::Run(e.to_string()))?,
        parameters: setup.params.clone(),
        seed: setup.seed,
        wall_time_s: wall,
        sim_events: output.sim_events,
        created: rfc3339_utc(SystemTime::now()),
        command: std::env::args().collect(),
        extra: output.meta,
    };
    let files =
        write_experiment(out, spec.name, &output.table, &output.plots, &meta).map_err(|e| {
            CliError::Run(format!(
                "{}: writing files to {}: {e}",
                spec.name,
                out.display()
            ))
        })?;
    Ok(Outcome {
        files,
        table: output.table,
        meta,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use unpinned_experiments::{Cell, ExperimentOutput, PlotSpec};

    fn demo(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
        let points: u64 = ctx.param("points", 4)?;
        let mut table = Table::new(&["scheme", "x", "y_us"]);
        for i in 0..points {
            (ctx.progress)(i, points);
            table.push(vec![
                Cell::from("a"),
                i.into(),
                (i as f64 * 1.5 + ctx.seed as f64).into(),
            ]);
        }
        (ctx.progress)(points, points);
        Ok(ExperimentOutput {
            table,
            plots: vec![PlotSpec::line("demo", "x", "y_us", Some("scheme"))],
            sim_events: 42,
            meta: serde_json::json!({"block_bytes": ctx.profile.engine.block_bytes}),
        })
    }
    fn failing(_: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
        Err(ExperimentError::Sim("invariant broken".into()))
    }
    /// Prints a panic message to the test output: expected.
    fn panicking(_: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
        panic!("boom")
    }
    static DEMO: ExperimentSpec = ExperimentSpec {
        name: "demo-exp",
        system: "part",
        description: "d",
        run: demo,
    };
    static FAILING: ExperimentSpec = ExperimentSpec {
        name: "fail-exp",
        system: "part",
        description: "d",
        run: failing,
    };
    static PANICKING: ExperimentSpec = ExperimentSpec {
        name: "panic-exp",
        system: "part",
        description: "d",
        run: panicking,
    };

    #[test]
    fn runs_write_files_and_map_errors() {
        let nanos = SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir =
            std::env::temp_dir().join(format!("unpinned-cli-run-{}-{nanos}", std::process::id()));
        let args = ProfileArgs {
            profile: "forth-arm".into(),
            sets: vec!["exp.points=6".into(), "engine.block_bytes=8192".into()],
            seed: 5,
        };
        let s = setup(&args).unwrap();
        let o = run_experiment(&DEMO, &s, &dir, true).unwrap();
        assert_eq!(o.table.rows.len(), 6);
        assert_eq!(o.files.svgs, vec![dir.join("demo-exp.svg")]);
        let j: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&o.files.json).unwrap()).unwrap();
        assert_eq!(j["seed"], 5);
        assert_eq!(j["sim_events"], 42);
        assert_eq!(j["parameters"]["points"], "6");
        assert_eq!(j["profile"]["engine"]["block_bytes"], 8192);
        assert_eq!(j["extra"]["block_bytes"], 8192);
        assert_eq!(o.into_entry(&DEMO).name, "demo-exp");

        let bad = setup(&ProfileArgs {
            sets: vec!["exp.points=many".into()],
            ..args.clone()
        })
        .unwrap();
        assert!(
            matches!(run_experiment(&DEMO, &bad, &dir, true), Err(CliError::Usage(m)) if m.contains("points"))
        );
        assert!(
            matches!(run_experiment(&FAILING, &s, &dir, true), Err(CliError::Run(m)) if m.contains("seed 5"))
        );
        assert!(
            matches!(run_experiment(&PANICKING, &s, &dir, true), Err(CliError::Run(m)) if m.contains("boom"))
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn close_names_finds_typos() {
        let names = ["part-fault-all", "part-latency", "odp-pitfall"];
        assert_eq!(close_names("part-falt-all", names), ["part-fault-all"]);
        assert_eq!(close_names("pitfall", names), ["odp-pitfall"]);
        assert!(close_names("zzz", names).is_empty());
    }

    #[test]
    fn setup_splits_params_and_overrides() {
        let args = ProfileArgs {
            profile: "forth-arm".into(),
            sets: vec![
                "exp.sizes=4096".into(),
                "engine.block_timeout_us=100".into(),
            ],
            seed: 3,
        };
        let s = setup(&args).unwrap();
        assert_eq!(s.params["sizes"], "4096");
        assert_eq!(s.profile.engine.block_timeout_us, 100.0);
        let bad = ProfileArgs {
            sets: vec!["engine.nope=1".into()],
            ..args
        };
        assert!(matches!(setup(&bad), Err(CliError::Usage(_))));
    }
}
