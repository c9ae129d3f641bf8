//! Helpers the `udt` binary's test files share (each file uses some of them).

#![allow(dead_code)]

use std::process::{Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// The `udt` binary, with no log filter or code phrase from the environment and no input.
pub fn udt() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_udt"));
    c.env_remove("RUST_LOG").env_remove("UDT_CODE").stdin(Stdio::null());
    c
}

/// Run `cmd` to the end, failing the test after `secs` seconds.
pub fn run_within(mut cmd: Command, secs: u64) -> Output {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(secs);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the command did not finish in {secs} s");
        thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

/// Bytes as text, lossily.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Pseudo-random bytes (xorshift), reproducible.
pub fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.truncate(len);
    v
}

/// Ctrl-C for `child`: SIGINT, once it catches the signal (before, the signal's default action
/// would end it, not its own handling). Returns when the signal was sent.
pub fn interrupt(child: &std::process::Child) -> Instant {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !catches_sigint(child.id()) {
        assert!(Instant::now() < deadline, "the command never caught SIGINT");
        thread::sleep(Duration::from_millis(5));
    }
    let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    let sent = Instant::now();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    sent
}

/// Whether process `pid` has a handler for SIGINT (`SigCgt` of /proc/PID/status); true where
/// there is no /proc to ask.
fn catches_sigint(pid: u32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return true;
    };
    let caught = status.lines().find_map(|l| l.strip_prefix("SigCgt:")).map(str::trim);
    caught
        .and_then(|hex| u64::from_str_radix(hex, 16).ok())
        .is_some_and(|mask| mask & (1 << (rustix::process::Signal::INT.as_raw() - 1)) != 0)
}

/// Which end of a direction a `udt perf` report's summary speaks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// It wrote: its time ends when its last byte was acknowledged, which may be after the
    /// last sample, by however long the machine takes to flush what it buffered.
    Sender,
    /// It read: its time ends with its last byte, before the last sample.
    Receiver,
}

/// One direction of a `udt perf --json` report (its `intervals` and `summary`) run with `-O`:
/// the intervals start omitted and end counted; the summary counts some, not all, of the bytes
/// the far end saw; and its time counts from the end of the omitted seconds: a receiver's at
/// most from the first counted interval to the last interval's end (and a final sliver under
/// 50 ms, not sampled); a sender's, whose flush may follow, less than from the start.
pub fn assert_counts_after_omitted(direction: &serde_json::Value, end: End) {
    let intervals = direction["intervals"].as_array().unwrap();
    let marked: Vec<bool> = intervals.iter().map(|i| i["omitted"] == true).collect();
    assert!(marked.len() >= 3 && marked[0] && !marked[marked.len() - 1], "{marked:?}");
    let first_counted = marked.iter().position(|m| !m).unwrap();
    assert!(marked[first_counted..].iter().all(|m| !m), "{marked:?}");
    let summary = &direction["summary"];
    let counted = summary["bytes"].as_u64().unwrap();
    let all = summary["receiver"]["bytes"].as_u64().unwrap();
    assert!(counted > 0 && counted < all, "{counted} of {all}");
    let counted_start = intervals[first_counted]["start"].as_f64().unwrap();
    let last_end = intervals.last().unwrap()["end"].as_f64().unwrap();
    let seconds = summary["seconds"].as_f64().unwrap();
    assert!(counted_start > 0.0, "{counted_start}");
    let bound = match end {
        End::Receiver => last_end - counted_start + 0.05,
        End::Sender => last_end,
    };
    assert!(seconds > 0.0 && seconds < bound, "{end:?}: {seconds} s counted of {counted_start}..{last_end}");
}
