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

/// Run `oshcc` / `oshcxx`: `--showme` prints the command instead.
pub fn compiler_main(cxx: bool) -> ! {
    let args: Vec<String> = std::env::args().skip(1).collect();
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
