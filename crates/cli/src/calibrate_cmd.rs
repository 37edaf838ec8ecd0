//! `unpinned calibrate`: measure this machine's component costs and write a simulator profile.

use std::path::PathBuf;

use clap::Args;
use unpinned_livebench::calibrate;

use crate::error::CliError;

/// Arguments of `unpinned calibrate`.
#[derive(Args, Debug)]
pub struct CalibrateArgs {
    /// Where to write the profile (TOML); the raw measurements go beside it as JSON.
    #[arg(long, default_value = "results/calibrated.toml")]
    pub out: PathBuf,
}

/// Run the measurements, print them, write the profile.
pub fn run(args: &CalibrateArgs) -> Result<(), CliError> {
    let c = calibrate::run(|step| eprintln!("calibrate: {step} ..."))
        .map_err(|e| CliError::Run(format!("calibration failed: {e}")))?;
    let rows = [
        ("touch, present page", c.touch_present_ns, "ns"),
        ("minor fault (first touch)", c.minor_fault_us, "us"),
        ("major fault (file, cache dropped)", c.major_fault_us, "us"),
        ("MADV_POPULATE_WRITE per call", c.populate_call_us, "us"),
        ("MADV_POPULATE_WRITE per page", c.populate_page_us, "us"),
        (
            "mlock+munlock, 1 present page",
            c.mlock_one_present_us,
            "us",
        ),
        ("mlock per extra present page", c.mlock_page_ns, "ns"),
        ("mlock, 1 absent page", c.mlock_one_absent_us, "us"),
        ("residency check per page", c.residency_check_ns, "ns"),
        ("cross-thread wake-up", c.thread_wakeup_us, "us"),
        ("shm ring one-way latency", c.ring_one_way_ns, "ns"),
        ("shm ring bandwidth", c.ring_gbps, "Gb/s"),
    ];
    for (what, v, unit) in rows {
        println!("{what:<36} {v:>12.3} {unit}");
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "this-host".into());
    let profile = calibrate::to_profile(&c, &host);
    if let Some(dir) = args.out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| CliError::Run(format!("cannot create {}: {e}", dir.display())))?;
    }
    let header = "# Written by `unpinned calibrate`: measured component costs of this machine.\n";
    std::fs::write(&args.out, format!("{header}{}", profile.to_toml()))
        .map_err(|e| CliError::Run(format!("cannot write {}: {e}", args.out.display())))?;
    let json = args.out.with_extension("json");
    std::fs::write(
        &json,
        serde_json::to_string_pretty(&c).expect("serializable"),
    )
    .map_err(|e| CliError::Run(format!("cannot write {}: {e}", json.display())))?;
    println!(
        "profile: {}  (use with --profile {})\nmeasurements: {}",
        args.out.display(),
        args.out.display(),
        json.display()
    );
    Ok(())
}
