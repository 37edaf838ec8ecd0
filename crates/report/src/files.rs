//! Writing one experiment's files: `NAME.csv`, `NAME.json` (metadata) and `NAME*.svg`.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::{render_svg, PlotSpec, Table};

/// Version of the unpinned workspace that wrote the files.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Everything needed to know how a table was produced; written as `NAME.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Metadata {
    /// Experiment name (`part-fault-all`).
    pub experiment: String,
    /// System it belongs to (`part`, `odp`, `aa`, `dsm`).
    pub system: String,
    /// unpinned version ([`VERSION`]).
    pub version: String,
    /// Name of the cost profile used.
    pub profile_name: String,
    /// The complete profile after `--set` overrides, as JSON.
    pub profile: serde_json::Value,
    /// Experiment parameters (`--set exp.NAME=VALUE`, without the `exp.` prefix).
    pub parameters: BTreeMap<String, String>,
    /// Master seed.
    pub seed: u64,
    /// Wall-clock time of the run, seconds.
    pub wall_time_s: f64,
    /// Simulated events processed.
    pub sim_events: u64,
    /// When the run finished, RFC 3339 UTC (`2024-05-01T12:34:56Z`).
    pub created: String,
    /// The command line that produced the files.
    pub command: Vec<String>,
    /// Experiment-specific metadata (parameters used, notes).
    pub extra: serde_json::Value,
}

impl Metadata {
    /// Metadata for `experiment` of `system` with this crate's version, the current time and
    /// the current command line; the other fields are empty / zero, to be filled in.
    pub fn new(experiment: &str, system: &str) -> Metadata {
        Metadata {
            experiment: experiment.to_string(),
            system: system.to_string(),
            version: VERSION.to_string(),
            profile_name: String::new(),
            profile: serde_json::Value::Null,
            parameters: BTreeMap::new(),
            seed: 0,
            wall_time_s: 0.0,
            sim_events: 0,
            created: rfc3339_utc(SystemTime::now()),
            command: std::env::args().collect(),
            extra: serde_json::Value::Null,
        }
    }
}

