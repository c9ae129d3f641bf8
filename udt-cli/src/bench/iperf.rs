//! Kernel TCP (one congestion control per run, `-C NAME`) and raw UDP through iperf3:
//! `iperf3 -s -1 -J` in B, `iperf3 -c ... -J --get-server-output` in A.
//!
//! TCP's window: `-w` at twice the path's BDP, at least 4 MiB, when the host's
//! `net.core.{r,w}mem_max` allow it (iperf3 refuses a buffer smaller than it asked for);
//! otherwise no `-w`, and autotuning (up to the 64 MiB the emulator's namespaces allow) sizes
//! it. Retransmitted bytes are iperf3's `retransmits` (segments) times the MSS. UDP is sent at
//! the link rate with 1472-byte datagrams; delivered bytes are the sent ones minus those the
//! receiver counted lost, and it has no retransmissions.

use anyhow::{Context, Result};

use super::child::Finished;
use super::flow::{json_f64, Commands, Ctx, Point, Raw};

/// First port of the iperf3 servers (slot added).
const PORT: u16 = 5201;
/// The smallest `-w`.
const MIN_WINDOW: u64 = 4 << 20;
/// The UDP stream's datagram payload: a full packet of the link's MTU less IPv4 and UDP headers.
const UDP_PAYLOAD: u64 = super::path::PACKET_BYTES - 28;

/// The largest socket buffer an application may ask for (the smaller of the two maxima).
fn socket_buffer_max() -> Option<u64> {
    let read = |p: &str| std::fs::read_to_string(p).ok()?.trim().parse::<u64>().ok();
    Some(read("/proc/sys/net/core/rmem_max")?.min(read("/proc/sys/net/core/wmem_max")?))
}

/// The `-w` for this path, or `None` for autotuning.
pub fn window(ctx: &Ctx) -> Option<u64> {
    let want = (2 * ctx.path.bdp_bytes()).max(MIN_WINDOW);
    socket_buffer_max().filter(|&max| want <= max).map(|_| want)
}

/// The commands of a TCP (`cc` given) or UDP flow in `slot`.
pub fn commands(ctx: &Ctx, cc: Option<&str>, slot: u16) -> Commands {
    let port = (PORT + slot).to_string();
    let addr = ctx.addr_b.to_string();
    let server = ["iperf3", "-s", "-1", "-J", "-p", &port, "-B", &addr].map(String::from).to_vec();
    let secs = format!("{}", ctx.time.as_secs_f64());
    let mut client = ["iperf3", "-c", &addr, "-p", &port, "-t", &secs, "-J", "--get-server-output"]
        .map(String::from)
        .to_vec();
    match cc {
        Some(cc) => {
            client.extend(["-C".to_string(), cc.to_string()]);
            if let Some(w) = window(ctx) {
                client.extend(["-w".to_string(), w.to_string()]);
            }
        }
        None => {
            let rate = ctx.path.rate_bps.to_string();
            let len = UDP_PAYLOAD.to_string();
            client.extend(["-u", "-b", &rate, "-l", &len].map(String::from));
        }
    }
    Commands { server, client, ..Commands::default() }
}

fn doc(client: &Finished) -> Result<serde_json::Value> {
    let v: serde_json::Value = serde_json::from_str(&client.stdout).context("iperf3: bad JSON output")?;
    if let Some(e) = v.get("error").and_then(|e| e.as_str()) {
        anyhow::bail!("iperf3: {e}");
    }
    Ok(v)
}

/// Receiver-side intervals (the server's, from `--get-server-output`), else the client's.
fn intervals(v: &serde_json::Value) -> Vec<Point> {
    let from = |list: Option<&serde_json::Value>| -> Vec<Point> {
        list.and_then(|l| l.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|i| {
                        let t = i.pointer("/sum/end")?.as_f64()?;
                        let bps = i.pointer("/sum/bits_per_second")?.as_f64()?;
                        Some(Point { t, mbps: bps / 1e6 })
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let server = from(v.pointer("/server_output_json/intervals"));
    if server.is_empty() {
        from(v.get("intervals"))
    } else {
        server
    }
}

/// A TCP flow's figures.
pub fn parse_tcp(client: &Finished) -> Result<Raw> {
    let v = doc(client)?;
    let bytes = json_f64(&v, "/end/sum_received/bytes", "iperf3")? as u64;
    let seconds = json_f64(&v, "/end/sum_received/seconds", "iperf3")?;
    let retransmits = json_f64(&v, "/end/sum_sent/retransmits", "iperf3")?;
    let mss = json_f64(&v, "/start/tcp_mss_default", "iperf3").unwrap_or(1448.0);
    let cc = v.pointer("/end/sender_tcp_congestion").and_then(|c| c.as_str()).map(|c| format!("cc {c}"));
    let window = v.pointer("/start/sock_bufsize").and_then(|w| w.as_u64()).filter(|&w| w > 0);
    let window = window.map_or("autotuned window".to_string(), |w| format!("-w {} MiB", w >> 20));
    Ok(Raw {
        bytes,
        seconds,
        retx_bytes: Some((retransmits * mss).round() as u64),
        intervals: intervals(&v),
        note: Some(cc.map_or(window.clone(), |c| format!("{c}, {window}"))),
        // A full segment fills the link's MTU: its MSS is what the headers leave of it.
        payload_per_packet: Some(mss as u64),
    })
}

/// A UDP flow's figures.
pub fn parse_udp(client: &Finished) -> Result<Raw> {
    let v = doc(client)?;
    let sent = json_f64(&v, "/end/sum/bytes", "iperf3")?;
    let lost = json_f64(&v, "/end/sum/lost_percent", "iperf3")?;
    let seconds = json_f64(&v, "/end/sum/seconds", "iperf3")?;
    Ok(Raw {
        bytes: (sent * (1.0 - lost / 100.0)).round() as u64,
        seconds,
        retx_bytes: None,
        intervals: intervals(&v),
        note: Some(format!("{lost:.2}% of datagrams lost (no retransmission)")),
        payload_per_packet: Some(UDP_PAYLOAD),
    })
}
