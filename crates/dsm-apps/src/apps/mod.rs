//! The applications and their registry.

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
    /// Small inputs: a run takes milliseconds.
    Small,
    /// The spec's inputs (Water 512 molecules, LU 1024x1024, IS 2^24 keys x 10, SOR 4096x4096
    /// x 10 iterations, TSP 19 cities, N-Body 8K bodies).
    Spec,
}

impl std::str::FromStr for Input {
    type Err = String;
    fn from_str(s: &str) -> Result<Input, String> {
        match s {
            "small" => Ok(Input::Small),
            "spec" => Ok(Input::Spec),
            _ => Err(format!("input {s:?} (small|spec)")),
        }
    }
}

/// Registry names, in report order.
pub fn names() -> &'static [&'static str] {
    &["sor", "lu", "is", "tsp", "water", "nbody", "nbody-write"]
}

/// A fresh app by name with the given input.
pub fn create(name: &str, input: Input) -> Result<Box<dyn App>, AppError> {
    let spec = input == Input::Spec;
    Ok(match name {
        "sor" => Box::new(if spec { sor::Sor::new(4096, 10) } else { sor::Sor::new(64, 4) }),
        "lu" => Box::new(if spec { lu::Lu::new(1024, 16) } else { lu::Lu::new(64, 8) }),
        "is" => Box::new(if spec { is::Is::new(1 << 24, 1 << 15, 10) } else { is::Is::new(1 << 12, 1 << 8, 10) }),
        "tsp" => Box::new(if spec { tsp::Tsp::new(19) } else { tsp::Tsp::new(9) }),
        "water" => Box::new(if spec { water::Water::new(512, 5) } else { water::Water::new(48, 3) }),
        "nbody" => Box::new(if spec { nbody::NBody::new(8192, 3, false) } else { nbody::NBody::new(96, 3, false) }),
        "nbody-write" => Box::new(if spec { nbody::NBody::new(8192, 3, true) } else { nbody::NBody::new(96, 3, true) }),
        _ => return Err(AppError::Unknown(name.to_string(), names().join(", "))),
    })
}
