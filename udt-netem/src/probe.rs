//! Measurements across the emulated link from inside the namespaces, without external tools:
//! a UDP echo round-trip probe (a `ping` stand-in) and a timed TCP bulk transfer. Each side
//! runs on a thread that entered its namespace ([`crate::ns::spawn_in`]).
//!
//! Invariants: every loop is bounded in count and in time (socket timeouts and deadlines), so
//! a broken link makes a probe fail or report losses, never hang; traffic goes only to the
//! given address inside the emulator's namespaces.

use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde::Serialize;

use crate::ns::spawn_in;

/// Bytes of UDP payload per echo probe.
const PROBE_SIZE: usize = 64;

/// Round-trip times of a UDP echo probe.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RttSummary {
    /// Probes sent.
    pub sent: usize,
    /// Replies received in time.
    pub received: usize,
    /// Smallest RTT, milliseconds.
    pub min_ms: f64,
    /// Mean RTT, milliseconds.
    pub mean_ms: f64,
    /// Median RTT, milliseconds.
    pub p50_ms: f64,
    /// Largest RTT, milliseconds.
    pub max_ms: f64,
}

impl RttSummary {
    fn from_samples(sent: usize, mut rtts: Vec<Duration>) -> Self {
        rtts.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let n = rtts.len();
        if n == 0 {
            return Self { sent, ..Self::default() };
        }
        Self {
            sent,
            received: n,
            min_ms: ms(rtts[0]),
            mean_ms: rtts.iter().map(|&d| ms(d)).sum::<f64>() / n as f64,
            p50_ms: ms(rtts[n / 2]),
            max_ms: ms(rtts[n - 1]),
        }
    }
}

/// Sends `count` UDP probes of 64 bytes from namespace `ns_a` to an echo server this
/// function runs in namespace `ns_b` on `addr_b`, one every `interval` (after the previous
/// reply or `timeout`), and summarizes the round-trip times.
pub fn udp_rtt(
    ns_a: &str,
    ns_b: &str,
    addr_b: Ipv4Addr,
    count: usize,
    interval: Duration,
    timeout: Duration,
) -> anyhow::Result<RttSummary> {
    let stop = Arc::new(AtomicBool::new(false));
    let (port_tx, port_rx) = mpsc::channel();
    let server_stop = stop.clone();
    let server = spawn_in(ns_b, move || -> anyhow::Result<()> {
        let sock = UdpSocket::bind((addr_b, 0))?;
        sock.set_read_timeout(Some(Duration::from_millis(50)))?;
        port_tx.send(sock.local_addr()?.port())?;
        let mut buf = [0u8; 2048];
        while !server_stop.load(Relaxed) {
            match sock.recv_from(&mut buf) {
                Ok((n, from)) => {
                    sock.send_to(&buf[..n], from)?;
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    });
    let port = port_rx.recv_timeout(Duration::from_secs(5)).context("the echo server did not start");
    let client = port.map(|port| {
        spawn_in(ns_a, move || -> anyhow::Result<RttSummary> {
            let sock = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0))?;
            sock.connect(SocketAddr::from((addr_b, port)))?;
            let mut buf = [0u8; PROBE_SIZE];
            let mut rtts = Vec::with_capacity(count);
            for seq in 0..count as u64 {
                let sent_at = Instant::now();
                buf[..8].copy_from_slice(&seq.to_be_bytes());
                sock.send(&buf)?;
                let deadline = sent_at + timeout;
                let mut reply = [0u8; 2048];
                while let Some(left) =
                    deadline.checked_duration_since(Instant::now()).filter(|d| !d.is_zero())
                {
                    sock.set_read_timeout(Some(left))?;
                    match sock.recv(&mut reply) {
                        Ok(n) if n >= 8 && reply[..8] == seq.to_be_bytes() => {
                            rtts.push(sent_at.elapsed());
                            break;
                        }
                        Ok(_) => {} // a late reply to an earlier probe
                        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => break,
                        Err(e) => return Err(e.into()),
                    }
                }
                if let Some(rest) = (sent_at + interval).checked_duration_since(Instant::now()) {
                    std::thread::sleep(rest);
                }
            }
            Ok(RttSummary::from_samples(count, rtts))
        })
    });
    let summary = client.and_then(|c| join(c, "the probe client"));
    stop.store(true, Relaxed);
    let served = join(server, "the echo server");
    let summary = summary?;
    served?;
    Ok(summary)
}

fn join<T>(h: std::thread::JoinHandle<anyhow::Result<anyhow::Result<T>>>, what: &str) -> anyhow::Result<T> {
    match h.join() {
        Ok(r) => r.and_then(|r| r).with_context(|| format!("{what} failed")),
        Err(_) => bail!("{what} panicked"),
    }
}

/// Result of a timed TCP transfer.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TcpSummary {
    /// Bytes received.
    pub bytes: u64,
    /// From the connection's acceptance to the end of the data, seconds.
    pub seconds: f64,
    /// Goodput at the receiver, bits per second.
    pub goodput_bps: f64,
}

