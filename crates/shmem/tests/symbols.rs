//! Every function include/shmem.h declares (preprocessed by the C compiler, X-macros expanded)
//! is defined in libunpinned_shmem.so, except the `static inline` ones of the header itself.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

const MANIFEST: &str = env!("CARGO_MANIFEST_DIR");

/// `libunpinned_shmem.so` built with this test (deps/ or the profile directory).
fn shared_lib() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    [
        deps.join("libunpinned_shmem.so"),
        deps.join("../libunpinned_shmem.so"),
    ]
    .into_iter()
    .filter(|p| p.is_file())
    .max_by_key(|p| p.metadata().and_then(|m| m.modified()).ok())
    .expect("libunpinned_shmem.so next to the test binary")
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Identifiers directly followed by `(` (declarations, definitions and calls).
fn called_names(text: &str) -> Vec<(usize, String)> {
    let b: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if is_ident(b[i]) && (i == 0 || !is_ident(b[i - 1])) {
            let s = i;
            while i < b.len() && is_ident(b[i]) {
                i += 1;
            }
            let mut j = i;
            while j < b.len() && b[j].is_whitespace() {
                j += 1;
            }
            if j < b.len() && b[j] == '(' {
                out.push((s, b[s..i].iter().collect()));
            }
        } else {
            i += 1;
        }
    }
    out
}

#[test]
fn every_declared_function_is_in_the_library() {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let Ok(o) = Command::new(&cc)
        .args(["-std=c11", "-E", "-P", "-I"])
        .arg(Path::new(MANIFEST).join("include"))
        .arg(Path::new(MANIFEST).join("include/shmem.h"))
        .output()
    else {
        eprintln!("SKIPPED: no C compiler");
        return;
    };
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    let api = |n: &str| {
        n.starts_with("shmem_")
            || n.starts_with("shm")
            || matches!(n, "start_pes" | "_my_pe" | "_num_pes" | "my_pe" | "num_pes")
    };
    let chars: Vec<char> = text.chars().collect();
    let mut declared = BTreeSet::new();
    let mut inline = BTreeSet::new();
    for (at, name) in called_names(&text) {
        if !api(&name) || name == "shmem_up_generic_type_error" {
            continue;
        }
        // The start of the statement this name is in: is it a static inline definition?
        let mut k = at;
        while k > 0 && !matches!(chars[k - 1], ';' | '}' | '{') {
            k -= 1;
        }
        let head: String = chars[k..at].iter().collect();
        if head.contains("static") && head.contains("inline") {
            inline.insert(name);
        } else {
            declared.insert(name);
        }
    }
    let declared: BTreeSet<String> = declared.difference(&inline).cloned().collect();
    assert!(declared.len() > 1000, "only {} names found", declared.len());
    let nm = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(shared_lib())
        .output()
        .expect("nm (binutils)");
    let syms: BTreeSet<String> = String::from_utf8_lossy(&nm.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().last().map(str::to_string))
        .collect();
    let missing: Vec<&String> = declared.iter().filter(|n| !syms.contains(*n)).collect();
    assert!(
        missing.is_empty(),
        "{} of {} functions declared in shmem.h are not in the library: {missing:?}",
        missing.len(),
        declared.len()
    );
    println!("{} functions declared, all defined", declared.len());
}
