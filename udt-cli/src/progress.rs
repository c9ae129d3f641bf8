//! Progress of one file on standard error: an indicatif bar (bytes, rate, ETA) when standard
//! error is a terminal, a plain line every second when it is not (logs, CI), nothing with
//! `--quiet`. After [`STALL_AFTER`] without a byte moving, the ETA gives way to
//! `stalled N s`. Summaries are the callers' (text or JSON on standard output).

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

use crate::units;

/// Interval between plain progress lines.
const LINE_INTERVAL: Duration = Duration::from_secs(1);
/// How long without progress before the display says the transfer has stalled.
pub const STALL_AFTER: Duration = Duration::from_secs(3);

/// How progress is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// A live bar (standard error is a terminal).
    Bar,
    /// A line every second.
    Lines,
    /// No progress (summaries still print).
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
    /// When the last byte moved.
    last_progress: Instant,
    /// Whether the bar currently shows `stalled`.
    bar_stalled: bool,
    bar: Option<ProgressBar>,
}

impl FileProgress {
    /// Start showing progress of `name` (already made safe to print), `total` bytes.
    pub fn new(mode: Mode, name: &str, total: u64) -> FileProgress {
        let now = Instant::now();
        let bar = (mode == Mode::Bar).then(|| {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            bar.set_style(bar_style());
            bar.set_prefix(name.to_string());
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
            last_progress: now,
            bar_stalled: false,
            bar,
        }
    }

    /// `n` more bytes moved.
    pub fn add(&mut self, n: u64) {
        self.done += n;
        let now = Instant::now();
        if n > 0 {
            self.last_progress = now;
        }
        if let Some(bar) = &self.bar {
            if self.bar_stalled {
                bar.set_style(bar_style());
                self.bar_stalled = false;
            }
            bar.inc(n);
        } else if self.mode == Mode::Lines {
            let since = now - self.last_line;
            if since >= LINE_INTERVAL && self.done < self.total {
                let rate = (self.done - self.done_at_last_line) as f64 / since.as_secs_f64();
                eprintln!("{}", self.line(rate, None));
                self.last_line = now;
                self.done_at_last_line = self.done;
            }
        }
    }

    /// Nothing moved for a while (called by waits that poll): once that lasts
    /// [`STALL_AFTER`], say so.
    pub fn idle(&mut self) {
        let now = Instant::now();
        let stalled = now - self.last_progress;
        if stalled < STALL_AFTER {
            return;
        }
        if let Some(bar) = &self.bar {
            if !self.bar_stalled {
                bar.set_style(stalled_style());
                self.bar_stalled = true;
            }
            bar.set_message(format!("{} s", stalled.as_secs()));
        } else if self.mode == Mode::Lines && now - self.last_line >= LINE_INTERVAL {
            eprintln!("{}", self.line(0.0, Some(stalled)));
            self.last_line = now;
            self.done_at_last_line = self.done;
        }
    }

    /// `name: 41% 420 MiB/1.0 GiB 1.2 Gb/s ETA 5s` at `rate` bytes per second, or
    /// `name: 41% 420 MiB/1.0 GiB stalled 5 s`.
    fn line(&self, rate: f64, stalled: Option<Duration>) -> String {
        let pct = if self.total == 0 { 100.0 } else { self.done as f64 * 100.0 / self.total as f64 };
        let head = format!(
            "{}: {:.0}% {}/{}",
            self.name,
            pct.floor(),
            units::bytes(self.done),
            units::bytes(self.total)
        );
        if let Some(stalled) = stalled {
            return format!("{head} stalled {} s", stalled.as_secs());
        }
        let left = self.total.saturating_sub(self.done);
        let eta = if rate > 0.0 {
            units::eta(Duration::from_secs_f64((left as f64 / rate).min(1e7)))
        } else {
            "?".into()
        };
        format!("{head} {} ETA {eta}", units::rate(rate))
    }

    /// Stop showing progress (the bar is cleared); returns the time taken.
    pub fn finish(self) -> Duration {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        self.start.elapsed()
    }
}

/// The summary line of a verified file: `name: 50.0 MiB in 0.52 s, 806 Mb/s, blake3 ok`.
pub fn summary_line(name: &str, size: u64, took: Duration) -> String {
    format!("{name}: {} in {}, {}, blake3 ok", units::bytes(size), units::secs(took), rate_of(size, took))
}

/// The summary line of a file moved without an end-to-end check: `name: 50.0 MiB in 0.52 s,
/// 806 Mb/s` and, when known, `, blake3 HEX` of the bytes as they are here.
pub fn moved_line(name: &str, size: u64, took: Duration, hash: Option<&blake3::Hash>) -> String {
    let mut line =
        format!("{name}: {} in {}, {}", units::bytes(size), units::secs(took), rate_of(size, took));
    if let Some(h) = hash {
        line.push_str(&format!(", blake3 {}", h.to_hex()));
    }
    line
}

/// The total line of a session: `3 files, 150 MiB in 1.52 s, 828 Mb/s` and, if any failed,
/// `; 1 of 3 failed`.
pub fn total_line(files: usize, failed: usize, bytes: u64, took: Duration) -> String {
    let plural = if files == 1 { "" } else { "s" };
    let mut line = format!(
        "total: {files} file{plural}, {} in {}, {}",
        units::bytes(bytes),
        units::secs(took),
        rate_of(bytes, took)
    );
    if failed > 0 {
        line.push_str(&format!("; {failed} of {files} failed"));
    }
    line
}

/// `bytes` over `took`, as a rate.
fn rate_of(bytes: u64, took: Duration) -> String {
    units::rate(bytes as f64 / took.as_secs_f64().max(1e-6))
}

/// The bar: `name [=====>    ] 41% 420 MiB/1.0 GiB 1.2 Gb/s ETA 5s`.
fn bar_style() -> ProgressStyle {
    styled("{prefix} [{bar:30}] {percent:>3}% {bytes}/{total_bytes} {bitrate} ETA {eta}")
}

/// The bar of a stalled transfer: `name [=====>    ] 41% 420 MiB/1.0 GiB stalled 5 s`.
fn stalled_style() -> ProgressStyle {
    styled("{prefix} [{bar:30}] {percent:>3}% {bytes}/{total_bytes} stalled {msg}")
}

fn styled(template: &str) -> ProgressStyle {
    let style = ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar());
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
        assert_eq!(p.line(150e6, None), "name: 41% 420 MiB/1.0 GiB 1.20 Gb/s ETA 4s");
        assert!(p.line(0.0, None).ends_with("ETA ?"));
        assert_eq!(p.line(150e6, Some(Duration::from_millis(5400))), "name: 41% 420 MiB/1.0 GiB stalled 5 s");
    }

    #[test]
    fn summaries() {
        assert_eq!(
            summary_line("a.bin", 50 << 20, Duration::from_millis(520)),
            "a.bin: 50.0 MiB in 0.52 s, 807 Mb/s, blake3 ok"
        );
        assert_eq!(
            total_line(3, 1, 150 << 20, Duration::from_secs(2)),
            "total: 3 files, 150 MiB in 2.00 s, 629 Mb/s; 1 of 3 failed"
        );
    }
}
