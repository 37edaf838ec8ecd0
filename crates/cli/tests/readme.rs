//! Keeps the README honest: every command in its "Quick start" and its tour ("A tour of the
//! `unpinned` tool") is checked against the built binary and the repository.
//!
//! - `unpinned ARGS`, `cargo run [--release] -- ARGS` and `target/*/unpinned ARGS`: the
//!   subcommand (and a nested one, `profile show`) must exist (`--help` succeeds and names
//!   it); the whole command with `--help` added must parse (clap rejects an unknown option
//!   before it prints help); an experiment named after `sim` / `live` must be in `--list`;
//!   input files (`.toml`, `.goal`, `.jsonl`) must exist; `run ... -- unpinned ARGS` checks
//!   the inner command too; and the cheap commands ([`CHEAP`]) run for real, their output
//!   directed to a scratch directory.
//! - `cargo test ...` must be the test command `.ci/run` runs; `cargo build -p PKG` must name
//!   a workspace package; `cc ...` must name files that exist.
//! - Anything else fails: a command the README shows must be one this test can check.
//!
//! Also: the quick start has exactly two commands (a `reproduce` and the test suite), and the
//! tour shows every subcommand of `unpinned --help`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Commands (argument prefixes) cheap enough to run for real: seconds at most, debug build.
const CHEAP: &[&[&str]] = &[
    &["sim", "--list"],
    &["live", "--list"],
    &["profile", "show"],
    &["replay"],
    &["sweep"],
    &["sim", "part-fault-all"],
];

/// Options of `sim` / `live` that take a value.
const VALUE_OPTIONS: &[&str] = &["--profile", "--set", "--seed", "--out"];

/// The README sections whose commands are checked.
const SECTIONS: &[&str] = &["## Quick start", "## A tour of the `unpinned` tool"];

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn unpinned(args: &[String], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_unpinned"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("the unpinned binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The first line of an error output (clap's errors go on with tips and usage).
fn first_line(b: &[u8]) -> String {
    text(b).lines().next().unwrap_or("").to_string()
}

/// A fresh directory under the system temp dir.
fn scratch(tag: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let d = std::env::temp_dir().join(format!(
        "unpinned-readme-{tag}-{}-{nanos}",
        std::process::id()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The text of the section titled `title` (up to the next `## ` heading), if present.
fn section<'a>(readme: &'a str, title: &str) -> Option<&'a str> {
    let start = readme
        .lines()
        .scan(0usize, |pos, l| {
            let at = *pos;
            *pos += l.len() + 1;
            Some((at, l))
        })
        .find(|(_, l)| l.trim_end() == title)?
        .0;
    let body = &readme[start + title.len()..];
    let end = body.find("\n## ").unwrap_or(body.len());
    Some(&body[..end])
}

/// The commands of the ```sh blocks of `text`: continuation lines joined, comments dropped.
fn shell_commands(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_sh = false;
    let mut pending = String::new();
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("```") {
            in_sh = !in_sh && (t == "```sh" || t == "```bash" || t == "```shell");
            continue;
        }
        if !in_sh {
            continue;
        }
        let code = strip_comment(line);
        if let Some(head) = code.trim_end().strip_suffix('\\') {
            pending.push_str(head);
            pending.push(' ');
            continue;
        }
        pending.push_str(code);
        let cmd = pending.split_whitespace().collect::<Vec<_>>().join(" ");
        pending.clear();
        if !cmd.is_empty() {
            out.push(cmd);
        }
    }
    out
}

/// `line` without a trailing `# comment` (a `#` at the start or after whitespace).
fn strip_comment(line: &str) -> &str {
    let b = line.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        if c == b'#' && (i == 0 || b[i - 1].is_ascii_whitespace()) {
            return &line[..i];
        }
    }
    line
}

/// What a README command is, as far as this test can check it.
#[derive(Debug, PartialEq)]
enum Kind {
    /// The `unpinned` tool with these arguments.
    Cli(Vec<String>),
    /// `cargo test ...`.
    CargoTest(Vec<String>),
    /// `cargo build ...`.
    CargoBuild(Vec<String>),
    /// A C compiler invocation.
    Cc(Vec<String>),
}

fn is_unpinned_program(p: &str) -> bool {
    p == "unpinned" || (p.ends_with("/unpinned") && p.contains("target/"))
}

fn classify(cmd: &str) -> Result<Kind, String> {
    if cmd.contains(['"', '\'', '$', '|', ';', '&', '>', '<']) {
        return Err("quoting, variables, pipes and redirections are not supported here".into());
    }
    let toks: Vec<String> = cmd.split_whitespace().map(str::to_string).collect();
    let first = toks.first().map(String::as_str).unwrap_or("");
    if is_unpinned_program(first) {
        return Ok(Kind::Cli(toks[1..].to_vec()));
    }
    if first == "cargo" {
        match toks.get(1).map(String::as_str) {
            Some("run") => {
                let sep = toks
                    .iter()
                    .position(|t| t == "--")
                    .ok_or("`cargo run` without `--`")?;
                for opt in &toks[2..sep] {
                    if !["--release", "-q", "--quiet", "--locked"].contains(&opt.as_str()) {
                        return Err(format!("`cargo run` option {opt} is not understood here"));
                    }
                }
                return Ok(Kind::Cli(toks[sep + 1..].to_vec()));
            }
            Some("test") => return Ok(Kind::CargoTest(toks)),
            Some("build") => return Ok(Kind::CargoBuild(toks)),
            _ => {}
        }
    }
    if first == "cc" || first == "gcc" || first == "clang" {
        return Ok(Kind::Cc(toks));
    }
    Err("not a command this test can map to an `unpinned` subcommand".into())
}

/// The `cargo test` command of `.ci/run`.
fn ci_test_command(root: &Path) -> Vec<String> {
    let ci = std::fs::read_to_string(root.join(".ci/run")).expect(".ci/run is readable");
    let line = ci
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("cargo test"))
        .expect(".ci/run has a `cargo test` line");
    line.split_whitespace().map(str::to_string).collect()
}

