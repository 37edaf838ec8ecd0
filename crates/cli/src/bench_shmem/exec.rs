//! The configurations the benchmark runs in and one run of it: 2 PEs under the
//! implementation's `oshrun`, in a process group of its own, with a time limit.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::tools::{Implementation, Toolchain};

/// One way of running the benchmark.
#[derive(Clone, Debug)]
pub struct Config {
    /// Name in files and tables (`unpinned`, `unpinned-part`, `openmpi`, `openmpi-tcp`,
    /// `openmpi-alltcp`).
    pub name: &'static str,
    /// Whose library.
    pub implementation: Implementation,
    /// What it is, in words.
    pub description: &'static str,
    /// Environment set for the run.
    pub env: &'static [(&'static str, &'static str)],
    /// Environment removed for the run (so that the caller's shell cannot change it).
    pub env_removed: &'static [&'static str],
}

/// unpinned's switch that turns the on-node load/store path off (crates/shmem): every transfer
/// then goes through the PART engine.
pub const LOADSTORE_OFF: (&str, &str) = ("SHMEM_LOADSTORE", "0");

/// Open MPI's job environment for every run: run as root if we are root, one host without an
/// rsh agent, 2 PEs even on fewer cores, and `osc` without `rdma` (Debian's Open MPI 4.1
/// OpenSHMEM crashes in `shmem_finalize` with it).
pub const OPENMPI_ENV: [(&str, &str); 5] = [
    ("OMPI_ALLOW_RUN_AS_ROOT", "1"),
    ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"),
    ("OMPI_MCA_plm_rsh_agent", ""),
    ("OMPI_MCA_rmaps_base_oversubscribe", "1"),
    ("OMPI_MCA_osc", "^rdma"),
];

/// `UCX_TLS=tcp,self` moves only the SPML's traffic (puts, gets, atomics) onto TCP: Open MPI's
/// OpenSHMEM collectives on the world team (scoll `mpi`, which outranks `basic`) are MPI
/// collectives over the `ob1` PML and its BTLs, which take shared memory (`vader`) whatever
/// UCX_TLS says. (osc=^rdma is inherited from [`OPENMPI_ENV`]: the finalize crash.)
const OPENMPI_TCP_ENV: [(&str, &str); 6] = [
    OPENMPI_ENV[0],
    OPENMPI_ENV[1],
    OPENMPI_ENV[2],
    OPENMPI_ENV[3],
    OPENMPI_ENV[4],
    ("UCX_TLS", "tcp,self"),
];

/// [`OPENMPI_TCP_ENV`] with the BTLs limited to `self,tcp`: the collectives' MPI traffic goes
/// over TCP too, so every byte between the two PEs crosses the network stack on loopback.
/// (osc=^rdma is inherited from [`OPENMPI_ENV`]: the finalize crash.)
const OPENMPI_ALLTCP_ENV: [(&str, &str); 7] = [
    OPENMPI_ENV[0],
    OPENMPI_ENV[1],
    OPENMPI_ENV[2],
    OPENMPI_ENV[3],
    OPENMPI_ENV[4],
    ("UCX_TLS", "tcp,self"),
    ("OMPI_MCA_btl", "self,tcp"),
];

/// unpinned with its defaults (the load/store path on).
pub const UNPINNED: Config = Config {
    name: "unpinned",
    implementation: Implementation::Unpinned,
    description: "unpinned, default settings (on-node load/store path on)",
    env: &[],
    env_removed: &[LOADSTORE_OFF.0],
};

/// unpinned with every transfer through PART over shared-memory rings.
pub const UNPINNED_PART: Config = Config {
    name: "unpinned-part",
    implementation: Implementation::Unpinned,
    description: "unpinned, every transfer through PART over shared memory (SHMEM_LOADSTORE=0)",
    env: &[LOADSTORE_OFF],
    env_removed: &[],
};

/// Open MPI's OpenSHMEM with UCX's defaults (shared memory on one host).
pub const OPENMPI: Config = Config {
    name: "openmpi",
    implementation: Implementation::OpenMpi,
    description: "Open MPI OpenSHMEM (UCX defaults; OMPI_MCA_osc=^rdma)",
    env: &OPENMPI_ENV,
    env_removed: &["UCX_TLS", "OMPI_MCA_btl"],
};

