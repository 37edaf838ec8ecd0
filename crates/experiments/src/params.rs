//! Declared experiment parameters (`--set exp.NAME=VALUE`).
//!
//! Each experiment, simulated or live, declares its parameters once, with
//! [`declare_params!`]: a typed struct whose fields are the parameters, and the table
//! ([`Param`]: name, type, default, unit, allowed range, one-line doc) that
//! `unpinned sim EXP --help` and `unpinned live EXP --help` print. An experiment reads its
//! parameters only through that struct ([`crate::RunContext::params`]), so it cannot read a key
//! it did not declare; an unknown key, a value that does not parse and an impossible value
//! (outside the declared range, an empty list) are refused with a message naming the key and
//! what it accepts.

use std::collections::BTreeMap;

use crate::ExperimentError;

/// What values a parameter accepts besides its type (for a list: every element).
#[derive(Clone, Copy, Debug)]
pub enum Check {
    /// Any value of the type.
    Any,
    /// An integer in `min..=max`.
    Int {
        /// Smallest allowed.
        min: u64,
        /// Largest allowed.
        max: u64,
    },
    /// A finite number in `min..=max`; `above_min` excludes `min` itself.
    Num {
        /// Lower bound.
        min: f64,
        /// Whether the lower bound itself is excluded.
        above_min: bool,
        /// Largest allowed.
        max: f64,
    },
    /// One of these words.
    OneOf(&'static [&'static str]),
}

/// An integer in `min..=max`.
pub const fn int(min: u64, max: u64) -> Check {
    Check::Int { min, max }
}

/// A finite number above zero, at most `max`.
pub const fn positive(max: f64) -> Check {
    Check::Num {
        min: 0.0,
        above_min: true,
        max,
    }
}

/// A finite number in `min..=max`.
pub const fn num(min: f64, max: f64) -> Check {
    Check::Num {
        min,
        above_min: false,
        max,
    }
}

/// One of `words`.
pub const fn one_of(words: &'static [&'static str]) -> Check {
    Check::OneOf(words)
}

impl std::fmt::Display for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Check::Any => write!(f, "any"),
            Check::Int { min, max } if *max == u64::MAX => write!(f, ">= {min}"),
            Check::Int { min, max } => write!(f, "{min}..={max}"),
            Check::Num {
                min,
                above_min,
                max,
            } => {
                let lo = if *above_min { "> " } else { ">= " };
                if max.is_infinite() {
                    write!(f, "{lo}{min}")
                } else {
                    write!(f, "{lo}{min} and <= {max}")
                }
            }
            Check::OneOf(words) => write!(f, "{}", words.join(" | ")),
        }
    }
}

/// One declared parameter.
#[derive(Clone, Copy, Debug)]
pub struct Param {
    /// Name (`seeds`; set with `--set exp.seeds=3`).
    pub name: &'static str,
    /// Type, for the help (`integer`, `list of integers`, ...).
    pub kind: &'static str,
    /// Default, as it would be written on the command line.
    pub default: &'static str,
    /// Unit (empty when it has none).
    pub unit: &'static str,
    /// Allowed values besides the type.
    pub check: Check,
    /// One line about it.
    pub doc: &'static str,
    /// Parse and check a value (the same code the typed struct uses).
    pub validate: fn(&str, &Check) -> Result<(), String>,
}

/// A value type a parameter can have: parsed from its command-line text and checked.
pub trait Value: Sized {
    /// The type's name in the help.
    const KIND: &'static str;
    /// Parse the text; the error says what was expected.
    fn parse_value(text: &str) -> Result<Self, String>;
    /// Check against the declared range; the error says what is allowed.
    fn check_value(&self, check: &Check) -> Result<(), String>;
}

fn allowed(check: &Check) -> String {
    match check {
        Check::OneOf(_) => format!("one of {check}"),
        _ => format!("allowed: {check}"),
    }
}

