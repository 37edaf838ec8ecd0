//! Plot specifications and SVG rendering (plotters, SVG backend).

use crate::Table;

/// How a table is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlotKind {
    /// One line per series, points marked.
    Line,
    /// Grouped bars: one group per x value, one bar per series.
    Bar,
    /// Points only.
    Scatter,
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
        }
    }
    /// Builder: log-scale axes.
    pub fn log(mut self, log_x: bool, log_y: bool) -> PlotSpec {
        self.log_x = log_x;
        self.log_y = log_y;
        self
    }
    /// Builder: draw as grouped bars.
    pub fn bars(mut self) -> PlotSpec {
        self.kind = PlotKind::Bar;
        self
    }
    /// Builder: keep only rows with `column == value`.
    pub fn only(mut self, column: &str, value: &str) -> PlotSpec {
        self.filter.push((column.to_string(), value.to_string()));
        self
    }
    /// Builder: file suffix for secondary plots.
    pub fn suffix(mut self, s: &str) -> PlotSpec {
        self.suffix = s.to_string();
        self
    }
}

/// Render `spec` over `table` as an SVG document.
pub fn render_svg(_table: &Table, _spec: &PlotSpec) -> Result<String, String> {
    todo!("report helper")
}
