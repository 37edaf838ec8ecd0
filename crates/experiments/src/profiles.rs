//! The four kinds of cost profile the experiments use, and which experiments use which.
//!
//! `--profile NAME|FILE` names a built-in profile or a TOML file of any kind (the kind is read
//! from the file's sections); an experiment accepts only a profile of its own kind, and
//! `--set KEY=VALUE` overrides a field of that profile. Nothing is ignored: a profile or an
//! override an experiment does not use is refused with a message saying which experiments use
//! which kind.

use serde::Serialize;
use unpinned_aa::profile::AaProfile;
use unpinned_core::profile::{override_field, Profile};
use unpinned_ib::VendorProfile;
use unpinned_sim::dsm::DsmProfile;

/// The kind of cost profile an experiment uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProfileKind {
    /// PART platform (`forth-arm` and files like `profiles/forth-arm.toml`).
    Part,
    /// InfiniBand vendor (`connectx3` .. `connectx6`, `profiles/connectx*.toml`).
    Ib,
    /// Active Access platform (`cray-xe6`, `profiles/cray-xe6.toml`).
    Aa,
    /// DSM reference cluster (`dsm-ib1`, `profiles/dsm-ib1.toml`).
    Dsm,
}

impl ProfileKind {
    /// Every kind, in report order.
    pub const ALL: [ProfileKind; 4] = [
        ProfileKind::Part,
        ProfileKind::Ib,
        ProfileKind::Aa,
        ProfileKind::Dsm,
    ];

    /// Short name (`PART`, `IB`, `AA`, `DSM`).
    pub fn name(self) -> &'static str {
        match self {
            ProfileKind::Part => "PART",
            ProfileKind::Ib => "IB",
            ProfileKind::Aa => "AA",
            ProfileKind::Dsm => "DSM",
        }
    }

    /// `a` or `an`, for messages (`an IB profile`).
    pub fn article(self) -> &'static str {
        match self {
            ProfileKind::Ib | ProfileKind::Aa => "an",
            ProfileKind::Part | ProfileKind::Dsm => "a",
        }
    }

    /// The built-in profiles of this kind; the first is the default.
    pub fn builtins(self) -> &'static [&'static str] {
        match self {
            ProfileKind::Part => &["forth-arm"],
            ProfileKind::Ib => &["connectx4", "connectx3", "connectx5", "connectx6"],
            ProfileKind::Aa => &["cray-xe6"],
            ProfileKind::Dsm => &["dsm-ib1"],
        }
    }

    /// The section that marks a profile file of this kind.
    fn marker(self) -> &'static str {
        match self {
            ProfileKind::Part => "engine",
            ProfileKind::Ib => "timer",
            ProfileKind::Aa => "notify",
            ProfileKind::Dsm => "user",
        }
    }

    /// One line: the kind, its built-in profiles and the experiments that use it.
    pub fn describe(self) -> String {
        let users: Vec<&str> = crate::all()
            .iter()
            .filter(|e| e.profile == self)
            .map(|e| e.name)
            .collect();
        format!(
            "{} profiles ({}, or a file like profiles/{}.toml): {}",
            self.name(),
            self.builtins().join(", "),
            self.builtins()[0],
            users.join(", ")
        )
    }
}

/// A loaded profile of any kind.
#[derive(Clone, Debug, PartialEq)]
pub enum AnyProfile {
    /// PART platform.
    Part(Profile),
    /// InfiniBand vendor.
    Ib(VendorProfile),
    /// Active Access platform.
    Aa(AaProfile),
    /// DSM reference cluster.
    Dsm(DsmProfile),
}

impl AnyProfile {
    /// The default (first built-in) profile of `kind`.
    pub fn builtin(kind: ProfileKind) -> AnyProfile {
        match kind {
            ProfileKind::Part => AnyProfile::Part(Profile::forth_arm()),
            ProfileKind::Ib => AnyProfile::Ib(VendorProfile::builtin(kind.builtins()[0])),
            ProfileKind::Aa => AnyProfile::Aa(AaProfile::cray_xe6()),
            ProfileKind::Dsm => AnyProfile::Dsm(DsmProfile::dsm_ib1()),
        }
    }

    /// A built-in profile by name, or a TOML file of any kind by path (its kind is read from
    /// its sections). The error names the file and what is wrong.
    pub fn load(name_or_path: &str) -> Result<AnyProfile, String> {
        if name_or_path == "forth-arm" {
            return Ok(AnyProfile::Part(Profile::forth_arm()));
        }
        if ProfileKind::Ib.builtins().contains(&name_or_path) {
            return Ok(AnyProfile::Ib(VendorProfile::builtin(name_or_path)));
        }
        if name_or_path == "cray-xe6" {
            return Ok(AnyProfile::Aa(AaProfile::cray_xe6()));
        }
        if name_or_path == "dsm-ib1" {
            return Ok(AnyProfile::Dsm(DsmProfile::dsm_ib1()));
        }
        let builtins: Vec<&str> = ProfileKind::ALL
            .iter()
            .flat_map(|k| k.builtins().iter().copied())
            .collect();
        let text = std::fs::read_to_string(name_or_path).map_err(|e| {
            format!(
                "no built-in profile named {name_or_path:?} and no such file ({e}); built-in: {}",
                builtins.join(", ")
            )
        })?;
        Self::from_toml(&text).map_err(|e| format!("{name_or_path}: {e}"))
    }

