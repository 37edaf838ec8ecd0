//! What the tools (`oshcc`, `oshcxx`, `oshrun`) share: where the header and the library are.

use std::path::{Path, PathBuf};

/// The directory of `include/shmem.h`: `$UNPINNED_SHMEM_INCLUDE`, or this crate's include/
/// (baked in at build time).
pub fn include_dir() -> PathBuf {
    std::env::var_os("UNPINNED_SHMEM_INCLUDE")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("include"))
}

/// The directory holding `libunpinned_shmem.so`: `$UNPINNED_SHMEM_LIB`, or the newest copy
/// next to the running tool (`target/<profile>/` or its `deps/`).
pub fn lib_dir() -> Result<PathBuf, String> {
    if let Some(d) = std::env::var_os("UNPINNED_SHMEM_LIB") {
        return Ok(PathBuf::from(d));
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this tool's path: {e}"))?;
    let dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    let dirs = [dir.clone(), dir.join("deps"), dir.join("..")];
    dirs.iter()
        .filter(|d| d.join("libunpinned_shmem.so").is_file())
        .max_by_key(|d| {
            d.join("libunpinned_shmem.so")
                .metadata()
                .and_then(|m| m.modified())
                .unwrap_or(std::time::SystemTime::UNIX_EPOCH)
        })
        .cloned()
        .ok_or_else(|| {
            format!(
                "libunpinned_shmem.so not found next to {} (nor in its deps/): build it with `cargo build -p unpinned-shmem`, or set UNPINNED_SHMEM_LIB",
                exe.display()
            )
        })
}

/// The compiler command line of `oshcc` / `oshcxx` for the user's `args`.
pub fn compile_command(cxx: bool, args: &[String]) -> Result<(String, Vec<String>), String> {
    let compiler = if cxx {
        std::env::var("OSHCXX_CXX")
            .or_else(|_| std::env::var("CXX"))
            .unwrap_or_else(|_| "c++".into())
    } else {
        std::env::var("OSHCC_CC")
            .or_else(|_| std::env::var("CC"))
            .unwrap_or_else(|_| "cc".into())
    };
    let link = !args
        .iter()
        .any(|a| matches!(a.as_str(), "-c" | "-S" | "-E" | "-M" | "-MM"));
    let mut v = vec![format!("-I{}", include_dir().display())];
    v.extend(args.iter().cloned());
    if link {
        let lib = lib_dir()?;
        v.push(format!("-L{}", lib.display()));
        v.push(format!("-Wl,-rpath,{}", lib.display()));
        v.extend(["-lunpinned_shmem", "-lpthread", "-ldl", "-lm"].map(String::from));
    }
    Ok((compiler, v))
}

/// The names the tools go by on the `PATH`, and the binary each one is (cargo refuses `+` in a
/// binary name: `oshc++` can only be a link).
pub const TOOL_LINKS: &[(&str, &str)] = &[
    ("oshcc", "oshcc"),
    ("oshc++", "oshcxx"),
    ("oshCC", "oshcxx"),
    ("oshcxx", "oshcxx"),
    ("oshrun", "oshrun"),
];

/// Make `dir/bin/` hold a relative symbolic link per [`TOOL_LINKS`] name to the binary in
/// `dir` (links that exist are replaced); returns `dir/bin`.
pub fn make_tool_links(dir: &Path) -> std::io::Result<PathBuf> {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin)?;
    for (name, target) in TOOL_LINKS {
        let link = bin.join(name);
        if link.symlink_metadata().is_ok() {
            std::fs::remove_file(&link)?;
        }
        std::os::unix::fs::symlink(Path::new("..").join(target), &link)?;
    }
    Ok(bin)
}

/// `oshcc --print-env`: put the tools' links next to this binary ([`make_tool_links`]) and
/// print the shell line that puts them first on the `PATH` (`eval "$(oshcc --print-env)"`).
fn print_env() -> ! {
    let made = std::env::current_exe()
        .and_then(|e| e.canonicalize())
        .and_then(|e| make_tool_links(e.parent().unwrap_or(Path::new("."))));
    match made {
        Ok(bin) => {
            println!("export PATH=\"{}:$PATH\"", bin.display());
            std::process::exit(0)
        }
        Err(e) => {
            eprintln!("oshcc --print-env: cannot make the tool links: {e} (is the build directory writable?)");
            std::process::exit(1)
        }
    }
}

/// Run `oshcc` / `oshcxx`: `--showme` prints the command instead; `--print-env` makes the
/// tools' links and prints the `PATH` line ([`print_env`]).
pub fn compiler_main(cxx: bool) -> ! {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() == 1 && args[0] == "--print-env" {
        print_env()
    }
    let show = args.iter().any(|a| a == "--showme" || a == "-show");
    let args: Vec<String> = args
        .into_iter()
        .filter(|a| a != "--showme" && a != "-show")
        .collect();
    let (cc, v) = compile_command(cxx, &args).unwrap_or_else(|e| {
        eprintln!("{}: {e}", if cxx { "oshc++" } else { "oshcc" });
        std::process::exit(1)
    });
    if show {
        println!("{cc} {}", v.join(" "));
        std::process::exit(0);
    }
    let status = std::process::Command::new(&cc).args(&v).status();
    match status {
        Ok(s) => std::process::exit(s.code().unwrap_or(1)),
        Err(e) => {
            eprintln!("oshcc: cannot run the compiler {cc:?}: {e} (set OSHCC_CC / CC, or OSHCXX_CXX / CXX)");
            std::process::exit(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_links_point_at_the_binaries_and_can_be_remade() {
        let dir = std::env::temp_dir().join(format!("shmem-tool-links-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for b in ["oshcc", "oshcxx", "oshrun"] {
            std::fs::write(dir.join(b), b).unwrap();
        }
        for _ in 0..2 {
            let bin = make_tool_links(&dir).unwrap();
            for (name, target) in TOOL_LINKS {
                assert_eq!(std::fs::read_to_string(bin.join(name)).unwrap(), *target);
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
