//! Embeds the shipped DSM traces (`bench/traces/dsm/*`) in the crate: `dsm-apps` and
//! `dsm-load` replay them by default, so their tables are the same bytes on every machine and
//! do not depend on the binary being run from the repository.

use std::fmt::Write as _;
use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let dir = manifest.join("../../bench/traces/dsm");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(rd) => rd
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_file())
            // Traces and results; not the README.
            .filter(|p| p.extension().is_some_and(|x| x == "gz" || x == "json"))
            .collect(),
        // No shipped traces: the experiments say so when asked for them.
        Err(_) => Vec::new(),
    };
    files.sort();
    let mut out = String::from("&[\n");
    for p in &files {
        let name = p.file_name().expect("a file").to_string_lossy();
        let abs = p.canonicalize().expect("listed file exists");
        let _ = writeln!(
            out,
            "    ({name:?}, include_bytes!({:?}) as &[u8]),",
            abs.display().to_string()
        );
    }
    out.push(']');
    let dest = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo"))
        .join("shipped_dsm_traces.rs");
    std::fs::write(dest, out).expect("OUT_DIR is writable");
}
