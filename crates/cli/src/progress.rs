//! Progress display on stderr: an indicatif bar on a terminal, a plain line every ~10%
//! otherwise, nothing with `--quiet`.
//!
//! While a live experiment runs, this process's stderr goes to the experiment's log file (so
//! that the ranks' output does too, see `live_cmd`); progress is then drawn on a copy of the
//! terminal's stderr set with [`set_console`]: a bar on a terminal, nothing otherwise (the
//! live part prints one line per experiment).

use std::fs::File;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Where progress goes instead of stderr (None: stderr).
static CONSOLE: Mutex<Option<Arc<File>>> = Mutex::new(None);

/// Draw progress on `console` (a copy of the terminal's stderr) instead of stderr, or on
/// stderr again with `None`.
pub fn set_console(console: Option<Arc<File>>) {
    *CONSOLE.lock().unwrap_or_else(|e| e.into_inner()) = console;
}

fn console() -> Option<Arc<File>> {
    CONSOLE.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// A terminal handle drawing on `f` (indicatif needs a read side too: the same terminal).
fn console_term(f: &File) -> std::io::Result<console::Term> {
    Ok(console::Term::read_write_pair(
        f.try_clone()?,
        f.try_clone()?,
    ))
}

/// Print one line where progress goes (stderr, or the console set with [`set_console`]).
pub fn say(line: &str) {
    match console() {
        Some(f) => {
            let _ = writeln!(&*f, "{line}");
        }
        None => eprintln!("{line}"),
    }
}

/// Progress of one experiment run.
pub struct Progress {
    label: String,
    mode: Mode,
}

enum Mode {
    Hidden,
    Bar(ProgressBar),
    /// Last decile printed.
    Plain(AtomicU64),
}

impl Progress {
    /// Progress for the run called `label`; hidden when `quiet`.
    pub fn new(label: &str, quiet: bool) -> Progress {
        let console = console();
        let terminal = match &console {
            Some(f) => f.is_terminal(),
            None => std::io::stderr().is_terminal(),
        };
        let mode = if quiet || (console.is_some() && !terminal) {
            // A live experiment's progress off a terminal: its one summary line is enough.
            Mode::Hidden
        } else if terminal {
            let target = match &console {
                Some(f) => match console_term(f) {
                    Ok(t) => ProgressDrawTarget::term(t, 20),
                    Err(_) => ProgressDrawTarget::hidden(),
                },
                None => ProgressDrawTarget::stderr(),
            };
            let bar = ProgressBar::with_draw_target(None, target);
            let style = ProgressStyle::with_template(
                "{prefix} [{bar:30.cyan/blue}] {pos}/{len} points, {elapsed} (eta {eta})",
            )
            .expect("valid template")
            .progress_chars("=> ");
            bar.set_style(style);
            bar.set_prefix(label.to_string());
            bar.enable_steady_tick(Duration::from_millis(200));
            Mode::Bar(bar)
        } else {
            Mode::Plain(AtomicU64::new(0))
        };
        Progress {
            label: label.to_string(),
            mode,
        }
    }

    /// Record that `done` of `total` points are finished (callable from any thread).
    pub fn update(&self, done: u64, total: u64) {
        match &self.mode {
            Mode::Hidden => {}
            Mode::Bar(bar) => {
                if bar.length() != Some(total) {
                    bar.set_length(total);
                }
                bar.set_position(done.min(total));
            }
            Mode::Plain(last) => {
                if total == 0 {
                    return;
                }
                let decile = (done.min(total) * 10 / total).min(10);
                if decile > last.fetch_max(decile, Ordering::Relaxed) {
                    say(&format!(
                        "  {}: {}% ({done}/{total} points)",
                        self.label,
                        decile * 10
                    ));
                }
            }
        }
    }

    /// Remove the bar (the caller prints the summary).
    pub fn finish(&self) {
        if let Mode::Bar(bar) = &self.mode {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