/// Sends data for `duration` over one TCP connection from namespace `ns_a` to a receiver this
/// function runs in namespace `ns_b` on `addr_b`, and measures the receiver's goodput.
pub fn tcp_transfer(
    ns_a: &str,
    ns_b: &str,
    addr_b: Ipv4Addr,
    duration: Duration,
) -> anyhow::Result<TcpSummary> {
    let (port_tx, port_rx) = mpsc::channel();
    let limit = duration + Duration::from_secs(10);
    let server = spawn_in(ns_b, move || -> anyhow::Result<TcpSummary> {
        let listener = TcpListener::bind((addr_b, 0))?;
        listener.set_nonblocking(true)?;
        port_tx.send(listener.local_addr()?.port())?;
        let give_up = Instant::now() + Duration::from_secs(5);
        let mut stream = loop {
            match listener.accept() {
                Ok((s, _)) => break s,
                Err(e) if e.kind() == ErrorKind::WouldBlock && Instant::now() < give_up => {
                    std::thread::sleep(Duration::from_millis(2));
                }
                Err(e) => return Err(anyhow::Error::from(e).context("no connection to accept")),
            }
        };
        stream.set_nonblocking(false)?;
        stream.set_read_timeout(Some(Duration::from_secs(5)))?;
        let start = Instant::now();
        let mut buf = vec![0u8; 256 * 1024];
        let mut bytes = 0u64;
        loop {
            let n = stream.read(&mut buf)?;
            if n == 0 || start.elapsed() > limit {
                break;
            }
            bytes += n as u64;
        }
        let seconds = start.elapsed().as_secs_f64();
        Ok(TcpSummary { bytes, seconds, goodput_bps: bytes as f64 * 8.0 / seconds })
    });
    let port = port_rx.recv_timeout(Duration::from_secs(5)).context("the TCP receiver did not start");
    let client = port.map(|port| {
        spawn_in(ns_a, move || -> anyhow::Result<()> {
            let mut stream =
                TcpStream::connect_timeout(&SocketAddr::from((addr_b, port)), Duration::from_secs(5))?;
            stream.set_write_timeout(Some(Duration::from_secs(5)))?;
            let buf = vec![0x5au8; 128 * 1024];
            let end = Instant::now() + duration;
            while Instant::now() < end {
                stream.write_all(&buf)?;
            }
            stream.shutdown(std::net::Shutdown::Write)?;
            Ok(())
        })
    });
    let sent = client.and_then(|c| join(c, "the TCP sender"));
    let summary = join(server, "the TCP receiver");
    sent?;
    summary
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_samples() {
        let ms = Duration::from_millis;
        let s = RttSummary::from_samples(5, vec![ms(42), ms(40), ms(41), ms(44)]);
        assert_eq!((s.sent, s.received), (5, 4));
        assert_eq!((s.min_ms, s.p50_ms, s.max_ms), (40.0, 42.0, 44.0));
        assert!((s.mean_ms - 41.75).abs() < 1e-9);
        assert_eq!(RttSummary::from_samples(3, vec![]).received, 0);
    }
}
