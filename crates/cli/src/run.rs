//! Running experiments: profile + overrides + parameters, progress, files. Used by both
//! `unpinned sim` and `unpinned reproduce`.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::time::{Instant, SystemTime};

use unpinned_core::profile::Profile;
use unpinned_experiments::params::{effective, validate_map};
use unpinned_experiments::{
    AnyProfile, Backends, ExperimentError, ExperimentSpec, ProfileKind, RunContext,
};
use unpinned_report::{
    rfc3339_utc, write_experiment, ExperimentFiles, Metadata, ReportEntry, Table,
};

use crate::args::ProfileArgs;
use crate::error::CliError;
use crate::progress::Progress;

/// A resolved configuration: profile after overrides, experiment parameters, seed.
#[derive(Clone, Debug)]
pub struct Setup {
    /// The PART profile after all profile overrides (what PART experiments and the PART-only
    /// commands use; [`run_experiment`] resolves the profile of each experiment's kind from
    /// `profile_arg` and `overrides`).
    pub profile: Profile,
    /// `--profile` as given (empty: the default of each experiment's kind).
    pub profile_arg: String,
    /// Profile overrides the command applies before the user's (`unpinned live`: the live
    /// runtime's defaults). An experiment that sets one of these fields itself overrides them
    /// without a word: they are not the user's.
    pub base: Vec<String>,
    /// The user's profile overrides (`--set` without `exp.`), in order, applied after
    /// [`Setup::base`]; one of a field the experiment sets itself is refused.
    pub overrides: Vec<String>,
    /// `exp.NAME=VALUE` assignments, without the `exp.` prefix.
    pub params: BTreeMap<String, String>,
    /// Master seed.
    pub seed: u64,
    /// All `--set` assignments as given.
    pub sets: Vec<String>,
}

/// Split `--set` into experiment parameters (`exp.NAME=VALUE`) and profile overrides.
fn split_sets(sets: &[String]) -> Result<(BTreeMap<String, String>, Vec<String>), CliError> {
    let mut params = BTreeMap::new();
    let mut overrides = Vec::new();
    for set in sets {
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
            overrides.push(set.clone());
        }
    }
    Ok((params, overrides))
}

