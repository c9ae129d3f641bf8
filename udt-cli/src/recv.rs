//! `udt recv [--listen ADDR:PORT] [--out DIR]`: receive files from `udt send`.
//!
//! Safety rules, in order: a name must be one plain file name (see
//! [`protocol::check_name`]), so nothing is ever written outside `--out`; an existing file is
//! refused unless `--force`; the bytes go to a temporary `.NAME.udt-partial` in `--out`, hashed
//! as they arrive, and only a file whose BLAKE3 hash matches the sender's is moved into place
//! (without `--force`, by a hard link that fails if the name appeared meanwhile). A failed or
//! interrupted file leaves nothing behind.
//!
//! Mode bits: a received file gets the receiver's default permissions (umask), plus execute
//! permission where it has read permission if the source was executable (like rsync's
//! `--executability`).

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Read, Write};
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use udt::UdtStream;

use crate::net;
use crate::progress::{self, FileProgress};
use crate::protocol::{self, FileHeader, Header, Status, CHUNK, HASH_LEN, VERSION};

/// Arguments of `udt recv`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Address to listen on: ADDR:PORT, :PORT or PORT.
    #[arg(short, long, value_name = "ADDR:PORT", default_value = "0.0.0.0:9000", value_parser = net::parse_listen)]
    pub listen: SocketAddr,
    /// Directory the files are written into (must exist).
    #[arg(short, long, value_name = "DIR", default_value = ".")]
    pub out: PathBuf,
    /// Replace files that already exist in the output directory.
    #[arg(short, long)]
    pub force: bool,
    /// Serve one transfer after another (one at a time) instead of exiting after the first.
    #[arg(short, long)]
    pub keep_listening: bool,
    /// Maximum segment size in bytes, IP and UDP headers included (UDT4 default 1500).
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u32).range(76..=65535))]
    pub mss: Option<u32>,
    /// Congestion control, NAME[:key=value,...] (`udt cc list`; default udt). TCP-like ones
    /// (newreno, cubic, ...) should run at both ends: the receiver's sets the ACK interval.
    #[arg(long, value_name = "NAME[:K=V,...]", value_parser = net::parse_cc)]
    pub cc: Option<net::CcArg>,
}

/// Run `udt recv`.
pub fn run(args: &Args, quiet: bool) -> Result<()> {
    let meta = fs::metadata(&args.out)
        .with_context(|| format!("output directory {} is not usable", args.out.display()))?;
    if !meta.is_dir() {
        bail!("{} is not a directory", args.out.display());
    }
    let out =
        fs::canonicalize(&args.out).with_context(|| format!("cannot resolve {}", args.out.display()))?;
    let mode = progress::Mode::detect(quiet);

    let listener = net::listen(args.listen, net::options(args.mss, args.cc.as_ref()))?;
    let local = listener.local_addr().context("reading the bound address")?;
    if !quiet {
        eprintln!("udt recv: listening on {local}, writing into {}", out.display());
    }
    loop {
        let (stream, peer) = listener.accept().context("waiting for a connection")?;
        tracing::info!(%peer, "connection");
        let result = receive(stream, &out, args.force, mode);
        if !args.keep_listening {
            return result.with_context(|| format!("transfer from {peer}"));
        }
        if let Err(e) = result {
            eprintln!("udt recv: transfer from {peer} failed: {e:#}");
        }
    }
}

/// Serve one connection. Fails if the connection fails or any file was refused or corrupt.
fn receive(mut stream: UdtStream, out: &Path, force: bool, mode: progress::Mode) -> Result<()> {
    let header = Header::read(&mut stream).context("reading the transfer header")?;
    if header.version != VERSION {
        let msg = format!("unsupported protocol version {} (this receiver speaks {VERSION})", header.version);
        Status::Error(msg.clone()).write(&mut stream)?;
        let _ = net::close(stream);
        bail!(msg);
    }
    Status::Ok.write(&mut stream)?;
    tracing::info!(files = header.file_count, "transfer accepted");

    let mut failed = Vec::new();
    for i in 0..header.file_count {
        let fh = FileHeader::read(&mut stream)
            .with_context(|| format!("reading the header of file {} of {}", i + 1, header.file_count))?;
        let shown = protocol::display_name(&String::from_utf8_lossy(&fh.name));
        let outcome = match prepare(&fh, out, force) {
            Err(msg) => {
                Status::Error(msg.clone()).write(&mut stream)?;
                Err(msg)
            }
            Ok(target) => {
                Status::Ok.write(&mut stream)?;
                let outcome = receive_file(&mut stream, &fh, target, force, &shown, mode)
                    .with_context(|| format!("receiving {shown}"))?;
                match &outcome {
                    Ok(()) => Status::Ok.write(&mut stream)?,
                    Err(msg) => Status::Error(msg.clone()).write(&mut stream)?,
                }
                outcome
            }
        };
        if let Err(msg) = outcome {
            eprintln!("udt recv: {shown}: {msg}");
            failed.push(shown);
        }
    }
    if let Err(e) = net::close(stream) {
        tracing::warn!("closing the connection: {e}");
    }
    if !failed.is_empty() {
        bail!("{} of {} files failed: {}", failed.len(), header.file_count, failed.join(", "));
    }
    Ok(())
}

/// Where an accepted file goes.
struct Target {
    /// Final path.
    dest: PathBuf,
    /// The open temporary file, removed on drop unless committed.
    temp: TempFile,
    file: File,
}

/// A temporary file removed when dropped, unless [`TempFile::keep`] was called.
struct TempFile {
    path: PathBuf,
    armed: bool,
}

