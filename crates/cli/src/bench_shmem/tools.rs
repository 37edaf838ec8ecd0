//! The two OpenSHMEM toolchains (unpinned's and Open MPI's `oshcc` / `oshrun`) and building
//! the benchmark source with each.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The benchmark source, built with both toolchains (also in bench/shmem/ of the repository).
pub const SOURCE: &str = include_str!("../../../../bench/shmem/osu_shmem.c");

/// Which OpenSHMEM implementation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Implementation {
    /// This repository's library (crates/shmem).
    Unpinned,
    /// Debian's Open MPI OpenSHMEM (oshmem over UCX).
    OpenMpi,
}

impl Implementation {
    /// Name in files and tables.
    pub fn name(self) -> &'static str {
        match self {
            Implementation::Unpinned => "unpinned",
            Implementation::OpenMpi => "openmpi",
        }
    }
}

/// One implementation's compiler wrapper and launcher.
#[derive(Clone, Debug)]
pub struct Toolchain {
    /// Whose.
    pub implementation: Implementation,
    /// `oshcc`.
    pub oshcc: PathBuf,
    /// `oshrun`.
    pub oshrun: PathBuf,
}

/// unpinned's tools in `dir` (default: the directory of this `unpinned` binary, where cargo
/// puts the shmem crate's binaries of the same build).
pub fn unpinned(dir: Option<&Path>) -> Result<Toolchain, String> {
    let dir = match dir {
        Some(d) => d.to_path_buf(),
        None => std::env::current_exe()
            .map_err(|e| format!("cannot find this program's path: {e}"))?
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default(),
    };
    let t = Toolchain {
        implementation: Implementation::Unpinned,
        oshcc: dir.join("oshcc"),
        oshrun: dir.join("oshrun"),
    };
    for tool in [&t.oshcc, &t.oshrun] {
        if !tool.is_file() {
            return Err(format!(
                "unpinned's {} is not built: build the OpenSHMEM library and its tools with `cargo build --release -p unpinned-shmem` (or pass --unpinned-bin DIR, the directory holding oshcc and oshrun)",
                tool.display()
            ));
        }
    }
    Ok(t)
}

/// Open MPI's tools in `dir`, or the reason they cannot be used (with the install command).
pub fn openmpi(dir: &Path) -> Result<Toolchain, String> {
    let t = Toolchain {
        implementation: Implementation::OpenMpi,
        oshcc: dir.join("oshcc"),
        oshrun: dir.join("oshrun"),
    };
    for tool in [&t.oshcc, &t.oshrun] {
        if !tool.is_file() {
            return Err(format!(
                "Open MPI's OpenSHMEM is not installed ({} is missing): install it with `apt-get install openmpi-bin libopenmpi-dev` (or pass --openmpi-bin DIR)",
                tool.display()
            ));
        }
    }
    // An `oshcc` that is ours (e.g. a PATH directory holding both) would compare us with us.
    let show = Command::new(&t.oshcc).arg("--showme").output();
    if let Ok(o) = show {
        let line = String::from_utf8_lossy(&o.stdout);
        if line.contains("unpinned_shmem") {
            return Err(format!(
                "{} is unpinned's oshcc, not Open MPI's: pass --openmpi-bin with Open MPI's directory (Debian: /usr/bin)",
                t.oshcc.display()
            ));
        }
    }
    Ok(t)
}

/// The first line of `oshcc --showme` (Open MPI) or of the version of the compiler behind it,
/// for the metadata.
pub fn describe(t: &Toolchain) -> String {
    let o = Command::new(&t.oshcc).arg("--showme").output();
    match o {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).trim().to_string(),
        _ => String::new(),
    }
}

/// Compile the benchmark with `t` into `dir/osu_shmem-NAME` (the source is written to
/// `dir/osu_shmem.c` first); returns the program's path.
pub fn build(t: &Toolchain, dir: &Path) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let src = dir.join("osu_shmem.c");
    std::fs::write(&src, SOURCE).map_err(|e| format!("cannot write {}: {e}", src.display()))?;
    let program = dir.join(format!("osu_shmem-{}", t.implementation.name()));
    compile(t, &src, &program)?;
    Ok(program)
}

/// `oshcc -O2 -Wall -o OUT SRC`.
fn compile(t: &Toolchain, src: &Path, out: &Path) -> Result<(), String> {
    let o = Command::new(&t.oshcc)
        .args(["-O2", "-Wall"])
        .arg("-o")
        .arg(out)
        .arg(src)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", t.oshcc.display()))?;
    if !o.status.success() {
        return Err(format!(
            "{} -O2 -Wall -o {} {} failed:\n{}{}",
            t.oshcc.display(),
            out.display(),
            src.display(),
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    Ok(())
}
