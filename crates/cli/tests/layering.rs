//! The layering of the workspace's crates (issue 15, "crates that show the layers"), checked
//! from `cargo metadata`'s resolved dependency graph:
//!
//! - no dependency cycle between workspace crates (normal and build dependencies; a
//!   dev-dependency may point back up, e.g. a test harness);
//! - the C library (`unpinned-capi`) links only what it uses: no simulator, InfiniBand model,
//!   DSM protocol, traffic generator or experiment harness in its normal dependency tree;
//! - the sans-IO crates depend on no driver (live runtime, OS layer, simulator);
//! - `unpinned-os` depends on no other crate of the workspace, and `unpinned-live` on neither
//!   the simulator nor Active Access.
//! - inside live, aa-live and os, no cycle between modules (from their sources).

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// Crates of the workspace and their normal / build dependencies on each other, by name.
type Graph = BTreeMap<String, BTreeSet<String>>;

/// The workspace's dependency graph from `cargo metadata --no-deps`: the dependencies each
/// member declares, kept when they are members too (path dependencies). Needs no network and
/// no registry index: what a crate of the workspace may link is decided by these edges.
fn workspace_graph() -> Graph {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root)
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata JSON");
    let packages = meta["packages"].as_array().expect("packages");
    let members: BTreeSet<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    let mut g = Graph::new();
    for p in packages {
        let deps = g
            .entry(p["name"].as_str().expect("package name").to_string())
            .or_default();
        for d in p["dependencies"].as_array().expect("dependencies") {
            let name = d["name"].as_str().expect("dependency name");
            // `kind` is null for a normal dependency, "build" or "dev" otherwise.
            let linked = d["kind"].is_null() || d["kind"] == "build";
            if linked && members.contains(name) {
                deps.insert(name.to_string());
            }
        }
    }
    g
}

/// Every crate `from` depends on, directly or not.
fn closure(g: &Graph, from: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo: Vec<&str> = g
        .get(from)
        .into_iter()
        .flatten()
        .map(|s| s.as_str())
        .collect();
    while let Some(c) = todo.pop() {
        if seen.insert(c.to_string()) {
            todo.extend(g.get(c).into_iter().flatten().map(|s| s.as_str()));
        }
    }
    seen
}

/// The crates that depend on themselves through others (empty: no cycle).
fn crates_on_a_cycle(g: &Graph) -> Vec<String> {
    g.keys()
        .filter(|c| closure(g, c).contains(*c))
        .cloned()
        .collect()
}

/// `(crate, forbidden dependency)` for every crate of `crates` whose tree holds one of
/// `forbidden`.
fn violations(g: &Graph, crates: &[&str], forbidden: &[&str]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for c in crates {
        assert!(
            g.contains_key(*c),
            "{c} is not a workspace crate any more: update this test"
        );
        let tree = closure(g, c);
        for f in forbidden {
            if tree.contains(*f) {
                out.push((c.to_string(), f.to_string()));
            }
        }
    }
    out
}

#[test]
fn no_dependency_cycle_between_workspace_crates() {
    let g = workspace_graph();
    assert!(g.len() > 10, "only {} workspace crates found", g.len());
    let on_cycle = crates_on_a_cycle(&g);
    assert!(
        on_cycle.is_empty(),
        "crates on a dependency cycle: {on_cycle:?}; a lower layer must not depend on a higher one"
    );
}

#[test]
fn the_c_library_links_only_the_live_stack() {
    let g = workspace_graph();
    let v = violations(
        &g,
        &["unpinned-capi", "unpinned-shmem"],
        &[
            "unpinned-sim",
            "unpinned-ib",
            "unpinned-dsm",
            "unpinned-traffic",
            "unpinned-experiments",
        ],
    );
    assert!(
        v.is_empty(),
        "the C library's normal dependencies reach {v:?}: move what it needs below them, or \
         make the dependency a dev-dependency"
    );
}

#[test]
fn sans_io_crates_depend_on_no_driver() {
    let g = workspace_graph();
    let v = violations(
        &g,
        &[
            "unpinned-wire",
            "unpinned-core",
            "unpinned-part",
            "unpinned-ib",
            "unpinned-aa",
            "unpinned-msg",
            "unpinned-dsm",
            "unpinned-conformance",
        ],
        &[
            "unpinned-live",
            "unpinned-os",
            "unpinned-sim",
            "unpinned-aa-live",
            "unpinned-dsm-live",
        ],
    );
    assert!(
        v.is_empty(),
        "sans-IO crates depend on a driver: {v:?}; drivers plug into the engines, not the reverse"
    );
}

#[test]
fn the_os_layer_and_the_live_runtime_stay_below_their_users() {
    let g = workspace_graph();
    let os = closure(&g, "unpinned-os");
    assert!(
        os.is_empty(),
        "unpinned-os depends on workspace crates {os:?}; it holds OS facts with no engine"
    );
    let v = violations(
        &g,
        &["unpinned-live"],
        &[
            "unpinned-sim",
            "unpinned-aa",
            "unpinned-aa-live",
            "unpinned-conformance",
        ],
    );
    assert!(
        v.is_empty(),
        "the live runtime's normal dependencies reach {v:?}: Active Access plugs in from \
         unpinned-aa-live, the conformance scenarios run in live's tests only"
    );
    assert!(
        conformance_has_no_dependencies(),
        "unpinned-conformance must have no dependencies at all (scenarios as plain data)"
    );
}

