//! Our UDT, memory to memory: `udt perf server -1 --json` in B, `udt perf client --json` in
//! A, both this very binary, `--cc` given to both ends.
//!
//! Goodput is the server's summary (payload bytes received, from the first stream's start to
//! its end); retransmitted bytes are the client's retransmitted packets times the payload per
//! packet (MSS minus IP, UDP and UDT headers).

use anyhow::{Context, Result};

use super::child::Finished;
use super::flow::{json_f64, Commands, Ctx, Point, Raw};

/// First port of the perf servers (slot added).
const PORT: u16 = 9001;
/// IPv4 (20) + UDP (8) + UDT data header (16).
pub const HEADERS: u64 = 44;

/// The commands of a flow in `slot`.
pub fn commands(ctx: &Ctx, cc: Option<&str>, slot: u16) -> Commands {
    let exe = ctx.udt_exe.display().to_string();
    let addr = format!("{}:{}", ctx.addr_b, PORT + slot);
    let mut server =
        vec![exe.clone(), "perf".into(), "server".into(), "-1".into(), "--json".into(), "-l".into()];
    server.push(addr.clone());
    let mut client = vec![exe, "perf".into(), "client".into(), addr, "--json".into(), "--time".into()];
    client.push(format!("{}", ctx.time.as_secs_f64()));
    // The protocol in clear, as UDT4 and kernel TCP are measured beside it (the `udt send`
    // flows run secured, as a user runs them).
    for cmd in [&mut server, &mut client] {
        cmd.push("--insecure".into());
        if let Some(cc) = cc {
            cmd.push("--cc".into());
            cmd.push(cc.to_string());
        }
    }
    Commands { server, client, ..Commands::default() }
}

/// The flow's figures from the two JSON outputs.
pub fn parse(client: &Finished, server: &Finished) -> Result<Raw> {
    let c: serde_json::Value =
        serde_json::from_str(&client.stdout).context("udt perf client: bad JSON output")?;
    let s: serde_json::Value =
        serde_json::from_str(&server.stdout).context("udt perf server: bad JSON output")?;
    let bytes = json_f64(&s, "/summary/bytes", "udt perf server")? as u64;
    let seconds = json_f64(&s, "/summary/seconds", "udt perf server")?;
    let retransmits = json_f64(&c, "/summary/retransmits", "udt perf client")?;
    let mss = json_f64(&c, "/start/mss", "udt perf client").unwrap_or(1500.0);
    let intervals = s
        .get("intervals")
        .and_then(|v| v.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|i| {
                    let t = i.pointer("/end")?.as_f64()?;
                    let bps = i.pointer("/sum/bits_per_second")?.as_f64()?;
                    Some(Point { t, mbps: bps / 1e6 })
                })
                .collect()
        })
        .unwrap_or_default();
    let cc = c.pointer("/start/congestion_control").and_then(|v| v.as_str()).map(|s| format!("cc {s}"));
    Ok(Raw {
        bytes,
        seconds,
        retx_bytes: Some((retransmits * (mss - HEADERS as f64)).round() as u64),
        intervals,
        note: cc,
        payload_per_packet: Some((mss as u64).saturating_sub(HEADERS)),
    })
}
