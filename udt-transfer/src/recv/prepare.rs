//! Accepting a file entry: the checks that decide whether this receiver takes it, and the
//! temporary file its bytes will go to.
//!
//! Invariants: the path is checked (plain names, the dotfile rule) and claimed before anything
//! is created; the directories along it are made through [`walk`] (never following a link)
//! and remembered by identity ([`Spot`]); the destination is looked at without following a
//! link; the temporary file is this receiver's own: created exclusively (0600), or a part of
//! an interrupted transfer that passes [`crate::landing::inspect`]; anything else under its
//! name is set aside and the file received whole under a fresh name. No descriptor is held
//! once this returns (up to a thousand files may wait for their data). Refusals name paths
//! relative to the output directory.

use super::claims::Claim;
use super::consent;
use super::session::Ctx;
use crate::landing::{create_temp, entry_meta, inspect, temp_name, walk, Left, SessionDirs, Spot, Temp};
use crate::link::Link;
use crate::protocol::{self, FileHeader};
use crate::Event;

/// What an interrupted transfer left that this file resumes from.
pub struct Part {
    /// Bytes held.
    pub len: u64,
    /// BLAKE3 over them, to compare with the sender's proof and to go on with.
    pub hasher: Box<blake3::Hasher>,
}

/// What becomes of an announced file.
pub enum Accepted<'c> {
    /// Its data is received.
    Receive(Target<'c>),
    /// The receiver holds a file of its path and size: the sender proves whether it is the
    /// same.
    Compare(Held<'c>),
    /// Kept as it is, with the reason (no failure).
    Skip(String),
}

/// An existing file the sender may hold the same of.
pub struct Held<'c> {
    /// The path, held against concurrent transfers until this file is done.
    pub _claim: Claim<'c>,
    /// Its directory.
    pub spot: Spot<'c>,
    /// Its name there.
    pub dest: String,
}

/// Where an accepted file goes.
pub struct Target<'c> {
    /// An existing file is replaced (`--force`, or `--update` and it is older).
    pub replace: bool,
    /// What an interrupted transfer left in the temporary file.
    pub held: Option<Part>,
    /// The path, held against concurrent transfers until this file is done.
    pub _claim: Claim<'c>,
    /// The destination's name in its directory.
    pub dest: String,
    /// The temporary file (created, closed: opened again when its data comes).
    pub temp: Temp<'c>,
}

/// Decide whether to accept a file (`path`: its path as sent, for the observer), and make its
/// temporary file. `Err` is the refusal sent to the sender.
pub fn prepare<'c>(
    fh: &FileHeader,
    ctx: &Ctx<'c>,
    dirs: &mut SessionDirs,
    path: &str,
    link: &mut Link<'_>,
) -> Result<Accepted<'c>, String> {
    let root = ctx.root;
    let parts = protocol::check_path(&fh.name)?;
    consent::check(&parts, ctx.allow_dotfiles)?;
    let Some((name, parents)) = parts.split_last() else { return Err("empty path".into()) };
    let claim = ctx.claims.claim(&parts.join("/")).ok_or_else(|| {
        "another transfer is receiving a file of this name right now (an interrupted one is given \
         up after the receiver's --peer-timeout, 10 s by default; then it resumes)"
            .to_string()
    })?;
    if let Some(max) = ctx.max_size.filter(|&max| fh.size > max) {
        return Err(format!(
            "too large: {} ({} bytes), this receiver takes at most {} (--max-size)",
            udt_units::format_bytes(fh.size),
            fh.size,
            udt_units::format_bytes(max)
        ));
    }
    let dir = walk(root.dir(), parents, Some(dirs.created_mut()))?;
    let spot = Spot::new(root, parents, &dir)?;
    let replace = match entry_meta(&dir, *name) {
        Ok(meta) if meta.is_dir() => return Err("exists as a directory on the receiver".into()),
        Ok(meta) => match existing(fh, &meta, ctx) {
            Existing::Replace => true,
            Existing::Keep(reason) if ctx.skips => return Ok(Accepted::Skip(reason.into())),
            Existing::Keep(reason) => return Err(format!("exists: {reason}")),
            Existing::Compare if ctx.skips => {
                return Ok(Accepted::Compare(Held { _claim: claim, spot, dest: (*name).to_string() }))
            }
            Existing::Compare | Existing::Refuse => return Err(EXISTS.into()),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => return Err(format!("cannot check the destination: {e}")),
    };
    let preferred = temp_name(name);
    let left = inspect(&dir, &preferred, fh.size, root.ttl, root.euid)
        .map_err(|e| format!("cannot check what an earlier transfer left: {e}"))?;
    let held = match left {
        Left::Resume { len, hasher, id } => Some((Part { len, hasher }, id)),
        Left::SetAside(reason) => {
            link.event(Event::SetAside { path, temp: &preferred, reason });
            None
        }
        Left::Nothing => None,
    };
    let needed = fh.size - held.as_ref().map_or(0, |(h, _)| h.len);
    if let Some(free) = rustix::fs::fstatvfs(&dir).ok().map(|st| st.f_bavail.saturating_mul(st.f_frsize)) {
        if needed > free {
            return Err(format!(
                "too large for the receiver's disk: {} needed, {} free",
                udt_units::format_bytes(needed),
                udt_units::format_bytes(free)
            ));
        }
    }
    let (held, temp) = match held {
        // A part held from before stays if this session ends before its data starts.
        Some((held, id)) => (Some(held), Temp { spot, name: preferred, id, resumable: true, armed: false }),
        None => {
            // Under the file's own temporary name when it is free (something set aside keeps
            // it), else a fresh one.
            let (temp_name, id, resumable) = create_temp(&dir, Some(&preferred))
                .map_err(|e| format!("cannot create the temporary file: {e}"))?;
            (None, Temp { spot, name: temp_name, id, resumable, armed: true })
        }
    };
    Ok(Accepted::Receive(Target { replace, held, _claim: claim, dest: (*name).to_string(), temp }))
}

/// The refusal of an existing file.
pub const EXISTS: &str =
    "exists; use --force to overwrite (udt recv --force; udt send --force to a host:path)";

/// What to do about an existing file.
enum Existing {
    /// Replace it.
    Replace,
    /// Keep it, for this reason.
    Keep(&'static str),
    /// Keep it if the sender holds the same (same size: the hashes decide), else refuse.
    Compare,
    /// Refuse the sender's.
    Refuse,
}

/// The rules for an existing regular file `meta` (or link, never followed) in the order
/// `--ignore-existing`, `--update`, `--force`, then the same size for the hashes to compare.
fn existing(fh: &FileHeader, meta: &std::fs::Metadata, ctx: &Ctx<'_>) -> Existing {
    if ctx.ignore_existing {
        return Existing::Keep("kept (--ignore-existing)");
    }
    if ctx.update {
        let ours = meta.modified().ok();
        let theirs = crate::landing::mode::mtime(fh.mtime);
        return match (ours, theirs) {
            (Some(ours), Some(theirs)) if ours >= theirs => {
                Existing::Keep("the receiver's is as new or newer (--update)")
            }
            _ => Existing::Replace,
        };
    }
    if ctx.force {
        return Existing::Replace;
    }
    if meta.is_file() && meta.len() == fh.size {
        if fh.size == 0 {
            return Existing::Keep("identical (both empty)");
        }
        return Existing::Compare;
    }
    Existing::Refuse
}
