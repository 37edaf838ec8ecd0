//! The static HTML report (`index.html`) of `unpinned reproduce`.

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

use crate::{Cell, ExperimentFiles, Metadata, Table};

/// Rows of a table shown on the page; the CSV has them all.
pub const HTML_MAX_ROWS: usize = 200;

/// One experiment of the report.
#[derive(Clone, Debug)]
pub struct ReportEntry {
    /// Experiment name (`part-fault-all`); also the page anchor.
    pub name: String,
    /// System it belongs to (`part`, `odp`, `aa`, `dsm`); the table of contents groups by it.
    pub system: String,
    /// One line about the experiment.
    pub description: String,
    /// The files written for it (linked relative to the report directory).
    pub files: ExperimentFiles,
    /// The table (the first [`HTML_MAX_ROWS`] rows are shown).
    pub table: Table,
    /// Its metadata.
    pub meta: Metadata,
}

/// One part of the report with its own heading: the simulated experiments (deterministic) or
/// the live ones (measured on the machine that ran the report).
#[derive(Clone, Debug, Default)]
pub struct ReportSection {
    /// Page anchor of the section (`simulated`, `live`).
    pub id: String,
    /// Heading.
    pub title: String,
    /// What the numbers of this part are, and why it is separate (shown under the heading).
    pub note: String,
    /// The experiments, in order.
    pub entries: Vec<ReportEntry>,
}

/// How the whole report was generated (shown at the top of the page).
#[derive(Clone, Debug, Default)]
pub struct ReportInfo {
    /// unpinned version.
    pub version: String,
    /// Profile name.
    pub profile_name: String,
    /// Master seed.
    pub seed: u64,
    /// `--set` assignments given, in order.
    pub overrides: Vec<String>,
    /// When the report was written, RFC 3339 UTC.
    pub created: String,
    /// Command line.
    pub command: Vec<String>,
    /// Experiments that failed: (name, error message).
    pub failures: Vec<(String, String)>,
}

fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// `path` relative to `dir` when inside it (else its file name), with `/` separators, so
/// the report folder can be moved as a whole.
fn rel(dir: &Path, path: &Path) -> String {
    let r = path
        .strip_prefix(dir)
        .ok()
        .filter(|r| !r.as_os_str().is_empty());
    let r = r
        .map(Path::to_path_buf)
        .or_else(|| path.file_name().map(PathBuf::from))
        .unwrap_or_default();
    r.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

const CSS: &str = "
body { font-family: Helvetica, Arial, sans-serif; margin: 0 auto; max-width: 1100px; padding: 1em 2em; color: #222; line-height: 1.45; }
h1 { margin-bottom: 0.2em; }
h2 { border-bottom: 1px solid #ddd; padding-bottom: 0.2em; margin-top: 2em; }
.info { color: #555; font-size: 0.92em; }
.info code, .meta code { background: #f4f4f4; padding: 0 0.3em; }
.failures { background: #fff0f0; border: 1px solid #e0a0a0; padding: 0.5em 1em; }
.system { color: #777; font-size: 0.9em; text-transform: uppercase; letter-spacing: 0.05em; }
.plots img { max-width: 100%; border: 1px solid #eee; margin: 0.5em 0; }
.meta { font-size: 0.92em; color: #444; }
.scroll { overflow-x: auto; max-height: 32em; overflow-y: auto; border: 1px solid #eee; }
table { border-collapse: collapse; font-size: 0.85em; }
th, td { padding: 0.15em 0.7em; border-bottom: 1px solid #eee; white-space: nowrap; }
th { background: #f7f7f7; position: sticky; top: 0; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.note { color: #777; font-size: 0.85em; }
.part { color: #444; background: #f7f7f7; border-left: 4px solid #bbb; padding: 0.4em 1em; }
.finding { background: #eef6ee; border-left: 4px solid #7a7; padding: 0.4em 1em; }
td.long { white-space: normal; min-width: 28em; }
.skipped { background: #fffbe6; border: 1px solid #e0d090; padding: 0.3em 1em; }
h1.part-title { margin-top: 1.5em; border-bottom: 2px solid #ccc; }
";

/// Write `DIR/index.html`: a self-contained static page (no scripts) with the generation info,
/// failures if any, a table of contents by section and then by system (in order of first
/// appearance) and, per section, its heading and note, then per experiment its description,
/// what it skipped (its metadata's `skipped`, if any), plots (`<img>` with relative paths),
/// links to the CSV and JSON, and the first [`HTML_MAX_ROWS`] rows of its table. Returns the
/// path written.
pub fn write_index(
    dir: &Path,
    title: &str,
    info: &ReportInfo,
    sections: &[ReportSection],
) -> io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{t}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<h1>{t}</h1>\n",
        t = esc(title)
    );

    // Generation info.
    let _ = write!(
        h,
        "<p class=\"info\">unpinned {} &middot; profile <code>{}</code> &middot; seed {} &middot; generated {}",
        esc(&info.version),
        esc(&info.profile_name),
        info.seed,
        esc(&info.created)
    );
    if !info.overrides.is_empty() {
        let sets: Vec<String> = info
            .overrides
            .iter()
            .map(|s| format!("<code>{}</code>", esc(s)))
            .collect();
        let _ = write!(h, "<br>overrides: {}", sets.join(" "));
    }
    if !info.command.is_empty() {
        let _ = write!(
            h,
            "<br>command: <code>{}</code>",
            esc(&info.command.join(" "))
        );
    }
    h.push_str("</p>\n");

    if !info.failures.is_empty() {
        h.push_str("<div class=\"failures\"><strong>Failed experiments</strong><ul>\n");
        for (name, err) in &info.failures {
            let _ = writeln!(h, "<li><code>{}</code>: {}</li>", esc(name), esc(err));
        }
        h.push_str("</ul></div>\n");
    }

    // Table of contents, by section and system.
    h.push_str("<h2>Contents</h2>\n");
    if sections.iter().all(|s| s.entries.is_empty()) {
        h.push_str("<p>No experiments were run.</p>\n");
    }
    h.push_str("<ul>\n");
    for sec in sections {
        let _ = writeln!(
            h,
            "<li><a href=\"#{id}\"><strong>{}</strong></a>",
            esc(&sec.title),
            id = esc(&sec.id)
        );
        write_toc(&mut h, &sec.entries);
        h.push_str("</li>\n");
    }
    h.push_str("</ul>\n");

    for sec in sections {
        let _ = writeln!(
            h,
            "<h1 class=\"part-title\" id=\"{}\">{}</h1>\n<p class=\"part\">{}</p>",
            esc(&sec.id),
            esc(&sec.title),
            esc(&sec.note)
        );
        if sec.entries.is_empty() {
            h.push_str("<p>No experiments of this part were run.</p>\n");
        }
        for e in &sec.entries {
            write_entry(&mut h, dir, e);
        }
    }
    h.push_str("</body>\n</html>\n");
    let path = dir.join("index.html");
    std::fs::write(&path, h)?;
    Ok(path)
}

/// The experiments of one section, grouped by system.
fn write_toc(h: &mut String, entries: &[ReportEntry]) {
    if entries.is_empty() {
        return;
    }
    let mut systems: Vec<&str> = Vec::new();
    for e in entries {
        if !systems.contains(&e.system.as_str()) {
            systems.push(&e.system);
        }
    }
    h.push_str("<ul>\n");
    for sys in systems {
        let _ = writeln!(h, "<li><strong>{}</strong><ul>", esc(sys));
        for e in entries.iter().filter(|e| e.system == sys) {
            let _ = writeln!(
                h,
                "<li><a href=\"#{n}\">{n}</a> &mdash; {}</li>",
                esc(&e.description),
                n = esc(&e.name)
            );
        }
        h.push_str("</ul></li>\n");
    }
    h.push_str("</ul>\n");
}

/// What an experiment says it skipped: its metadata's `skipped` string (e.g. a peer library
/// that is not installed, with the command that installs it).
pub fn skipped_note(meta: &Metadata) -> Option<&str> {
    meta.extra
        .get("skipped")
        .and_then(serde_json::Value::as_str)
        .filter(|s| !s.is_empty())
}

fn write_entry(h: &mut String, dir: &Path, e: &ReportEntry) {
    let name = esc(&e.name);
    let _ = writeln!(h, "<section id=\"{name}\">\n<h2>{name}</h2>");
    let _ = writeln!(
        h,
        "<p class=\"system\">{}</p>\n<p>{}</p>",
        esc(&e.system),
        esc(&e.description)
    );
    if let Some(skip) = skipped_note(&e.meta) {
        let _ = writeln!(
            h,
            "<p class=\"skipped\"><strong>Skipped:</strong> {}</p>",
            esc(skip)
        );
    }
    for f in crate::findings::for_experiment(&e.name, &e.table) {
        let _ = writeln!(
            h,
            "<p class=\"finding\"><strong>Finding (derived from the data):</strong> {}</p>",
            esc(&f)
        );
    }
    if !e.files.svgs.is_empty() {
        h.push_str("<div class=\"plots\">\n");
        for svg in &e.files.svgs {
            let r = esc(&rel(dir, svg));
            let _ = writeln!(
                h,
                "<a href=\"{r}\"><img src=\"{r}\" alt=\"{name} plot ({r})\"></a>"
            );
        }
        h.push_str("</div>\n");
    }
    let m = &e.meta;
    let _ = write!(
        h,
        "<p class=\"meta\">Data: <a href=\"{c}\">{c}</a> &middot; metadata: <a href=\"{j}\">{j}</a> &middot; \
         {} rows &middot; {} simulated events &middot; {:.2} s wall time",
        e.table.rows.len(),
        m.sim_events,
        m.wall_time_s,
        c = esc(&rel(dir, &e.files.csv)),
        j = esc(&rel(dir, &e.files.json)),
    );
    if !m.parameters.is_empty() {
        let ps: Vec<String> = m
            .parameters
            .iter()
            .map(|(k, v)| format!("<code>exp.{}={}</code>", esc(k), esc(v)))
            .collect();
        let _ = write!(h, "<br>parameters: {}", ps.join(" "));
    }
    h.push_str("</p>\n");
    write_table(h, &e.table);
    h.push_str("</section>\n");
}

fn write_table(h: &mut String, t: &Table) {
    h.push_str("<div class=\"scroll\"><table>\n<thead><tr>");
    for c in &t.columns {
        let _ = write!(h, "<th>{}</th>", esc(c));
    }
    h.push_str("</tr></thead>\n<tbody>\n");
    for row in t.rows.iter().take(HTML_MAX_ROWS) {
        h.push_str("<tr>");
        for c in row {
            match c {
                Cell::Str(s) if s.len() > 80 => {
                    let _ = write!(h, "<td class=\"long\">{}</td>", esc(s));
                }
                Cell::Str(s) => {
                    let _ = write!(h, "<td>{}</td>", esc(s));
                }
                _ => {
                    let _ = write!(h, "<td class=\"num\">{}</td>", esc(&c.to_text()));
                }
            }
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody></table></div>\n");
    if t.rows.len() > HTML_MAX_ROWS {
        let _ = writeln!(
            h,
            "<p class=\"note\">Showing the first {HTML_MAX_ROWS} of {} rows; the CSV has them all.</p>",
            t.rows.len()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{write_experiment, PlotSpec};

    #[test]
    fn index_links_plots_and_escapes() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir = std::env::temp_dir().join(format!(
            "unpinned-report-html-{}-{nanos}",
            std::process::id()
        ));
        let mut t = Table::new(&["scheme", "n", "v_us"]);
        for i in 0..250u64 {
            t.push(vec![
                "<b>part</b>".into(),
                i.into(),
                (i as f64 * 0.5).into(),
            ]);
        }
        let plots = [PlotSpec::line("p", "n", "v_us", Some("scheme"))];
        let meta = Metadata::new("exp-a", "part");
        let files = write_experiment(&dir, "exp-a", &t, &plots, &meta).unwrap();
        let entry = ReportEntry {
            name: "exp-a".into(),
            system: "part".into(),
            description: "A & B".into(),
            files,
            table: t,
            meta,
        };
        let info = ReportInfo {
            version: "0.1.0".into(),
            profile_name: "forth-arm".into(),
            seed: 1,
            ..Default::default()
        };
        let sim = ReportSection {
            id: "simulated".into(),
            title: "Simulated".into(),
            note: "deterministic".into(),
            entries: vec![entry.clone()],
        };
        let mut live_entry = entry;
        live_entry.name = "live/exp-a".into();
        live_entry.meta.extra =
            serde_json::json!({"skipped": "peer side: run `apt-get install x`"});
        let live = ReportSection {
            id: "live".into(),
            title: "Live: measured on this machine".into(),
            note: "not deterministic".into(),
            entries: vec![live_entry],
        };
        let path = write_index(&dir, "Results <x>", &info, &[sim, live]).unwrap();
        let html = std::fs::read_to_string(&path).unwrap();
        assert!(html.contains("<title>Results &lt;x&gt;</title>"));
        assert!(html.contains("<img src=\"exp-a.svg\""));
        assert!(html.contains("href=\"exp-a.csv\""));
        assert!(html.contains("href=\"exp-a.json\""));
        assert!(html.contains("href=\"#exp-a\""));
        assert!(html.contains("A &amp; B"));
        assert!(html.contains("&lt;b&gt;part&lt;/b&gt;"));
        assert!(html.contains("first 200 of 250 rows"));
        assert_eq!(html.matches("<tr>").count(), 2 * 201);
        // Two parts, each with its heading and note, the simulated one first; the skip note
        // only on the live entry.
        let (sim_at, live_at) = (
            html.find("<h1 class=\"part-title\" id=\"simulated\">Simulated</h1>")
                .unwrap(),
            html.find("id=\"live\">Live: measured on this machine</h1>")
                .unwrap(),
        );
        assert!(sim_at < live_at);
        assert!(html.contains("href=\"#live/exp-a\""));
        assert_eq!(html.matches("class=\"skipped\"").count(), 1);
        assert!(html[live_at..]
            .contains("<strong>Skipped:</strong> peer side: run `apt-get install x`"));
        assert!(!html.contains("<script"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn empty_index() {
        let dir =
            std::env::temp_dir().join(format!("unpinned-report-empty-{}", std::process::id()));
        let path = write_index(&dir, "R", &ReportInfo::default(), &[]).unwrap();
        assert!(std::fs::read_to_string(&path)
            .unwrap()
            .contains("No experiments were run"));
        let empty = ReportSection {
            id: "live".into(),
            title: "Live".into(),
            note: "not run (--no-live)".into(),
            entries: Vec::new(),
        };
        let path = write_index(&dir, "R", &ReportInfo::default(), &[empty]).unwrap();
        let html = std::fs::read_to_string(&path).unwrap();
        assert!(html.contains("not run (--no-live)"));
        assert!(html.contains("No experiments of this part were run"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
