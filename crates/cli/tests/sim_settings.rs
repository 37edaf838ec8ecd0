//! `unpinned sim`: settings are honoured or refused, never ignored; `sim EXP --help` lists the
//! experiment's parameters.

mod common;

use common::{refused, text, unpinned};

#[test]
fn experiment_help_lists_parameters_defaults_units_and_profile() {
    for args in [
        ["sim", "part-timeout", "--help"],
        ["sim", "--help", "part-timeout"],
    ] {
        let o = unpinned(&args);
        assert!(o.status.success(), "{}", text(&o.stderr));
        let out = text(&o.stdout);
        for want in [
            "timeouts_us",
            "100,500,1000",
            "us",
            "Profile: PART",
            "Runs on:",
        ] {
            assert!(out.contains(want), "{want:?} not in {out}");
        }
    }
    let o = unpinned(&["sim", "--help"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("--list"));
    let o = unpinned(&["sim", "--list"]);
    let out = text(&o.stdout);
    assert!(out.contains("RUNS ON") && out.contains("sim+live"), "{out}");
}

#[test]
fn unknown_keys_bad_values_and_wrong_profiles_are_refused() {
    refused(
        &["sim", "part-fault-small", "--set", "exp.seedz=3"],
        &["unknown parameter exp.seedz"],
    );
    refused(
        &["sim", "part-fault-frequency", "--set", "exp.seeds=0"],
        &["exp.seeds", "1..="],
    );
    refused(
        &["sim", "odp-trace", "--profile", "forth-arm"],
        &["PART profile", "odp-trace"],
    );
    refused(
        &["sim", "aa-counter", "--set", "engine.block_timeout_us=5"],
        &["AA profile", "part-fault-all"],
    );
    refused(
        &[
            "sim",
            "part-timeout",
            "--set",
            "engine.block_timeout_us=250",
        ],
        &["exp.timeouts_us"],
    );
}

#[test]
fn profile_check_validates_every_kind() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../profiles");
    for name in [
        "forth-arm",
        "connectx3",
        "connectx4",
        "connectx5",
        "connectx6",
        "cray-xe6",
        "dsm-ib1",
    ] {
        let file = dir.join(format!("{name}.toml"));
        let o = unpinned(&["profile", "check", file.to_str().unwrap()]);
        assert!(o.status.success(), "{name}: {}", text(&o.stderr));
        assert!(text(&o.stdout).contains("OK"), "{name}");
        let o = unpinned(&["profile", "show", name]);
        assert!(o.status.success(), "{name}: {}", text(&o.stderr));
    }
}

#[test]
fn reproduce_refuses_settings_that_some_of_its_experiments_would_refuse() {
    let out = std::env::temp_dir().join(format!("unpinned-repro-refuse-{}", std::process::id()));
    let out = out.to_str().unwrap();
    // A PART override: the IB, AA and DSM experiments (and part-timeout, which sets the
    // block timeout itself) would refuse it, so nothing runs.
    refused(
        &[
            "reproduce",
            "--no-live",
            "--quiet",
            "--out",
            out,
            "--set",
            "engine.block_timeout_us=250",
        ],
        &["Refused by", "part-timeout", "odp-", "aa-", "--only"],
    );
    // Experiment parameters differ per experiment.
    refused(
        &[
            "reproduce",
            "--no-live",
            "--quiet",
            "--out",
            out,
            "--set",
            "exp.seeds=1",
        ],
        &["exp.seeds", "unpinned sim EXPERIMENT --help"],
    );
    assert!(
        !std::path::Path::new(out).join("index.html").exists(),
        "nothing runs before the refusal"
    );
    let _ = std::fs::remove_dir_all(out);
}