/// Open MPI's OpenSHMEM with UCX over TCP on loopback (its collectives stay on shared memory:
/// see [`OPENMPI_TCP_ENV`]).
pub const OPENMPI_TCP: Config = Config {
    name: "openmpi-tcp",
    implementation: Implementation::OpenMpi,
    description: "Open MPI OpenSHMEM, UCX over TCP on loopback (UCX_TLS=tcp,self; OMPI_MCA_osc=^rdma); its world collectives are MPI ones over the vader BTL (shared memory)",
    env: &OPENMPI_TCP_ENV,
    env_removed: &["OMPI_MCA_btl"],
};

/// Open MPI's OpenSHMEM with all its traffic over TCP on loopback, collectives included.
pub const OPENMPI_ALLTCP: Config = Config {
    name: "openmpi-alltcp",
    implementation: Implementation::OpenMpi,
    description: "Open MPI OpenSHMEM, all traffic over TCP on loopback (UCX_TLS=tcp,self; OMPI_MCA_btl=self,tcp for the collectives' MPI path; OMPI_MCA_osc=^rdma)",
    env: &OPENMPI_ALLTCP_ENV,
    env_removed: &[],
};

/// The command line of a run of `program` with `args` under `t`'s launcher, 2 PEs.
pub fn command_line(
    t: &Toolchain,
    program: &Path,
    args: &[String],
    timeout: Duration,
) -> Vec<String> {
    let mut v = vec![t.oshrun.display().to_string(), "-np".into(), "2".into()];
    if t.implementation == Implementation::Unpinned {
        // The launcher's own limit ends every PE cleanly before ours kills the group.
        v.extend(["--timeout".into(), timeout.as_secs().max(1).to_string()]);
    }
    v.push(program.display().to_string());
    v.extend(args.iter().cloned());
    v
}

/// Run `cmd` (a command line) with `config`'s environment; stdout goes to `stdout_file`,
/// stderr to `stderr_file`. Returns stdout, or an error with the end of stderr. After
/// `timeout` (plus a grace for the launcher's own limit) the process group is ended.
pub fn run(
    config: &Config,
    cmd: &[String],
    stdout_file: &Path,
    stderr_file: &Path,
    timeout: Duration,
) -> Result<String, String> {
    let create = |p: &Path| {
        std::fs::File::create(p).map_err(|e| format!("cannot create {}: {e}", p.display()))
    };
    let mut c = Command::new(&cmd[0]);
    c.args(&cmd[1..])
        .stdin(Stdio::null())
        .stdout(create(stdout_file)?)
        .stderr(create(stderr_file)?)
        .process_group(0);
    for k in config.env_removed {
        c.env_remove(k);
    }
    for (k, v) in config.env {
        c.env(k, v);
    }
    let mut child = c
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", cmd[0]))?;
    let deadline = Instant::now() + timeout + Duration::from_secs(10);
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if Instant::now() >= deadline => break None,
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(format!("cannot wait for {}: {e}", cmd[0])),
        }
    };
    let status = match status {
        Some(s) => s,
        None => {
            end_group(child.id());
            let _ = child.wait();
            return Err(format!(
                "{} did not finish within {} s (ended); its stderr: {}",
                config.name,
                timeout.as_secs(),
                tail(stderr_file)
            ));
        }
    };
    if !status.success() {
        return Err(format!(
            "`{}` failed ({status}); its stderr: {}",
            cmd.join(" "),
            tail(stderr_file)
        ));
    }
    std::fs::read_to_string(stdout_file)
        .map_err(|e| format!("cannot read {}: {e}", stdout_file.display()))
}

/// End the process group this module started as `pid` (SIGTERM, then SIGKILL).
fn end_group(pid: u32) {
    let pgid = pid as libc::pid_t;
    // SAFETY: kill(2) on the process group created for our own child (process_group(0) makes
    // the child its leader, so its pid is the group id); no memory is shared.
    unsafe { libc::kill(-pgid, libc::SIGTERM) };
    std::thread::sleep(Duration::from_secs(2));
    // SAFETY: as above.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
}

/// The last lines of a log file, for error messages.
fn tail(p: &Path) -> String {
    let text = std::fs::read_to_string(p).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let from = lines.len().saturating_sub(12);
    let t = lines[from..].join("\n");
    if t.is_empty() {
        format!("(empty: {})", p.display())
    } else {
        format!("(from {})\n{t}", p.display())
    }
}
