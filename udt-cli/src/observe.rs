//! How `udt send` and `udt recv` show a transfer's events ([`udt_transfer::Event`]): progress
//! of the file being moved on standard error ([`FileProgress`]), each file's outcome and the
//! session's total through [`Report`] (standard output, or JSON lines), and the notes a user
//! wants to hear (queued, resuming, skipped, set aside) on standard error.

use udt_transfer::{display_name, Event, Observer};

use crate::progress::{FileProgress, Mode};
use crate::report::Report;
use crate::units;

/// The tool's observer of one session (or of a send's collection and session).
pub struct Shown {
    /// The outcomes so far.
    pub report: Report,
    mode: Mode,
    progress: Option<FileProgress>,
    said_waiting: bool,
}

impl Shown {
    /// For `udt COMMAND` (`send`, `recv`), JSON lines if `json`, progress shown as `mode` says.
    pub fn new(command: &'static str, json: bool, mode: Mode) -> Shown {
        Shown { report: Report::new(command, json), mode, progress: None, said_waiting: false }
    }
}

impl Observer for Shown {
    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Skipped { path, what } => eprintln!("udt send: skipped {}: {what}", display_name(path)),
            Event::Waiting { reason } if !self.said_waiting => {
                let why = if reason.is_empty() { "busy".into() } else { display_name(reason) };
                eprintln!("udt send: waiting for the receiver ({why})...");
                self.said_waiting = true;
            }
            Event::Resuming { path, offset } => eprintln!(
                "udt send: {}: the receiver holds {} of it already: resuming (if its part matches ours)",
                display_name(path),
                units::bytes(offset)
            ),
            Event::SetAside { path, temp, reason } => eprintln!(
                "udt recv: {}: {} is set aside ({reason}) and left as it is; receiving the file whole",
                display_name(path),
                display_name(temp)
            ),
            Event::DataStarted { path, bytes } => {
                self.progress = Some(FileProgress::new(self.mode, &display_name(path), bytes));
            }
            Event::Moved { bytes } => {
                if let Some(p) = &mut self.progress {
                    p.add(bytes);
                }
            }
            Event::Idle => {
                if let Some(p) = &mut self.progress {
                    p.idle();
                }
            }
            Event::DataEnded => {
                self.progress.take().map(FileProgress::finish);
            }
            Event::FileDone { path, bytes, took, hash } => {
                self.report.ok(path, &display_name(path), bytes, took, &blake3::Hash::from_bytes(hash));
            }
            Event::Unchanged { path, reason } => self.report.skipped(path, &display_name(path), reason),
            Event::FileFailed { path, reason } => self.report.failed(path, &display_name(path), reason),
            Event::Deleted { path } => self.report.deleted(path, &display_name(path)),
            Event::SessionEnded { files, took } => self.report.total(files, took),
            _ => {}
        }
    }
}
