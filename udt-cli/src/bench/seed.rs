//! The seed papers' protocols, ours and the originals, file to file across the emulator.
//!
//! They pull, so the data holder is the server and runs in A (the data direction of every
//! path), the fetching end in B connects back to A:
//! - ours (`tsunami`, `rbudp`, `fobs`): `udt serve --protocol P FILE` in A, `udt fetch
//!   --protocol P A:PORT NAME --json` in B, both this binary;
//! - the originals (`tsunami-ref`, `rbudp-ref`, built by interop/seed-peers.sh): `tsunamid` in
//!   A and the `tsunami` client fed its commands in B; RBUDP's `sendfile` in A and `recvfile` in
//!   B. They never exit by themselves (the servers) or always exit 1 (the clients), so a flow
//!   succeeds when the received file is whole and equal in length, and the server is stopped
//!   once the client is done.
//!
//! Rates these protocols need by hand come from the path's configured capacity: 95% of it in
//! payload bits per second (the report's note says so). Goodput is the file's size over the
//! fetching process's wall-clock time (connection set-up included).

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::child::Finished;
use super::flow::{Commands, Ctx, Raw};
use super::path::PACKET_BYTES;
use crate::bulk::Protocol;

/// First control port of the servers (slot added).
const PORT: u16 = 9501;
/// The share of the path's capacity a hand-set rate takes.
const RATE_SHARE: f64 = 0.95;
/// The Tsunami secret of the benchmark's own namespaces.
const SECRET: &str = "udt-bench-secret";
/// UDP payload of RBUDP's and Tsunami's data packets in the benchmark (an MTU-sized datagram
/// carries this plus their 4- or 6-byte header).
const PAYLOAD: u64 = 1400;
/// Environment variable naming the directory of the reference programs.
pub const ENV: &str = "UDT_SEED_PEERS_BIN";
/// What a row says when the reference programs are missing.
pub const MISSING: &str = "the Tsunami/RBUDP reference programs are not built (run interop/seed-peers.sh)";

/// Finds the reference programs' directory: `$UDT_SEED_PEERS_BIN`, else `target/seed-peers/bin`
/// of the workspace this was built from or above the executable.
pub fn locate(exe: &Path) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(ENV) {
        return Some(PathBuf::from(p));
    }
    let rel = Path::new("target/seed-peers/bin");
    let crate_root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(|r| r.join(rel));
    let above_exe = exe.ancestors().skip(1).map(|d| d.join(rel));
    crate_root.into_iter().chain(above_exe).find(|p| p.join("tsunamid").is_file())
}

/// The payload rate a hand-set protocol is given on this path, bits per second.
fn rate(ctx: &Ctx, header: u64) -> u64 {
    let payload_share = PAYLOAD as f64 / (PAYLOAD + header + 28) as f64;
    (ctx.path.rate_bps as f64 * RATE_SHARE * payload_share) as u64
}

/// The receiving directory of `slot`.
fn out_dir(ctx: &Ctx, slot: u16, system: &str) -> Result<PathBuf> {
    let dir = ctx.dir.join(format!("fetch-{system}-{slot}"));
    fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    Ok(dir)
}

/// The commands of our `protocol`'s flow in `slot`.
pub fn commands(ctx: &Ctx, protocol: Protocol, slot: u16) -> Result<Commands> {
    let file = super::files::test_file(ctx)?;
    let name = file.file_name().context("test file name")?.to_string_lossy().into_owned();
    let exe = ctx.udt_exe.display().to_string();
    let addr = format!("{}:{}", ctx.addr_a, PORT + slot);
    let out = out_dir(ctx, slot, protocol.name())?;
    let mut common = vec!["--protocol".into(), protocol.name().into(), "--insecure".into()];
    match protocol {
        Protocol::Rbudp => common.extend(["--rate".into(), rate(ctx, 4).to_string()]),
        Protocol::Tsunami => {
            let secret = ctx.dir.join("tsunami-secret");
            fs::write(&secret, SECRET).with_context(|| format!("cannot write {}", secret.display()))?;
            common.extend(["--rate".into(), rate(ctx, 6).to_string(), "--secret-file".into()]);
            common.push(secret.display().to_string());
        }
        Protocol::Fobs => common.extend(["--rate".into(), ctx.path.rate_bps.to_string()]),
    }
    if protocol != Protocol::Fobs {
        common.extend(["--block-size".into(), PAYLOAD.to_string()]);
    }
    let mut server = vec![exe.clone(), "-q".into(), "serve".into(), file.display().to_string(), "-l".into()];
    server.push(addr.clone());
    server.extend(common.iter().cloned());
    let mut client = vec![exe, "-q".into(), "fetch".into(), addr, name, "--out".into()];
    client.push(out.display().to_string());
    client.extend(["--force".into(), "--json".into()]);
    client.extend(common);
    Ok(Commands { server, client, server_holds_data: true, server_lingers: false })
}

