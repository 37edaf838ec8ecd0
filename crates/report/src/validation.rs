//! The validation section of the report (issue 17, section 1): every published result of
//! validation.md beside ours, the ratio, and why they differ.
//!
//! The published values and, per row, where ours comes from (experiment, CSV filter, column,
//! aggregation) and the reason for the difference are data: `validation/validation.toml` in
//! this crate, transcribed from `validation/validation.md` (a verbatim copy of the spec; a test
//! checks that each of its table rows has an entry). Ours is read at report time from the
//! experiment's own CSV in the report directory, never typed in. The published numbers are not
//! targets: nothing here feeds back into a profile.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use serde::Deserialize;

use crate::findings::{fix_period_rule, num};
use crate::{
    format_float, render_svg, svg_file_name, write_experiment, Cell, Metadata, PlotSpec,
    ReportEntry, ReportSection, Table,
};

/// The transcription of validation.md with the mapping to our experiments.
pub const VALIDATION_TOML: &str = include_str!("../validation/validation.toml");

/// The copy of the spec the transcription follows.
pub const VALIDATION_MD: &str = include_str!("../validation/validation.md");

/// How the rows of the filter are reduced to one number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Agg {
    /// Mean (with `x`: mean of the per-`x` means).
    Mean,
    /// Largest (with `x`: of the per-`x` means).
    Max,
    /// Smallest (with `x`: of the per-`x` means).
    Min,
    /// The largest `x` whose mean value is at least 0.5 (the end of a timeout window).
    WindowEnd,
    /// odp-fix-period: the smallest fix period with no stall, in units of the longest fault
    /// resolution (`fault_max_us`), the largest over the fault times run.
    FixRule,
}

/// A denominator: ours = numerator / this.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Over {
    /// Its filter.
    pub filter: BTreeMap<String, String>,
    /// Its column (default: the numerator's).
    pub column: Option<String>,
}

/// One published result (or one part of a row of validation.md) and where ours comes from.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// Short id (plot category).
    pub id: String,
    /// The validation.md table heading, verbatim.
    pub section: String,
    /// The validation.md row's first cell, verbatim.
    pub result: String,
    /// Which part of the row this entry is.
    pub claim: String,
    /// The published number, in `unit` (None: the study gives no number).
    pub published: Option<f64>,
    /// The published value as the study states it.
    pub published_text: String,
    /// Unit of `published` and of ours after `scale`.
    pub unit: String,
    /// Multiply ours by this (unit conversion; default 1).
    pub scale: Option<f64>,
    /// The experiment whose CSV holds ours.
    pub experiment: String,
    /// The column.
    pub column: String,
    /// Group by this column first (means per value), for `Agg::WindowEnd` and per-x extremes.
    pub x: Option<String>,
    /// The filter key that is the x axis of the curve the published value sits on, when more
    /// than one filter value is a number (see [`curve_x`]).
    pub x_at: Option<String>,
    /// Keep rows whose column has this text (`a|b`: either).
    pub filter: BTreeMap<String, String>,
    /// Reduction.
    pub agg: Agg,
    /// Optional denominator.
    pub over: Option<Over>,
    /// Why ours differs, from the mechanism.
    pub reason: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    row: Vec<Entry>,
}

/// The entries of `validation.toml`, in order.
pub fn entries() -> Result<Vec<Entry>, String> {
    toml::from_str::<File>(VALIDATION_TOML)
        .map(|f| f.row)
        .map_err(|e| format!("crates/report/validation/validation.toml: {e}"))
}

/// One entry evaluated.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The entry.
    pub entry: Entry,
    /// Our number, in the entry's unit (None: not available, see `detail`).
    pub ours: Option<f64>,
    /// How it was found, or why it is missing.
    pub detail: String,
}

impl Outcome {
    /// Ours / published.
    pub fn ratio(&self) -> Option<f64> {
        match (self.ours, self.entry.published) {
            (Some(o), Some(p)) if p != 0.0 => Some(o / p),
            _ => None,
        }
    }
}

