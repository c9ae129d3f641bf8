//! `udt fetch --protocol tsunami|rbudp|fobs HOST[:PORT] NAME...`: the receiving end of the seed
//! papers' protocols: connects to a server (`udt serve`, or the reference `tsunamid` or RBUDP
//! `sendfile`) and asks for each NAME in turn.
//!
//! Each file lands in `--out` under its NAME, directories kept (`tree/sub/c.txt` lands as
//! `OUT/tree/sub/c.txt`; every component checked like every path `udt recv` accepts), or, for
//! an absolute NAME or one with `..`, under its last component; it is written first to `.NAME.udt-partial` next
//! to it and renamed only once complete,
//! so nothing half-written ever carries the final name; an existing file is kept unless
//! `--force`. When the server is `udt serve`, it sends the BLAKE3 of the file after the
//! transfer (`udt_bulk::digest`) and the file is kept only if the bytes written hash the same
//! ("blake3 ok"); the original programs send none, and the hash printed is then that of the
//! bytes received, to compare with `b3sum` at the source.

use std::fs::{self, OpenOptions};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Parser;

use crate::bulk::{self, Protocol, Tuning};
use crate::interrupt;
use crate::progress::Mode;
use crate::protocol::{check_name, check_path, display_name};
use crate::report::Report;

/// `udt fetch` arguments.
#[derive(Parser, Debug)]
pub struct Args {
    /// The protocol spoken: tsunami (Tsunami UDP 1.1), rbudp (QUANTA RBUDP 1.0) or fobs.
    #[arg(long, value_enum)]
    pub protocol: Protocol,
    /// The server: HOST or HOST:PORT [default port: tsunami 46224, rbudp 38000, fobs 38100].
    #[arg(value_name = "HOST[:PORT]")]
    pub server: String,
    /// Names of the files to fetch, relative to what the server serves.
    #[arg(required = true, value_name = "NAME")]
    pub names: Vec<String>,
    /// Directory to write into.
    #[arg(short, long, value_name = "DIR", default_value = ".")]
    pub out: PathBuf,
    /// Overwrite files that already exist in --out.
    #[arg(short, long)]
    pub force: bool,
    /// One JSON object per line on standard output: one per file, then a total.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub tuning: Tuning,
}