/// The commands of an original program's flow in `slot`.
pub fn reference_commands(ctx: &Ctx, protocol: Protocol, slot: u16) -> Result<Commands> {
    let Some(bin) = ctx.seed_peers.as_ref() else { bail!("skipped: {MISSING}") };
    let file = super::files::test_file(ctx)?;
    let out = out_dir(ctx, slot, &format!("{}-ref", protocol.name()))?;
    let port = PORT + 100 + slot;
    let sh = |script: String| vec!["sh".to_string(), "-c".to_string(), script];
    match protocol {
        Protocol::Tsunami => Ok(Commands {
            server: sh(format!(
                "cd '{}' && exec '{}' --port={port} --secret={SECRET}",
                ctx.dir.display(),
                bin.join("tsunamid").display()
            )),
            client: sh(format!(
                "cd '{}' && printf 'set passphrase {SECRET}\\nset rate {}\\nset blocksize {PAYLOAD}\\n\
                 set udpport {}\\nconnect {} {port}\\nget {}\\nquit\\n' | '{}'; exit 0",
                out.display(),
                rate(ctx, 6),
                port + 1,
                ctx.addr_a,
                file.file_name().context("test file name")?.to_string_lossy(),
                bin.join("tsunami").display()
            )),
            server_holds_data: true,
            server_lingers: true,
        }),
        Protocol::Rbudp => Ok(Commands {
            server: vec![
                bin.join("sendfile").display().to_string(),
                ctx.addr_b.to_string(),
                (rate(ctx, 4) / 1000).to_string(),
                PAYLOAD.to_string(),
            ],
            // recvfile sends 256 bytes from its path argument on: an empty environment with
            // one padding variable keeps what follows deterministic. It always exits 1.
            client: sh(format!(
                "env -i PAD={:0256} '{}' {} '{}' '{}' {PAYLOAD}; exit 0",
                0,
                bin.join("recvfile").display(),
                ctx.addr_a,
                file.display(),
                out.join(file.file_name().context("test file name")?).display()
            )),
            server_holds_data: true,
            server_lingers: true,
        }),
        Protocol::Fobs => bail!("FOBS has no original program"),
    }
}

/// The flow's figures: the file arrived whole (ours: `udt fetch` succeeded and said so in
/// JSON; the originals: the received file has the right length and bytes).
pub fn parse(ctx: &Ctx, client: &Finished, reference: bool, dir_name: &str) -> Result<Raw> {
    let file = super::files::test_file(ctx)?;
    let len = fs::metadata(&file)?.len();
    let name = file.file_name().context("test file name")?;
    let mut got = None;
    for slot in 0..4 {
        let p = ctx.dir.join(format!("fetch-{dir_name}-{slot}")).join(name);
        if let Ok(m) = fs::metadata(&p) {
            got = Some((m.len(), p));
        }
    }
    let Some((got_len, got_path)) = got else {
        bail!("no file arrived: {}", super::child::tail(&client.stderr))
    };
    let same = got_len == len && files_equal(&file, &got_path)?;
    let _ = fs::remove_file(&got_path);
    if !same {
        bail!("the received file differs from the one sent ({got_len} of {len} bytes)");
    }
    let Some(seconds) = client.wall_s else { bail!("no wall-clock time for the fetching end") };
    let header = if dir_name.starts_with("rbudp") { 4 } else { 6 };
    Ok(Raw {
        bytes: len,
        seconds,
        retx_bytes: None,
        intervals: Vec::new(),
        note: Some(if reference {
            "original program; file to file; rate set to 95% of the path's capacity".into()
        } else {
            "file to file, compared byte for byte; hand-set rates at 95% of the path's capacity".into()
        }),
        payload_per_packet: Some(PACKET_BYTES.min(PAYLOAD + header + 28) - header - 28),
    })
}

/// Whether two files hold the same bytes.
fn files_equal(a: &Path, b: &Path) -> Result<bool> {
    use std::io::Read;
    let (mut fa, mut fb) = (fs::File::open(a)?, fs::File::open(b)?);
    let (mut ba, mut bb) = (vec![0u8; 1 << 20], vec![0u8; 1 << 20]);
    loop {
        let na = read_full(&mut fa, &mut ba)?;
        let nb = read_full(&mut fb, &mut bb)?;
        if na != nb || ba[..na] != bb[..nb] {
            return Ok(false);
        }
        if na == 0 {
            return Ok(true);
        }
    }
    fn read_full(f: &mut fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut n = 0;
        while n < buf.len() {
            match f.read(&mut buf[n..])? {
                0 => break,
                k => n += k,
            }
        }
        Ok(n)
    }
}