/// The package names of the workspace's crates.
fn workspace_packages(root: &Path) -> Vec<String> {
    let mut names = Vec::new();
    for e in std::fs::read_dir(root.join("crates")).expect("crates/ is readable") {
        let manifest = e.unwrap().path().join("Cargo.toml");
        let Ok(m) = std::fs::read_to_string(&manifest) else {
            continue;
        };
        if let Some(n) = m.lines().find_map(|l| {
            l.trim()
                .strip_prefix("name = \"")
                .and_then(|r| r.strip_suffix('"'))
        }) {
            names.push(n.to_string());
        }
    }
    names
}

/// The subcommands `--help` lists (without `help`), from the text after `Commands:`.
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

struct Checker {
    root: PathBuf,
    scratch: PathBuf,
}

impl Checker {
    fn new(tag: &str) -> Checker {
        Checker {
            root: repo_root(),
            scratch: scratch(tag),
        }
    }

    fn run(&self, args: &[String]) -> Output {
        unpinned(args, &self.root)
    }

    fn check(&self, cmd: &str) -> Result<(), String> {
        match classify(cmd)? {
            Kind::Cli(args) => self.check_cli(&args),
            Kind::CargoTest(toks) => {
                let ci = ci_test_command(&self.root);
                if toks == ci {
                    Ok(())
                } else {
                    Err(format!("the test command of .ci/run is `{}`", ci.join(" ")))
                }
            }
            Kind::CargoBuild(toks) => {
                let pkgs = workspace_packages(&self.root);
                for (i, t) in toks.iter().enumerate() {
                    if t == "-p" || t == "--package" {
                        let p = toks.get(i + 1).ok_or("`-p` without a package")?;
                        if !pkgs.contains(p) {
                            return Err(format!("no workspace package {p} (have: {pkgs:?})"));
                        }
                    }
                }
                Ok(())
            }
            Kind::Cc(toks) => {
                let mut skip_next = false;
                for t in &toks[1..] {
                    if std::mem::take(&mut skip_next) {
                        continue;
                    }
                    if t == "-o" {
                        skip_next = true;
                        continue;
                    }
                    let path = t.strip_prefix("-I").unwrap_or(t);
                    if path.is_empty() || path.starts_with('-') || path.starts_with("target/") {
                        continue;
                    }
                    if !self.root.join(path).exists() {
                        return Err(format!("{path} does not exist"));
                    }
                }
                Ok(())
            }
        }
    }

