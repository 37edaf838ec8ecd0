//! `unpinned profile show` and `unpinned profile check`.

use unpinned_core::profile::Profile;

use crate::error::CliError;

/// Print the profile `name_or_file` after the `--set` overrides, as TOML.
pub fn show(name_or_file: &str, sets: &[String]) -> Result<(), CliError> {
    let mut p = Profile::load(name_or_file).map_err(|e| CliError::Usage(e.to_string()))?;
    for set in sets {
        if set.trim().starts_with("exp.") {
            return Err(CliError::Usage(format!(
                "--set {set:?} is an experiment parameter, not a profile field (use it with `unpinned sim`)"
            )));
        }
        p = p
            .with_override(set)
            .map_err(|e| CliError::Usage(e.to_string()))?;
    }
    print!("{}", p.to_toml());
    Ok(())
}

/// Parse and validate a profile file; print `OK` or the error.
pub fn check(file: &str) -> Result<(), CliError> {
    let p = Profile::load(file).map_err(|e| CliError::Usage(format!("{file}: {e}")))?;
    println!("OK: {file} (profile {:?})", p.name);
    Ok(())
}