fn matches(t: &Table, row: &[Cell], filter: &BTreeMap<String, String>) -> Result<bool, String> {
    for (col, want) in filter {
        let i = t
            .col(col)
            .ok_or_else(|| format!("the CSV has no column {col:?}"))?;
        let have = row[i].to_text();
        if !want.split('|').any(|w| w == have) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Reduce the rows of `t` that pass `filter` in `column` (grouped by `x` if given).
fn reduce(
    t: &Table,
    filter: &BTreeMap<String, String>,
    column: &str,
    x: Option<&str>,
    agg: Agg,
) -> Result<(f64, String), String> {
    let ci = t
        .col(column)
        .ok_or_else(|| format!("the CSV has no column {column:?}"))?;
    let xi = match x {
        Some(x) => Some(
            t.col(x)
                .ok_or_else(|| format!("the CSV has no column {x:?}"))?,
        ),
        None => None,
    };
    // (x, sum, count) in first-appearance order.
    let mut groups: Vec<(f64, f64, u64)> = Vec::new();
    for row in &t.rows {
        if !matches(t, row, filter)? {
            continue;
        }
        let v = num(&row[ci]).ok_or_else(|| format!("{column} is not a number"))?;
        let gx = match xi {
            Some(i) => num(&row[i]).ok_or_else(|| "x is not a number".to_string())?,
            None => 0.0,
        };
        match groups.iter_mut().find(|g| g.0 == gx) {
            Some(g) => {
                g.1 += v;
                g.2 += 1;
            }
            None => groups.push((gx, v, 1)),
        }
    }
    if groups.is_empty() {
        return Err("no row matches the filter".into());
    }
    let n: u64 = groups.iter().map(|g| g.2).sum();
    let means: Vec<(f64, f64)> = groups.iter().map(|g| (g.0, g.1 / g.2 as f64)).collect();
    let rows = format!("{n} rows");
    Ok(match agg {
        Agg::Mean => (
            means.iter().map(|m| m.1).sum::<f64>() / means.len() as f64,
            rows,
        ),
        Agg::Max => {
            let m = means
                .iter()
                .fold(means[0], |b, m| if m.1 > b.1 { *m } else { b });
            let at = xi.map_or(String::new(), |_| format!(" at {}", format_float(m.0)));
            (m.1, format!("{rows}{at}"))
        }
        Agg::Min => {
            let m = means
                .iter()
                .fold(means[0], |b, m| if m.1 < b.1 { *m } else { b });
            let at = xi.map_or(String::new(), |_| format!(" at {}", format_float(m.0)));
            (m.1, format!("{rows}{at}"))
        }
        Agg::WindowEnd => {
            let inside: Vec<f64> = means.iter().filter(|m| m.1 >= 0.5).map(|m| m.0).collect();
            let (lo, hi) = inside
                .iter()
                .fold((f64::MAX, f64::MIN), |(a, b), &v| (a.min(v), b.max(v)));
            if inside.is_empty() {
                (0.0, format!("{rows}: no value reaches 0.5"))
            } else {
                let outside = means
                    .iter()
                    .filter(|m| m.1 < 0.5)
                    .map(|m| m.1)
                    .fold(0.0, f64::max);
                let lowest = means
                    .iter()
                    .filter(|m| m.1 >= 0.5)
                    .map(|m| m.1)
                    .fold(1.0, f64::min);
                (
                    hi,
                    format!(
                        "{rows}; >= 0.5 at {} of {} values of x, from {} to {} (lowest mean inside \
                         {}, highest outside {})",
                        inside.len(),
                        means.len(),
                        format_float(lo),
                        format_float(hi),
                        format_float(lowest),
                        format_float(outside)
                    ),
                )
            }
        }
        Agg::FixRule => unreachable!("handled by the caller"),
    })
}

fn evaluate_one(e: &Entry, t: &Table) -> Result<(f64, String), String> {
    let scale = e.scale.unwrap_or(1.0);
    if e.agg == Agg::FixRule {
        let mut kept = Table::new(&t.columns.iter().map(String::as_str).collect::<Vec<_>>());
        for row in &t.rows {
            if matches(t, row, &e.filter)? {
                kept.push(row.clone());
            }
        }
        let rule = fix_period_rule(&kept).ok_or("the CSV lacks odp-fix-period's columns")?;
        let odp = e.filter.get("odp").map_or("local", String::as_str);
        let v = rule
            .safe_in_fault_max(odp)
            .ok_or("some fault time stalled at every period tested")?;
        let b = match rule.boundary_is_fault_max(odp) {
            Some(true) => "stalls only below the longest fault resolution",
            Some(false) => "the stall boundary is not the longest fault resolution",
            None => "no stall at any period",
        };
        return Ok((v * scale, format!("{} fault times; {b}", rule.groups.len())));
    }
    let (mut v, mut detail) = reduce(t, &e.filter, &e.column, e.x.as_deref(), e.agg)?;
    if let Some(o) = &e.over {
        let col = o.column.as_deref().unwrap_or(&e.column);
        let (d, dd) = reduce(t, &o.filter, col, e.x.as_deref(), e.agg)?;
        if d == 0.0 {
            return Err("the denominator is 0".into());
        }
        detail = format!(
            "{} / {} ({detail} / {dd})",
            format_float(v),
            format_float(d)
        );
        v /= d;
    }
    Ok((v * scale, detail))
}

/// Evaluate every entry, getting each experiment's table from `table_of` (called once per
/// experiment; an error marks its entries as not available).
pub fn evaluate(
    entries: &[Entry],
    mut table_of: impl FnMut(&str) -> Result<Table, String>,
) -> Vec<Outcome> {
    let mut cache: BTreeMap<String, Result<Table, String>> = BTreeMap::new();
    entries
        .iter()
        .map(|e| {
            let t = cache
                .entry(e.experiment.clone())
                .or_insert_with(|| table_of(&e.experiment));
            let (ours, detail) = match t {
                Ok(t) => match evaluate_one(e, t) {
                    Ok((v, d)) => (Some(v), d),
                    Err(err) => (None, format!("not available: {err}")),
                },
                Err(err) => (None, format!("not available: {err}")),
            };
            Outcome {
                entry: e.clone(),
                ours,
                detail,
            }
        })
        .collect()
}

/// Read a CSV written by [`write_experiment`] back into a table (every cell as text).
pub fn read_csv(path: &Path) -> Result<Table, String> {
    let mut r = csv::Reader::from_path(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let cols: Vec<String> = r
        .headers()
        .map_err(|e| format!("{}: {e}", path.display()))?
        .iter()
        .map(str::to_string)
        .collect();
    let mut t = Table::new(&cols.iter().map(String::as_str).collect::<Vec<_>>());
    for rec in r.records() {
        let rec = rec.map_err(|e| format!("{}: {e}", path.display()))?;
        t.push(rec.iter().map(Cell::from).collect());
    }
    Ok(t)
}

/// The columns of a validation table.
pub const COLUMNS: [&str; 11] = [
    "id",
    "result",
    "claim",
    "published",
    "published_value",
    "ours_value",
    "unit",
    "ratio_ours_to_published",
    "reason",
    "experiment",
    "ours_from",
];

fn opt(v: Option<f64>) -> Cell {
    v.map_or(Cell::from(""), Cell::from)
}

/// The validation table of some outcomes.
pub fn table(outcomes: &[&Outcome]) -> Table {
    let mut t = Table::new(&COLUMNS);
    for o in outcomes {
        let e = &o.entry;
        t.push(vec![
            e.id.as_str().into(),
            e.result.as_str().into(),
            e.claim.as_str().into(),
            e.published_text.as_str().into(),
            opt(e.published),
            opt(o.ours),
            e.unit.as_str().into(),
            opt(o.ratio()),
            e.reason.as_str().into(),
            e.experiment.as_str().into(),
            o.detail.as_str().into(),
        ]);
    }
    t
}

/// Where a row's published value sits on a curve of its experiment: the x column and the x
/// value. The column is `x_at` if given, else the one filter key whose value is a number; the
/// curve is the row's `column` (times `scale`) against it, over the rows matching the rest of
/// the filter. None for rows whose value is not a point on a curve: no published number, a
/// ratio (`over`), an extreme, a window end or a rule, or no single numeric filter key.
pub fn curve_x(e: &Entry) -> Option<(String, f64)> {
    if e.agg != Agg::Mean || e.over.is_some() || e.x.is_some() || e.published.is_none() {
        return None;
    }
    let numeric = |v: &str| v.parse::<f64>().ok().filter(|v| v.is_finite());
    if let Some(k) = &e.x_at {
        return Some((k.clone(), numeric(e.filter.get(k)?)?));
    }
    let mut keys = e
        .filter
        .iter()
        .filter_map(|(k, v)| numeric(v).map(|x| (k.clone(), x)));
    let first = keys.next()?;
    keys.next().is_none().then_some(first)
}

/// The curve of `e` along `x_col` in `t`: the mean of `column` times `scale` per value of
/// `x_col`, over the rows matching the filter without its `x_col` key, in x order.
fn curve(t: &Table, e: &Entry, x_col: &str) -> Result<Vec<(f64, f64)>, String> {
    let mut rest = e.filter.clone();
    rest.remove(x_col);
    let col = |c: &str| {
        t.col(c)
            .ok_or_else(|| format!("the CSV has no column {c:?}"))
    };
    let (xi, yi) = (col(x_col)?, col(&e.column)?);
    let scale = e.scale.unwrap_or(1.0);
    let mut groups: Vec<(f64, f64, u64)> = Vec::new();
    for row in &t.rows {
        if !matches(t, row, &rest)? {
            continue;
        }
        let (Some(x), Some(y)) = (num(&row[xi]), num(&row[yi])) else {
            continue;
        };
        match groups.iter_mut().find(|g| g.0 == x) {
            Some(g) => {
                g.1 += y * scale;
                g.2 += 1;
            }
            None => groups.push((x, y * scale, 1)),
        }
    }
    if groups.is_empty() {
        return Err("no row matches the filter".into());
    }
    let mut pts: Vec<(f64, f64)> = groups.iter().map(|g| (g.0, g.1 / g.2 as f64)).collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    Ok(pts)
}

/// The series name of a curve: the filter values it keeps (or its column).
fn curve_label(e: &Entry, x_col: &str, with_column: bool) -> String {
    let kept: Vec<String> = e
        .filter
        .iter()
        .filter(|(k, _)| k.as_str() != x_col)
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    match (kept.is_empty(), with_column) {
        (true, _) => e.column.clone(),
        (false, false) => kept.join(", "),
        (false, true) => format!("{}: {}", e.column, kept.join(", ")),
    }
}

/// The y label of a curve plot: the column without a time-unit suffix, the unit last.
fn y_label(columns: &[&str], unit: &str) -> String {
    let stem = match columns {
        [c] => ["_ns", "_us", "_ms", "_s"]
            .iter()
            .find_map(|u| c.strip_suffix(u))
            .unwrap_or(c),
        _ => "value",
    };
    format!("{stem} ({unit})")
}

/// A log axis when every value is positive and they span two decades or more.
fn wide(vals: impl Iterator<Item = f64> + Clone) -> bool {
    let lo = vals.clone().fold(f64::INFINITY, f64::min);
    let hi = vals.fold(f64::NEG_INFINITY, f64::max);
    lo > 0.0 && hi / lo >= 100.0
}

/// The label of the published points series in a curve plot.
pub const PUBLISHED: &str = "published";

/// The plots of one experiment's outcomes, as `(file suffix, SVG)`. Rows whose published value
/// is a point on a curve ([`curve_x`]) get their curves from `table` (the experiment's CSV,
/// None: not available) with the published values overlaid as markers at their x, one plot per
/// (x column, unit); the first has suffix "", the others `X-UNIT`. The other rows (ratios,
/// extremes, windows, rules, and every row without a table) stay as bar pairs ([`plot`]),
/// suffix "bars" beside curve plots, else "".
pub fn plots(
    experiment: &str,
    outcomes: &[&Outcome],
    table: Option<&Table>,
) -> Result<Vec<(String, String)>, String> {
    // (x column, unit) -> the rows on curves with their x and curve.
    type OnCurve<'a> = Vec<(&'a Outcome, f64, Vec<(f64, f64)>)>;
    let mut groups: Vec<((String, String), OnCurve)> = Vec::new();
    let mut rest: Vec<&Outcome> = Vec::new();
    for &o in outcomes {
        let on = table.zip(curve_x(&o.entry)).and_then(|(t, (xc, x))| {
            let c = curve(t, &o.entry, &xc).ok()?;
            Some((xc, x, c))
        });
        let Some((xc, x, c)) = on else {
            rest.push(o);
            continue;
        };
        let key = (xc, o.entry.unit.clone());
        match groups.iter_mut().find(|g| g.0 == key) {
            Some(g) => g.1.push((o, x, c)),
            None => groups.push((key, vec![(o, x, c)])),
        }
    }
    let mut out = Vec::new();
    for (gi, ((xc, unit), rows)) in groups.iter().enumerate() {
        let mut columns: Vec<&str> = rows.iter().map(|r| r.0.entry.column.as_str()).collect();
        columns.sort_unstable();
        columns.dedup();
        let y = y_label(&columns, unit);
        let mut t = Table::new(&[xc.as_str(), y.as_str(), "series"]);
        let mut drawn: Vec<String> = Vec::new();
        for (o, _, c) in rows {
            let label = curve_label(&o.entry, xc, columns.len() > 1);
            if drawn.contains(&label) {
                continue;
            }
            for &(x, v) in c {
                t.push(vec![x.into(), v.into(), label.as_str().into()]);
            }
            drawn.push(label);
        }
        for (o, x, _) in rows {
            if let Some(p) = o.entry.published {
                t.push(vec![(*x).into(), p.into(), PUBLISHED.into()]);
            }
        }
        let xs = rows.iter().flat_map(|r| r.2.iter().map(|p| p.0));
        let ys = rows
            .iter()
            .flat_map(|r| r.2.iter().map(|p| p.1).chain(r.0.entry.published));
        let spec = PlotSpec::line(
            &format!("{experiment}: ours (lines) and published (markers)"),
            xc,
            &y,
            Some("series"),
        )
        .log(wide(xs), wide(ys))
        .markers_only(PUBLISHED);
        let suffix = if gi == 0 {
            String::new()
        } else {
            format!("{xc}-{unit}")
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '_' {
                        c
                    } else {
                        '-'
                    }
                })
                .collect()
        };
        out.push((suffix, render_svg(&t, &spec)?));
    }
    if !rest.is_empty() {
        let suffix = if out.is_empty() { "" } else { "bars" };
        out.push((suffix.to_string(), plot(experiment, &rest)?));
    }
    Ok(out)
}

