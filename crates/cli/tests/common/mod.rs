//! Helpers shared by the CLI's settings tests: run the built `unpinned` binary (without an
//! inherited `UNPINNED_SET`) and check refusals.

use std::process::{Command, Output};

/// Run `unpinned ARGS`.
pub fn unpinned(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_unpinned"))
        .args(args)
        .env_remove("UNPINNED_SET")
        .output()
        .expect("binary runs")
}

/// Bytes as text.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Exit code 2 and a message containing every one of `want`.
pub fn refused(args: &[&str], want: &[&str]) {
    let o = unpinned(args);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    for w in want {
        assert!(err.contains(w), "{args:?}: {w:?} not in {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
}
