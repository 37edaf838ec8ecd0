//! Application traffic: per-rank programs of compute phases and message calls for the three
//! application classes of spec part.md (LAMMPS-like molecular dynamics, HPL-like dense solve,
//! HPCG-like conjugate gradient), calibrated to its table at 16 nodes, and trace replay (our
//! JSON-lines format and LogGOPSim's GOAL schedules).

#![warn(missing_docs)]

pub mod collectives;
pub mod goal;
pub mod grid;
pub mod hpcg;
pub mod hpl;
pub mod lammps;
pub mod model;
pub mod program;
pub mod rates;
pub mod trace;

pub use model::{program, totals, AppModel};
pub use program::{check_programs, Op, Program, Totals, MAX_MESSAGE_BYTES};
pub use rates::NodeRates;

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
pub enum TrafficError {
    /// Programs that cannot run (bad peer, buffer, unmatched calls).
    #[error("invalid programs: {0}")]
    Invalid(String),
    /// A trace that does not parse.
    #[error("trace line {line}: {what}")]
    Parse {
        /// 1-based line.
        line: usize,
        /// What is wrong.
        what: String,
    },
    /// Unknown application name.
    #[error("unknown application {0:?} (lammps, hpl, hpcg)")]
    UnknownApp(String),
}

/// The calibrated model of application `name` at `ranks` ranks.
pub fn model(name: &str, ranks: u32, rates: NodeRates) -> Result<Box<dyn AppModel>, TrafficError> {
    match name {
        "lammps" => Ok(Box::new(lammps::Lammps::calibrated(ranks, rates))),
        "hpl" => Ok(Box::new(hpl::Hpl::calibrated(ranks, rates))),
        "hpcg" => Ok(Box::new(hpcg::Hpcg::calibrated(ranks, rates))),
        other => Err(TrafficError::UnknownApp(other.to_string())),
    }
}

#[cfg(test)]
mod calibration_tests;
#[cfg(test)]
mod trace_tests;