/// Ours beside the published values of one experiment's outcomes, as bars (log scale: the
/// rows have different units), published ones only where the study gives a number.
pub fn plot(experiment: &str, outcomes: &[&Outcome]) -> Result<String, String> {
    let mut t = Table::new(&["id", "source", "value"]);
    for o in outcomes {
        if let Some(v) = o.ours {
            t.push(vec![o.entry.id.as_str().into(), "ours".into(), v.into()]);
        }
        if let Some(p) = o.entry.published {
            t.push(vec![
                o.entry.id.as_str().into(),
                "published".into(),
                p.into(),
            ]);
        }
    }
    let spec = PlotSpec::line(
        &format!("{experiment}: ours vs published (each pair in its row's unit)"),
        "id",
        "value",
        Some("source"),
    )
    .bars()
    .log(false, true);
    render_svg(&t, &spec)
}

/// The section's note.
pub const NOTE: &str = "Every published result of the PART and ODP studies (validation.md) beside \
ours, read from the experiment's CSV in this report, and the ratio. The published numbers are \
not targets: no profile value was changed toward them; each difference is explained from the \
mechanism (a cost their platform has and our model lacks, or the reverse, or a definition that \
differs) and stays.";

/// Evaluate every entry against the CSVs in `dir` (written by the simulated experiments just
/// before), write `dir/validation.{csv,json}` (every row) and
/// `dir/validation-EXPERIMENT.{csv,json,svg}` per experiment (with more SVGs when the
/// experiment needs more than one plot, see [`plots`]), and return the report section (one
/// entry per experiment, in the order of validation.md).
pub fn write_section(dir: &Path) -> io::Result<ReportSection> {
    let entries = entries().map_err(io::Error::other)?;
    let mut tables: BTreeMap<String, Table> = BTreeMap::new();
    let outcomes = evaluate(&entries, |name| {
        let t = read_csv(&dir.join(format!("{name}.csv")))?;
        tables.insert(name.to_string(), t.clone());
        Ok(t)
    });
    let mut experiments: Vec<&str> = Vec::new();
    for o in &outcomes {
        if !experiments.contains(&o.entry.experiment.as_str()) {
            experiments.push(&o.entry.experiment);
        }
    }
    let out = dir;
    let all: Vec<&Outcome> = outcomes.iter().collect();
    let mut meta = Metadata::new("validation", "validation");
    meta.extra = serde_json::json!({
        "source": "crates/report/validation/validation.toml (transcribed from validation.md)",
    });
    write_experiment(out, "validation", &table(&all), &[], &meta)?;
    let mut report = Vec::new();
    for exp in experiments {
        let mine: Vec<&Outcome> = outcomes
            .iter()
            .filter(|o| o.entry.experiment == exp)
            .collect();
        let name = format!("validation-{exp}");
        let t = table(&mine);
        let mut meta = Metadata::new(&name, "validation");
        meta.extra = serde_json::json!({
            "source": "crates/report/validation/validation.toml (transcribed from validation.md)",
            "ours": format!("read from {exp}.csv of this report"),
        });
        let mut files = write_experiment(out, &name, &t, &[], &meta)?;
        for (suffix, svg) in plots(exp, &mine, tables.get(exp)).map_err(io::Error::other)? {
            let path = out.join(svg_file_name(&name, &suffix));
            std::fs::write(&path, svg)?;
            files.svgs.push(path);
        }
        report.push(ReportEntry {
            name,
            system: mine[0]
                .entry
                .section
                .split_whitespace()
                .next()
                .unwrap_or("")
                .to_string(),
            description: format!("The published results {exp} reproduces, beside ours."),
            files,
            table: t,
            meta,
        });
    }
    Ok(ReportSection {
        id: "validation".into(),
        title: "Validation against the published results".into(),
        note: NOTE.into(),
        entries: report,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `(heading, first cell)` of every data row of validation.md's tables.
    fn spec_rows(md: &str) -> Vec<(String, String)> {
        let mut heading = String::new();
        let mut rows = Vec::new();
        let mut header_seen = false;
        for line in md.lines() {
            if let Some(h) = line.strip_prefix("## ") {
                heading = h.trim().to_string();
                header_seen = false;
                continue;
            }
            let Some(body) = line.trim().strip_prefix('|') else {
                header_seen = false;
                continue;
            };
            let cells: Vec<&str> = body
                .trim_end_matches('|')
                .split('|')
                .map(str::trim)
                .collect();
            if cells
                .iter()
                .all(|c| c.chars().all(|ch| ch == '-' || ch == ':'))
            {
                continue; // the separator row
            }
            if !header_seen {
                header_seen = true; // the header row
                continue;
            }
            rows.push((heading.clone(), cells[0].to_string()));
        }
        rows
    }

    #[test]
    fn every_row_of_validation_md_has_an_entry() {
        let rows = spec_rows(VALIDATION_MD);
        assert!(rows.len() >= 16, "parsed only {} rows", rows.len());
        let entries = entries().unwrap();
        let missing: Vec<_> = rows
            .iter()
            .filter(|(h, r)| !entries.iter().any(|e| &e.section == h && &e.result == r))
            .collect();
        assert!(missing.is_empty(), "rows without an entry: {missing:#?}");
        // And no entry points at a row that does not exist (a typo would hide a row).
        for e in &entries {
            assert!(
                rows.iter().any(|(h, r)| h == &e.section && r == &e.result),
                "entry {} names no row of validation.md",
                e.id
            );
            assert!(!e.reason.trim().is_empty(), "entry {} has no reason", e.id);
        }
        let mut ids: Vec<&str> = entries.iter().map(|e| e.id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), entries.len(), "duplicate ids");
    }

    #[test]
    fn the_copy_matches_the_spec_when_the_spec_is_there() {
        // The spec lives outside the repository (../shared/specs/ of the main checkout); when
        // it is there, the copy must be current.
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..");
        let spec = root.join("shared/specs/validation.md");
        if let Ok(text) = std::fs::read_to_string(&spec) {
            assert_eq!(
                text, VALIDATION_MD,
                "update crates/report/validation/validation.md"
            );
        }
    }

    fn t(rows: &[(&str, u64, f64)]) -> Table {
        let mut t = Table::new(&["scheme", "x_us", "v"]);
        for &(s, x, v) in rows {
            t.push(vec![s.into(), x.into(), v.into()]);
        }
        t
    }

    #[test]
    fn every_x_at_names_a_numeric_filter_key() {
        for e in entries().unwrap() {
            if let Some(k) = &e.x_at {
                assert_eq!(
                    curve_x(&e).map(|c| c.0).as_deref(),
                    Some(k.as_str()),
                    "entry {}: x_at {k:?} is not a numeric filter key of a point on a curve",
                    e.id
                );
            }
        }
    }

    fn point_entry(id: &str, scheme: &str, x: &str, published: f64) -> Entry {
        Entry {
            id: id.into(),
            section: "s".into(),
            result: "r".into(),
            claim: "c".into(),
            published: Some(published),
            published_text: "p".into(),
            unit: "us".into(),
            scale: None,
            experiment: "exp".into(),
            column: "v".into(),
            x: None,
            x_at: None,
            filter: BTreeMap::from([
                ("scheme".to_string(), scheme.to_string()),
                ("x_us".to_string(), x.to_string()),
            ]),
            agg: Agg::Mean,
            over: None,
            reason: "because".into(),
        }
    }

    #[test]
    fn overlay_plot_has_the_curve_and_the_published_points() {
        // A small CSV as an experiment writes it, read back.
        let dir = std::env::temp_dir().join(format!("unpinned-overlay-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("exp.csv");
        std::fs::write(
            &path,
            "scheme,x_us,v\na,10,1.5\na,10,2.5\na,20,4\na,40,8\nb,10,100\nb,20,200\n",
        )
        .unwrap();
        let tab = read_csv(&path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let mut ratio = point_entry("ratio", "a", "20", 0.5);
        ratio.over = Some(Over {
            filter: BTreeMap::from([("scheme".to_string(), "b".to_string())]),
            column: None,
        });
        let es = [
            point_entry("a10", "a", "10", 2.2),
            point_entry("a40", "a", "40", 9.0),
            point_entry("b20", "b", "20", 180.0),
            ratio,
        ];
        assert_eq!(curve_x(&es[0]), Some(("x_us".to_string(), 10.0)));
        assert_eq!(curve_x(&es[3]), None, "a ratio is not a point on a curve");
        assert_eq!(
            curve(&tab, &es[0], "x_us").unwrap(),
            [(10.0, 2.0), (20.0, 4.0), (40.0, 8.0)]
        );
        let out = evaluate(&es, |_| Ok(tab.clone()));
        let refs: Vec<&Outcome> = out.iter().collect();
        let svgs = plots("exp", &refs, Some(&tab)).unwrap();
        let suffixes: Vec<&str> = svgs.iter().map(|s| s.0.as_str()).collect();
        assert_eq!(suffixes, ["", "bars"], "the ratio stays a bar pair");
        let svg = &svgs[0].1;
        // Two curves (scheme=a with 3 points, scheme=b with 2) and 3 published markers.
        assert_eq!(svg.matches("<polyline").count(), 2, "{svg}");
        for label in ["scheme=a", "scheme=b", PUBLISHED, "x_us", "v (log, us)"] {
            assert!(
                svg.contains(&format!(">{label}</text>")),
                "missing {label}\n{svg}"
            );
        }
        // Series 0 (scheme=a) are circles, series 2 (published) triangles: the points plus
        // one in the legend; the published ones have no line.
        assert_eq!(svg.matches("<circle").count(), 3 + 1, "{svg}");
        assert_eq!(svg.matches("<path").count(), 3 + 1, "{svg}");
        // Without the table every row is a bar pair.
        let svgs = plots("exp", &refs, None).unwrap();
        assert_eq!(svgs.len(), 1);
        assert_eq!(svgs[0].0, "");
        assert!(!svgs[0].1.contains("<polyline"));
    }

    #[test]
    fn reductions_ratios_and_windows() {
        let tab = t(&[
            ("a", 0, 1.0),
            ("a", 0, 1.0),
            ("a", 100, 1.0),
            ("a", 100, 0.0),
            ("a", 200, 0.0),
            ("b", 0, 4.0),
        ]);
        let f = |s: &str| BTreeMap::from([("scheme".to_string(), s.to_string())]);
        let (v, _) = reduce(&tab, &f("a"), "v", Some("x_us"), Agg::WindowEnd).unwrap();
        assert_eq!(v, 100.0);
        let (v, _) = reduce(&tab, &f("a"), "v", None, Agg::Mean).unwrap();
        assert_eq!(v, 0.6);
        let (v, _) = reduce(&tab, &f("a|b"), "v", Some("x_us"), Agg::Max).unwrap();
        assert_eq!(v, 2.0, "mean of the x = 0 group, a and b");
        assert!(reduce(&tab, &f("c"), "v", None, Agg::Mean).is_err());
        assert!(reduce(&tab, &f("a"), "nope", None, Agg::Mean).is_err());
        let e = Entry {
            id: "r".into(),
            section: "s".into(),
            result: "r".into(),
            claim: "b over a".into(),
            published: Some(2.0),
            published_text: "2x".into(),
            unit: "x".into(),
            scale: None,
            experiment: "exp".into(),
            column: "v".into(),
            x: None,
            x_at: None,
            filter: f("b"),
            agg: Agg::Mean,
            over: Some(Over {
                filter: f("a"),
                column: None,
            }),
            reason: "because".into(),
        };
        let out = evaluate(std::slice::from_ref(&e), |_| Ok(tab.clone()));
        assert!((out[0].ours.unwrap() - 4.0 / 0.6).abs() < 1e-12);
        assert!((out[0].ratio().unwrap() - 4.0 / 1.2).abs() < 1e-12);
        let out = evaluate(&[e], |_| Err("not run".into()));
        assert!(out[0].ours.is_none() && out[0].detail.contains("not run"));
    }
}
