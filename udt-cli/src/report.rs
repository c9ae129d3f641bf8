//! What `send` and `recv` print about files: per file a summary line on standard output
//! (`NAME: skipped, REASON` for one the receiver kept as it was; or, with `--json`, one JSON
//! object per line: every file, then a total), failures on standard error as
//! `udt send: NAME: reason`; with `--delete`, `deleted NAME` per path the receiver deleted.

use std::io::Write;
use std::time::Duration;

use serde::Serialize;

use crate::progress;

/// One line of `--json` output.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum Line<'a> {
    /// A file's outcome.
    File {
        name: &'a str,
        bytes: u64,
        seconds: f64,
        bits_per_second: f64,
        blake3: Option<&'a str>,
        /// Whether the two ends compared the file end to end (UDT transfers do; the seed
        /// protocols cannot: `blake3` is then the hash of the bytes where they are).
        verified: bool,
        status: &'static str,
        reason: Option<&'a str>,
    },
    /// A path the receiver deleted (`--delete`): the sender's tree does not have it.
    Deleted { name: &'a str },
    /// The session's outcome.
    Total {
        files: usize,
        ok: usize,
        /// Of the `ok` ones, kept as they were on the receiver (identical, or by its rules).
        skipped: usize,
        failed: usize,
        /// Paths deleted by `--delete`.
        deleted: usize,
        bytes: u64,
        seconds: f64,
        bits_per_second: f64,
        status: &'static str,
    },
}

/// Counts and prints the outcomes of one session.
pub struct Report {
    /// `send`, `recv`, `serve` or `fetch`, for the error lines.
    command: &'static str,
    json: bool,
    files: usize,
    failed: Vec<String>,
    skipped: usize,
    deleted: usize,
    bytes: u64,
}

/// Bits per second of `bytes` over `took`.
fn bps(bytes: u64, took: Duration) -> f64 {
    let secs = took.as_secs_f64();
    if secs > 0.0 {
        bytes as f64 * 8.0 / secs
    } else {
        0.0
    }
}

impl Report {
    /// A report for `udt COMMAND`, in JSON lines if `json`.
    pub fn new(command: &'static str, json: bool) -> Report {
        Report { command, json, files: 0, failed: Vec::new(), skipped: 0, deleted: 0, bytes: 0 }
    }

    /// A verified file: `name` as sent (`shown`: safe to print), `bytes` in `took`, its hash.
    pub fn ok(&mut self, name: &str, shown: &str, bytes: u64, took: Duration, hash: &blake3::Hash) {
        self.record(name, shown, bytes, took, Some(hash), true);
    }

    /// A file moved without an end-to-end check (the seed protocols): the BLAKE3 of what
    /// arrived, when computed, is printed for the user to compare (`b3sum` at the source).
    pub fn unverified(
        &mut self,
        name: &str,
        shown: &str,
        bytes: u64,
        took: Duration,
        hash: Option<&blake3::Hash>,
    ) {
        self.record(name, shown, bytes, took, hash, false);
    }

    fn record(
        &mut self,
        name: &str,
        shown: &str,
        bytes: u64,
        took: Duration,
        hash: Option<&blake3::Hash>,
        verified: bool,
    ) {
        self.files += 1;
        self.bytes += bytes;
        if self.json {
            let hex = hash.map(|h| h.to_hex());
            emit(&Line::File {
                name,
                bytes,
                seconds: took.as_secs_f64(),
                bits_per_second: bps(bytes, took),
                blake3: hex.as_ref().map(|h| h.as_str()),
                verified,
                status: "ok",
                reason: None,
            });
        } else if verified {
            println!("{}", progress::summary_line(shown, bytes, took));
        } else {
            println!("{}", progress::moved_line(shown, bytes, took, hash));
        }
    }

    /// A file the receiver kept as it was (identical, or by `--update`/`--ignore-existing`),
    /// with the reason (already safe to print): no failure.
    pub fn skipped(&mut self, name: &str, shown: &str, reason: &str) {
        self.files += 1;
        self.skipped += 1;
        if self.json {
            emit_unsent(name, "skipped", reason);
        } else {
            println!("{shown}: skipped, {reason}");
        }
    }

    /// A failed or refused file, with the reason (already safe to print).
    pub fn failed(&mut self, name: &str, shown: &str, reason: &str) {
        self.files += 1;
        self.failed.push(shown.to_string());
        eprintln!("udt {}: {shown}: {reason}", self.command);
        if self.json {
            emit_unsent(name, "error", reason);
        }
    }

    /// A path the receiver deleted (`--delete`), `shown` safe to print: `deleted NAME`.
    pub fn deleted(&mut self, name: &str, shown: &str) {
        self.deleted += 1;
        if self.json {
            emit(&Line::Deleted { name });
        } else {
            println!("deleted {shown}");
        }
    }

    /// The names of the failed files, if any.
    pub fn failures(&self) -> &[String] {
        &self.failed
    }

    /// Print the total (in text only when there were several files): `took` is the session's
    /// time, waiting in a receiver's queue excluded. `announced` files were expected in all
    /// (more than reported when the session broke off).
    pub fn total(&self, announced: usize, took: Duration) {
        let files = announced.max(self.files);
        let failed = files - (self.files - self.failed.len());
        if self.json {
            emit(&Line::Total {
                files,
                ok: files - failed,
                skipped: self.skipped,
                failed,
                deleted: self.deleted,
                bytes: self.bytes,
                seconds: took.as_secs_f64(),
                bits_per_second: bps(self.bytes, took),
                status: if failed == 0 { "ok" } else { "error" },
            });
        } else if files > 1 || self.deleted > 0 {
            let mut line = progress::total_line(files, failed, self.bytes, took);
            if self.skipped > 0 {
                line.push_str(&format!("; {} skipped", self.skipped));
            }
            if self.deleted > 0 {
                line.push_str(&format!("; {} deleted", self.deleted));
            }
            println!("{line}");
        }
    }
}

/// Print one JSON line on standard output.
/// The JSON line of a file that moved no data: `status` and why.
fn emit_unsent(name: &str, status: &'static str, reason: &str) {
    emit(&Line::File {
        name,
        bytes: 0,
        seconds: 0.0,
        bits_per_second: 0.0,
        blake3: None,
        verified: false,
        status,
        reason: Some(reason),
    });
}

fn emit(line: &Line<'_>) {
    match serde_json::to_string(line) {
        Ok(s) => {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{s}");
            let _ = out.flush();
        }
        Err(e) => tracing::error!("encoding JSON: {e}"),
    }
}