impl TempFile {
    fn keep(mut self) {
        self.armed = false;
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if self.armed {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// Decide whether to accept a file, and open its temporary file. `Err` is the refusal sent to
/// the sender.
fn prepare(fh: &FileHeader, out: &Path, force: bool) -> Result<Target, String> {
    let name = protocol::check_name(&fh.name)?;
    let dest = out.join(name);
    // `check_name` allows exactly one normal component; make sure of the consequence.
    if dest.parent() != Some(out) {
        return Err(format!(
            "file name \"{}\" would leave the output directory",
            protocol::display_name(name)
        ));
    }
    match fs::symlink_metadata(&dest) {
        Ok(meta) if meta.is_dir() => return Err("exists as a directory on the receiver".into()),
        Ok(_) if !force => return Err("exists; use --force (udt recv --force) to overwrite".into()),
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("cannot check the destination: {e}")),
    }
    let temp_path = out.join(temp_name(name));
    // A stale partial file from an interrupted run: remove it (never follow a symlink there).
    if let Ok(meta) = fs::symlink_metadata(&temp_path) {
        if meta.is_dir() {
            return Err(format!("{} is in the way (a directory)", temp_path.display()));
        }
        fs::remove_file(&temp_path)
            .map_err(|e| format!("cannot remove stale {}: {e}", temp_path.display()))?;
    }
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp_path)
        .map_err(|e| format!("cannot create {}: {e}", temp_path.display()))?;
    Ok(Target { dest, temp: TempFile { path: temp_path, armed: true }, file })
}

/// `.NAME.udt-partial`, or a hashed name if that would exceed 255 bytes.
fn temp_name(name: &str) -> String {
    let temp = format!(".{name}.udt-partial");
    if temp.len() <= protocol::MAX_NAME_LEN {
        temp
    } else {
        let hash = blake3::hash(name.as_bytes()).to_hex();
        format!(".udt-partial-{}", &hash[..32])
    }
}

/// Receive the bytes and hash of an accepted file and store it if the hash matches. The outer
/// error is fatal to the connection; the inner one is this file's failure, for the sender.
fn receive_file(
    stream: &mut UdtStream,
    fh: &FileHeader,
    target: Target,
    force: bool,
    shown: &str,
    mode: progress::Mode,
) -> Result<Result<(), String>> {
    let Target { dest, temp, file } = target;
    let mut progress = FileProgress::new(mode, shown, fh.size);
    let mut hasher = blake3::Hasher::new();
    let mut writer = BufWriter::with_capacity(CHUNK, &file);
    let mut write_error: Option<io::Error> = None;
    let mut buf = vec![0u8; CHUNK.min(usize::try_from(fh.size).unwrap_or(CHUNK)).max(1)];
    let mut left = fh.size;
    while left > 0 {
        let want = usize::try_from(left).unwrap_or(usize::MAX).min(buf.len());
        let n = stream.read(&mut buf[..want])?;
        if n == 0 {
            bail!("the connection closed after {} of {} bytes", fh.size - left, fh.size);
        }
        hasher.update(&buf[..n]);
        // After a write error (disk full, say), keep reading so the stream stays in step.
        if write_error.is_none() {
            if let Err(e) = writer.write_all(&buf[..n]) {
                write_error = Some(e);
            }
        }
        left -= n as u64;
        progress.add(n as u64);
    }
    let mut expected = [0u8; HASH_LEN];
    stream.read_exact(&mut expected).context("reading the BLAKE3 hash")?;
    let took = progress.finish();
    if write_error.is_none() {
        write_error = writer.flush().err();
    }
    drop(writer);
    if let Some(e) = write_error {
        return Ok(Err(format!("writing failed on the receiver: {e}")));
    }
    if hasher.finalize() != blake3::Hash::from_bytes(expected) {
        return Ok(Err("BLAKE3 mismatch: the data arrived corrupted; not stored".into()));
    }
    if fh.mode & 0o111 != 0 {
        if let Err(e) = make_executable(&file) {
            tracing::warn!("cannot set the execute bits of {shown}: {e}");
        }
    }
    drop(file);
    if let Err(msg) = commit(&temp.path, &dest, force) {
        return Ok(Err(msg));
    }
    temp.keep();
    FileProgress::summary(mode, shown, fh.size, took);
    Ok(Ok(()))
}

/// Add execute permission wherever there is read permission.
fn make_executable(file: &File) -> io::Result<()> {
    let mut perms = file.metadata()?.permissions();
    let mode = perms.mode();
    perms.set_mode(mode | ((mode & 0o444) >> 2));
    file.set_permissions(perms)
}

/// Move the verified temporary file into place. Without `--force` the destination did not
/// exist when the file was accepted; a hard link keeps it that way atomically (it fails if the
/// name appeared since). With `--force`, a rename replaces it.
fn commit(temp: &Path, dest: &Path, force: bool) -> Result<(), String> {
    if force {
        return fs::rename(temp, dest).map_err(|e| format!("cannot move the file into place: {e}"));
    }
    let exists =
        || "exists (appeared during the transfer); use --force (udt recv --force) to overwrite".to_string();
    match fs::hard_link(temp, dest) {
        Ok(()) => {
            let _ = fs::remove_file(temp);
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(exists()),
        // File systems without hard links: check, then rename (a small window remains).
        Err(_) => {
            if fs::symlink_metadata(dest).is_ok() {
                return Err(exists());
            }
            fs::rename(temp, dest).map_err(|e| format!("cannot move the file into place: {e}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_names() {
        assert_eq!(temp_name("c.txt"), ".c.txt.udt-partial");
        let long = "x".repeat(250);
        let t = temp_name(&long);
        assert!(t.starts_with(".udt-partial-") && t.len() <= 255);
    }
}