/// Run `udt fetch`.
pub fn run(args: &Args, quiet: bool) -> Result<()> {
    let params = bulk::params(args.protocol, &args.tuning, bulk::Side::Fetches)?;
    fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create the directory {}", args.out.display()))?;
    let meta = fs::metadata(&args.out)
        .with_context(|| format!("output directory {} is not usable", args.out.display()))?;
    if !meta.is_dir() {
        bail!("{} is not a directory", args.out.display());
    }
    let server = bulk::resolve_server(&args.server, args.protocol.default_port())?;
    let mode = Mode::detect(quiet);
    let mut report = Report::new("fetch", args.json);
    let stop = interrupt::register()?;
    let started = std::time::Instant::now();
    let mut fetched_any = false;
    for name in &args.names {
        let shown = display_name(name);
        let local = match local_name(name) {
            Ok(local) => local,
            Err(why) => {
                report.failed(name, &shown, &why);
                continue;
            }
        };
        let dest = args.out.join(&local);
        if dest.exists() && !args.force {
            report.failed(name, &shown, &format!("{} exists (--force to overwrite)", dest.display()));
            continue;
        }
        let (Some(dir), Some(file_name)) = (dest.parent(), dest.file_name()) else { continue };
        if let Err(e) = fs::create_dir_all(dir) {
            report.failed(name, &shown, &format!("cannot create {}: {e}", dir.display()));
            continue;
        }
        let partial = dir.join(format!(".{}.udt-partial", file_name.to_string_lossy()));
        let how = How { params: &params, stop: &stop, idle: args.tuning.idle_timeout, mode };
        match fetch_one(args.protocol, server, name, &partial, &how, &shown) {
            Ok(fetched) => {
                let hash = hash_file(&partial)?;
                if fetched.server_digest.is_some_and(|d| d != *hash.as_bytes()) {
                    let _ = fs::remove_file(&partial);
                    report.failed(
                        name,
                        &shown,
                        "the bytes received differ from the server's file (BLAKE3 mismatch): not kept",
                    );
                    continue;
                }
                fs::rename(&partial, &dest)
                    .with_context(|| format!("cannot rename {} to {}", partial.display(), dest.display()))?;
                fetched_any = true;
                if fetched.server_digest.is_some() {
                    report.ok(name, &shown, fetched.bytes, fetched.took, &hash);
                } else {
                    report.unverified(name, &shown, fetched.bytes, fetched.took, Some(&hash));
                }
            }
            Err(e) => {
                let _ = fs::remove_file(&partial);
                if interrupt::requested() {
                    return Err(e);
                }
                let mut why = format!("{e:#}");
                // The server answered before and refuses (or drops) the connection now: it served
                // one fetch and exited (or is exiting).
                let is_refused = |io: &std::io::Error| {
                    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
                    matches!(io.kind(), ConnectionRefused | ConnectionReset | ConnectionAborted)
                };
                let refused = e.chain().any(|c| {
                    c.downcast_ref::<std::io::Error>().is_some_and(is_refused)
                        || matches!(c.downcast_ref::<udt_bulk::BulkError>(), Some(udt_bulk::BulkError::Io(io)) if is_refused(io))
                });
                if refused && fetched_any {
                    why.push_str(
                        " (a `udt serve` serves one fetch and exits unless started with --keep-listening: \
                         start it with -k to fetch several names)",
                    );
                }
                report.failed(name, &shown, &why);
            }
        }
    }
    report.total(args.names.len(), started.elapsed());
    if !report.failures().is_empty() {
        bail!("{} of {} failed", report.failures().len(), args.names.len());
    }
    Ok(())
}

/// The path a fetched file gets below --out: what was asked for, directories kept, when it is
/// a relative path of plain names; else (an absolute path, one with `..`: the server decides
/// whether it serves it) its last component.
fn local_name(requested: &str) -> Result<PathBuf, String> {
    if let Ok(parts) = check_path(requested.as_bytes()) {
        return Ok(parts.iter().collect());
    }
    let last = Path::new(requested)
        .file_name()
        .ok_or_else(|| format!("\"{}\" does not end in a file name", display_name(requested)))?;
    let last = last.to_str().ok_or("not valid UTF-8")?;
    check_name(last.as_bytes()).map(PathBuf::from)
}

/// How every file of one `udt fetch` is fetched.
struct How<'a> {
    params: &'a bulk::Params,
    stop: &'a std::sync::atomic::AtomicBool,
    idle: Duration,
    mode: Mode,
}

/// Fetch `name` into `partial` (created fresh, private until renamed).
fn fetch_one(
    protocol: Protocol,
    server: std::net::SocketAddr,
    name: &str,
    partial: &Path,
    how: &How<'_>,
    shown: &str,
) -> Result<bulk::Fetched> {
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(partial)
        .with_context(|| format!("cannot create {}", partial.display()))?;
    bulk::fetch(protocol, server, name, file, how.params, how.stop, how.idle, how.mode, shown)
}

/// BLAKE3 of a file.
fn hash_file(path: &Path) -> Result<blake3::Hash> {
    let mut hasher = blake3::Hasher::new();
    let mut file = fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relative_name_keeps_its_directories_and_nothing_escapes() {
        assert_eq!(local_name("tree/sub/c.txt"), Ok(PathBuf::from("tree/sub/c.txt")));
        assert_eq!(local_name("/srv/data/c.txt"), Ok(PathBuf::from("c.txt")));
        assert_eq!(local_name("../c.txt"), Ok(PathBuf::from("c.txt")));
        assert_eq!(local_name("tree/../../c"), Ok(PathBuf::from("c")));
        for bad in ["..", "/srv/..", "tree/..", "."] {
            assert!(local_name(bad).is_err(), "{bad}");
        }
    }
}
