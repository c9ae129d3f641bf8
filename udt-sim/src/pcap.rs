//! PCAP export of a link: every packet that goes onto the wire, as an IPv4/UDP packet.
//!
//! Classic pcap with nanosecond timestamps (magic `a1b23c4d`) and link type `LINKTYPE_RAW`
//! (101, raw IP), readable by Wireshark and tcpdump. IPv4 headers are synthesised from the
//! simulated addresses (10.0.0.0/8) with a valid header checksum; the UDP checksum is 0 ("none"),
//! which IPv4 allows. Timestamps are virtual time since the simulation started.
//!
//! Invariant: the writer never fails the simulation. The first I/O error stops further writes
//! and is reported by [`PcapWriter::finish`].

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use udt_proto::Instant;

use crate::packet::{Datagram, IP_UDP_OVERHEAD};

const LINKTYPE_RAW: u32 = 101;
/// Bytes of each packet written (whole packets up to jumbo size).
const SNAPLEN: u32 = 65_535;

/// Writes the packets of one link to a pcap stream.
pub struct PcapWriter {
    out: Box<dyn Write + Send>,
    error: Option<io::Error>,
    packets: u64,
    scratch: Vec<u8>,
}

impl std::fmt::Debug for PcapWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PcapWriter").field("packets", &self.packets).field("error", &self.error).finish()
    }
}

impl PcapWriter {
    /// A writer to a new file at `path`.
    pub fn create(path: impl AsRef<Path>) -> io::Result<Self> {
        Self::new(Box::new(BufWriter::new(File::create(path)?)))
    }

    /// A writer to any stream; writes the file header at once.
    pub fn new(mut out: Box<dyn Write + Send>) -> io::Result<Self> {
        let mut h = Vec::with_capacity(24);
        h.extend_from_slice(&0xa1b2_3c4du32.to_le_bytes());
        h.extend_from_slice(&2u16.to_le_bytes());
        h.extend_from_slice(&4u16.to_le_bytes());
        h.extend_from_slice(&0i32.to_le_bytes());
        h.extend_from_slice(&0u32.to_le_bytes());
        h.extend_from_slice(&SNAPLEN.to_le_bytes());
        h.extend_from_slice(&LINKTYPE_RAW.to_le_bytes());
        out.write_all(&h)?;
        Ok(PcapWriter { out, error: None, packets: 0, scratch: Vec::with_capacity(2048) })
    }

    /// Packets written.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Record `d` as sent at `at`.
    pub fn write(&mut self, at: Instant, d: &Datagram) {
        if self.error.is_some() {
            return;
        }
        let payload = d.payload();
        let total = (payload.len() + IP_UDP_OVERHEAD).min(usize::from(u16::MAX));
        let captured = total.min(SNAPLEN as usize);
        let s = &mut self.scratch;
        s.clear();
        let ns = at.as_nanos();
        s.extend_from_slice(&((ns / 1_000_000_000) as u32).to_le_bytes());
        s.extend_from_slice(&((ns % 1_000_000_000) as u32).to_le_bytes());
        s.extend_from_slice(&(captured as u32).to_le_bytes());
        s.extend_from_slice(&(total as u32).to_le_bytes());
        let mut ip = [0u8; 20];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        ip[4..6].copy_from_slice(&(self.packets as u16).to_be_bytes());
        ip[6] = 0x40; // don't fragment
        ip[8] = 64;
        ip[9] = 17;
        ip[12..16].copy_from_slice(&d.src.ipv4().octets());
        ip[16..20].copy_from_slice(&d.dst.ipv4().octets());
        let sum = ipv4_checksum(&ip);
        ip[10..12].copy_from_slice(&sum.to_be_bytes());
        s.extend_from_slice(&ip);
        s.extend_from_slice(&d.src.port.to_be_bytes());
        s.extend_from_slice(&d.dst.port.to_be_bytes());
        s.extend_from_slice(&((total - 20) as u16).to_be_bytes());
        s.extend_from_slice(&[0, 0]);
        s.extend_from_slice(&payload[..captured - IP_UDP_OVERHEAD]);
        match self.out.write_all(s) {
            Ok(()) => self.packets += 1,
            Err(e) => self.error = Some(e),
        }
    }

    /// Flush; returns the first error met, if any.
    pub fn finish(mut self) -> io::Result<u64> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.out.flush()?;
        Ok(self.packets)
    }
}

/// The IPv4 header checksum (RFC 791).
fn ipv4_checksum(h: &[u8; 20]) -> u16 {
    let mut sum: u32 = h.chunks(2).map(|w| u32::from(u16::from_be_bytes([w[0], w[1]]))).sum();
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{Addr, BufPool};
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn writes_header_and_valid_ipv4_udp_records() {
        let shared = Shared::default();
        let mut w = PcapWriter::new(Box::new(shared.clone())).unwrap();
        let mut pool = BufPool::new(64);
        let d = pool.datagram(Addr { host: 0, port: 1000 }, Addr { host: 1, port: 2000 }, b"abcd");
        w.write(Instant::from_nanos(1_500_000_001), &d);
        assert_eq!(w.finish().unwrap(), 1);
        let b = shared.0.lock().unwrap().clone();
        assert_eq!(&b[0..4], &0xa1b2_3c4du32.to_le_bytes());
        assert_eq!(&b[20..24], &101u32.to_le_bytes());
        let rec = &b[24..];
        assert_eq!(u32::from_le_bytes(rec[0..4].try_into().unwrap()), 1);
        assert_eq!(u32::from_le_bytes(rec[4..8].try_into().unwrap()), 500_000_001);
        assert_eq!(u32::from_le_bytes(rec[8..12].try_into().unwrap()), 32);
        let ip: [u8; 20] = rec[16..36].try_into().unwrap();
        assert_eq!(ipv4_checksum(&ip), 0, "a header with its checksum sums to zero");
        assert_eq!(&ip[12..16], &[10, 0, 0, 1]);
        assert_eq!(&rec[36..38], &1000u16.to_be_bytes());
        assert_eq!(&rec[44..48], b"abcd");
    }
}
