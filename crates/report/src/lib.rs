//! Output of experiments: tidy tables, CSV, JSON metadata, SVG plots and the HTML report.
//!
//! An experiment returns a [`Table`] (one row per point, units last in column names) and
//! [`PlotSpec`]s that say how to draw it; this crate writes `NAME.csv`, `NAME.json`, `NAME.svg`
//! and, for `unpinned reproduce`, `index.html`, with the findings derived from the data
//! ([`findings`]) and the validation section ([`validation`]: the published results beside
//! ours).

#![warn(missing_docs)]

mod table;
pub use table::{format_float, Cell, Table};

mod plot;
pub use plot::{render_svg, PlotKind, PlotSpec};

mod files;
pub use files::{rfc3339_utc, svg_file_name, write_experiment, ExperimentFiles, Metadata, VERSION};

mod html;
pub use html::{skipped_note, write_index, ReportEntry, ReportInfo, ReportSection, HTML_MAX_ROWS};

pub mod findings;
pub mod findings_pages;
pub mod validation;
