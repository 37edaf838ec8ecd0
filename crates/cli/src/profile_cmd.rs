//! `unpinned profile show` and `unpinned profile check`, for profiles of every kind (PART, IB,
//! AA, DSM).

use unpinned_experiments::AnyProfile;

use crate::error::CliError;
use crate::run::kinds_help;

/// Print the profile `name_or_file` (any kind) after the `--set` overrides, as TOML.
pub fn show(name_or_file: &str, sets: &[String]) -> Result<(), CliError> {
    let mut p = AnyProfile::load(name_or_file).map_err(CliError::Usage)?;
    for set in sets {
        if set.trim().starts_with("exp.") {
            return Err(CliError::Usage(format!(
                "--set {set:?} is an experiment parameter, not a profile field (use it with `unpinned sim`)"
            )));
        }
        p = p.with_override(set).map_err(CliError::Usage)?;
    }
    print!("{}", p.to_toml());
    Ok(())
}

/// Parse and validate a profile file of any kind; print `OK`, its kind and the experiments
/// that use it, or the error.
pub fn check(file: &str) -> Result<(), CliError> {
    let p = AnyProfile::load(file)
        .map_err(|e| CliError::Usage(format!("{e}\nprofiles by kind:\n{}", kinds_help())))?;
    println!(
        "OK: {file} ({} profile {:?}; {})",
        p.kind().name(),
        p.name(),
        p.kind().describe()
    );
    Ok(())
}
