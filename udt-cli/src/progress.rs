//! Progress of one file on standard error: an indicatif bar (bytes, rate, ETA) when standard
//! error is a terminal, a plain line every second when it is not (logs, CI), nothing with
//! `--quiet`. The per-file summary goes to standard output.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

use crate::units;

/// Interval between plain progress lines.
const LINE_INTERVAL: Duration = Duration::from_secs(1);

/// How progress is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// A live bar (standard error is a terminal).
    Bar,
    /// A line every second.
    Lines,
    /// Nothing, summaries included.
    Quiet,
}

impl Mode {
    /// The mode for this process: `Quiet` if asked, else `Bar` on a terminal, else `Lines`.
    pub fn detect(quiet: bool) -> Mode {
        if quiet {
            Mode::Quiet
        } else if std::io::stderr().is_terminal() {
            Mode::Bar
        } else {
            Mode::Lines
        }
    }
}

/// Progress of one file.
pub struct FileProgress {
    mode: Mode,
    name: String,
    total: u64,
    done: u64,
    start: Instant,
    last_line: Instant,
    done_at_last_line: u64,
    bar: Option<ProgressBar>,
}

impl FileProgress {
    /// Start showing progress of `name` (already made safe to print), `total` bytes.
    pub fn new(mode: Mode, name: &str, total: u64) -> FileProgress {
        let now = Instant::now();
        let bar = (mode == Mode::Bar).then(|| {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            bar.set_style(bar_style());
            bar.set_message(name.to_string());
            bar
        });
        FileProgress {
            mode,
            name: name.to_string(),
            total,
            done: 0,
            start: now,
            last_line: now,
            done_at_last_line: 0,
            bar,
        }
    }

    /// `n` more bytes moved.
    pub fn add(&mut self, n: u64) {
        self.done += n;
        if let Some(bar) = &self.bar {
            bar.inc(n);
        } else if self.mode == Mode::Lines {
            let now = Instant::now();
            let since = now - self.last_line;
            if since >= LINE_INTERVAL && self.done < self.total {
                let rate = (self.done - self.done_at_last_line) as f64 / since.as_secs_f64();
                eprintln!("{}", self.line(rate));
                self.last_line = now;
                self.done_at_last_line = self.done;
            }
        }
    }

    /// `name: 41% 420 MiB/1.0 GiB 1.2 Gb/s ETA 5s`, at `rate` bytes per second.
    fn line(&self, rate: f64) -> String {
        let pct = if self.total == 0 { 100.0 } else { self.done as f64 * 100.0 / self.total as f64 };
        let left = self.total.saturating_sub(self.done);
        let eta = if rate > 0.0 {
            units::eta(Duration::from_secs_f64((left as f64 / rate).min(1e7)))
        } else {
            "?".into()
        };
        format!(
            "{}: {:.0}% {}/{} {} ETA {}",
            self.name,
            pct.floor(),
            units::bytes(self.done),
            units::bytes(self.total),
            units::rate(rate),
            eta
        )
    }

    /// Stop showing progress (the bar is cleared); returns the time taken.
    pub fn finish(self) -> Duration {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        self.start.elapsed()
    }

    /// Print the summary line of a verified file on standard output (unless quiet):
    /// `name: 50.0 MiB in 0.52 s, 806 Mb/s, blake3 ok`.
    pub fn summary(mode: Mode, name: &str, size: u64, took: Duration) {
        if mode == Mode::Quiet {
            return;
        }
        let secs = took.as_secs_f64().max(1e-6);
        println!(
            "{name}: {} in {}, {}, blake3 ok",
            units::bytes(size),
            units::secs(took),
            units::rate(size as f64 / secs)
        );
    }
}

/// The bar: `name [=====>    ] 41% 420 MiB/1.0 GiB 1.2 Gb/s ETA 5s`.
fn bar_style() -> ProgressStyle {
    let style = ProgressStyle::with_template(
        "{msg} [{bar:30}] {percent:>3}% {bytes}/{total_bytes} {bitrate} ETA {eta}",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    style.progress_chars("=> ").with_key("bitrate", |state: &ProgressState, w: &mut dyn std::fmt::Write| {
        let _ = w.write_str(&units::rate(state.per_sec()));
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_line() {
        let mut p = FileProgress::new(Mode::Quiet, "name", 1 << 30);
        p.done = 420 << 20;
        assert_eq!(p.line(150e6), "name: 41% 420 MiB/1.0 GiB 1.20 Gb/s ETA 4s");
        assert!(p.line(0.0).ends_with("ETA ?"));
    }
}
