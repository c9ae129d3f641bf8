//! `udt recv [--listen ADDR:PORT] [--out DIR]`: receive files from `udt send`.
//!
//! Every connection is greeted at once (so a sender knows it reached a `udt recv`); transfers
//! are served one at a time, and a sender that must wait is told so.
//!
//! Safety rules, in order: a name must be one plain file name (see
//! [`protocol::check_name`]), so nothing is ever written outside `--out`; an existing file is
//! refused unless `--force`; the bytes go to a temporary `.NAME.udt-partial` in `--out`, hashed
//! as they arrive, and only a file whose BLAKE3 hash matches the sender's is moved into place
//! (without `--force`, by a hard link that fails if the name appeared meanwhile). A failed,
//! aborted or interrupted file leaves nothing behind.
//!
//! Mode bits: a received file gets the receiver's default permissions (umask), plus execute
//! permission where it has read permission if the source was executable (like rsync's
//! `--executability`).

use std::collections::{HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Read, Seek, Write};
use std::net::SocketAddr;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use udt::{UdtListener, UdtStream};

use crate::link::{self, Link};
use crate::progress::{self, FileProgress};
use crate::protocol::{
    self, AbortScope, FileHeader, Header, Kind, Record, Status, Tag, CHUNK, HASH_LEN, VERSION,
};
use crate::report::Report;
use crate::security::{self, SecurityArgs, Side};
use crate::units;
use crate::{interrupt, net};

/// Arguments of `udt recv`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Address to listen on: ADDR:PORT, :PORT or PORT.
    #[arg(short, long, value_name = "ADDR:PORT", default_value = "9000", value_parser = net::parse_listen)]
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
    /// Declare the peer gone after this many seconds without hearing from it (default 10).
    #[arg(long, value_name = "SECS", value_parser = crate::link::parse_peer_timeout)]
    pub peer_timeout: Option<std::time::Duration>,
    /// One JSON object per line on standard output: one per file, then a total per transfer.
    #[arg(long)]
    pub json: bool,
    /// Refuse any file larger than this (bytes, or 500M, 2G, 10GB), before any of it is
    /// written. Files that would not fit the free space of --out are refused anyway.
    #[arg(long, value_name = "SIZE", value_parser = units::parse_size)]
    pub max_size: Option<u64>,
    /// With --keep-listening: transfers served at once; later senders wait their turn.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub max_transfers: u32,
    /// Drop a sender that sends nothing for this many seconds while the connection stays up
    /// (default 30).
    #[arg(long, value_name = "SECS", default_value = "30", value_parser = link::parse_peer_timeout)]
    pub idle_timeout: Duration,
    #[command(flatten)]
    pub security: SecurityArgs,
}

