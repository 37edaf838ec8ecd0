//! Plot specifications and SVG rendering.
//!
//! The renderer writes SVG by hand (axes, "nice" ticks, decade ticks on log axes, legend,
//! polylines, markers, bars, text as `<text>` elements). It needs no font files, and its output
//! depends only on the table and the spec, so the same run gives byte-identical plots.

use std::fmt::Write as _;

use crate::{Cell, Table};

/// How a table is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlotKind {
    /// One line per series, points marked.
    Line,
    /// Grouped bars: one group per x value, one bar per series.
    Bar,
    /// Points only.
    Scatter,
    /// A ladder (sequence) diagram of a packet trace: `x` names the column holding
    /// `"sender->receiver"`, `y` the send time (us), `series` the packet type; rows in order.
    Ladder,
}

/// A plot of some columns of a table.
#[derive(Clone, Debug, PartialEq)]
pub struct PlotSpec {
    /// Title above the plot.
    pub title: String,
    /// Line, bars or points.
    pub kind: PlotKind,
    /// Column for the x axis.
    pub x: String,
    /// Column for the y axis.
    pub y: String,
    /// Column whose values name the series (one line / bar colour per value); None = one series.
    pub series: Option<String>,
    /// Keep only rows where these columns have these values (as text), e.g. `("size_bytes", "4096")`.
    pub filter: Vec<(String, String)>,
    /// Logarithmic x axis.
    pub log_x: bool,
    /// Logarithmic y axis.
    pub log_y: bool,
    /// File stem suffix; the main plot has "" (`NAME.svg`), others `NAME-SUFFIX.svg`.
    pub suffix: String,
    /// Series (values of the series column) drawn as markers only, without a line, in a line
    /// plot: e.g. reference points overlaid on measured curves.
    pub markers: Vec<String>,
}

impl PlotSpec {
    /// A line plot of `y` against `x`, one series per value of `series`.
    pub fn line(title: &str, x: &str, y: &str, series: Option<&str>) -> PlotSpec {
        PlotSpec {
            title: title.to_string(),
            kind: PlotKind::Line,
            x: x.to_string(),
            y: y.to_string(),
            series: series.map(str::to_string),
            filter: Vec::new(),
            log_x: false,
            log_y: false,
            suffix: String::new(),
            markers: Vec::new(),
        }
    }
    /// Builder: log-scale axes.
    pub fn log(mut self, log_x: bool, log_y: bool) -> PlotSpec {
        self.log_x = log_x;
        self.log_y = log_y;
        self
    }
    /// Builder: draw as a ladder diagram (see [`PlotKind::Ladder`]).
    pub fn ladder(mut self) -> PlotSpec {
        self.kind = PlotKind::Ladder;
        self
    }
    /// Builder: draw as grouped bars.
    pub fn bars(mut self) -> PlotSpec {
        self.kind = PlotKind::Bar;
        self
    }
    /// Builder: draw points only.
    pub fn points(mut self) -> PlotSpec {
        self.kind = PlotKind::Scatter;
        self
    }
    /// Builder: keep only rows with `column == value`.
    pub fn only(mut self, column: &str, value: &str) -> PlotSpec {
        self.filter.push((column.to_string(), value.to_string()));
        self
    }
    /// Builder: keep only rows whose `column` is one of `values`.
    pub fn only_any(self, column: &str, values: &[&str]) -> PlotSpec {
        self.only(column, &values.join("|"))
    }
    /// Builder: draw the series named `series` as markers only (line plots; see
    /// [`PlotSpec::markers`]).
    pub fn markers_only(mut self, series: &str) -> PlotSpec {
        self.markers.push(series.to_string());
        self
    }
    /// Builder: file suffix for secondary plots.
    pub fn suffix(mut self, s: &str) -> PlotSpec {
        self.suffix = s.to_string();
        self
    }
}

/// Render `spec` over `table` as an SVG document (800x500 px, taller only when a long legend
/// needs it).
///
/// Rows not matching `spec.filter` (compared as text, [`Cell::to_text`]) are dropped first.
/// Rows whose y (and, for line and scatter plots, x) is not a finite number are skipped, as are
/// values <= 0 on a log axis (a footnote counts those). Series are the distinct values of the
/// series column in order of first appearance. Line plots join a series' points in x order.
/// Bar plots take x values as categories (first-appearance order); several rows for the same
/// (category, series) are averaged. A plot with nothing left to draw is a valid SVG saying
/// "no data". An error names a column missing from the table.
pub fn render_svg(table: &Table, spec: &PlotSpec) -> Result<String, String> {
    if spec.kind == PlotKind::Ladder {
        return render_ladder(table, spec);
    }
    let data = extract(table, spec)?;
    Ok(match data {
        Extracted::Empty { .. } => no_data(spec),
        Extracted::Xy {
            series,
            dropped_log,
        } => draw_xy(spec, &series, dropped_log),
        Extracted::Bars {
            cats,
            series,
            dropped_log,
        } => draw_bars(spec, &cats, &series, dropped_log),
    })
}

mod ladder;

fn render_ladder(table: &Table, spec: &PlotSpec) -> Result<String, String> {
    let col = |name: &str| {
        table
            .col(name)
            .ok_or_else(|| format!("plot {:?}: no column {:?}", spec.title, name))
    };
    let (dir, time) = (col(&spec.x)?, col(&spec.y)?);
    let kind = spec.series.as_deref().map(col).transpose()?;
    let filters = spec
        .filter
        .iter()
        .map(|(c, v)| Ok((col(c)?, v.as_str())))
        .collect::<Result<Vec<_>, String>>()?;
    let rows: Vec<&Vec<Cell>> = table
        .rows
        .iter()
        .filter(|r| {
            filters.iter().all(|(i, v)| {
                r.get(*i)
                    .is_some_and(|c| v.split('|').any(|alt| c.to_text() == alt))
            })
        })
        .collect();
    if rows.is_empty() {
        return Ok(no_data(spec));
    }
    let skip: Vec<usize> = filters.iter().map(|(i, _)| *i).collect();
    Ok(ladder::draw(
        &spec.title,
        table,
        &rows,
        dir,
        time,
        kind,
        &skip,
    ))
}