/// `t` as RFC 3339 UTC with second precision (`1970-01-01T00:00:00Z`); times before the epoch
/// are clamped to it.
pub fn rfc3339_utc(t: SystemTime) -> String {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Paths of the files written for one experiment.
#[derive(Clone, Debug, PartialEq)]
pub struct ExperimentFiles {
    /// `DIR/NAME.csv`: the tidy table.
    pub csv: PathBuf,
    /// `DIR/NAME.json`: the [`Metadata`].
    pub json: PathBuf,
    /// `DIR/NAME.svg` (main plot) and `DIR/NAME-SUFFIX.svg`, in the order of the plot specs.
    pub svgs: Vec<PathBuf>,
}

/// File name of the plot with this suffix: `NAME.svg` or `NAME-SUFFIX.svg`.
pub fn svg_file_name(name: &str, suffix: &str) -> String {
    if suffix.is_empty() {
        format!("{name}.svg")
    } else {
        format!("{name}-{suffix}.svg")
    }
}

/// Write `DIR/NAME.csv` (header = column names, numbers via [`crate::Cell::to_text`]),
/// `DIR/NAME.json` (pretty-printed metadata) and one SVG per plot spec, creating `dir` if
/// needed. The CSV and JSON are written before the plots, so a plot spec naming a missing
/// column (an error) does not lose the data. Two plots with the same suffix are an error.
pub fn write_experiment(
    dir: &Path,
    name: &str,
    table: &Table,
    plots: &[PlotSpec],
    meta: &Metadata,
) -> io::Result<ExperimentFiles> {
    for (i, p) in plots.iter().enumerate() {
        if plots[..i].iter().any(|q| q.suffix == p.suffix) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "experiment {name}: two plots have the file suffix {:?}",
                    p.suffix
                ),
            ));
        }
    }
    std::fs::create_dir_all(dir)?;

    let csv_path = dir.join(format!("{name}.csv"));
    let mut w = csv::Writer::from_path(&csv_path)?;
    w.write_record(&table.columns)?;
    for row in &table.rows {
        w.write_record(row.iter().map(|c| c.to_text()))?;
    }
    w.flush()?;

    let json_path = dir.join(format!("{name}.json"));
    let mut text = serde_json::to_string_pretty(meta).map_err(io::Error::other)?;
    text.push('\n');
    std::fs::write(&json_path, text)?;

    let mut svgs = Vec::new();
    for spec in plots {
        let svg =
            render_svg(table, spec).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let path = dir.join(svg_file_name(name, &spec.suffix));
        std::fs::write(&path, svg)?;
        svgs.push(path);
    }
    Ok(ExperimentFiles {
        csv: csv_path,
        json: json_path,
        svgs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Cell;

    /// A fresh, empty directory under the system temp dir.
    pub(crate) fn scratch(tag: &str) -> PathBuf {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let d = std::env::temp_dir().join(format!(
            "unpinned-report-{tag}-{}-{nanos}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    fn table() -> Table {
        let mut t = Table::new(&["scheme", "size_bytes", "latency_us"]);
        t.push(vec!["part".into(), 4096u64.into(), 12.345678.into()]);
        t.push(vec!["pin, \"quoted\"".into(), 8192u64.into(), 0.1.into()]);
        t
    }

    #[test]
    fn rfc3339() {
        assert_eq!(rfc3339_utc(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let t = UNIX_EPOCH + std::time::Duration::from_secs(1_709_210_096); // leap day 2024
        assert_eq!(rfc3339_utc(t), "2024-02-29T12:34:56Z");
        let t = UNIX_EPOCH + std::time::Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(rfc3339_utc(t), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn writes_csv_json_svgs() {
        let dir = scratch("files").join("nested");
        let t = table();
        let plots = [
            PlotSpec::line("main", "size_bytes", "latency_us", Some("scheme")),
            PlotSpec::line("bars", "scheme", "latency_us", None)
                .bars()
                .suffix("bars"),
        ];
        let mut meta = Metadata::new("demo", "part");
        meta.seed = 7;
        meta.extra = serde_json::json!({"note": "hi"});
        let files = write_experiment(&dir, "demo", &t, &plots, &meta).unwrap();
        assert_eq!(files.csv, dir.join("demo.csv"));
        assert_eq!(
            files.svgs,
            vec![dir.join("demo.svg"), dir.join("demo-bars.svg")]
        );

        let mut r = csv::Reader::from_path(&files.csv).unwrap();
        assert_eq!(r.headers().unwrap().iter().collect::<Vec<_>>(), t.columns);
        let rows: Vec<Vec<String>> = r
            .records()
            .map(|rec| rec.unwrap().iter().map(str::to_string).collect())
            .collect();
        let expect: Vec<Vec<String>> = t
            .rows
            .iter()
            .map(|r| r.iter().map(Cell::to_text).collect())
            .collect();
        assert_eq!(rows, expect);
        assert_eq!(rows[0][2], "12.3457");

        let j: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&files.json).unwrap()).unwrap();
        for k in [
            "experiment",
            "system",
            "version",
            "profile_name",
            "profile",
            "parameters",
            "seed",
            "wall_time_s",
            "sim_events",
            "created",
            "command",
            "extra",
        ] {
            assert!(j.get(k).is_some(), "json lacks {k}");
        }
        assert_eq!(j["seed"], 7);
        assert_eq!(j["extra"]["note"], "hi");
        let back: Metadata = serde_json::from_value(j).unwrap();
        assert_eq!(back, meta);

        for p in &files.svgs {
            let s = std::fs::read_to_string(p).unwrap();
            assert!(s.starts_with("<svg") || s.starts_with("<?xml"));
        }
        let _ = std::fs::remove_dir_all(dir.parent().unwrap());
    }

    #[test]
    fn duplicate_suffix_and_bad_column_are_errors() {
        let dir = scratch("dup");
        let plots = [
            PlotSpec::line("a", "size_bytes", "latency_us", None),
            PlotSpec::line("b", "x", "y", None),
        ];
        let meta = Metadata::new("demo", "part");
        assert!(write_experiment(&dir, "demo", &table(), &plots, &meta).is_err());
        let plots = [PlotSpec::line("a", "size_bytes", "nope", None)];
        let err = write_experiment(&dir, "demo", &table(), &plots, &meta).unwrap_err();
        assert!(err.to_string().contains("nope"));
        assert!(
            dir.join("demo.csv").exists(),
            "data is kept when a plot fails"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