/// How long a connected peer has to send its header (a `udt send` sends it at once).
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a normal close may wait for the sender's last acknowledgements.
const CLOSE_LIMIT: Duration = Duration::from_secs(10);
/// How long an error path waits to tell the sender why.
const ERROR_LIMIT: Duration = Duration::from_secs(1);

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

    let security = security::resolve(&args.security, Side::Listens, "recv")?;
    if args.keep_listening && security.is_code() {
        bail!(
            "a code phrase serves one transfer; --keep-listening takes many: give both ends a shared \
             --key-file FILE (or --insecure on a trusted network)"
        );
    }
    let mut options = link::with_peer_timeout(net::options(args.mss, args.cc.as_ref()), args.peer_timeout);
    security.apply(&mut options);
    let listener = net::listen(args.listen, options)?;
    let local = listener.local_addr().context("reading the bound address")?;
    if !quiet {
        eprintln!("udt recv: listening on {local}, writing into {}", out.display());
    }
    security::show_code(&security, "recv", &format!("udt send FILE... HOST:{}", local.port()));
    let max = if args.keep_listening { args.max_transfers as usize } else { 1 };
    // Several files' bars at once would overwrite each other: lines instead.
    let mode = if max > 1 && mode == progress::Mode::Bar { progress::Mode::Lines } else { mode };
    let queue = accept_in_background(listener, args.keep_listening, max, security.is_code())?;
    let claims = Claims::default();
    if !args.keep_listening {
        let (stream, peer) = next_connection(&queue, None)?;
        tracing::info!(%peer, "serving a connection");
        return serve(stream, &out, args, mode, &claims).with_context(|| format!("transfer from {peer}"));
    }
    // Up to `max` transfers at once, each on a thread of its own; a Ctrl-C ends them all.
    std::thread::scope(|scope| -> Result<()> {
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let mut running = 0usize;
        loop {
            while running >= max {
                match done_rx.recv_timeout(link::POLL) {
                    Ok(()) => running -= 1,
                    Err(_) if interrupt::requested() => return Err(interrupt::error().into()),
                    Err(_) => {}
                }
            }
            let (stream, peer) = next_connection(&queue, Some((&done_rx, &mut running)))?;
            tracing::info!(%peer, "serving a connection");
            running += 1;
            let (done_tx, pending, out, claims) =
                (done_tx.clone(), Arc::clone(&queue.pending), &out, &claims);
            std::thread::Builder::new().name(format!("recv {peer}")).spawn_scoped(scope, move || {
                if let Err(e) = serve(stream, out, args, mode, claims) {
                    if !interrupt::requested() {
                        eprintln!("udt recv: transfer from {peer} failed: {e:#}");
                    }
                }
                pending.fetch_sub(1, Ordering::SeqCst);
                let _ = done_tx.send(());
            })?;
        }
    })
}

/// The next accepted connection (counting the transfers that ended meanwhile off `running`),
/// or why there will be none.
fn next_connection(
    queue: &Queue,
    mut finished: Option<(&mpsc::Receiver<()>, &mut usize)>,
) -> Result<(UdtStream, SocketAddr)> {
    loop {
        if let Some((done, running)) = finished.as_mut() {
            while done.try_recv().is_ok() {
                **running -= 1;
            }
        }
        match queue.rx.recv_timeout(link::POLL) {
            Ok(Ok(conn)) => return Ok(conn),
            Ok(Err(e)) => return Err(e),
            Err(mpsc::RecvTimeoutError::Timeout) if interrupt::requested() => {
                return Err(interrupt::error().into())
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => bail!("the listener stopped accepting"),
        }
    }
}

/// The names of the files being received right now, across concurrent transfers: a second
/// transfer of the same name is refused while the first runs (it would take its temporary file).
#[derive(Default)]
struct Claims(Mutex<HashSet<String>>);

/// A name claimed for one file's reception, released when dropped.
struct Claim<'a> {
    claims: &'a Claims,
    name: String,
}

impl Claims {
    fn claim(&self, name: &str) -> Option<Claim<'_>> {
        let mut set = self.0.lock().unwrap_or_else(|e| e.into_inner());
        set.insert(name.to_string()).then(|| Claim { claims: self, name: name.to_string() })
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        self.claims.0.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.name);
    }
}

