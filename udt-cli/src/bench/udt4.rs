//! The reference UDT4 (4.11), memory to memory, through `interop/build/udt4_perf`:
//! `--listen PORT --bind ADDR` in B, `--connect ADDR:PORT --secs T` in A.
//!
//! Goodput is the receiver's `DONE bytes= secs=` line (accept to last byte); retransmitted
//! bytes come from the sender's `INFO perfmon ... retrans=N` line (packets) times the payload
//! per packet. UDT4 reports no intervals, so it has no throughput-over-time series.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Result};

use super::child::Finished;
use super::flow::{Commands, Ctx, Raw};

/// First port of the UDT4 receivers (slot added).
const PORT: u16 = 9301;
/// Payload of a full UDT4 packet at its default MSS 1500: minus IPv4, UDP, UDT headers.
const PAYLOAD: u64 = 1456;
/// Environment variable naming the `udt4_perf` binary.
pub const ENV: &str = "UDT4_PERF";
/// What a row says when `udt4_perf` is missing.
pub const MISSING: &str = "udt4_perf not built (run interop/setup.sh)";

/// Finds `udt4_perf`: the flag, then `$UDT4_PERF`, then `interop/build/` next to the crate
/// this was built from or above the executable (`target/release/udt` -> repo root).
pub fn locate(flag: Option<&Path>, exe: &Path) -> Option<PathBuf> {
    if let Some(p) = flag {
        return Some(p.to_path_buf());
    }
    if let Some(p) = std::env::var_os(ENV) {
        return Some(PathBuf::from(p));
    }
    let rel = Path::new("interop/build/udt4_perf");
    let crate_root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(|r| r.join(rel));
    let above_exe = exe.ancestors().skip(1).map(|d| d.join(rel));
    crate_root.into_iter().chain(above_exe).find(|p| p.is_file())
}

/// The commands of a flow in `slot`; an error when `udt4_perf` is missing.
pub fn commands(ctx: &Ctx, slot: u16) -> Result<Commands> {
    let Some(peer) = ctx.udt4.as_ref().filter(|p| p.is_file()) else { bail!("skipped: {MISSING}") };
    let peer = peer.display().to_string();
    let port = PORT + slot;
    let timeout = "60".to_string();
    Ok(Commands {
        server: vec![
            peer.clone(),
            "--listen".into(),
            port.to_string(),
            "--bind".into(),
            ctx.addr_b.to_string(),
            "--timeout".into(),
            timeout.clone(),
        ],
        client: vec![
            peer,
            "--connect".into(),
            format!("{}:{port}", ctx.addr_b),
            "--secs".into(),
            format!("{}", ctx.time.as_secs_f64()),
            "--timeout".into(),
            timeout,
        ],
        ..Commands::default()
    })
}

/// `key=value` of the first line starting with `prefix`.
fn field(text: &str, prefix: &str, key: &str) -> Option<String> {
    let line = text.lines().find(|l| l.starts_with(prefix))?;
    line.split_whitespace().find_map(|kv| kv.strip_prefix(key)?.strip_prefix('=').map(str::to_string))
}

/// The flow's figures from the two outputs.
pub fn parse(client: &Finished, server: &Finished) -> Result<Raw> {
    let missing =
        |what: &str| anyhow!("udt4_perf receiver printed no DONE line ({what}): {}", server.stdout.trim());
    let bytes: u64 = field(&server.stdout, "DONE", "bytes").ok_or_else(|| missing("bytes"))?.parse()?;
    let seconds: f64 = field(&server.stdout, "DONE", "secs").ok_or_else(|| missing("secs"))?.parse()?;
    let retrans: Option<u64> = field(&client.stderr, "INFO perfmon", "retrans").and_then(|s| s.parse().ok());
    Ok(Raw {
        bytes,
        seconds,
        retx_bytes: retrans.map(|r| r * PAYLOAD),
        intervals: Vec::new(),
        note: None,
        payload_per_packet: Some(PAYLOAD),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_done_and_perfmon() {
        let f = |out: &str, err: &str| Finished {
            name: "x".into(),
            stdout: out.into(),
            stderr: err.into(),
            cpu_s: None,
            wall_s: None,
        };
        let server = f("READY 9301\nDONE bytes=1000 secs=2.5 mbps=0.0 cpu_user=0 cpu_sys=0\n", "");
        let client =
            f("READY 4000\nDONE bytes=1000 secs=3\n", "INFO perfmon pkt_sent=9 retrans=3 rtt_ms=1\n");
        let raw = parse(&client, &server).unwrap();
        assert_eq!((raw.bytes, raw.seconds, raw.retx_bytes), (1000, 2.5, Some(3 * PAYLOAD)));
    }
}