    /// Parse a profile of any kind from TOML text.
    pub fn from_toml(text: &str) -> Result<AnyProfile, String> {
        let table: toml::Table = toml::from_str(text).map_err(|e| e.to_string())?;
        let kind = ProfileKind::ALL
            .into_iter()
            .find(|k| table.contains_key(k.marker()))
            .ok_or_else(|| {
                let marks: Vec<String> = ProfileKind::ALL
                    .iter()
                    .map(|k| format!("{} has [{}]", k.name(), k.marker()))
                    .collect();
                format!("not a profile of any known kind ({})", marks.join(", "))
            })?;
        let r = match kind {
            ProfileKind::Part => Profile::from_toml(text)
                .map(AnyProfile::Part)
                .map_err(|e| e.to_string()),
            ProfileKind::Ib => VendorProfile::from_toml(text)
                .map(AnyProfile::Ib)
                .map_err(|e| e.to_string()),
            ProfileKind::Aa => AaProfile::from_toml(text)
                .map(AnyProfile::Aa)
                .map_err(|e| e.to_string()),
            ProfileKind::Dsm => DsmProfile::from_toml(text)
                .map(AnyProfile::Dsm)
                .map_err(|e| e.to_string()),
        };
        r.map_err(|e| format!("{} profile: {e}", kind.name()))
    }

    /// Its kind.
    pub fn kind(&self) -> ProfileKind {
        match self {
            AnyProfile::Part(_) => ProfileKind::Part,
            AnyProfile::Ib(_) => ProfileKind::Ib,
            AnyProfile::Aa(_) => ProfileKind::Aa,
            AnyProfile::Dsm(_) => ProfileKind::Dsm,
        }
    }

    /// Its name (`forth-arm`, `connectx4`, ...).
    pub fn name(&self) -> &str {
        match self {
            AnyProfile::Part(p) => &p.name,
            AnyProfile::Ib(p) => &p.name,
            AnyProfile::Aa(p) => &p.name,
            AnyProfile::Dsm(p) => &p.name,
        }
    }

    /// Override one field by dotted path (`timer.c_ack_floor=12`), validated.
    pub fn with_override(&self, assignment: &str) -> Result<AnyProfile, String> {
        fn set<T: Serialize + serde::de::DeserializeOwned, E: std::fmt::Display>(
            p: &T,
            assignment: &str,
            validate: impl Fn(&T) -> Result<(), E>,
        ) -> Result<T, String> {
            let q = override_field(p, assignment).map_err(|e| e.to_string())?;
            validate(&q).map_err(|e| format!("bad override {assignment:?}: {e}"))?;
            Ok(q)
        }
        Ok(match self {
            AnyProfile::Part(p) => {
                AnyProfile::Part(p.with_override(assignment).map_err(|e| e.to_string())?)
            }
            AnyProfile::Ib(p) => AnyProfile::Ib(set(p, assignment, VendorProfile::validate)?),
            AnyProfile::Aa(p) => AnyProfile::Aa(set(p, assignment, AaProfile::validate)?),
            AnyProfile::Dsm(p) => AnyProfile::Dsm(set(p, assignment, DsmProfile::validate)?),
        })
    }

    /// The profile as JSON (for the metadata).
    pub fn to_json(&self) -> serde_json::Value {
        let v = match self {
            AnyProfile::Part(p) => serde_json::to_value(p),
            AnyProfile::Ib(p) => serde_json::to_value(p),
            AnyProfile::Aa(p) => serde_json::to_value(p),
            AnyProfile::Dsm(p) => serde_json::to_value(p),
        };
        v.expect("profiles serialize")
    }

    /// The profile as TOML text.
    pub fn to_toml(&self) -> String {
        let t = match self {
            AnyProfile::Part(p) => toml::to_string(p),
            AnyProfile::Ib(p) => toml::to_string(p),
            AnyProfile::Aa(p) => toml::to_string(p),
            AnyProfile::Dsm(p) => toml::to_string(p),
        };
        t.expect("profiles serialize")
    }
}

/// Where an experiment runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backends {
    /// The simulator only (`unpinned sim`).
    Sim,
    /// The live runtime only (`unpinned live`).
    Live,
    /// Both, under the same name (`unpinned sim` and `unpinned live`).
    Both,
}

impl Backends {
    /// `sim`, `live` or `sim+live`.
    pub fn name(self) -> &'static str {
        match self {
            Backends::Sim => "sim",
            Backends::Live => "live",
            Backends::Both => "sim+live",
        }
    }
}

/// A profile field an experiment sets itself at every point, so a `--set` of it would change
/// nothing: it is refused, naming the parameter to use instead.
#[derive(Clone, Copy, Debug)]
pub struct FixedField {
    /// Dotted path (`engine.block_timeout_us`).
    pub field: &'static str,
    /// What sets it instead (`exp.timeouts_us`).
    pub instead: &'static str,
}
