//! `unpinned live`: settings are honoured or refused, never ignored; `live EXP --help` lists
//! the experiment's parameters. Every case here is refused or answered before a runtime starts.

mod common;

use common::{refused, text, unpinned};

#[test]
fn live_experiment_help_lists_parameters_defaults_and_fixed_fields() {
    for args in [
        ["live", "live-hol", "--help"],
        ["live", "--help", "live-hol"],
    ] {
        let o = unpinned(&args);
        assert!(o.status.success(), "{}", text(&o.stderr));
        let out = text(&o.stdout);
        for want in [
            "Parameters (--set exp.NAME=VALUE)",
            "fault_bytes",
            "1048576",
            "bytes",
            "file | anon",
            "the live runtime (`unpinned live`)",
        ] {
            assert!(out.contains(want), "{want:?} not in {out}");
        }
    }
    let o = unpinned(&["live", "part-timeout", "--help"]);
    let out = text(&o.stdout);
    for want in [
        "timeouts_us",
        "Sets itself: engine.block_timeout_us",
        "engine.max_timeouts",
    ] {
        assert!(out.contains(want), "{want:?} not in {out}");
    }
    let o = unpinned(&["live", "--help"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("--list"));
    refused(
        &["live", "live-hols", "--help"],
        &["no live experiment", "live-hol"],
    );
}

#[test]
fn unknown_keys_and_bad_values_are_refused_on_live_experiments() {
    refused(
        &["live", "live-stale", "--set", "exp.typo=1"],
        &[
            "unknown parameter exp.typo",
            "exp.bytes",
            "unpinned live live-stale --help",
        ],
    );
    refused(
        &["live", "aa-dht-link", "--set", "exp.collision_pct=0,150"],
        &["exp.collision_pct", "0..=100"],
    );
    refused(
        &[
            "live",
            "dsm-apps",
            "--set",
            "exp.contexts=progress,sideways",
        ],
        &["exp.contexts", "polling"],
    );
}

#[test]
fn a_field_the_live_experiment_sets_itself_is_refused_naming_the_parameter() {
    refused(
        &[
            "live",
            "part-timeout",
            "--set",
            "engine.block_timeout_us=250",
        ],
        &[
            "part-timeout sets engine.block_timeout_us itself",
            "exp.timeouts_us",
        ],
    );
    refused(
        &[
            "live",
            "part-fault-small",
            "--set",
            "engine.block_timeout_us=250",
        ],
        &["engine.block_timeout_us", "err: NTO, to100us, to1ms"],
    );
    refused(
        &["live", "part-fault-small", "--set", "engine.max_timeouts=5"],
        &["engine.max_timeouts", "1000"],
    );
}
