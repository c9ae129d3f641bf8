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