/// Accept connections on a thread of their own: each is greeted at once (so a sender knows it
/// reached a `udt recv`) and queued for the main thread, which serves one at a time. A
/// connection that has to wait is told so; with `keep_listening` off, only the first is served
/// and later ones are refused.
///
/// A peer that fails the key agreement is skipped with a warning, except a wrong code phrase
/// (`one_time_code`): that spends the code, and ends `udt recv` with an error, so an attacker
/// gets one guess.
fn accept_in_background(
    listener: UdtListener,
    keep_listening: bool,
    max: usize,
    one_time_code: bool,
) -> Result<Queue> {
    let (tx, rx) = mpsc::channel();
    let pending = Arc::new(AtomicUsize::new(0));
    let queue = Queue { rx, pending: Arc::clone(&pending) };
    std::thread::Builder::new().name("accept".into()).spawn(move || {
        let mut accepted = 0u64;
        loop {
            let (stream, peer) = match listener.accept() {
                Ok(conn) => conn,
                Err(e) if e.kind() == io::ErrorKind::PermissionDenied && one_time_code => {
                    let _ = tx.send(Err(anyhow::anyhow!(
                        "a sender failed the key agreement ({e}); the code phrase is spent: \
                         start `udt recv` again for a new one"
                    )));
                    return;
                }
                Err(e) if security::is_peer_failure(&e) => {
                    eprintln!("udt recv: refused a connection: {e}");
                    continue;
                }
                Err(e) => {
                    tracing::warn!("accepting a connection: {e}");
                    return;
                }
            };
            tracing::info!(%peer, "connection");
            let mut first = protocol::hello(protocol::RECEIVER_MAGIC, VERSION).to_vec();
            // The main thread serves connections in order: a new one waits unless all the
            // earlier ones are done.
            if accepted > 0 && !keep_listening {
                let refusal = Status::Error(
                    "busy with another transfer (this `udt recv` serves one; \
                     start it with --keep-listening to queue transfers)"
                        .into(),
                );
                let _ = refusal.write(&mut first);
                let _ = (&stream).write_all(&first);
                std::thread::spawn(move || link::close_within(stream, ERROR_LIMIT));
                continue;
            }
            if pending.fetch_add(1, Ordering::SeqCst) >= max {
                let _ = Status::Wait("busy with another transfer".into()).write(&mut first);
            }
            let _ = (&stream).write_all(&first);
            accepted += 1;
            if tx.send(Ok((stream, peer))).is_err() {
                return;
            }
        }
    })?;
    Ok(queue)
}

/// Accepted connections, in order, or the error that ended accepting.
struct Queue {
    rx: mpsc::Receiver<Result<(UdtStream, SocketAddr)>>,
    /// Connections queued or being served.
    pending: Arc<AtomicUsize>,
}

/// Serve one connection and close it: normally once all is acknowledged, after a failure with
/// the reason sent first (unless the sender is the one that stopped).
fn serve(stream: UdtStream, out: &Path, args: &Args, mode: progress::Mode, claims: &Claims) -> Result<()> {
    let mut link = Link::new(stream);
    let mut report = Report::new("recv", args.json);
    let mut session = Session { announced: 0, start: None };
    link.set_idle_limit(Some(args.idle_timeout));
    let limits = Limits { force: args.force, max_size: args.max_size };
    let result = receive(&mut link, out, limits, claims, mode, &mut report, &mut session);
    if let Some(start) = session.start {
        report.total(session.announced, start.elapsed());
    }
    match result {
        Ok(()) => {
            link.close(CLOSE_LIMIT);
            if !report.failures().is_empty() {
                let failed = report.failures();
                bail!("{} of {} files failed: {}", failed.len(), session.announced, failed.join(", "));
            }
            Ok(())
        }
        Err(Failure::Peer(e)) => {
            link.close(ERROR_LIMIT);
            Err(e)
        }
        Err(Failure::Here(e)) => {
            let reason = if interrupt::requested() {
                "the receiver was interrupted".to_string()
            } else {
                format!("{e:#}")
            };
            let mut status = Vec::new();
            if Status::Abort(reason).write(&mut status).is_ok() {
                link.write_urgent(&status, ERROR_LIMIT);
            }
            link.close(ERROR_LIMIT);
            Err(e)
        }
    }
}

/// Why a session ended early.
enum Failure {
    /// The sender stopped, vanished or is not a `udt send`: nothing to tell it.
    Peer(anyhow::Error),
    /// Something on this side (a Ctrl-C, a broken rule): the sender is told.
    Here(anyhow::Error),
}

/// What a session announced and when it started.
struct Session {
    announced: usize,
    start: Option<Instant>,
}

