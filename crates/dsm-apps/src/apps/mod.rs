//! The applications and their registry.

mod barnes;
mod is;
mod lu;
mod nbody;
mod sor;
mod tsp;
mod water;

use crate::{App, AppError};

/// Input size of an app: small (tests, the simulator's default experiments) or the spec's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// Small inputs: a run takes milliseconds (tests).
    Small,
    /// Medium inputs, the simulator experiments' default: tens of milliseconds of computation
    /// per run on a current machine, so the replayed cluster computes long enough for speedup
    /// to mean something while `unpinned reproduce` stays fast (SOR 512x512 x 10, LU 256x256,
    /// IS 2^18 keys below 2^11 x 10, TSP 12 cities, Water 512 molecules x 3 steps, N-Body 1024
    /// bodies x 3 steps, Barnes-Hut 2048 bodies x 2 steps).
    Medium,
    /// The spec's inputs (Water 512 molecules, LU 1024x1024, IS 2^24 keys x 10, SOR 4096x4096
    /// x 10 iterations, TSP 19 cities, N-Body 8K bodies, Barnes-Hut 16K bodies).
    Spec,
}

impl std::str::FromStr for Input {
    type Err = String;
    fn from_str(s: &str) -> Result<Input, String> {
        match s {
            "small" => Ok(Input::Small),
            "medium" => Ok(Input::Medium),
            "spec" => Ok(Input::Spec),
            _ => Err(format!("input {s:?} (small|medium|spec)")),
        }
    }
}

/// Registry names, in report order.
pub fn names() -> &'static [&'static str] {
    &[
        "sor",
        "lu",
        "is",
        "tsp",
        "water",
        "nbody",
        "nbody-write",
        "barnes",
    ]
}

/// A fresh app by name with the given input.
pub fn create(name: &str, input: Input) -> Result<Box<dyn App>, AppError> {
    use Input::*;
    Ok(match name {
        "sor" => Box::new(match input {
            Small => sor::Sor::new(64, 4),
            Medium => sor::Sor::new(512, 10),
            Spec => sor::Sor::new(4096, 10),
        }),
        "lu" => Box::new(match input {
            Small => lu::Lu::new(64, 8),
            Medium => lu::Lu::new(256, 16),
            Spec => lu::Lu::new(1024, 16),
        }),
        "is" => Box::new(match input {
            Small => is::Is::new(1 << 12, 1 << 8, 10),
            Medium => is::Is::new(1 << 18, 1 << 11, 10),
            Spec => is::Is::new(1 << 24, 1 << 15, 10),
        }),
        "tsp" => Box::new(match input {
            Small => tsp::Tsp::new(9),
            Medium => tsp::Tsp::new(12),
            Spec => tsp::Tsp::new(19),
        }),
        "water" => Box::new(match input {
            Small => water::Water::new(48, 3),
            Medium => water::Water::new(512, 3),
            Spec => water::Water::new(512, 5),
        }),
        "nbody" => Box::new(match input {
            Small => nbody::NBody::new(96, 3, false),
            Medium => nbody::NBody::new(1024, 3, false),
            Spec => nbody::NBody::new(8192, 3, false),
        }),
        "nbody-write" => Box::new(match input {
            Small => nbody::NBody::new(96, 3, true),
            Medium => nbody::NBody::new(1024, 3, true),
            Spec => nbody::NBody::new(8192, 3, true),
        }),
        "barnes" => Box::new(match input {
            Small => barnes::Barnes::new(128, 2),
            Medium => barnes::Barnes::new(2048, 2),
            Spec => barnes::Barnes::new(16384, 3),
        }),
        _ => return Err(AppError::Unknown(name.to_string(), names().join(", "))),
    })
}
