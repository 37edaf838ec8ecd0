//! `unpinned sim`: settings are honoured or refused, never ignored; `sim EXP --help` lists the
//! experiment's parameters.

use std::process::{Command, Output};

fn unpinned(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_unpinned"))
        .args(args)
        .output()
        .expect("binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Exit code 2 and a message containing every one of `want`.
fn refused(args: &[&str], want: &[&str]) {
    let o = unpinned(args);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    for w in want {
        assert!(err.contains(w), "{args:?}: {w:?} not in {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
}

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