macro_rules! int_value {
    ($($t:ty),*) => {$(
        impl Value for $t {
            const KIND: &'static str = "integer";
            fn parse_value(text: &str) -> Result<Self, String> {
                text.trim().parse().map_err(|_| format!("expected an integer (0..={})", <$t>::MAX))
            }
            fn check_value(&self, check: &Check) -> Result<(), String> {
                match check {
                    Check::Any => Ok(()),
                    Check::Int { min, max } if (*min..=*max).contains(&(*self as u64)) => Ok(()),
                    _ => Err(allowed(check)),
                }
            }
        }
    )*};
}
int_value!(u32, u64, usize);

impl Value for f64 {
    const KIND: &'static str = "number";
    fn parse_value(text: &str) -> Result<Self, String> {
        match text.trim().parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            _ => Err("expected a finite number".into()),
        }
    }
    fn check_value(&self, check: &Check) -> Result<(), String> {
        match *check {
            Check::Any => Ok(()),
            Check::Num {
                min,
                above_min,
                max,
            } if (*self > min || (!above_min && *self == min)) && *self <= max => Ok(()),
            _ => Err(allowed(check)),
        }
    }
}

impl Value for String {
    const KIND: &'static str = "text";
    fn parse_value(text: &str) -> Result<Self, String> {
        Ok(text.trim().to_string())
    }
    fn check_value(&self, check: &Check) -> Result<(), String> {
        match check {
            Check::OneOf(words) if !words.contains(&self.as_str()) => Err(allowed(check)),
            _ => Ok(()),
        }
    }
}

/// `true` or `false`.
impl Value for bool {
    const KIND: &'static str = "true|false";
    fn parse_value(text: &str) -> Result<Self, String> {
        text.trim()
            .parse()
            .map_err(|_| "expected true or false".to_string())
    }
    fn check_value(&self, _: &Check) -> Result<(), String> {
        Ok(())
    }
}

/// Comma-separated, at least one element, every element checked.
impl<T: Value> Value for Vec<T> {
    const KIND: &'static str = kind_name(T::KIND, true);
    fn parse_value(text: &str) -> Result<Self, String> {
        if text.trim().is_empty() {
            return Err("expected a non-empty comma-separated list".into());
        }
        text.split(',')
            .map(|v| T::parse_value(v).map_err(|e| format!("{:?}: {e}", v.trim())))
            .collect()
    }
    fn check_value(&self, check: &Check) -> Result<(), String> {
        for v in self {
            v.check_value(check)?;
        }
        Ok(())
    }
}

/// [`Param::validate`] for a value type `T`.
pub fn validate<T: Value>(text: &str, check: &Check) -> Result<(), String> {
    T::parse_value(text)?.check_value(check)
}

