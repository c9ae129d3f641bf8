//! A `udt` command that listens, for the test files that start one: its standard output and
//! error lines arrive on channels, and it is killed on drop. Each test file uses part of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// A listening command whose standard output and error lines arrive on channels; killed on
/// drop.
pub struct Listening {
    pub child: Child,
    pub out: mpsc::Receiver<String>,
    pub err: mpsc::Receiver<String>,
}

impl Listening {
    pub fn start(mut cmd: Command) -> Listening {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let lines = |r: Box<dyn std::io::Read + Send>| {
            let (tx, rx) = mpsc::channel();
            thread::spawn(move || {
                for line in BufReader::new(r).lines().map_while(Result::ok) {
                    let _ = tx.send(line);
                }
            });
            rx
        };
        let out = lines(Box::new(child.stdout.take().unwrap()));
        let err = lines(Box::new(child.stderr.take().unwrap()));
        Listening { child, out, err }
    }

    /// The next line of `which` containing `needle`, within 10 s.
    pub fn line(which: &mpsc::Receiver<String>, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match which.recv_timeout(left) {
                Ok(l) if l.contains(needle) => return l,
                Ok(_) => {}
                Err(_) => panic!("no line with {needle:?}"),
            }
        }
    }

    /// The port of its `listening on ADDR` line.
    pub fn port(&self) -> u16 {
        let line = Self::line(&self.err, "listening on ");
        let addr = line.split("listening on ").nth(1).unwrap().split([',', ' ']).next().unwrap();
        addr.rsplit(':').next().unwrap().parse().unwrap()
    }

    /// Its exit status, within 10 s.
    pub fn wait(&mut self) -> Option<i32> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s.code();
            }
            assert!(Instant::now() < deadline, "still running");
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// Ctrl-C ([`crate::common::interrupt`]); when the signal was sent.
    pub fn interrupt(&self) -> Instant {
        crate::common::interrupt(&self.child)
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