/// A read from the sender failed: its end of the connection, unless it was our Ctrl-C.
fn from_peer(e: io::Error, what: impl FnOnce() -> String) -> Failure {
    if interrupt::requested() {
        return Failure::Here(anyhow::Error::new(e));
    }
    let what = what();
    match e.kind() {
        io::ErrorKind::UnexpectedEof => {
            Failure::Peer(anyhow::anyhow!("the sender stopped: the connection closed {what}"))
        }
        io::ErrorKind::InvalidData => {
            Failure::Here(anyhow::Error::new(e).context(format!("protocol error {what}")))
        }
        _ => Failure::Peer(anyhow::Error::new(e).context(format!("the connection failed {what}"))),
    }
}

/// A write to the sender failed.
fn to_peer(e: io::Error) -> Failure {
    if interrupt::requested() {
        return Failure::Here(anyhow::Error::new(e));
    }
    Failure::Peer(anyhow::Error::new(e).context("answering the sender"))
}

/// What a receiver accepts.
#[derive(Clone, Copy)]
struct Limits {
    /// Replace existing files.
    force: bool,
    /// The largest file taken.
    max_size: Option<u64>,
}

/// The exchange of one session.
fn receive(
    link: &mut Link,
    out: &Path,
    limits: Limits,
    claims: &Claims,
    mode: progress::Mode,
    report: &mut Report,
    session: &mut Session,
) -> Result<(), Failure> {
    link.set_deadline(Some(HEADER_TIMEOUT), "`udt send` header");
    let header = match Header::read(link) {
        Ok(h) => h,
        Err(e) if e.kind() == io::ErrorKind::InvalidData => return Err(Failure::Peer(e.into())),
        Err(e) if e.kind() == io::ErrorKind::TimedOut && !interrupt::requested() => {
            return Err(Failure::Peer(anyhow::anyhow!(
                "the peer is not a `udt send` (no header within {} s)",
                HEADER_TIMEOUT.as_secs()
            )))
        }
        Err(e) => return Err(from_peer(e, || "before the header".into())),
    };
    link.set_deadline(None, "");
    if header.version != VERSION {
        let msg = format!("unsupported protocol version {} (this receiver speaks {VERSION})", header.version);
        Status::Error(msg.clone()).write(link).map_err(to_peer)?;
        return Err(Failure::Peer(anyhow::anyhow!(msg)));
    }
    Status::Ok.write(link).map_err(to_peer)?;
    session.start = Some(Instant::now());
    tracing::info!(entries = header.file_count, "transfer accepted");

    // Directories get their permissions and times once everything inside them is written.
    let mut dirs = Vec::new();
    let result =
        session_messages(link, header.file_count, out, limits, claims, mode, report, session, &mut dirs);
    for (dir, mode, mtime) in dirs.iter().rev() {
        apply_metadata_to_path(dir, *mode, *mtime);
    }
    result
}

/// Files announced and accepted but whose data has not come yet, at most: what a sender's
/// window of announcements needs (`send.rs` uses 256), and a bound on the files a hostile one
/// holds open.
const MAX_AHEAD: usize = 1024;

/// An accepted file waiting for its data.
struct Pending<'c> {
    fh: FileHeader,
    target: Target<'c>,
    lossy: String,
    shown: String,
}

