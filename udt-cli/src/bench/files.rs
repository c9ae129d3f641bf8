//! Our UDT, file to file: `udt send FILE` in A to `udt recv` in B, BLAKE3-verified end to
//! end by the tool itself (a mismatch makes `udt recv` fail, which fails the run).
//!
//! The file holds `rate x time` pseudo-random bytes and is written once per benchmark into the
//! scratch directory. Goodput is the file size over the sender's wall-clock time (process
//! start, connection set-up and the final verification included), so it is a little below
//! the memory-to-memory figure by construction. Retransmissions are not reported by the tool.

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::child::Finished;
use super::flow::{Commands, Ctx, Raw};
use super::path::PACKET_BYTES;

/// First port of the receivers (slot added).
const PORT: u16 = 9401;

/// The test file for this context, written if it is not there yet at the right size.
pub(super) fn test_file(ctx: &Ctx) -> Result<PathBuf> {
    let len = (ctx.path.rate_bps as f64 / 8.0 * ctx.time.as_secs_f64()) as u64;
    let path = ctx.dir.join(format!("payload-{len}.bin"));
    if fs::metadata(&path).map(|m| m.len() == len).unwrap_or(false) {
        return Ok(path);
    }
    write_random(&path, len).with_context(|| format!("cannot write the test file {}", path.display()))?;
    Ok(path)
}

/// `len` xorshift bytes into `path`.
fn write_random(path: &Path, len: u64) -> std::io::Result<()> {
    let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut left = len;
    while left > 0 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let b = x.to_le_bytes();
        let n = left.min(8) as usize;
        out.write_all(&b[..n])?;
        left -= n as u64;
    }
    out.flush()
}

/// The receiving directory of `slot`.
fn out_dir(ctx: &Ctx, slot: u16) -> PathBuf {
    ctx.dir.join(format!("recv-{slot}"))
}

/// The code phrase the benchmark's `udt recv` and `udt send` share: transfers run as a user
/// runs them, encrypted (the paths are the benchmark's own namespaces).
const BENCH_CODE: &str = "1000-bench-path-code";

/// The commands of a flow in `slot` (writes the test file if needed).
pub fn commands(ctx: &Ctx, slot: u16) -> Result<Commands> {
    let file = test_file(ctx)?;
    let out = out_dir(ctx, slot);
    fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    let exe = ctx.udt_exe.display().to_string();
    let addr = format!("{}:{}", ctx.addr_b, PORT + slot);
    Ok(Commands {
        server: vec![
            exe.clone(),
            "-q".into(),
            "recv".into(),
            "-l".into(),
            addr.clone(),
            "--out".into(),
            out.display().to_string(),
            "--force".into(),
            "--code".into(),
            BENCH_CODE.into(),
        ],
        client: vec![
            exe,
            "-q".into(),
            "send".into(),
            file.display().to_string(),
            addr,
            "--code".into(),
            BENCH_CODE.into(),
        ],
        ..Commands::default()
    })
}

/// The flow's figures: both ends succeeded (so BLAKE3 matched) and the file is all there.
pub fn parse(ctx: &Ctx, client: &Finished, _server: &Finished) -> Result<Raw> {
    let file = test_file(ctx)?;
    let len = fs::metadata(&file)?.len();
    let name = file.file_name().context("test file name")?;
    let mut received = None;
    for slot in 0..4 {
        let p = out_dir(ctx, slot).join(name);
        if let Ok(m) = fs::metadata(&p) {
            received = Some(m.len());
            let _ = fs::remove_file(&p);
        }
    }
    if received != Some(len) {
        bail!("udt recv reported success but the received file has {received:?} bytes of {len}");
    }
    let Some(seconds) = client.wall_s else { bail!("no wall-clock time for udt send") };
    Ok(Raw {
        bytes: len,
        seconds,
        retx_bytes: None,
        intervals: Vec::new(),
        note: Some("file to file, BLAKE3 verified; time = sender's wall clock".into()),
        // `udt send`'s default MSS is the link's MTU.
        payload_per_packet: Some(PACKET_BYTES - super::udt_perf::HEADERS),
    })
}
