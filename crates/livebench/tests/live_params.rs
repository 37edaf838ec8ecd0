//! The live experiments declare their parameters and read them only through the declared
//! struct, so an unknown `--set exp.KEY` is refused before anything runs.

use std::collections::BTreeMap;

use unpinned_experiments::{ExperimentError, RunContext};
use unpinned_livebench::exp;

/// Every registered live experiment declares its parameters (so `unpinned live EXP --help`
/// lists them and the CLI checks the keys), each with a default its own check accepts.
#[test]
fn every_live_experiment_declares_its_parameters() {
    for spec in exp::specs() {
        let params = spec
            .params
            .unwrap_or_else(|| panic!("{}: parameters not declared", spec.name));
        for p in params {
            assert!(
                !p.doc.is_empty(),
                "{}: exp.{} has no doc",
                spec.name,
                p.name
            );
            (p.validate)(p.default, &p.check).unwrap_or_else(|e| {
                panic!("{}: default of exp.{} refused: {e}", spec.name, p.name)
            });
        }
    }
}

/// No file of src/exp reads a parameter outside its declared struct (`RunContext::param` is
/// gone; the raw map `ctx.params` is the CLI's).
#[test]
fn no_live_experiment_reads_an_undeclared_parameter() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    let mut dirs = vec![root];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                files.push(p);
            }
        }
    }
    assert!(files.len() > 12, "{files:?}");
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for bad in [".param(", ".params.", "params.get(", "params.contains_key("] {
            assert!(
                !text.contains(bad),
                "{}: reads a parameter outside its declared struct ({bad})",
                f.display()
            );
        }
    }
}

/// An unknown key is refused, naming the known ones, before the experiment starts a runtime.
#[test]
fn an_unknown_key_is_refused_by_every_live_experiment() {
    let progress = |_: u64, _: u64| {};
    for spec in exp::specs() {
        let ctx = RunContext {
            profile: exp::live_profile(),
            kind_profile: None,
            seed: 1,
            params: BTreeMap::from([("typo".to_string(), "1".to_string())]),
            progress: &progress,
        };
        match (spec.run)(&ctx) {
            Err(ExperimentError::Param(m)) => {
                assert!(
                    m.contains("unknown parameter exp.typo"),
                    "{}: {m}",
                    spec.name
                );
                let first = spec.params.unwrap().first().map(|p| p.name);
                if let Some(first) = first {
                    assert!(m.contains(&format!("exp.{first}")), "{}: {m}", spec.name);
                }
            }
            Err(e) => panic!("{}: refused with another error: {e}", spec.name),
            Ok(_) => panic!("{}: ran with exp.typo", spec.name),
        }
    }
}
