//! A TUN device (layer 3, no packet-information header) opened by this process.
//!
//! Invariants: the file descriptor is non-blocking and close-on-exec; the device exists as
//! long as the [`Tun`] does (it is not persistent: closing the descriptor deletes it, in
//! whatever namespace it was moved to). Reads and writes take `&self`, so one thread may read
//! while another writes.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt;
use std::time::Duration;

use crate::sys;

/// An open TUN device.
#[derive(Debug)]
pub struct Tun {
    file: File,
    name: String,
}

impl Tun {
    /// Creates a TUN device named after `pattern` (`%d` lets the kernel number it) in the
    /// calling thread's network namespace.
    pub fn create(pattern: &str) -> io::Result<Tun> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open("/dev/net/tun")?;
        let name = sys::tun_set_iff(&file, pattern)?;
        Ok(Tun { file, name })
    }

    /// The name the kernel gave the device at creation (a later rename is not reflected).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Reads one packet into `buf`: its length, or `None` when no packet is waiting. A packet
    /// longer than `buf` is truncated.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        loop {
            match (&self.file).read(buf) {
                Ok(n) => return Ok(Some(n)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Writes one packet (it enters the device's namespace as if received on the device).
    pub fn send(&self, packet: &[u8]) -> io::Result<()> {
        loop {
            match (&self.file).write(packet) {
                Ok(_) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Waits up to `timeout` for a packet to read; returns whether one is waiting.
    pub fn wait_readable(&self, timeout: Duration) -> io::Result<bool> {
        sys::wait_readable(self.file.as_fd(), timeout)
    }
}
