//! Progress display on stderr: an indicatif bar on a terminal, a plain line every ~10%
//! otherwise, nothing with `--quiet`.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

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
        let mode = if quiet {
            Mode::Hidden
        } else if std::io::stderr().is_terminal() {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
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
                    eprintln!("  {}: {}% ({done}/{total} points)", self.label, decile * 10);
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
