//! The registry: every simulated experiment declares its profile kind and its parameters, the
//! declarations are usable (defaults valid, one-line docs), unknown keys and impossible values
//! are refused with the known keys and the allowed range, and no experiment reads an
//! undeclared parameter.

use std::collections::BTreeMap;

use unpinned_core::profile::Profile;
use unpinned_experiments::params::validate_map;
use unpinned_experiments::{all, find, AnyProfile, Backends, ProfileKind, RunContext};

fn map(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
    kv.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn ctx_with<'a>(
    params: &[(&str, &str)],
    progress: &'a (dyn Fn(u64, u64) + Sync),
) -> RunContext<'a> {
    RunContext {
        profile: Profile::forth_arm(),
        kind_profile: None,
        seed: 1,
        params: map(params),
        progress,
    }
}

#[test]
fn every_experiment_declares_valid_parameters() {
    let all = all();
    assert!(all.len() >= 20);
    for e in &all {
        let params = e
            .params
            .unwrap_or_else(|| panic!("{}: simulated experiments declare parameters", e.name));
        assert_ne!(e.backends, Backends::Live, "{}", e.name);
        let mut names: Vec<&str> = params.iter().map(|p| p.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), params.len(), "{}: duplicate names", e.name);
        for p in params {
            assert!(
                !p.doc.is_empty() && !p.doc.contains('\n'),
                "{}.{}",
                e.name,
                p.name
            );
            // The default, as written in the help, is a valid value.
            (p.validate)(p.default, &p.check).unwrap_or_else(|why| {
                panic!("{}.{} default {:?}: {why}", e.name, p.name, p.default)
            });
        }
        // Every declared default given explicitly is accepted.
        let defaults: BTreeMap<String, String> = params
            .iter()
            .map(|p| (p.name.to_string(), p.default.to_string()))
            .collect();
        validate_map(params, &defaults).unwrap();
        // An unknown key is refused, naming every known key and the closest one.
        let e2 = validate_map(params, &map(&[("seedz", "3")]))
            .unwrap_err()
            .to_string();
        assert!(e2.contains("unknown parameter exp.seedz"), "{e2}");
        for p in params {
            assert!(e2.contains(&format!("exp.{}", p.name)), "{}: {e2}", e.name);
        }
        if params.iter().any(|p| p.name == "seeds") {
            assert!(e2.contains("did you mean exp.seeds?"), "{e2}");
        }
        // Every fixed field is a real field of the experiment's profile.
        let profile = AnyProfile::builtin(e.profile).to_json();
        for f in e.fixed {
            let v = f
                .field
                .split('.')
                .try_fold(&profile, |v, part| v.get(part))
                .unwrap_or_else(|| panic!("{}: fixed {} is no profile field", e.name, f.field));
            // A field, not a section: a number, or a switch (`os.early_err`, `os.err_from`).
            assert!(
                v.is_number() || v.is_boolean() || v.is_string(),
                "{}: {}",
                e.name,
                f.field
            );
        }
    }
}

#[test]
fn every_kind_has_experiments_and_the_expected_ones() {
    let kind = |n: &str| find(n).unwrap().profile;
    assert_eq!(kind("part-fault-small"), ProfileKind::Part);
    assert_eq!(kind("odp-pitfall"), ProfileKind::Ib);
    assert_eq!(kind("aa-dht-scale"), ProfileKind::Aa);
    assert_eq!(kind("dsm-apps"), ProfileKind::Dsm);
    for k in ProfileKind::ALL {
        assert!(all().iter().any(|e| e.profile == k), "{k:?}");
        assert!(k.describe().contains(k.builtins()[0]));
    }
    assert_eq!(find("part-fault-small").unwrap().backends, Backends::Both);
    assert_eq!(find("part-isend").unwrap().backends, Backends::Sim);
}

#[test]
fn impossible_values_are_refused_with_the_range() {
    let q = |_: u64, _: u64| {};
    for (exp, k, v, want) in [
        ("part-fault-frequency", "seeds", "0", "allowed: 1..=10000"),
        (
            "part-fault-frequency",
            "seeds",
            "many",
            "expected an integer",
        ),
        ("part-apps", "nodes", "", "non-empty"),
        ("part-apps", "mem_gbps", "-1", "allowed: > 0"),
        ("part-apps", "scale", "huge", "one of small | full"),
        ("part-timeout", "timeouts_us", "100,-5", "allowed: > 0"),
        ("odp-pitfall", "trials", "0", "allowed: 1..="),
        ("aa-dht-compute", "ratio_pct", "50,100", "allowed: 0..=99"),
        ("dsm-apps", "contexts", "psychic", "one of polling"),
    ] {
        let ctx = ctx_with(&[(k, v)], &q);
        let e = (find(exp).unwrap().run)(&ctx)
            .err()
            .unwrap_or_else(|| panic!("{exp}: {k}={v} accepted"))
            .to_string();
        assert!(e.contains(&format!("exp.{k}")), "{exp}: {e}");
        assert!(e.contains(want), "{exp}: {k}={v}: {e}");
    }
}

#[test]
fn experiments_refuse_unknown_keys_when_run() {
    let q = |_: u64, _: u64| {};
    for e in all() {
        if matches!(e.name, "part-apps" | "dsm-apps" | "dsm-load") {
            continue; // checked by validate_map above; no need to start them here
        }
        let ctx = ctx_with(&[("seedz", "3")], &q);
        let err = (e.run)(&ctx)
            .err()
            .unwrap_or_else(|| panic!("{}: unknown key accepted", e.name))
            .to_string();
        assert!(
            err.contains("unknown parameter exp.seedz"),
            "{}: {err}",
            e.name
        );
    }
}

#[test]
fn a_profile_of_the_wrong_kind_is_refused_by_the_experiment() {
    let q = |_: u64, _: u64| {};
    let mut ctx = ctx_with(&[], &q);
    ctx.kind_profile = Some(AnyProfile::builtin(ProfileKind::Aa));
    let e = (find("odp-trace").unwrap().run)(&ctx)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("AA profile") && e.contains("IB profiles"), "{e}");
    assert!(e.contains("odp-pitfall"), "{e}");
}

/// The simulated experiments read parameters only through their declared struct (the raw map
/// is for the CLI); crates/livebench/tests/live_params.rs checks the live ones.
#[test]
fn no_experiment_reads_an_undeclared_parameter() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    let mut dirs = vec![root.clone()];
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
    assert!(files.len() > 20);
    for f in files {
        if f == root.join("lib.rs") || f == root.join("params.rs") {
            continue;
        }
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