/// The session's messages, each answered as it is read: an entry with its go-ahead (or
/// refusal), a file's data with its verdict, until the end.
#[allow(clippy::too_many_arguments)]
fn session_messages<'c>(
    link: &mut Link,
    count: u32,
    out: &Path,
    limits: Limits,
    claims: &'c Claims,
    mode: progress::Mode,
    report: &mut Report,
    session: &mut Session,
    dirs: &mut Vec<(PathBuf, u32, (i64, u32))>,
) -> Result<(), Failure> {
    let mut pending: HashMap<u32, Pending<'c>> = HashMap::new();
    let mut entries = 0u32;
    loop {
        let tag = protocol::read_message_tag(link)
            .map_err(|e| from_peer(e, || format!("after {entries} of {count} entries")))?;
        match tag {
            Tag::End => return Ok(()),
            Tag::Entry => {
                if entries == count {
                    return Err(Failure::Here(anyhow::Error::new(protocol::invalid(format!(
                        "more than the {count} entries announced"
                    )))));
                }
                let index = entries;
                entries += 1;
                let fh = FileHeader::read(link)
                    .map_err(|e| from_peer(e, || format!("before entry {} of {count}", index + 1)))?;
                let lossy = String::from_utf8_lossy(&fh.name).into_owned();
                let shown = protocol::display_name(&lossy);
                if fh.kind == Kind::Dir {
                    match protocol::check_path(&fh.name).and_then(|parts| make_dirs(out, &parts)) {
                        Ok(dir) => {
                            Status::Ok.write(link).map_err(to_peer)?;
                            dirs.push((dir, fh.mode, fh.mtime));
                        }
                        Err(msg) => {
                            Status::Error(msg.clone()).write(link).map_err(to_peer)?;
                            report.failed(&lossy, &shown, &msg);
                        }
                    }
                    continue;
                }
                session.announced += 1;
                let prepared = if pending.len() >= MAX_AHEAD {
                    Err(format!("more than {MAX_AHEAD} files announced ahead of their data"))
                } else {
                    prepare(&fh, out, limits, claims)
                };
                match prepared {
                    Ok(target) => {
                        let answer = match &target.held {
                            Some((offset, hasher)) => {
                                Status::Resume { offset: *offset, hash: *hasher.finalize().as_bytes() }
                            }
                            None => Status::Ok,
                        };
                        answer.write(link).map_err(to_peer)?;
                        pending.insert(index, Pending { fh, target, lossy, shown });
                    }
                    Err(msg) => {
                        Status::Error(msg.clone()).write(link).map_err(to_peer)?;
                        report.failed(&lossy, &shown, &msg);
                    }
                }
            }
            Tag::Data => {
                let mut index = [0u8; 4];
                link.read_exact(&mut index).map_err(|e| from_peer(e, || "before a file's data".into()))?;
                let index = u32::from_le_bytes(index);
                let Some(Pending { fh, target, lossy, shown }) = pending.remove(&index) else {
                    return Err(Failure::Here(anyhow::Error::new(protocol::invalid(format!(
                        "data for entry {index}, which was not accepted or was sent already"
                    )))));
                };
                match receive_file(link, &fh, target, limits.force, &shown, mode)? {
                    Ok((took, hash, moved)) => {
                        Status::Ok.write(link).map_err(to_peer)?;
                        report.ok(&lossy, &shown, moved, took, &hash);
                    }
                    Err(msg) => {
                        Status::Error(msg.clone()).write(link).map_err(to_peer)?;
                        report.failed(&lossy, &shown, &msg);
                    }
                }
            }
        }
    }
}

/// Create `out/parts...` as directories where missing (each one checked not to be a symbolic
/// link or a file, so nothing leads out of `out`); returns the path.
fn make_dirs(out: &Path, parts: &[&str]) -> Result<PathBuf, String> {
    let mut dir = out.to_path_buf();
    for part in parts {
        dir.push(part);
        match fs::symlink_metadata(&dir) {
            Ok(m) if m.is_dir() => {}
            Ok(m) if m.file_type().is_symlink() => {
                return Err(format!("{} is a symbolic link on the receiver; not followed", dir.display()))
            }
            Ok(_) => return Err(format!("{} exists as a file on the receiver", dir.display())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                fs::create_dir(&dir)
                    .map_err(|e| format!("cannot create the directory {}: {e}", dir.display()))?;
            }
            Err(e) => return Err(format!("cannot check {}: {e}", dir.display())),
        }
    }
    Ok(dir)
}

/// The permission bits to give what arrives: the source's, without set-user-ID, set-group-ID
/// and sticky bits (`None`: unknown, the receiver's default stays).
fn kept_mode(mode: u32) -> Option<u32> {
    (mode != 0).then_some(mode & 0o777)
}

