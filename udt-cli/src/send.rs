//! `udt send FILE... HOST:PORT`: send files to a `udt recv`, each verified end to end with
//! BLAKE3 (protocol in `protocol.rs` and `PROTOCOL.md`).
//!
//! Every file is checked and opened before connecting, so a typo fails fast. Only the file
//! name travels (`a/b/c.txt` arrives as `c.txt`). A file the receiver refuses (it exists, say)
//! is skipped and reported; the others still go. Exit status 1 if any file failed.

use std::collections::HashSet;
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use udt::UdtStream;

use crate::net;
use crate::progress::{self, FileProgress};
use crate::protocol::{self, FileHeader, Header, Status, CHUNK};

/// Arguments of `udt send`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Files to send: regular files; only their names are kept, not their directories.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Where `udt recv` listens.
    #[arg(value_name = "HOST:PORT", value_parser = net::parse_target)]
    pub target: String,
    /// Maximum segment size in bytes, IP and UDP headers included (UDT4 default 1500).
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u32).range(76..=65535))]
    pub mss: Option<u32>,
    /// Congestion control, NAME[:key=value,...] (`udt cc list`; default udt). TCP-like ones
    /// (newreno, cubic, ...) should run at both ends: the receiver's sets the ACK interval.
    #[arg(long, value_name = "NAME[:K=V,...]", value_parser = net::parse_cc)]
    pub cc: Option<net::CcArg>,
}

/// One file ready to go.
struct Source {
    /// The name sent (the last path component).
    name: String,
    /// The name as printed.
    shown: String,
    file: File,
    size: u64,
    mode: u32,
}

/// Run `udt send`.
pub fn run(args: &Args, quiet: bool) -> Result<()> {
    let sources = prepare(&args.files)?;
    let mode = progress::Mode::detect(quiet);
    let count = u32::try_from(sources.len()).context("too many files")?;

    let mut stream = net::connect(&args.target, net::options(args.mss, args.cc.as_ref()))?;
    tracing::info!(peer = %args.target, files = count, "connected");
    stream.write_all(&Header::new(count).encode()).context("sending the transfer header")?;
    // The first file's header goes with the transfer's: the receiver reads them in order, and
    // the round trip of waiting for the transfer's answer first is saved (PROTOCOL.md).
    if let Some(first) = sources.first() {
        write_file_header(&mut stream, first)?;
    }
    match Status::read(&mut stream).context("waiting for the receiver to accept the transfer")? {
        Status::Ok => {}
        Status::Error(msg) => bail!("the receiver refused the transfer: {msg}"),
    }

    let mut failed = Vec::new();
    for (i, src) in sources.iter().enumerate() {
        let result = send_one(&mut stream, src, sources.get(i + 1), mode)
            .with_context(|| format!("sending {} ({} of {count})", src.shown, i + 1))?;
        if let Err(msg) = result {
            eprintln!("udt send: {}: {msg}", src.shown);
            failed.push(src.shown.clone());
        }
    }
    if let Err(e) = net::close(stream) {
        // Every file's outcome is known by now; a failed goodbye changes none of them.
        tracing::warn!("closing the connection: {e}");
    }
    if !failed.is_empty() {
        bail!("{} of {count} files failed: {}", failed.len(), failed.join(", "));
    }
    Ok(())
}

/// Check and open every file.
fn prepare(paths: &[PathBuf]) -> Result<Vec<Source>> {
    let mut names = HashSet::new();
    let mut sources = Vec::with_capacity(paths.len());
    for path in paths {
        let shown_path = path.display();
        let meta = std::fs::metadata(path).with_context(|| format!("cannot read {shown_path}"))?;
        if meta.is_dir() {
            bail!(
                "{shown_path} is a directory; udt send sends regular files \
                 (for a tree: tar c DIR | udt cat HOST:PORT)"
            );
        }
        if !meta.is_file() {
            bail!("{shown_path} is not a regular file");
        }
        let name = path
            .file_name()
            .with_context(|| format!("{shown_path} has no file name"))?
            .to_str()
            .with_context(|| format!("the name of {shown_path} is not valid UTF-8"))?
            .to_string();
        protocol::check_name(name.as_bytes())
            .map_err(|e| anyhow::anyhow!("cannot send {shown_path}: {e}"))?;
        if !names.insert(name.clone()) {
            bail!("two files are named {name}; the receiver keeps only names, so they would collide");
        }
        let file = File::open(path).with_context(|| format!("cannot open {shown_path}"))?;
        let shown = protocol::display_name(&name);
        sources.push(Source {
            name,
            shown,
            file,
            size: meta.len(),
            mode: meta.permissions().mode() & 0o7777,
        });
    }
    Ok(sources)
}

/// Announce `src` to the receiver.
fn write_file_header(stream: &mut UdtStream, src: &Source) -> Result<()> {
    FileHeader { name: src.name.as_bytes().to_vec(), size: src.size, mode: src.mode }
        .write(stream)
        .with_context(|| format!("announcing {}", src.shown))
}

/// Send one file, whose header is already on its way, and announce `next` as soon as this
/// file's bytes are out (before its verdict comes back: one round trip saved per file). The
/// outer error is fatal to the connection; the inner one is this file's failure, reported by
/// the receiver.
fn send_one(
    stream: &mut UdtStream,
    src: &Source,
    next: Option<&Source>,
    mode: progress::Mode,
) -> Result<Result<(), String>> {
    if let Status::Error(msg) = Status::read(stream).context("waiting for the receiver's answer")? {
        if let Some(next) = next {
            write_file_header(stream, next)?;
        }
        return Ok(Err(format!("refused by the receiver: {msg}")));
    }

    let mut progress = FileProgress::new(mode, &src.shown, src.size);
    let mut hasher = blake3::Hasher::new();
    let mut buf = vec![0u8; CHUNK.min(usize::try_from(src.size).unwrap_or(CHUNK)).max(1)];
    let mut done = 0u64;
    while done < src.size {
        let want = usize::try_from(src.size - done).unwrap_or(usize::MAX).min(buf.len());
        let n = (&src.file).read(&mut buf[..want]).context("reading the file")?;
        if n == 0 {
            bail!("the file shrank while being sent ({done} of {} bytes)", src.size);
        }
        hasher.update(&buf[..n]);
        stream.write_all(&buf[..n])?;
        done += n as u64;
        progress.add(n as u64);
    }
    stream.write_all(hasher.finalize().as_bytes())?;
    if let Some(next) = next {
        write_file_header(stream, next)?;
    }
    let status = Status::read(stream).context("waiting for the receiver's verdict")?;
    let took = progress.finish();
    match status {
        Status::Ok => {
            FileProgress::summary(mode, &src.shown, src.size, took);
            Ok(Ok(()))
        }
        Status::Error(msg) => Ok(Err(format!("failed on the receiver: {msg}"))),
    }
}
