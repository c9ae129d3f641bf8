//! Transfers to and from another host started through the user's own `ssh` (its config, agent
//! and jump hosts), as scp and rsync are: `udt send PATH... [USER@]HOST:[DIR]` and
//! `udt recv [USER@]HOST:PATH... [DIR]`.
//!
//! The near end (the one the user typed) runs `ssh [OPTS] -- DESTINATION 'udt recv|send
//! --bootstrap ...'` and writes a fresh random key on the ssh channel's standard input (never
//! on a command line, where other users would see it in `ps`). The far end reads the key,
//! listens on a UDP port ([`PortRange`]; any free one by default), says which on standard
//! output in one machine-readable line ([`ANNOUNCE`]), and takes one connection secured with
//! that key; the near end connects to it. The data moves over UDT, encrypted, whichever way it
//! goes; the far end's standard error is shown as it comes and its exit status is the far
//! side's outcome.
//!
//! Modules: [`spec`] (reading `HOST:PATH` operands; quoting for the far shell), [`ssh`] (the
//! near end: starting ssh, reading the announcement, connecting, the far outcome), [`far`]
//! (the far end: the key, the port, the one connection).

pub mod far;
pub mod spec;
pub mod ssh;

use std::fmt;

/// The first word of the far end's announcement line: `UDT-BOOTSTRAP 1 PORT ADDR`, ADDR the
/// address the ssh connection reached on the far host (from `SSH_CONNECTION`) or `-`.
pub const ANNOUNCE: &str = "UDT-BOOTSTRAP";
/// The version of the announcement and key lines.
pub const BOOTSTRAP_VERSION: u32 = 1;

/// A range of UDP ports for the far end to listen in (`--port-range LO-HI`, or one `PORT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortRange {
    /// The lowest port.
    pub lo: u16,
    /// The highest port.
    pub hi: u16,
}

impl fmt::Display for PortRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.lo == self.hi {
            write!(f, "{}", self.lo)
        } else {
            write!(f, "{}-{}", self.lo, self.hi)
        }
    }
}

/// Parse `--port-range`: `LO-HI` or `PORT`, ports 1-65535, LO at most HI.
pub fn parse_port_range(s: &str) -> Result<PortRange, String> {
    let port = |p: &str| match p.trim().parse::<u16>() {
        Ok(0) | Err(_) => Err(format!("`{p}` is not a port number (1-65535)")),
        Ok(n) => Ok(n),
    };
    let (lo, hi) = match s.split_once('-') {
        Some((lo, hi)) => (port(lo)?, port(hi)?),
        None => (port(s)?, port(s)?),
    };
    if lo > hi {
        return Err(format!("the range {lo}-{hi} is empty (LO must not exceed HI)"));
    }
    Ok(PortRange { lo, hi })
}

/// The key as the line the near end writes to the far end's standard input.
pub fn key_line(key: &[u8; 32]) -> zeroize::Zeroizing<String> {
    let mut line = zeroize::Zeroizing::new(String::with_capacity(80));
    line.push_str(&format!("udt-key {BOOTSTRAP_VERSION} "));
    for b in key {
        line.push_str(&format!("{b:02x}"));
    }
    line.push('\n');
    line
}

/// The key in a line written by [`key_line`].
pub fn parse_key_line(line: &str) -> Option<[u8; 32]> {
    let hex = line.trim_end().strip_prefix(&format!("udt-key {BOOTSTRAP_VERSION} "))?;
    if hex.len() != 64 || !hex.is_ascii() {
        return None;
    }
    let mut key = [0u8; 32];
    for (i, byte) in key.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_ranges() {
        assert_eq!(parse_port_range("9000-9010"), Ok(PortRange { lo: 9000, hi: 9010 }));
        assert_eq!(parse_port_range("9000"), Ok(PortRange { lo: 9000, hi: 9000 }));
        assert_eq!(parse_port_range("9000").unwrap().to_string(), "9000");
        assert_eq!(parse_port_range("1-2").unwrap().to_string(), "1-2");
        for bad in ["", "0-10", "10-5", "a-b", "70000", "-5"] {
            assert!(parse_port_range(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn keys_round_trip_and_garbage_is_refused() {
        let key: [u8; 32] = std::array::from_fn(|i| (i * 37) as u8);
        assert_eq!(parse_key_line(&key_line(&key)), Some(key));
        assert_eq!(parse_key_line("udt-key 1 00"), None);
        assert_eq!(parse_key_line(&format!("udt-key 1 {}", "zz".repeat(32))), None);
        assert_eq!(parse_key_line(&format!("udt-key 2 {}", "00".repeat(32))), None);
        assert_eq!(parse_key_line(&format!("udt-key 1 {}é", "00".repeat(31))), None);
    }
}