/// `unpinned-conformance` declares no dependency of any kind (the scenarios are plain data).
fn conformance_has_no_dependencies() -> bool {
    let manifest = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../conformance/Cargo.toml"
    ))
    .expect("read crates/conformance/Cargo.toml");
    let t: toml::Table = manifest.parse().expect("crates/conformance/Cargo.toml");
    ["dependencies", "dev-dependencies", "build-dependencies"]
        .iter()
        .all(|k| {
            t.get(*k)
                .and_then(|d| d.as_table())
                .is_none_or(|d| d.is_empty())
        })
}

/// The checks find what they look for (a cycle, a forbidden crate deep in a tree).
#[test]
fn the_checks_see_cycles_and_deep_dependencies() {
    let edges = |e: &[(&str, &str)]| {
        let mut g = Graph::new();
        for (a, b) in e {
            g.entry(a.to_string()).or_default().insert(b.to_string());
            g.entry(b.to_string()).or_default();
        }
        g
    };
    let g = edges(&[("a", "b"), ("b", "c"), ("c", "a"), ("d", "a")]);
    assert_eq!(crates_on_a_cycle(&g), vec!["a", "b", "c"]);
    let g = edges(&[("capi", "live"), ("live", "os"), ("os", "sim")]);
    assert!(crates_on_a_cycle(&g).is_empty());
    assert_eq!(
        violations(&g, &["capi"], &["sim", "ib"]),
        vec![("capi".to_string(), "sim".to_string())]
    );
}

/// The top-level modules of the crate whose sources are in `src` and which of them each one
/// uses outside its tests (`crate::m`, `use crate::{m, ...}`, or an item the crate root
/// re-exports from `m`). Comments and `#[cfg(test)] mod tests` are skipped.
fn module_graph(src: &std::path::Path) -> Graph {
    fn files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).expect("read a source directory") {
            let p = e.expect("directory entry").path();
            if p.is_dir() {
                if p.file_name().is_some_and(|n| n != "bin") {
                    files(&p, out);
                }
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    fn code(text: &str) -> String {
        let text = text.split("#[cfg(test)]\nmod tests").next().unwrap_or("");
        text.lines()
            .map(|l| l.split("//").next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n")
    }
    fn idents(s: &str) -> impl Iterator<Item = &str> {
        s.split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty())
    }
    let mut all = Vec::new();
    files(src, &mut all);
    let module_of = |p: &std::path::Path| -> String {
        let rel = p.strip_prefix(src).expect("under src");
        let first = rel.components().next().expect("a path").as_os_str();
        first.to_string_lossy().trim_end_matches(".rs").to_string()
    };
    let modules: BTreeSet<String> = all
        .iter()
        .map(|p| module_of(p))
        .filter(|m| m != "lib")
        .collect();
    // Items re-exported at the root: `pub use m::{A, B};` / `pub use m::A;`.
    let lib = code(&std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs"));
    let mut reexport: BTreeMap<String, String> = BTreeMap::new();
    for stmt in lib.split(';') {
        let Some(rest) = stmt.trim().strip_prefix("pub use ") else {
            continue;
        };
        let mut words = idents(rest);
        if let Some(m) = words.next().filter(|m| modules.contains(*m)) {
            for w in words {
                reexport.insert(w.to_string(), m.to_string());
            }
        }
    }
    let mut g = Graph::new();
    for p in &all {
        let me = module_of(p);
        if me == "lib" {
            continue;
        }
        let text = code(&std::fs::read_to_string(p).expect("read a source file"));
        let deps = g.entry(me.clone()).or_default();
        let mut used = Vec::new();
        for (i, _) in text.match_indices("crate::") {
            let after = &text[i + "crate::".len()..];
            if let Some(group) = after.strip_prefix('{') {
                let group = group.split('}').next().unwrap_or("");
                used.extend(group.split(',').filter_map(|s| idents(s).next()));
            } else if let Some(w) = idents(after).next() {
                used.push(w);
            }
        }
        for w in used {
            let m = reexport.get(w).cloned().unwrap_or_else(|| w.to_string());
            if m != me && modules.contains(&m) {
                deps.insert(m);
            }
        }
    }
    g
}

#[test]
fn no_module_cycle_in_the_live_crates() {
    for krate in ["live", "aa-live", "os"] {
        let src = std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
            .join(krate)
            .join("src");
        let g = module_graph(&src);
        assert!(g.len() > 3, "crates/{krate}: only modules {:?}", g.keys());
        let on_cycle = crates_on_a_cycle(&g);
        assert!(
            on_cycle.is_empty(),
            "crates/{krate}: modules on a cycle {on_cycle:?} (uses: {g:?}); move what both \
             need into a module below them"
        );
    }
}
