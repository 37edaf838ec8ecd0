//! `oshrun -np N [--transport shm|udp] [--timeout S] [--set a.b=v] PROGRAM [ARGS]`: run an
//! OpenSHMEM program on N PEs of this host, with the launcher of `unpinned run`. The
//! transport may also come from `OSHRUN_TRANSPORT`; knobs from `UNPINNED_SET` (comma-separated
//! `a.b=v`) apply before the `--set` ones. `--netns A,B,...` runs PE `r` in the
//! (`r` mod K)-th of the K network namespaces listed (names of `ip netns`; over UDP each PE's
//! address is its namespace's; needs root). Exits 0 when every PE exited 0, else with the
//! first failing PE's code.
//!
//! With no more PEs than CPUs, every PE is bound to a CPU of its own (as Open MPI does by
//! default; `--bind-to none` opts out, `--bind-to core` is the default): a PE waiting in a
//! barrier then never takes the CPU the PE it waits for needs.
//!
//! Over shared memory the runtime runs with the library's settings for rings
//! (`unpinned_shmem::settings::SHM_RUNTIME_DEFAULTS`: 32 KiB packets), before the job's own.

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use unpinned_live::launch::{launch, LaunchOptions, LaunchTransport};

fn usage(msg: &str) -> ! {
    eprintln!("oshrun: {msg}\nusage: oshrun -n|-np N [--transport shm|udp] [--netns NS[,NS...]] [--timeout SECONDS] [--set a.b=v]... [-x NAME=VALUE]... [--bind-to core|none] [--] PROGRAM [ARGS...]\n(knobs: UNPINNED_SET=a.b=v,... then --set; docs/knobs.md)\n(accepted and ignored, for Makefiles written for Open MPI: --map-by X, --rank-by X, --hostfile F, --mca K V, --oversubscribe, --allow-run-as-root)");
    std::process::exit(2)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut n: Option<u32> = None;
    let mut transport = std::env::var("OSHRUN_TRANSPORT").unwrap_or_else(|_| "shm".into());
    let mut timeout = 600u64;
    // Knobs from `UNPINNED_SET` first, then `--set` ones (later ones win), as `unpinned run`
    // takes them: the launcher hands the ranks its own `UNPINNED_SET`, built from these.
    let mut sets = unpinned_live::edge::overrides_from_env();
    let mut env: Vec<(String, String)> = Vec::new();
    let mut bind_to = "core".to_string();
    let mut netns: Vec<String> = Vec::new();
    let mut program = None;
    while let Some(a) = args.next() {
        let mut val = |name: &str| {
            args.next()
                .unwrap_or_else(|| usage(&format!("{name} needs a value")))
        };
        match a.as_str() {
            "-n" | "-np" | "--np" | "-N" => {
                n = Some(
                    val(&a)
                        .parse()
                        .unwrap_or_else(|_| usage("-np needs a number")),
                )
            }
            "--transport" => transport = val(&a),
            "--netns" => netns.extend(
                val(&a)
                    .split(',')
                    .map(str::trim)
                    .filter(|n| !n.is_empty())
                    .map(String::from),
            ),
            "--timeout" => {
                timeout = val(&a)
                    .parse()
                    .unwrap_or_else(|_| usage("--timeout needs seconds"))
            }
            "--set" => sets.push(val(&a)),
            // Options of other launchers that Makefiles pass: the environment is inherited
            // anyway (`-x NAME=VALUE` sets it), placement is the kernel's.
            "-x" => {
                let kv = val(&a);
                if let Some((k, v)) = kv.split_once('=') {
                    env.push((k.to_string(), v.to_string()));
                }
            }
            "--bind-to" => {
                bind_to = val(&a);
                if bind_to != "core" && bind_to != "none" {
                    usage(&format!(
                        "--bind-to {bind_to}: use core (one CPU per PE, the default) or none"
                    ));
                }
            }
            "--map-by" | "--rank-by" | "--hostfile" | "-hostfile" | "--mca" => {
                let _ = val(&a);
                if a == "--mca" {
                    let _ = val(&a);
                }
            }
            "--oversubscribe" | "--allow-run-as-root" => {}
            "--" => {
                program = args.next();
                break;
            }
            "-h" | "--help" => usage("help"),
            s if s.starts_with('-') => usage(&format!("unknown option {s}")),
            _ => {
                program = Some(a);
                break;
            }
        }
    }
    let program = program.unwrap_or_else(|| usage("no program given"));
    let t: LaunchTransport = transport.parse().unwrap_or_else(|e: String| usage(&e));
    let mut o = LaunchOptions::new(n.unwrap_or(1), program);
    o.args = args.collect();
    if t == LaunchTransport::Shm {
        // First, so that the job's own settings win (the launcher lays out the rings).
        let defaults = unpinned_shmem::settings::SHM_RUNTIME_DEFAULTS;
        sets.splice(0..0, defaults.iter().map(|s| s.to_string()));
    }
    o.transport = t;
    o.netns = netns;
    o.sets = sets;
    env.push((unpinned_shmem::bind::ENV_BIND_TO.to_string(), bind_to));
    o.env = env;
    o.timeout = Duration::from_secs(timeout);
    o.grace = Duration::from_secs(3);
    let report = match launch(&o) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("oshrun: {e}");
            std::process::exit(1)
        }
    };
    if report.success() {
        std::process::exit(0);
    }
    for f in report.failures() {
        eprintln!("oshrun: {f}");
    }
    let first = report.first_failure.map(|r| &report.ranks[r as usize]);
    let code = first
        .map(|r| {
            r.status
                .code()
                .or_else(|| r.status.signal().map(|s| 128 + s))
                .filter(|&c| c != 0)
                .unwrap_or(1)
        })
        .unwrap_or(1);
    std::process::exit(code)
}