/// Which experiments use which profile kind, one line per kind.
pub fn kinds_help() -> String {
    ProfileKind::ALL
        .iter()
        .map(|k| format!("  {}", k.describe()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Load `--profile` (empty: the built-in of `kind`), refusing a profile of another kind.
fn load_kind(arg: &str, kind: ProfileKind, user: &str) -> Result<AnyProfile, CliError> {
    if arg.is_empty() {
        return Ok(AnyProfile::builtin(kind));
    }
    let p = AnyProfile::load(arg).map_err(CliError::Usage)?;
    if p.kind() != kind {
        return Err(CliError::Usage(format!(
            "--profile {arg}: {:?} is {} {} profile, and {user} uses {} profiles\nwhich experiments use which profile:\n{}",
            p.name(),
            p.kind().article(),
            p.kind().name(),
            kind.name(),
            kinds_help()
        )));
    }
    Ok(p)
}

/// Apply `overrides` to `p`; the error says which profile and which experiments use it.
fn apply_overrides(
    mut p: AnyProfile,
    overrides: &[String],
    user: &str,
) -> Result<AnyProfile, CliError> {
    for o in overrides {
        p = p.with_override(o).map_err(|e| {
            CliError::Usage(format!(
                "--set {o}: {e}\n{user} uses the {} profile {:?} (`unpinned profile show {}` lists its fields); which experiments use which profile:\n{}",
                p.kind().name(),
                p.name(),
                p.name(),
                kinds_help()
            ))
        })?;
    }
    Ok(p)
}

/// Load the PART profile and apply `--set`: keys starting with `exp.` become experiment
/// parameters, the others PART profile overrides (in order). For the commands that run PART
/// only; errors are usage errors.
pub fn setup(args: &ProfileArgs) -> Result<Setup, CliError> {
    setup_with_base(args, &[])
}

/// [`setup`] with the command's own profile overrides `base` applied before the user's
/// ([`Setup::base`]).
pub fn setup_with_base(args: &ProfileArgs, base: &[String]) -> Result<Setup, CliError> {
    let (params, overrides) = split_sets(&args.sets)?;
    let part = load_kind(&args.profile, ProfileKind::Part, "this command")?;
    let all: Vec<String> = base.iter().chain(&overrides).cloned().collect();
    let profile = match apply_overrides(part, &all, "this command")? {
        AnyProfile::Part(p) => p,
        _ => unreachable!("a PART profile stays one"),
    };
    Ok(Setup {
        profile,
        profile_arg: args.profile.clone(),
        base: base.to_vec(),
        overrides,
        params,
        seed: args.seed,
        sets: base.iter().chain(&args.sets).cloned().collect(),
    })
}

/// `--profile` and `--set` of `args`, split, for one experiment: its profile is resolved by
/// [`resolve`] (any kind), `Setup::profile` is the PART profile when it uses one.
pub fn setup_for(spec: &ExperimentSpec, args: &ProfileArgs) -> Result<Setup, CliError> {
    let (params, overrides) = split_sets(&args.sets)?;
    let mut s = Setup {
        profile: Profile::forth_arm(),
        profile_arg: args.profile.clone(),
        base: Vec::new(),
        overrides,
        params,
        seed: args.seed,
        sets: args.sets.clone(),
    };
    s.profile = resolve(spec, &s)?.profile;
    Ok(s)
}

/// The profiles one experiment runs with.
pub struct Resolved {
    /// The PART profile (the built-in for experiments of other kinds).
    pub profile: Profile,
    /// The profile of an IB/AA/DSM experiment when `--profile` or `--set` changed it.
    pub kind_profile: Option<AnyProfile>,
    /// The name of the profile(s) it uses and their JSON, for its metadata (every built-in
    /// of the kind for an experiment that runs them all by default).
    pub recorded: (String, serde_json::Value),
}

impl Resolved {
    /// The run context of `setup` with these profiles.
    pub fn context<'a>(
        &self,
        setup: &Setup,
        progress: &'a (dyn Fn(u64, u64) + Sync),
    ) -> RunContext<'a> {
        RunContext {
            profile: self.profile.clone(),
            kind_profile: self.kind_profile.clone(),
            seed: setup.seed,
            params: setup.params.clone(),
            progress,
        }
    }
}

/// Resolve the profile `spec` uses from `setup` and check its parameters: a profile of
/// another kind, an override of a field it does not have or sets itself, an unknown
/// parameter or an impossible value are usage errors that say what to use instead.
pub fn resolve(spec: &ExperimentSpec, setup: &Setup) -> Result<Resolved, CliError> {
    let user = format!("{} ({})", spec.name, spec.backends.name());
    for o in &setup.overrides {
        let key = o.split_once('=').map_or(o.as_str(), |(k, _)| k).trim();
        if let Some(f) = spec.fixed.iter().find(|f| f.field == key) {
            return Err(CliError::Usage(format!(
                "--set {o}: {} sets {} itself at every point, so it would change nothing; use {}",
                spec.name, f.field, f.instead
            )));
        }
    }
    let given = load_kind(&setup.profile_arg, spec.profile, &user)?;
    let all: Vec<String> = setup.base.iter().chain(&setup.overrides).cloned().collect();
    let used = apply_overrides(given, &all, &user)?;
    if let Some(params) = spec.params {
        let command = if spec.system == "live" { "live" } else { "sim" };
        validate_map(params, &setup.params).map_err(|e| {
            CliError::Usage(format!(
                "{}: {e}\nsee `unpinned {command} {} --help`",
                spec.name, spec.name
            ))
        })?;
        check_node_params(spec.name, params, &setup.params)?;
    }
    let changed = !setup.profile_arg.is_empty() || !all.is_empty();
    let recorded = if spec.every_builtin_by_default && !changed {
        let all: Vec<AnyProfile> = spec
            .profile
            .builtins()
            .iter()
            .map(|n| AnyProfile::load(n).expect("built-in profiles load"))
            .collect();
        (
            spec.profile.builtins().join(","),
            serde_json::Value::Array(all.iter().map(AnyProfile::to_json).collect()),
        )
    } else {
        (used.name().to_string(), used.to_json())
    };
    Ok(match &used {
        AnyProfile::Part(p) => Resolved {
            profile: p.clone(),
            kind_profile: None,
            recorded,
        },
        other => Resolved {
            profile: Profile::forth_arm(),
            kind_profile: changed.then(|| other.clone()),
            recorded,
        },
    })
}

pub use unpinned_experiments::params::close_names;

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

/// The help of one experiment: what it is, where it runs, its profile kind, the profile
/// fields it sets itself, and its parameters with type, default, unit and allowed values.
pub fn experiment_help(spec: &ExperimentSpec) -> String {
    let mut out = format!("{}: {}\n\n", spec.name, spec.description);
    let runs = match spec.backends {
        Backends::Sim => "the simulator (`unpinned sim`)",
        Backends::Live => "the live runtime (`unpinned live`)",
        Backends::Both => "the simulator (`unpinned sim`) and the live runtime (`unpinned live`)",
    };
    out.push_str(&format!("Runs on: {runs}\n"));
    let k = spec.profile;
    out.push_str(&format!(
        "Profile: {} (--profile {}, the default, or a file like profiles/{}.toml); --set KEY=VALUE overrides one of its fields (`unpinned profile show {}` lists them)\n",
        k.name(),
        k.builtins().join("|"),
        k.builtins()[0],
        k.builtins()[0]
    ));
    if spec.every_builtin_by_default {
        out.push_str(&format!(
            "Without --profile or a profile --set it runs every built-in {} profile ({}); with one, that profile only\n",
            k.name(),
            k.builtins().join(", ")
        ));
    }
    for f in spec.fixed {
        out.push_str(&format!(
            "Sets itself: {} (a --set of it is refused; use {})\n",
            f.field, f.instead
        ));
    }
    let Some(params) = spec.params else {
        out.push_str("\nParameters: not declared (read with --set exp.NAME=VALUE; see the experiment's module docs)\n");
        return out;
    };
    if params.is_empty() {
        out.push_str("\nParameters: none\n");
        return out;
    }
    out.push_str("\nParameters (--set exp.NAME=VALUE):\n");
    let rows: Vec<[String; 6]> = params
        .iter()
        .map(|p| {
            [
                p.name.to_string(),
                p.kind.to_string(),
                if p.default.is_empty() {
                    "(empty)".to_string()
                } else {
                    p.default.to_string()
                },
                p.unit.to_string(),
                p.check.to_string(),
                p.doc.to_string(),
            ]
        })
        .collect();
    let head = ["NAME", "TYPE", "DEFAULT", "UNIT", "ALLOWED", "DESCRIPTION"];
    let w: Vec<usize> = (0..5)
        .map(|i| {
            rows.iter()
                .map(|r| r[i].len())
                .max()
                .unwrap_or(0)
                .max(head[i].len())
        })
        .collect();
    let line = |r: [&str; 6]| {
        format!(
            "  {:w0$}  {:w1$}  {:w2$}  {:w3$}  {:w4$}  {}\n",
            r[0],
            r[1],
            r[2],
            r[3],
            r[4],
            r[5],
            w0 = w[0],
            w1 = w[1],
            w2 = w[2],
            w3 = w[3],
            w4 = w[4]
        )
    };
    out.push_str(&line(head));
    for r in &rows {
        out.push_str(&line([&r[0], &r[1], &r[2], &r[3], &r[4], &r[5]]));
    }
    out
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

/// Run `spec` with `setup` (its profile resolved by [`resolve`]), showing progress (hidden
/// when `quiet`), and write its files to `out`. A profile or parameter the experiment does
/// not take is a usage error; a simulation failure, a panic (a bug)
/// or a file error is a run error.
pub fn run_experiment(
    spec: &ExperimentSpec,
    setup: &Setup,
    out: &Path,
    quiet: bool,
) -> Result<Outcome, CliError> {
    let resolved = resolve(spec, setup)?;
    let progress = Progress::new(spec.name, quiet);
    let callback = |done: u64, total: u64| progress.update(done, total);
    let ctx = resolved.context(setup, &callback);
    let start = Instant::now();
    let result = catch_unwind(AssertUnwindSafe(|| (spec.run)(&ctx)));
    let wall = start.elapsed().as_secs_f64();
    progress.finish();
    let output = match result {
        Ok(Ok(o)) => o,
        Ok(Err(
            e @ (ExperimentError::BadParam(..)
            | ExperimentError::Param(_)
            | ExperimentError::Profile(_)),
        )) => return Err(CliError::Usage(format!("{}: {e}", spec.name))),
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
        profile_name: resolved.recorded.0.clone(),
        profile: resolved.recorded.1.clone(),
        parameters: match spec.params {
            Some(params) => effective(params, &setup.params),
            None => setup.params.clone(),
        },
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

    unpinned_experiments::declare_params! {
        /// Parameters of the demo experiment.
        pub struct DemoParams {
            points: u64 {
                default: "4",
                unit: "points",
                check: unpinned_experiments::params::int(1, 100),
                doc: "Rows of the table",
            },
        }
    }

    fn demo(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
        let DemoParams { points } = ctx.params()?;
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
        profile: ProfileKind::Part,
        backends: Backends::Sim,
        params: Some(<DemoParams as unpinned_experiments::Declared>::PARAMS),
        every_builtin_by_default: false,
        fixed: &[unpinned_experiments::FixedField {
            field: "engine.block_timeout_us",
            instead: "exp.points",
        }],
        run: demo,
    };
    static FAILING: ExperimentSpec = ExperimentSpec {
        name: "fail-exp",
        system: "part",
        run: failing,
        ..DEMO
    };
    static PANICKING: ExperimentSpec = ExperimentSpec {
        name: "panic-exp",
        system: "part",
        run: panicking,
        ..DEMO
    };

    fn args(profile: &str, sets: &[&str]) -> ProfileArgs {
        ProfileArgs {
            profile: profile.into(),
            sets: sets.iter().map(|s| s.to_string()).collect(),
            seed: 1,
        }
    }

    fn usage(spec: &str, profile: &str, sets: &[&str]) -> String {
        let spec = unpinned_experiments::find(spec).unwrap();
        match setup_for(spec, &args(profile, sets)) {
            Err(CliError::Usage(m)) => m,
            Err(e) => panic!("{}: not a usage error: {e}", spec.name),
            Ok(_) => panic!("{}: {profile} {sets:?} accepted", spec.name),
        }
    }

    #[test]
    fn unknown_keys_and_impossible_values_are_refused_before_running() {
        let m = usage("part-fault-small", "", &["exp.seedz=3"]);
        assert!(m.contains("unknown parameter exp.seedz"), "{m}");
        assert!(m.contains("known: exp.sizes, exp.reps"), "{m}");
        let m = usage("part-fault-frequency", "", &["exp.seedz=3"]);
        assert!(
            m.contains("did you mean exp.seeds?") && m.contains("known: exp.seeds"),
            "{m}"
        );
        let m = usage("part-fault-frequency", "", &["exp.seeds=0"]);
        assert!(
            m.contains("exp.seeds=\"0\"") && m.contains("allowed: 1..="),
            "{m}"
        );
        let m = usage("odp-fix", "", &["exp.fix_periods_us="]);
        assert!(m.contains("non-empty"), "{m}");
        let m = usage("aa-sort", "", &["exp.nic_pj_per_byte=-1"]);
        assert!(
            m.contains("exp.nic_pj_per_byte") && m.contains(">= 0"),
            "{m}"
        );
    }

    #[test]
    fn profiles_of_another_kind_and_unused_overrides_are_refused() {
        // A PART experiment given an IB profile, and the other way round.
        let m = usage("part-fault-all", "connectx5", &[]);
        assert!(m.contains("\"connectx5\" is an IB profile"), "{m}");
        assert!(
            m.contains("odp-pitfall") && m.contains("part-fault-all"),
            "{m}"
        );
        let m = usage("odp-pitfall", "forth-arm", &[]);
        assert!(
            m.contains("PART profile") && m.contains("uses IB profiles"),
            "{m}"
        );
        // A PART field on an AA experiment.
        let m = usage("aa-counter", "", &["engine.block_timeout_us=250"]);
        assert!(m.contains("AA profile \"cray-xe6\""), "{m}");
        // A field the experiment sets itself.
        let m = usage("part-timeout", "", &["engine.block_timeout_us=250"]);
        assert!(m.contains("exp.timeouts_us"), "{m}");
    }

    #[test]
    fn every_profile_file_works_with_the_experiments_of_its_kind() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../profiles");
        let mut seen = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let file = path.to_str().unwrap();
            let kind = AnyProfile::load(file).unwrap().kind();
            for spec in unpinned_experiments::all() {
                let r = setup_for(spec, &args(file, &[]));
                assert_eq!(r.is_ok(), spec.profile == kind, "{file} on {}", spec.name);
            }
            seen += 1;
        }
        assert_eq!(seen, 7);
        // Overrides of each kind land in the profile the experiment gets.
        let spec = unpinned_experiments::find("odp-pitfall").unwrap();
        let s = setup_for(spec, &args("connectx5", &["timer.c_ack_floor=14"])).unwrap();
        match resolve(spec, &s).unwrap().kind_profile {
            Some(AnyProfile::Ib(p)) => {
                assert_eq!((p.name.as_str(), p.timer.c_ack_floor), ("connectx5", 14))
            }
            other => panic!("{other:?}"),
        }
        let spec = unpinned_experiments::find("part-fault-all").unwrap();
        let s = setup_for(spec, &args("", &["engine.block_timeout_us=250"])).unwrap();
        assert_eq!(s.profile.engine.block_timeout_us, 250.0);
        // No --profile and no override: the built-in, and the experiment is told nothing.
        let spec = unpinned_experiments::find("aa-counter").unwrap();
        let s = setup_for(spec, &args("", &[])).unwrap();
        let r = resolve(spec, &s).unwrap();
        assert!(r.kind_profile.is_none());
        assert_eq!(r.recorded.0, "cray-xe6");
    }

    #[test]
    fn help_lists_parameters_profile_and_backends() {
        let h = experiment_help(unpinned_experiments::find("part-fault-frequency").unwrap());
        for want in [
            "part-fault-frequency:",
            "Runs on: the simulator (`unpinned sim`) and the live runtime",
            "Profile: PART (--profile forth-arm",
            "NAME",
            "seeds",
            "integer",
            "1..=10000",
        ] {
            assert!(h.contains(want), "{want:?} not in\n{h}");
        }
        let line = h
            .lines()
            .find(|l| l.trim_start().starts_with("seeds"))
            .unwrap();
        assert!(line.contains(" 5 "), "{line}");
        let h = experiment_help(unpinned_experiments::find("part-timeout").unwrap());
        assert!(
            h.contains("timeouts_us") && h.contains("us") && h.contains("100,500,1000"),
            "{h}"
        );
        assert!(h.contains("Sets itself: engine.block_timeout_us"), "{h}");
        let h = experiment_help(unpinned_experiments::find("odp-timeout-floor").unwrap());
        assert!(h.contains("runs every built-in IB profile"), "{h}");
        let spec = unpinned_experiments::find("odp-timeout-floor").unwrap();
        let r = resolve(spec, &setup_for(spec, &args("", &[])).unwrap()).unwrap();
        assert_eq!(r.recorded.0, "connectx4,connectx3,connectx5,connectx6");
        let r = resolve(spec, &setup_for(spec, &args("connectx5", &[])).unwrap()).unwrap();
        assert_eq!(r.recorded.0, "connectx5");
        let h = experiment_help(unpinned_experiments::find("odp-trace").unwrap());
        assert!(
            h.contains("Profile: IB") && h.contains("Parameters: none"),
            "{h}"
        );
        // Every registered experiment has a help that lists each of its parameters.
        for spec in unpinned_experiments::all() {
            let h = experiment_help(spec);
            for p in spec.params.unwrap() {
                assert!(
                    h.lines()
                        .any(|l| l.trim_start().starts_with(p.name) && l.contains(p.doc)),
                    "{}: {} missing",
                    spec.name,
                    p.name
                );
            }
        }
    }

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
        let fixed = setup(&ProfileArgs {
            sets: vec!["engine.block_timeout_us=1".into()],
            ..args.clone()
        })
        .unwrap();
        assert!(
            matches!(run_experiment(&DEMO, &fixed, &dir, true), Err(CliError::Usage(m)) if m.contains("use exp.points"))
        );
        let unknown = setup(&ProfileArgs {
            sets: vec!["exp.pointz=1".into()],
            ..args.clone()
        })
        .unwrap();
        assert!(
            matches!(run_experiment(&DEMO, &unknown, &dir, true), Err(CliError::Usage(m)) if m.contains("did you mean exp.points?"))
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

/// Refuse, before the run, node counts (parameters in the unit `nodes`) whose simulator
/// state alone would not fit in the memory available now.
fn check_node_params(
    experiment: &str,
    params: &[unpinned_experiments::params::Param],
    given: &BTreeMap<String, String>,
) -> Result<(), CliError> {
    for (name, value) in effective(params, given) {
        if params.iter().any(|p| p.name == name && p.unit == "nodes") {
            let most = value
                .split(',')
                .filter_map(|v| v.trim().parse::<u64>().ok())
                .max()
                .unwrap_or(0);
            crate::memcheck::check_nodes(experiment, &format!("exp.{name}"), most, 0, 0)
                .map_err(CliError::Usage)?;
        }
    }
    Ok(())
}