    fn check_cli(&self, args: &[String]) -> Result<(), String> {
        let sub = args.first().ok_or("`unpinned` without a subcommand")?;
        // The subcommand exists.
        let o = self.run(&[sub.clone(), "--help".into()]);
        let help = text(&o.stdout);
        if !o.status.success() || !help.contains(&format!("Usage: unpinned {sub}")) {
            return Err(format!(
                "`unpinned {sub} --help` failed: {}",
                first_line(&o.stderr)
            ));
        }
        // A nested subcommand (`profile show`, `bench sim`) exists; `leaf_help` is the help
        // of the innermost one.
        let nested = subcommands(&help);
        let mut leaf_help = help.clone();
        if !nested.is_empty() {
            let inner = args
                .get(1)
                .ok_or(format!("`{sub}` needs one of {nested:?}"))?;
            if !nested.contains(inner) {
                return Err(format!("`{sub} {inner}`: not one of {nested:?}"));
            }
            leaf_help = text(
                &self
                    .run(&[sub.clone(), inner.clone(), "--help".into()])
                    .stdout,
            );
        }
        let sep = args.iter().position(|a| a == "--").unwrap_or(args.len());
        // Every option is one the help names (this also covers `dsm-run`, whose options are
        // parsed by the program it runs, not by clap).
        for a in &args[1..sep] {
            if let Some(name) = a.strip_prefix("--") {
                let name = name.split('=').next().unwrap_or(name);
                if !leaf_help.contains(&format!("--{name}")) {
                    return Err(format!("`unpinned {sub}` has no option --{name}"));
                }
            }
        }
        // The whole command parses: clap rejects unknown options before it prints help.
        let mut with_help = args[..sep].to_vec();
        if !with_help.iter().any(|a| a == "--help") {
            with_help.push("--help".into());
        }
        with_help.extend_from_slice(&args[sep..]);
        let o = self.run(&with_help);
        if !o.status.success() {
            return Err(format!(
                "does not parse (`{}`): {}",
                with_help.join(" "),
                first_line(&o.stderr)
            ));
        }
        // An experiment is in the list.
        if sub == "sim" || sub == "live" {
            // The positional: the first word that is neither an option nor an option's value.
            let exp = (1..sep).find(|&i| {
                !args[i].starts_with('-') && !VALUE_OPTIONS.contains(&args[i - 1].as_str())
            });
            if let Some(exp) = exp.map(|i| &args[i]) {
                let list = text(&self.run(&[sub.clone(), "--list".into()]).stdout);
                if !list
                    .lines()
                    .any(|l| l.split_whitespace().next() == Some(exp))
                {
                    return Err(format!("`unpinned {sub} --list` has no experiment {exp}"));
                }
            }
        }
        // Input files exist.
        for a in &args[..sep] {
            if [".toml", ".goal", ".jsonl"].iter().any(|e| a.ends_with(e))
                && !a.starts_with("results/")
                && !self.root.join(a).exists()
            {
                return Err(format!("input file {a} does not exist"));
            }
        }
        // `run ... -- unpinned ARGS`: the inner command too.
        if sub == "run" {
            if let Some(prog) = args.get(sep + 1) {
                if is_unpinned_program(prog) {
                    self.check_cli(&args[sep + 2..])?;
                }
            }
        }
        // The cheap ones run, writing into the scratch directory.
        if CHEAP
            .iter()
            .any(|p| args.len() >= p.len() && p.iter().zip(args).all(|(a, b)| a == b))
        {
            let mut real = args.to_vec();
            let out = self.scratch.join(format!("out{}", real.len()));
            match real.iter().position(|a| a == "--out") {
                Some(i) if i + 1 < real.len() => real[i + 1] = out.display().to_string(),
                _ if help.contains("--out") => {
                    real.push("--out".into());
                    real.push(out.display().to_string());
                }
                _ => {}
            }
            if help.contains("--quiet") && !real.iter().any(|a| a == "-q" || a == "--quiet") {
                real.push("-q".into());
            }
            let o = self.run(&real);
            if !o.status.success() {
                return Err(format!(
                    "`unpinned {}` failed: {}",
                    real.join(" "),
                    first_line(&o.stderr)
                ));
            }
        }
        Ok(())
    }