/// The type name shown in the help: `integer`, `list of integers`, ...
pub const fn kind_name(kind: &'static str, list: bool) -> &'static str {
    if !list {
        return kind;
    }
    match kind.as_bytes() {
        b"integer" => "list of integers",
        b"number" => "list of numbers",
        _ => "list of words",
    }
}

/// A typed parameter struct declared with [`declare_params!`].
pub trait Declared: Sized {
    /// Its parameters, in declaration order.
    const PARAMS: &'static [Param];
    /// Parse `map` (`NAME -> VALUE` text, without the `exp.` prefix): unknown keys, values
    /// that do not parse and values out of range are refused; absent ones take the default.
    fn from_map(map: &BTreeMap<String, String>) -> Result<Self, ExperimentError>;
}

/// The parameter values in effect: every declared one, given or default (for the metadata).
pub fn effective(params: &[Param], map: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    params
        .iter()
        .map(|p| {
            let v = map.get(p.name).map(|s| s.trim()).unwrap_or(p.default);
            (p.name.to_string(), v.to_string())
        })
        .collect()
}

/// Refuse keys of `map` that are not declared, and values that do not parse or are out of
/// range; the message names the key and what it accepts.
pub fn validate_map(
    params: &[Param],
    map: &BTreeMap<String, String>,
) -> Result<(), ExperimentError> {
    for key in map.keys() {
        if !params.iter().any(|p| p.name == key) {
            return Err(ExperimentError::Param(unknown_key(params, key)));
        }
    }
    for p in params {
        if let Some(text) = map.get(p.name) {
            (p.validate)(text, &p.check).map_err(|why| bad_value(p, text, &why))?;
        }
    }
    Ok(())
}

fn unknown_key(params: &[Param], key: &str) -> String {
    let mut msg = format!("unknown parameter exp.{key}");
    let close = close_names(key, params.iter().map(|p| p.name));
    if let Some(best) = close.first() {
        msg.push_str(&format!(" (did you mean exp.{best}?)"));
    }
    if params.is_empty() {
        msg.push_str("; this experiment takes no parameters");
    } else {
        let names: Vec<String> = params.iter().map(|p| format!("exp.{}", p.name)).collect();
        msg.push_str(&format!("; known: {}", names.join(", ")));
    }
    msg.push_str(" (profile fields are set without `exp.`, e.g. --set engine.block_timeout_us=100, and the profile itself with --profile)");
    msg
}

fn bad_value(p: &Param, text: &str, why: &str) -> ExperimentError {
    ExperimentError::Param(format!(
        "bad value exp.{}={:?}: {why} ({}{}, default {})",
        p.name,
        text,
        p.kind,
        if p.unit.is_empty() {
            String::new()
        } else {
            format!(", {}", p.unit)
        },
        p.default
    ))
}

/// Parse one declared field (used by [`declare_params!`]).
pub fn field<T: Value>(
    params: &[Param],
    name: &str,
    map: &BTreeMap<String, String>,
) -> Result<T, ExperimentError> {
    let p = params
        .iter()
        .find(|p| p.name == name)
        .expect("declare_params! declares every field");
    let text = map.get(name).map(String::as_str).unwrap_or(p.default);
    let v = T::parse_value(text).map_err(|why| bad_value(p, text, &why))?;
    v.check_value(&p.check)
        .map_err(|why| bad_value(p, text, &why))?;
    Ok(v)
}

/// Declare an experiment's parameters: a struct with one public field per parameter, and its
/// [`Declared`] implementation (the table and the parser).
///
/// ```ignore
/// declare_params! {
///     /// Parameters of `part-fault-frequency`.
///     pub struct Params {
///         seeds: u64 { default: "5", unit: "", check: int(1, 1000), doc: "Seeds per point" },
///     }
/// }
/// ```
#[macro_export]
macro_rules! declare_params {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(
                $field:ident : $ty:ty {
                    default: $default:literal,
                    unit: $unit:literal,
                    check: $check:expr,
                    doc: $doc:literal $(,)?
                }
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq)]
        $vis struct $name {
            $( #[doc = $doc] pub $field: $ty, )*
        }

        impl $crate::params::Declared for $name {
            const PARAMS: &'static [$crate::params::Param] = &[
                $( $crate::params::Param {
                    name: stringify!($field),
                    kind: <$ty as $crate::params::Value>::KIND,
                    default: $default,
                    unit: $unit,
                    check: $check,
                    doc: $doc,
                    validate: $crate::params::validate::<$ty>,
                }, )*
            ];
            fn from_map(
                map: &::std::collections::BTreeMap<String, String>,
            ) -> Result<Self, $crate::ExperimentError> {
                $crate::params::validate_map(Self::PARAMS, map)?;
                Ok($name {
                    $( $field: $crate::params::field(Self::PARAMS, stringify!($field), map)?, )*
                })
            }
        }
    };
}

/// Levenshtein distance (names are short).
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Names among `names` close to `wanted` (typos, or one containing the other), best first.
pub fn close_names<'a>(wanted: &str, names: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut scored: Vec<(usize, &str)> = names
        .into_iter()
        .filter_map(|n| {
            let d = distance(wanted, n);
            let near = d <= (wanted.len() / 3).max(2)
                || (wanted.len() >= 3 && (n.contains(wanted) || wanted.contains(n)));
            near.then_some((d, n))
        })
        .collect();
    scored.sort();
    scored.into_iter().take(5).map(|(_, n)| n).collect()
}