/// The modification time sent, if known.
fn kept_mtime((secs, nanos): (i64, u32)) -> Option<std::time::SystemTime> {
    if nanos >= 1_000_000_000 {
        return None;
    }
    let epoch = std::time::UNIX_EPOCH;
    if secs >= 0 {
        epoch.checked_add(Duration::new(secs as u64, nanos))
    } else {
        epoch
            .checked_sub(Duration::from_secs(secs.unsigned_abs()))?
            .checked_add(Duration::from_nanos(u64::from(nanos)))
    }
}

/// Give a directory its source's permissions and modification time (best effort: a failure is
/// logged, the data is in place).
fn apply_metadata_to_path(dir: &Path, mode: u32, mtime: (i64, u32)) {
    if let Some(mode) = kept_mode(mode) {
        if let Err(e) = fs::set_permissions(dir, fs::Permissions::from_mode(mode)) {
            tracing::warn!("cannot set the permissions of {}: {e}", dir.display());
        }
    }
    if let Some(t) = kept_mtime(mtime) {
        if let Err(e) = File::open(dir).and_then(|f| f.set_modified(t)) {
            tracing::warn!("cannot set the modification time of {}: {e}", dir.display());
        }
    }
}

/// Where an accepted file goes.
struct Target<'c> {
    /// What an interrupted transfer left in the temporary file: its length and its hash so far.
    held: Option<(u64, blake3::Hasher)>,
    /// The name, held against concurrent transfers until this file is done.
    _claim: Claim<'c>,
    /// Final path.
    dest: PathBuf,
    /// The temporary file (created, closed: opened again when its data comes, so files
    /// announced ahead hold no descriptor), removed on drop unless committed.
    temp: TempFile,
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
fn prepare<'c>(
    fh: &FileHeader,
    out: &Path,
    limits: Limits,
    claims: &'c Claims,
) -> Result<Target<'c>, String> {
    let force = limits.force;
    let parts = protocol::check_path(&fh.name)?;
    let Some((name, parents)) = parts.split_last() else { return Err("empty path".into()) };
    let path = parts.join("/");
    let claim = claims.claim(&path).ok_or_else(|| {
        "another transfer is receiving a file of this name right now (an interrupted one is given \
             up after the receiver's --peer-timeout, 10 s by default; then it resumes)"
            .to_string()
    })?;
    if let Some(max) = limits.max_size.filter(|&max| fh.size > max) {
        return Err(format!(
            "too large: {} ({} bytes), this receiver takes at most {} (--max-size)",
            units::bytes(fh.size),
            fh.size,
            units::bytes(max)
        ));
    }
    let dir = make_dirs(out, parents)?;
    let dest = dir.join(name);
    match fs::symlink_metadata(&dest) {
        Ok(meta) if meta.is_dir() => return Err("exists as a directory on the receiver".into()),
        Ok(_) if !force => return Err("exists; use --force (udt recv --force) to overwrite".into()),
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("cannot check the destination: {e}")),
    }
    let temp_path = dir.join(temp_name(name));
    // What an interrupted transfer left: resumed if it is no longer than the file (the sender
    // checks that its bytes hash alike), removed otherwise. Never through a symbolic link.
    let mut held = None;
    if let Ok(meta) = fs::symlink_metadata(&temp_path) {
        if meta.is_dir() {
            return Err(format!("{} is in the way (a directory)", temp_path.display()));
        }
        if meta.is_file() && meta.len() > 0 && meta.len() <= fh.size {
            let mut f = OpenOptions::new()
                .read(true)
                .write(true)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&temp_path)
                .map_err(|e| format!("cannot open {}: {e}", temp_path.display()))?;
            let hasher = hash_all(&mut f).map_err(|e| format!("cannot read {}: {e}", temp_path.display()))?;
            held = Some((meta.len(), hasher));
        } else {
            fs::remove_file(&temp_path)
                .map_err(|e| format!("cannot remove stale {}: {e}", temp_path.display()))?;
        }
    }
    let needed = fh.size - held.as_ref().map_or(0, |(len, _)| *len);
    if let Some(free) = free_space(&dir).filter(|&free| needed > free) {
        return Err(format!(
            "too large for the receiver's disk: {} needed, {} free",
            units::bytes(needed),
            units::bytes(free)
        ));
    }
    if held.is_none() {
        // Created now, exclusively: the name is this transfer's.
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp_path)
            .map_err(|e| format!("cannot create {}: {e}", temp_path.display()))?;
    }
    // A part held from before stays if this session ends before its data starts.
    let armed = held.is_none();
    Ok(Target { dest, temp: TempFile { path: temp_path, armed }, held, _claim: claim })
}