    /// Every problem with the commands of `readme`, one line each.
    fn problems(&self, readme: &str) -> Vec<String> {
        let mut problems = Vec::new();
        let mut tour = Vec::new();
        for title in SECTIONS {
            let Some(body) = section(readme, title) else {
                problems.push(format!("no section `{title}`"));
                continue;
            };
            let cmds = shell_commands(body);
            if title.contains("Quick start") {
                let reproduce = cmds
                    .iter()
                    .filter(|c| matches!(classify(c), Ok(Kind::Cli(a)) if a.first().map(String::as_str) == Some("reproduce")))
                    .count();
                let tests = cmds
                    .iter()
                    .filter(|c| matches!(classify(c), Ok(Kind::CargoTest(_))))
                    .count();
                if cmds.len() != 2 || reproduce != 1 || tests != 1 {
                    problems.push(format!(
                        "the quick start must have exactly two commands, a `reproduce` and the test suite; it has {cmds:?}"
                    ));
                }
            } else {
                tour.extend(cmds.iter().cloned());
            }
            for c in &cmds {
                if let Err(e) = self.check(c) {
                    problems.push(format!("`{c}`: {e}"));
                }
            }
        }
        // The tour shows every subcommand.
        let top = subcommands(&text(&self.run(&["--help".into()]).stdout));
        assert!(!top.is_empty(), "`unpinned --help` lists no commands");
        for sub in top {
            let shown = tour.iter().any(|c| {
                let words: Vec<&str> = c.split_whitespace().collect();
                words
                    .windows(2)
                    .any(|w| (is_unpinned_program(w[0]) || w[0] == "--") && w[1] == sub)
            });
            if !shown {
                problems.push(format!("the tour has no example of `unpinned {sub}`"));
            }
        }
        problems
    }
}

#[test]
fn readme_commands_run_or_parse() {
    let c = Checker::new("ok");
    let readme = std::fs::read_to_string(c.root.join("README.md")).expect("README.md");
    let problems = c.problems(&readme);
    let _ = std::fs::remove_dir_all(&c.scratch);
    assert!(
        problems.is_empty(),
        "README.md commands that do not hold:\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn the_check_fails_on_wrong_commands() {
    let c = Checker::new("bad");
    for bad in [
        "unpinned frobnicate",
        "cargo run --release -- simulate part-fault-all",
        "unpinned sim --bogus-flag",
        "unpinned sim no-such-experiment",
        "unpinned profile frob",
        "unpinned replay bench/traces/no-such.goal",
        "unpinned run -n 2 -- unpinned sim --bogus",
        "unpinned run -n 2 -- target/release/unpinned dsm-run sor --bogus 1",
        "cargo test --workspace",
        "cargo build -p no-such-crate",
        "cc crates/capi/examples/c/no-such.c",
        "make all",
        "UNPINNED_X=1 unpinned sim --list",
    ] {
        match c.check(bad) {
            Ok(()) => panic!("`{bad}` passed the check"),
            Err(e) => eprintln!("rejected as expected: `{bad}`: {e}"),
        }
    }
    // A README without the sections, or with a third quick-start command, fails as a whole.
    assert!(!c.problems("# nothing here\n").is_empty());
    let three = "## Quick start\n```sh\nunpinned reproduce\ncargo test --workspace --locked\nunpinned sim --list\n```\n## A tour of the `unpinned` tool\n";
    assert!(c
        .problems(three)
        .iter()
        .any(|p| p.contains("exactly two commands")));
    let _ = std::fs::remove_dir_all(&c.scratch);
}

#[test]
fn shell_blocks_are_parsed() {
    let md = "x\n```sh\nunpinned a \\\n   b   # c\n# only a comment\n\nunpinned d#e\n```\n```rust\nlet x = 1;\n```\n";
    assert_eq!(shell_commands(md), vec!["unpinned a b", "unpinned d#e"]);
    assert_eq!(
        classify("cargo run --release -- sim --list"),
        Ok(Kind::Cli(vec!["sim".into(), "--list".into()]))
    );
    assert_eq!(
        section("## A\n1\n## B\n2\n", "## A").map(str::trim),
        Some("1")
    );
}