// ---------------------------------------------------------------------------------------------
// Data extraction

struct Series {
    name: String,
    pts: Vec<(f64, f64)>,
}

struct BarSeries {
    name: String,
    /// Per category: (sum, count).
    vals: Vec<(f64, u32)>,
}

enum Extracted {
    Empty {
        #[allow(dead_code)]
        dropped_log: usize,
    },
    Xy {
        series: Vec<Series>,
        dropped_log: usize,
    },
    Bars {
        cats: Vec<String>,
        series: Vec<BarSeries>,
        dropped_log: usize,
    },
}

fn finite(c: Option<&Cell>) -> Option<f64> {
    c.and_then(Cell::as_f64).filter(|v| v.is_finite())
}

fn extract(table: &Table, spec: &PlotSpec) -> Result<Extracted, String> {
    let col = |name: &str| {
        table.col(name).ok_or_else(|| {
            format!(
                "plot {:?}: no column {:?} (columns: {})",
                spec.title,
                name,
                table.columns.join(", ")
            )
        })
    };
    let xi = col(&spec.x)?;
    let yi = col(&spec.y)?;
    let si = spec.series.as_deref().map(col).transpose()?;
    let filters = spec
        .filter
        .iter()
        .map(|(c, v)| Ok((col(c)?, v.as_str())))
        .collect::<Result<Vec<_>, String>>()?;
    // A filter value may list alternatives separated by '|' (see `PlotSpec::only_any`).
    let rows = table.rows.iter().filter(|r| {
        filters.iter().all(|(i, v)| {
            r.get(*i)
                .is_some_and(|c| v.split('|').any(|alt| c.to_text() == alt))
        })
    });
    let series_name = |r: &[Cell]| match si {
        Some(i) => r.get(i).map(Cell::to_text).unwrap_or_default(),
        None => spec.y.clone(),
    };
    let mut dropped_log = 0;
    match spec.kind {
        PlotKind::Line | PlotKind::Scatter => {
            let mut series: Vec<Series> = Vec::new();
            for r in rows {
                let (Some(x), Some(y)) = (finite(r.get(xi)), finite(r.get(yi))) else {
                    continue;
                };
                if (spec.log_x && x <= 0.0) || (spec.log_y && y <= 0.0) {
                    dropped_log += 1;
                    continue;
                }
                let name = series_name(r);
                match series.iter_mut().find(|s| s.name == name) {
                    Some(s) => s.pts.push((x, y)),
                    None => series.push(Series {
                        name,
                        pts: vec![(x, y)],
                    }),
                }
            }
            if series.is_empty() {
                return Ok(Extracted::Empty { dropped_log });
            }
            if spec.kind == PlotKind::Line {
                for s in &mut series {
                    s.pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                }
            }
            Ok(Extracted::Xy {
                series,
                dropped_log,
            })
        }
        PlotKind::Ladder => unreachable!("ladders are drawn by render_ladder"),
        PlotKind::Bar => {
            let mut cats: Vec<String> = Vec::new();
            let mut series: Vec<BarSeries> = Vec::new();
            for r in rows {
                let (Some(xc), Some(y)) = (r.get(xi), finite(r.get(yi))) else {
                    continue;
                };
                if spec.log_y && y <= 0.0 {
                    dropped_log += 1;
                    continue;
                }
                let cat = xc.to_text();
                let ci = match cats.iter().position(|c| *c == cat) {
                    Some(i) => i,
                    None => {
                        cats.push(cat);
                        cats.len() - 1
                    }
                };
                let name = series_name(r);
                let s = match series.iter().position(|s| s.name == name) {
                    Some(i) => &mut series[i],
                    None => {
                        series.push(BarSeries {
                            name,
                            vals: Vec::new(),
                        });
                        series.last_mut().expect("just pushed")
                    }
                };
                if s.vals.len() <= ci {
                    s.vals.resize(ci + 1, (0.0, 0));
                }
                s.vals[ci].0 += y;
                s.vals[ci].1 += 1;
            }
            if series.is_empty() {
                return Ok(Extracted::Empty { dropped_log });
            }
            Ok(Extracted::Bars {
                cats,
                series,
                dropped_log,
            })
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Axes and ticks

/// Canvas size.
const W: f64 = 800.0;
const H: f64 = 500.0;
const FONT: &str = "Helvetica, Arial, sans-serif";
const TICK_FONT: f64 = 12.0;
const LABEL_FONT: f64 = 13.0;
const TITLE_FONT: f64 = 16.0;
/// Tableau 10: distinct, colour-blind-friendlier than the defaults of most tools.
const PALETTE: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac",
];

/// Estimated width of `text` at `size` px (sans-serif averages ~0.58 em per character).
fn text_width(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size * 0.58
}

struct Axis {
    lo: f64,
    hi: f64,
    log: bool,
    /// Labelled ticks (with grid lines).
    major: Vec<(f64, String)>,
    /// Unlabelled ticks (log axes: 2..9 times a power of ten).
    minor: Vec<f64>,
}

impl Axis {
    /// Position of `v` in 0..=1 along the axis.
    fn norm(&self, v: f64) -> f64 {
        if self.log {
            (v.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        }
    }
}

fn nice_step(span: f64, target: f64) -> f64 {
    let raw = span / target;
    let mag = 10f64.powf(raw.log10().floor());
    let n = raw / mag;
    let m = if n <= 1.0 {
        1.0
    } else if n <= 2.0 {
        2.0
    } else if n <= 2.5 {
        2.5
    } else if n <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

/// Decimals needed to write multiples of `step` exactly.
fn decimals_for(step: f64) -> usize {
    (0..10)
        .find(|&d| {
            let s = step * 10f64.powi(d as i32);
            (s - s.round()).abs() < 1e-6 * s.abs().max(1.0)
        })
        .unwrap_or(10)
}

/// SI scale for large values: (divisor, suffix).
fn si_scale(max_abs: f64) -> (f64, &'static str) {
    if max_abs >= 1e12 {
        (1e12, "T")
    } else if max_abs >= 1e9 {
        (1e9, "G")
    } else if max_abs >= 1e6 {
        (1e6, "M")
    } else {
        (1e3, "k")
    }
}

/// Labels for evenly spaced ticks: shared decimals, SI suffixes from 10 000 up, scientific
/// notation for tiny values.
fn linear_labels(vals: &[f64], step: f64) -> Vec<String> {
    let max_abs = vals.iter().fold(0f64, |m, v| m.max(v.abs()));
    if (1e4..1e15).contains(&max_abs) {
        let (div, suf) = si_scale(max_abs);
        let d = decimals_for(step / div);
        vals.iter()
            .map(|v| {
                if *v == 0.0 {
                    "0".into()
                } else {
                    format!("{:.*}{suf}", d, v / div)
                }
            })
            .collect()
    } else if max_abs >= 1e15 || (max_abs > 0.0 && max_abs < 1e-3) {
        vals.iter()
            .map(|v| {
                if *v == 0.0 {
                    "0".into()
                } else {
                    format!("{v:e}")
                }
            })
            .collect()
    } else {
        let d = decimals_for(step);
        vals.iter().map(|v| format!("{:.*}", d, v)).collect()
    }
}

/// Label of one log-axis tick (a power of ten or a small multiple of one).
fn log_label(v: f64) -> String {
    let a = v.abs();
    if (1e-3..1e4).contains(&a) {
        let d = decimals_for(v);
        format!("{:.*}", d, v)
    } else if (1e4..1e15).contains(&a) {
        let (div, suf) = si_scale(a);
        let s = v / div;
        format!("{:.*}{suf}", decimals_for(s), s)
    } else {
        format!("{v:e}")
    }
}

/// A linear axis over the data (plus 4% on each side, except at an included zero) with ticks
/// at "nice" multiples inside it.
fn linear_axis(min: f64, max: f64, include_zero: bool) -> Axis {
    let (mut a, mut b) = (min, max);
    if include_zero {
        a = a.min(0.0);
        b = b.max(0.0);
    }
    if a == b {
        let d = if a == 0.0 { 1.0 } else { a.abs() * 0.1 };
        a -= d;
        b += d;
    }
    let pad = 0.04 * (b - a);
    let lo = if include_zero && a == 0.0 {
        0.0
    } else {
        a - pad
    };
    let hi = if include_zero && b == 0.0 {
        0.0
    } else {
        b + pad
    };
    let step = nice_step(b - a, 5.0);
    let (k0, k1) = (
        (lo / step - 1e-9).ceil() as i64,
        (hi / step + 1e-9).floor() as i64,
    );
    let vals: Vec<f64> = (k0..=k1)
        .map(|k| k as f64 * step)
        .map(|v| if v.abs() < step * 1e-9 { 0.0 } else { v })
        .collect();
    let labels = linear_labels(&vals, step);
    Axis {
        lo,
        hi,
        log: false,
        major: vals.into_iter().zip(labels).collect(),
        minor: vec![],
    }
}

/// A log axis. `tight`: the data plus a little padding (lines, points); otherwise whole
/// decades (bars, whose length must start somewhere meaningful). Powers of ten are labelled
/// (every k-th one beyond eight decades); short ranges also label 2x and 5x, or every
/// multiple, so that at least three ticks are labelled.
fn log_axis(min: f64, max: f64, tight: bool) -> Axis {
    let (mut lo, mut hi) = (min, max);
    if lo == hi {
        lo /= 2.0;
        hi *= 2.0;
    }
    if tight {
        let pad = ((hi / lo).log10() * 0.04).max(0.02);
        lo /= 10f64.powf(pad);
        hi *= 10f64.powf(pad);
    } else {
        lo = 10f64.powi(lo.log10().floor() as i32);
        hi = 10f64.powi(hi.log10().ceil() as i32);
    }
    let (e0, e1) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let inside = |v: f64| v >= lo * (1.0 - 1e-9) && v <= hi * (1.0 + 1e-9);
    let decades: Vec<i32> = (e0..=e1).filter(|e| inside(10f64.powi(*e))).collect();
    let count = |ms: &[u32]| -> usize {
        (e0..=e1)
            .flat_map(|e| ms.iter().map(move |&m| m as f64 * 10f64.powi(e)))
            .filter(|v| inside(*v))
            .count()
    };
    let labelled: &[u32] = if count(&[1]) >= 3 {
        &[1]
    } else if count(&[1, 2, 5]) >= 3 {
        &[1, 2, 5]
    } else {
        &[1, 2, 3, 4, 5, 6, 7, 8, 9]
    };
    let every = (decades.len() as i32 + 7) / 8;
    let mut major = Vec::new();
    let mut minor = Vec::new();
    let few_decades = e1 - e0 <= 6;
    for e in e0..=e1 {
        let p = 10f64.powi(e);
        for m in 1..=9u32 {
            let v = m as f64 * p;
            if !inside(v) {
                continue;
            }
            let label = if m == 1 {
                (e - e0).rem_euclid(every.max(1)) == 0
            } else {
                labelled.contains(&m)
            };
            if label {
                major.push((v, log_label(v)));
            } else if m == 1 || few_decades {
                minor.push(v);
            }
        }
    }
    Axis {
        lo,
        hi,
        log: true,
        major,
        minor,
    }
}

fn value_axis(vals: impl Iterator<Item = f64> + Clone, log: bool, zero: ZeroPolicy) -> Axis {
    let min = vals.clone().fold(f64::INFINITY, f64::min);
    let max = vals.fold(f64::NEG_INFINITY, f64::max);
    if log {
        return log_axis(min, max, !matches!(zero, ZeroPolicy::Always));
    }
    let include_zero = match zero {
        ZeroPolicy::Always => true,
        // Start at zero when that does not squash the data into a thin band.
        ZeroPolicy::IfClose => min >= 0.0 && min <= 0.5 * max,
        ZeroPolicy::Never => false,
    };
    linear_axis(min, max, include_zero)
}

#[derive(Clone, Copy)]
enum ZeroPolicy {
    Always,
    IfClose,
    Never,
}

// ---------------------------------------------------------------------------------------------
// SVG writing

fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c if (c as u32) < 0x20 && c != '\t' && c != '\n' => {}
            c => o.push(c),
        }
    }
    o
}

fn truncate(s: &str, max_chars: usize) -> String {
    if s.chars().count() <= max_chars {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max_chars.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// Coordinates rounded to 0.1 px: compact and stable text.
fn n(v: f64) -> String {
    let r = (v * 10.0).round() / 10.0;
    if r == r.trunc() {
        format!("{}", r as i64)
    } else {
        format!("{r:.1}")
    }
}

struct Svg {
    out: String,
}

impl Svg {
    fn new(w: f64, h: f64) -> Svg {
        let mut out = String::new();
        let _ = write!(
            out,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="{FONT}">"#,
            w = n(w),
            h = n(h)
        );
        out.push('\n');
        let _ = writeln!(
            out,
            r#"<rect x="0" y="0" width="{}" height="{}" fill="white"/>"#,
            n(w),
            n(h)
        );
        Svg { out }
    }
    fn raw(&mut self, s: &str) {
        self.out.push_str(s);
        self.out.push('\n');
    }
    fn line(&mut self, x0: f64, y0: f64, x1: f64, y1: f64, stroke: &str, width: f64) {
        let _ = writeln!(
            self.out,
            r#"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{stroke}" stroke-width="{}"/>"#,
            n(x0),
            n(y0),
            n(x1),
            n(y1),
            n(width)
        );
    }
    #[allow(clippy::too_many_arguments)]
    fn text(&mut self, x: f64, y: f64, size: f64, anchor: &str, extra: &str, s: &str) {
        let _ = writeln!(
            self.out,
            r#"<text x="{}" y="{}" font-size="{}" text-anchor="{anchor}"{extra}>{}</text>"#,
            n(x),
            n(y),
            n(size),
            esc(s)
        );
    }
    fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, attrs: &str) {
        let _ = writeln!(
            self.out,
            r#"<rect x="{}" y="{}" width="{}" height="{}" {attrs}/>"#,
            n(x),
            n(y),
            n(w),
            n(h)
        );
    }
    fn marker(&mut self, shape: usize, x: f64, y: f64, color: &str) {
        let r = 3.5;
        let o = &mut self.out;
        let _ = match shape % 4 {
            0 => writeln!(
                o,
                r#"<circle cx="{}" cy="{}" r="{}" fill="{color}"/>"#,
                n(x),
                n(y),
                n(r)
            ),
            1 => writeln!(
                o,
                r#"<rect x="{}" y="{}" width="{}" height="{}" fill="{color}"/>"#,
                n(x - r),
                n(y - r),
                n(2.0 * r),
                n(2.0 * r)
            ),
            2 => writeln!(
                o,
                r#"<path d="M{} {}L{} {}L{} {}Z" fill="{color}"/>"#,
                n(x),
                n(y - r * 1.2),
                n(x + r * 1.1),
                n(y + r * 0.8),
                n(x - r * 1.1),
                n(y + r * 0.8)
            ),
            _ => writeln!(
                o,
                r#"<path d="M{} {}L{} {}L{} {}L{} {}Z" fill="{color}"/>"#,
                n(x),
                n(y - r * 1.3),
                n(x + r * 1.3),
                n(y),
                n(x),
                n(y + r * 1.3),
                n(x - r * 1.3),
                n(y)
            ),
        };
    }
    fn finish(mut self) -> String {
        self.out.push_str("</svg>\n");
        self.out
    }
}

fn no_data(spec: &PlotSpec) -> String {
    let mut s = Svg::new(W, H);
    s.text(
        W / 2.0,
        30.0,
        TITLE_FONT,
        "middle",
        r#" font-weight="bold""#,
        &spec.title,
    );
    s.rect(
        60.0,
        50.0,
        W - 80.0,
        H - 110.0,
        r##"fill="none" stroke="#cccccc""##,
    );
    s.text(
        W / 2.0,
        H / 2.0,
        18.0,
        "middle",
        r##" fill="#777777""##,
        "no data",
    );
    let what = format!("{} vs {}", spec.y, spec.x);
    s.text(
        W / 2.0,
        H / 2.0 + 24.0,
        TICK_FONT,
        "middle",
        r##" fill="#777777""##,
        &what,
    );
    s.finish()
}

// ---------------------------------------------------------------------------------------------
// Layout

#[derive(Clone, Copy)]
struct Frame {
    x0: f64,
    y0: f64,
    x1: f64,
    y1: f64,
}

impl Frame {
    fn px(&self, t: f64) -> f64 {
        self.x0 + t * (self.x1 - self.x0)
    }
    fn py(&self, t: f64) -> f64 {
        self.y1 - t * (self.y1 - self.y0)
    }
}

/// What the legend shows next to each name.
#[derive(Clone, Copy, PartialEq)]
enum Swatch {
    LineMarker,
    Marker,
    Block,
}

struct Legend {
    names: Vec<String>,
    w: f64,
    h: f64,
    swatch: Swatch,
    /// Per name: drawn as a marker alone whatever `swatch` says (marker-only series).
    marker_only: Vec<bool>,
}

const LEGEND_ROW: f64 = 18.0;

impl Legend {
    fn new(names: Vec<String>, swatch: Swatch) -> Legend {
        let names: Vec<String> = names.iter().map(|s| truncate(s, 32)).collect();
        let widest = names
            .iter()
            .map(|s| text_width(s, TICK_FONT))
            .fold(0.0, f64::max);
        let h = names.len() as f64 * LEGEND_ROW + 10.0;
        Legend {
            w: widest + 42.0,
            h,
            names,
            swatch,
            marker_only: Vec::new(),
        }
    }

    fn draw(&self, s: &mut Svg, x: f64, y: f64) {
        s.rect(
            x,
            y,
            self.w,
            self.h,
            r##"fill="white" fill-opacity="0.9" stroke="#bbbbbb""##,
        );
        for (i, name) in self.names.iter().enumerate() {
            let cy = y + 5.0 + LEGEND_ROW * (i as f64 + 0.5);
            let color = PALETTE[i % PALETTE.len()];
            let swatch = if self.marker_only.get(i) == Some(&true) {
                Swatch::Marker
            } else {
                self.swatch
            };
            match swatch {
                Swatch::LineMarker => {
                    s.line(x + 8.0, cy, x + 30.0, cy, color, 2.0);
                    s.marker(i, x + 19.0, cy, color);
                }
                Swatch::Marker => s.marker(i, x + 19.0, cy, color),
                Swatch::Block => s.rect(
                    x + 13.0,
                    cy - 6.0,
                    12.0,
                    12.0,
                    &format!(r#"fill="{color}""#),
                ),
            }
            s.text(x + 36.0, cy + 4.0, TICK_FONT, "start", "", name);
        }
    }
}

/// Margins around the plot area for the given tick labels.
struct Margins {
    left: f64,
    top: f64,
    bottom: f64,
}

/// Obstacles in the plot area as boxes, to keep the legend off the data.
type Boxes = Vec<(f64, f64, f64, f64)>;

/// Choose where the legend goes: inside a corner with no data under it, else outside right.
/// Returns the frame (possibly narrowed) and the legend's top-left corner.
fn place_legend(
    legend: &Legend,
    m: &Margins,
    height: f64,
    obstacles: &dyn Fn(Frame) -> Boxes,
) -> (Frame, (f64, f64)) {
    let inside = Frame {
        x0: m.left,
        y0: m.top,
        x1: W - 20.0,
        y1: height - m.bottom,
    };
    let fits_inside =
        legend.w < 0.45 * (inside.x1 - inside.x0) && legend.h < 0.6 * (inside.y1 - inside.y0);
    if fits_inside {
        let boxes = obstacles(inside);
        let pad = 8.0;
        let corners = [
            (inside.x1 - pad - legend.w, inside.y0 + pad),
            (inside.x0 + pad, inside.y0 + pad),
            (inside.x1 - pad - legend.w, inside.y1 - pad - legend.h),
            (inside.x0 + pad, inside.y1 - pad - legend.h),
        ];
        for (x, y) in corners {
            let (bx0, by0, bx1, by1) = (x - 4.0, y - 4.0, x + legend.w + 4.0, y + legend.h + 4.0);
            let hit = boxes
                .iter()
                .any(|&(a0, b0, a1, b1)| a0 <= bx1 && a1 >= bx0 && b0 <= by1 && b1 >= by0);
            if !hit {
                return (inside, (x, y));
            }
        }
    }
    let frame = Frame {
        x1: W - 20.0 - legend.w - 10.0,
        ..inside
    };
    (frame, (frame.x1 + 12.0, frame.y0))
}

/// Draw grid, ticks, tick labels and axis titles. `x_cats` replaces the x axis by categories.
fn draw_axes(
    s: &mut Svg,
    f: Frame,
    xa: Option<&Axis>,
    ya: &Axis,
    x_cats: Option<(&[String], bool)>,
    spec: &PlotSpec,
) {
    let grid = "#e6e6e6";
    let axis = "#444444";
    for (v, _) in &ya.major {
        let y = f.py(ya.norm(*v));
        s.line(f.x0, y, f.x1, y, grid, 1.0);
    }
    if let Some(xa) = xa {
        for (v, _) in &xa.major {
            let x = f.px(xa.norm(*v));
            s.line(x, f.y0, x, f.y1, grid, 1.0);
        }
    }
    // Axis lines.
    s.line(f.x0, f.y1, f.x1, f.y1, axis, 1.0);
    s.line(f.x0, f.y0, f.x0, f.y1, axis, 1.0);
    // Y ticks.
    for v in &ya.minor {
        let y = f.py(ya.norm(*v));
        s.line(f.x0 - 3.0, y, f.x0, y, axis, 1.0);
    }
    for (v, label) in &ya.major {
        let y = f.py(ya.norm(*v));
        s.line(f.x0 - 6.0, y, f.x0, y, axis, 1.0);
        s.text(f.x0 - 9.0, y + 4.0, TICK_FONT, "end", "", label);
    }
    // X ticks.
    if let Some(xa) = xa {
        for v in &xa.minor {
            let x = f.px(xa.norm(*v));
            s.line(x, f.y1, x, f.y1 + 3.0, axis, 1.0);
        }
        for (v, label) in &xa.major {
            let x = f.px(xa.norm(*v));
            s.line(x, f.y1, x, f.y1 + 6.0, axis, 1.0);
            s.text(x, f.y1 + 20.0, TICK_FONT, "middle", "", label);
        }
    }
    if let Some((cats, rotate)) = x_cats {
        let slot = (f.x1 - f.x0) / cats.len() as f64;
        // Label every k-th category when there is no room for all.
        let every = ((TICK_FONT * 1.4) / slot).ceil().max(1.0) as usize;
        for (i, c) in cats.iter().enumerate() {
            let x = f.x0 + slot * (i as f64 + 0.5);
            s.line(x, f.y1, x, f.y1 + 5.0, axis, 1.0);
            if i % every != 0 {
                continue;
            }
            let label = truncate(c, 24);
            if rotate {
                let extra = format!(r#" transform="rotate(-35 {} {})""#, n(x), n(f.y1 + 16.0));
                s.text(x + 4.0, f.y1 + 16.0, TICK_FONT, "end", &extra, &label);
            } else {
                s.text(x, f.y1 + 20.0, TICK_FONT, "middle", "", &label);
            }
        }
    }
    // Axis titles.
    let xlabel = axis_title(&spec.x, spec.log_x && xa.is_some());
    let ylabel = axis_title(&spec.y, spec.log_y);
    let xl_y = match x_cats {
        Some((cats, true)) => f.y1 + 22.0 + rotated_height(cats),
        _ => f.y1 + 42.0,
    };
    s.text((f.x0 + f.x1) / 2.0, xl_y, LABEL_FONT, "middle", "", &xlabel);
    let yl_x = 18.0;
    let yc = (f.y0 + f.y1) / 2.0;
    let extra = format!(r#" transform="rotate(-90 {} {})""#, n(yl_x), n(yc));
    s.text(yl_x, yc, LABEL_FONT, "middle", &extra, &ylabel);
    s.text(
        W / 2.0,
        28.0,
        TITLE_FONT,
        "middle",
        r#" font-weight="bold""#,
        &spec.title,
    );
}

/// An axis title: the column name, "(log)" after it on a log axis, or inside a trailing
/// "(unit)" so that the unit stays last: "v (us)" becomes "v (log, us)".
fn axis_title(name: &str, log: bool) -> String {
    if !log {
        return name.to_string();
    }
    match name.strip_suffix(')').and_then(|s| s.rsplit_once(" (")) {
        Some((stem, unit)) => format!("{stem} (log, {unit})"),
        None => format!("{name} (log)"),
    }
}

/// Vertical room taken by category labels rotated by 35 degrees.
fn rotated_height(cats: &[String]) -> f64 {
    let widest = cats
        .iter()
        .map(|c| text_width(&truncate(c, 24), TICK_FONT))
        .fold(0.0, f64::max);
    widest * 0.574 + TICK_FONT
}

fn left_margin(ya: &Axis) -> f64 {
    let widest = ya
        .major
        .iter()
        .map(|(_, l)| text_width(l, TICK_FONT))
        .fold(0.0, f64::max);
    (widest + 40.0).max(60.0)
}

fn footnote(s: &mut Svg, height: f64, dropped_log: usize) {
    if dropped_log > 0 {
        let note = format!("{dropped_log} point(s) <= 0 not shown on the log axis");
        s.text(
            W - 8.0,
            height - 6.0,
            10.0,
            "end",
            r##" fill="#777777""##,
            &note,
        );
    }
}

fn clip(s: &mut Svg, f: Frame) {
    s.raw(&format!(
        r#"<defs><clipPath id="plot-area"><rect x="{}" y="{}" width="{}" height="{}"/></clipPath></defs>"#,
        n(f.x0 - 5.0),
        n(f.y0 - 5.0),
        n(f.x1 - f.x0 + 10.0),
        n(f.y1 - f.y0 + 10.0)
    ));
}

// ---------------------------------------------------------------------------------------------
// Line and scatter plots

fn draw_xy(spec: &PlotSpec, series: &[Series], dropped_log: usize) -> String {
    let xs = series.iter().flat_map(|s| s.pts.iter().map(|p| p.0));
    let ys = series.iter().flat_map(|s| s.pts.iter().map(|p| p.1));
    let xa = value_axis(xs, spec.log_x, ZeroPolicy::Never);
    let ya = value_axis(ys, spec.log_y, ZeroPolicy::IfClose);
    let is_line = spec.kind == PlotKind::Line;
    let joined = |s: &Series| is_line && !spec.markers.contains(&s.name);
    let show_legend = series.len() > 1 || spec.series.is_some();
    let mut legend = Legend::new(
        series.iter().map(|s| s.name.clone()).collect(),
        if is_line {
            Swatch::LineMarker
        } else {
            Swatch::Marker
        },
    );
    legend.marker_only = series.iter().map(|s| !joined(s)).collect();
    let m = Margins {
        left: left_margin(&ya),
        top: 48.0,
        bottom: 56.0,
    };
    let height = if show_legend {
        H.max(m.top + legend.h + m.bottom)
    } else {
        H
    };
    let obstacles = |f: Frame| -> Boxes {
        let mut b = Vec::new();
        for s in series {
            let pts: Vec<(f64, f64)> = s
                .pts
                .iter()
                .map(|&(x, y)| (f.px(xa.norm(x)), f.py(ya.norm(y))))
                .collect();
            for &(x, y) in &pts {
                b.push((x - 4.0, y - 4.0, x + 4.0, y + 4.0));
            }
            if joined(s) {
                for w in pts.windows(2) {
                    let ((ax, ay), (bx, by)) = (w[0], w[1]);
                    let steps = ((bx - ax).hypot(by - ay) / 4.0).ceil().max(1.0) as usize;
                    for k in 1..steps {
                        let t = k as f64 / steps as f64;
                        let (x, y) = (ax + t * (bx - ax), ay + t * (by - ay));
                        b.push((x - 1.0, y - 1.0, x + 1.0, y + 1.0));
                    }
                }
            }
        }
        b
    };
    let (f, legend_at) = if show_legend {
        place_legend(&legend, &m, height, &obstacles)
    } else {
        (
            Frame {
                x0: m.left,
                y0: m.top,
                x1: W - 20.0,
                y1: height - m.bottom,
            },
            (0.0, 0.0),
        )
    };
    let mut s = Svg::new(W, height);
    draw_axes(&mut s, f, Some(&xa), &ya, None, spec);
    clip(&mut s, f);
    s.raw(r#"<g clip-path="url(#plot-area)">"#);
    for (i, ser) in series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let pts: Vec<(f64, f64)> = ser
            .pts
            .iter()
            .map(|&(x, y)| (f.px(xa.norm(x)), f.py(ya.norm(y))))
            .collect();
        let line = joined(ser);
        if line && pts.len() > 1 {
            let mut d = String::new();
            for (x, y) in &pts {
                let _ = write!(d, "{},{} ", n(*x), n(*y));
            }
            s.raw(&format!(
                r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2" stroke-linejoin="round"/>"#,
                d.trim_end()
            ));
        }
        if !line {
            s.raw(r#"<g fill-opacity="0.8">"#);
        }
        for (x, y) in &pts {
            s.marker(i, *x, *y, color);
        }
        if !line {
            s.raw("</g>");
        }
    }
    s.raw("</g>");
    if show_legend {
        legend.draw(&mut s, legend_at.0, legend_at.1);
    }
    footnote(&mut s, height, dropped_log);
    s.finish()
}

// ---------------------------------------------------------------------------------------------
// Grouped bars

fn draw_bars(spec: &PlotSpec, cats: &[String], series: &[BarSeries], dropped_log: usize) -> String {
    let value =
        |s: &BarSeries, ci: usize| s.vals.get(ci).filter(|v| v.1 > 0).map(|v| v.0 / v.1 as f64);
    let ys: Vec<f64> = series
        .iter()
        .flat_map(|s| (0..cats.len()).filter_map(move |ci| value(s, ci)))
        .collect();
    let ya = value_axis(ys.iter().copied(), spec.log_y, ZeroPolicy::Always);
    let show_legend = series.len() > 1 || spec.series.is_some();
    let legend = Legend::new(
        series.iter().map(|s| s.name.clone()).collect(),
        Swatch::Block,
    );
    let left = left_margin(&ya);
    // Rotate category labels when they do not fit side by side.
    let slot_guess = (W - left - 20.0) / cats.len() as f64;
    let widest = cats
        .iter()
        .map(|c| text_width(&truncate(c, 24), TICK_FONT))
        .fold(0.0, f64::max);
    let rotate = widest > slot_guess * 0.9;
    let bottom = if rotate {
        rotated_height(cats) + 40.0
    } else {
        56.0
    };
    let m = Margins {
        left,
        top: 48.0,
        bottom,
    };
    let height = if show_legend {
        H.max(m.top + legend.h + m.bottom)
    } else {
        H
    };
    let base = if ya.log { ya.lo } else { 0.0 };
    let geometry = |f: Frame| {
        let slot = (f.x1 - f.x0) / cats.len() as f64;
        let group = slot * 0.8;
        let bw = group / series.len() as f64;
        move |ci: usize, si: usize| f.x0 + slot * ci as f64 + (slot - group) / 2.0 + bw * si as f64
    };
    let bar_width = |f: Frame| (f.x1 - f.x0) / cats.len() as f64 * 0.8 / series.len() as f64;
    let obstacles = |f: Frame| -> Boxes {
        let gx = geometry(f);
        let bw = bar_width(f);
        let mut b = Vec::new();
        for (si, s) in series.iter().enumerate() {
            for ci in 0..cats.len() {
                if let Some(v) = value(s, ci) {
                    let (ya0, ya1) = (f.py(ya.norm(base)), f.py(ya.norm(v)));
                    b.push((gx(ci, si), ya0.min(ya1), gx(ci, si) + bw, ya0.max(ya1)));
                }
            }
        }
        b
    };
    let (f, legend_at) = if show_legend {
        place_legend(&legend, &m, height, &obstacles)
    } else {
        (
            Frame {
                x0: m.left,
                y0: m.top,
                x1: W - 20.0,
                y1: height - m.bottom,
            },
            (0.0, 0.0),
        )
    };
    let mut s = Svg::new(W, height);
    draw_axes(&mut s, f, None, &ya, Some((cats, rotate)), spec);
    clip(&mut s, f);
    s.raw(r#"<g clip-path="url(#plot-area)">"#);
    let gx = geometry(f);
    let bw = bar_width(f);
    for (si, ser) in series.iter().enumerate() {
        let color = PALETTE[si % PALETTE.len()];
        for ci in 0..cats.len() {
            if let Some(v) = value(ser, ci) {
                let (y0, y1) = (f.py(ya.norm(base)), f.py(ya.norm(v)));
                let inset = if bw > 6.0 { 0.5 } else { 0.0 };
                s.rect(
                    gx(ci, si) + inset,
                    y0.min(y1),
                    bw - 2.0 * inset,
                    (y0 - y1).abs(),
                    &format!(r#"fill="{color}""#),
                );
            }
        }
    }
    s.raw("</g>");
    if !ya.log && ya.lo < 0.0 {
        let y = f.py(ya.norm(0.0));
        s.line(f.x0, y, f.x1, y, "#444444", 1.0);
    }
    if show_legend {
        legend.draw(&mut s, legend_at.0, legend_at.1);
    }
    footnote(&mut s, height, dropped_log);
    s.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Table {
        let mut t = Table::new(&["scheme", "size_bytes", "latency_us"]);
        for scheme in ["part", "pin", "touch"] {
            for (i, size) in [4096u64, 16384, 65536, 262144, 1048576]
                .into_iter()
                .enumerate()
            {
                let f = match scheme {
                    "part" => 1.0,
                    "pin" => 1.6,
                    _ => 2.3,
                };
                t.push(vec![
                    scheme.into(),
                    size.into(),
                    (f * (5.0 + 3.0 * i as f64 * i as f64)).into(),
                ]);
            }
        }
        t
    }

    #[test]
    fn line_plot_has_series_ticks_and_legend() {
        let spec =
            PlotSpec::line("Latency", "size_bytes", "latency_us", Some("scheme")).log(true, false);
        let svg = render_svg(&sample(), &spec).unwrap();
        assert!(svg.starts_with("<svg"));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 3);
        for label in [
            "part",
            "pin",
            "touch",
            "Latency",
            "size_bytes (log)",
            "latency_us",
            "10k",
            "1M",
        ] {
            assert!(
                svg.contains(&format!(">{label}</text>")),
                "missing {label}\n{svg}"
            );
        }
    }

    #[test]
    fn filters_bars_and_scatter() {
        let t = sample();
        let spec = PlotSpec::line("Bars", "scheme", "latency_us", None)
            .bars()
            .only("size_bytes", "4096");
        let svg = render_svg(&t, &spec).unwrap();
        assert_eq!(svg.matches(r##"fill="#4e79a7""##).count(), 3, "{svg}");
        let spec = PlotSpec::line("Pts", "size_bytes", "latency_us", Some("scheme"))
            .points()
            .log(true, true);
        let svg = render_svg(&t, &spec).unwrap();
        assert!(!svg.contains("<polyline"));
        assert!(svg.contains("<circle"));
    }

    #[test]
    fn empty_and_bad_inputs() {
        let mut t = sample();
        t.push(vec!["part".into(), 1u64.into(), f64::NAN.into()]);
        let spec = PlotSpec::line("None", "size_bytes", "latency_us", None).only("scheme", "nope");
        let svg = render_svg(&t, &spec).unwrap();
        assert!(svg.contains(">no data</text>"));
        let err = render_svg(&t, &PlotSpec::line("x", "size_bytes", "missing", None)).unwrap_err();
        assert!(err.contains("missing"));
        // Non-positive values on a log axis are skipped with a footnote.
        t.push(vec!["part".into(), 0u64.into(), 1.0.into()]);
        let spec =
            PlotSpec::line("Log", "size_bytes", "latency_us", Some("scheme")).log(true, false);
        assert!(render_svg(&t, &spec)
            .unwrap()
            .contains("1 point(s) &lt;= 0"));
    }

    #[test]
    fn tick_labels_are_nice() {
        let a = linear_axis(0.0, 9.3, true);
        let labels: Vec<&str> = a.major.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels, ["0", "2", "4", "6", "8"]);
        let a = linear_axis(0.0, 2.4e6, true);
        assert_eq!(a.major[1].1, "0.5M");
        let a = log_axis(3.0, 700.0, false);
        assert!(a.major.iter().any(|(_, l)| l == "100"));
        assert_eq!(a.lo, 1.0);
        assert_eq!(a.hi, 1000.0);
        let a = log_axis(3.0, 7.0, true);
        assert!(a.major.len() >= 3, "{:?}", a.major);
        let a = log_axis(4096.0, 8388608.0, true);
        let labels: Vec<&str> = a.major.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels[..3], ["10k", "100k", "1M"]);
        let a = log_axis(1e-9, 1e9, true);
        assert!(a.major.len() <= 10, "{:?}", a.major);
    }

    #[test]
    fn marker_only_series_have_no_line() {
        let mut t = sample();
        t.push(vec!["ref".into(), 4096u64.into(), 7.0.into()]);
        t.push(vec!["ref".into(), 65536u64.into(), 20.0.into()]);
        let spec = PlotSpec::line("Ref", "size_bytes", "latency_us", Some("scheme"))
            .log(true, false)
            .markers_only("ref");
        let svg = render_svg(&t, &spec).unwrap();
        assert_eq!(svg.matches("<polyline").count(), 3, "{svg}");
        assert!(svg.contains(">ref</text>"));
        assert_eq!(axis_title("v (us)", true), "v (log, us)");
        assert_eq!(axis_title("v (us)", false), "v (us)");
    }

    #[test]
    fn deterministic() {
        let spec = PlotSpec::line("Latency", "size_bytes", "latency_us", Some("scheme"));
        assert_eq!(render_svg(&sample(), &spec), render_svg(&sample(), &spec));
    }
}