/// Hash the whole of `file` (an interrupted transfer's part), leaving its position at the end.
fn hash_all(file: &mut File) -> io::Result<blake3::Hasher> {
    let mut hasher = blake3::Hasher::new();
    let mut buf = vec![0u8; CHUNK];
    loop {
        match file.read(&mut buf) {
            Ok(0) => return Ok(hasher),
            Ok(n) => {
                hasher.update(&buf[..n]);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Bytes an unprivileged writer may still put into the file system of `dir` (`None`: unknown).
fn free_space(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: `path` is a valid NUL-terminated string and `st` a writable statvfs that the call
    // fills; nothing is kept past the call.
    #[allow(unsafe_code)]
    let st = unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        (libc::statvfs(path.as_ptr(), &mut st) == 0).then_some(st)
    }?;
    Some(st.f_bavail.saturating_mul(st.f_frsize))
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

/// Receive the data and hash of an accepted file and store it if the hash matches. The outer
/// error ends the session; the inner one is this file's failure, for the sender; success gives
/// the time taken, the hash and the bytes received this time (less than the size on a resume).
fn receive_file(
    link: &mut Link,
    fh: &FileHeader,
    target: Target,
    force: bool,
    shown: &str,
    mode: progress::Mode,
) -> Result<Result<(Duration, blake3::Hash, u64), String>, Failure> {
    let Target { dest, mut temp, held, _claim } = target;
    // From here on the temporary file follows this transfer's fate.
    temp.armed = true;
    let start = protocol::read_start(link).map_err(|e| from_peer(e, || "before the file's data".into()))?;
    let mut file = match OpenOptions::new().write(true).custom_flags(libc::O_NOFOLLOW).open(&temp.path) {
        Ok(f) => f,
        Err(e) => {
            // Read the data anyway (to stay in step with the sender), writing nothing.
            tracing::warn!("cannot open {}: {e}", temp.path.display());
            let sink =
                OpenOptions::new().write(true).open("/dev/null").map_err(|e| Failure::Here(e.into()))?;
            let _ = receive_data(link, fh, start, blake3::Hasher::new(), &sink)?;
            return Ok(Err(format!("cannot open {}: {e}", temp.path.display())));
        }
    };
    let hasher = match held {
        Some((offset, hasher)) if start == offset => {
            file.seek(io::SeekFrom::Start(offset))
                .map_err(|e| Failure::Here(anyhow::anyhow!("cannot seek {}: {e}", temp.path.display())))?;
            hasher
        }
        _ if start == 0 => {
            // From the beginning (nothing held, or the sender's bytes differ).
            file.set_len(0)
                .and_then(|()| file.seek(io::SeekFrom::Start(0)))
                .map_err(|e| Failure::Here(anyhow::anyhow!("cannot reset {}: {e}", temp.path.display())))?;
            blake3::Hasher::new()
        }
        _ => {
            return Err(Failure::Here(anyhow::Error::new(protocol::invalid(format!(
                "the sender starts at byte {start}, which the receiver did not offer"
            )))))
        }
    };
    if start > 0 {
        tracing::info!(start, "resuming {shown}");
    }
    link.progress = Some(FileProgress::new(mode, shown, fh.size - start));
    let result = receive_data(link, fh, start, hasher, &file);
    let took = link.progress.take().map(FileProgress::finish).unwrap_or_default();
    let (hash, expected, write_error) = match result {
        Ok(Ok(x)) => x,
        Ok(Err(msg)) => return Ok(Err(msg)),
        Err(failure) => {
            // The connection failed or was interrupted: keep what arrived for a resume.
            let _ = file.sync_data();
            temp.keep();
            return Err(failure);
        }
    };
    if let Some(e) = write_error {
        return Ok(Err(format!("writing failed: {e}")));
    }
    if hash != blake3::Hash::from_bytes(expected) {
        return Ok(Err("BLAKE3 mismatch: the data arrived corrupted; not stored".into()));
    }
    if let Some(mode) = kept_mode(fh.mode) {
        if let Err(e) = file.set_permissions(fs::Permissions::from_mode(mode)) {
            tracing::warn!("cannot set the permissions of {shown}: {e}");
        }
    }
    if let Some(t) = kept_mtime(fh.mtime) {
        if let Err(e) = file.set_modified(t) {
            tracing::warn!("cannot set the modification time of {shown}: {e}");
        }
    }
    drop(file);
    if let Err(msg) = commit(&temp.path, &dest, force) {
        return Ok(Err(msg));
    }
    temp.keep();
    Ok(Ok((took, hash, fh.size - start)))
}

/// What [`receive_data`] gives: the hash computed, the hash sent, a write error if any.
type Received = (blake3::Hash, [u8; HASH_LEN], Option<io::Error>);

/// Read a file's chunks into `file`, hashing them, then the sender's hash. A write error (disk
/// full) does not stop the reading, so the stream stays in step. The inner error is the
/// sender's abort of this file.
fn receive_data(
    link: &mut Link,
    fh: &FileHeader,
    start: u64,
    mut hasher: blake3::Hasher,
    file: &File,
) -> Result<Result<Received, String>, Failure> {
    let mut writer = BufWriter::with_capacity(CHUNK, file);
    let mut write_error: Option<io::Error> = None;
    let mut buf = vec![0u8; CHUNK.min(usize::try_from(fh.size).unwrap_or(CHUNK)).max(1)];
    let mut left = fh.size - start;
    let after = |left: u64| format!("after {} of {} bytes of the file", fh.size - left, fh.size);
    while left > 0 {
        let mut chunk = match protocol::read_record(link, left).map_err(|e| from_peer(e, || after(left)))? {
            Record::Chunk(len) => len as usize,
            Record::Abort(AbortScope::File, msg) => {
                return Ok(Err(format!("the sender gave it up: {}", protocol::display_name(&msg))))
            }
            Record::Abort(AbortScope::Session, msg) => {
                return Err(Failure::Peer(anyhow::anyhow!(
                    "the sender stopped: {} ({})",
                    protocol::display_name(&msg),
                    after(left)
                )))
            }
        };
        while chunk > 0 {
            let want = chunk.min(buf.len());
            let n = link.read(&mut buf[..want]).map_err(|e| from_peer(e, || after(left)))?;
            if n == 0 {
                return Err(from_peer(io::ErrorKind::UnexpectedEof.into(), || after(left)));
            }
            hasher.update(&buf[..n]);
            if write_error.is_none() {
                if let Err(e) = writer.write_all(&buf[..n]) {
                    write_error = Some(e);
                }
            }
            chunk -= n;
            left -= n as u64;
            if let Some(p) = &mut link.progress {
                p.add(n as u64);
            }
        }
    }
    let mut expected = [0u8; HASH_LEN];
    link.read_exact(&mut expected).map_err(|e| from_peer(e, || "before the file's hash".into()))?;
    if write_error.is_none() {
        write_error = writer.flush().err();
    }
    Ok(Ok((hasher.finalize(), expected, write_error)))
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
