//! Temporary files: where a file's bytes go until their hash is verified, and what an
//! interrupted transfer left there for a resume.
//!
//! Invariants:
//! - A file's temporary file is `.NAME.udt-partial` in its directory (`.udt-partial-<32 hex
//!   digits of BLAKE3(NAME)>` when that would exceed 255 bytes); when that name is taken by
//!   something not to be trusted, a fresh `.udt-partial-<32 random hex digits>` instead, which
//!   is never resumed. Senders cannot name files of either form (`protocol::check_name`).
//! - Temporary files are created with `O_CREAT | O_EXCL | O_NOFOLLOW` at 0600, so one that
//!   exists already is never taken over by the creation.
//! - An existing `.NAME.udt-partial` is reused only if, on its open descriptor, it is a
//!   regular file of this user's (effective uid), with one link, not writable by group or
//!   others ([`distrust`]), and younger than the partial TTL. Anything else is set aside: not
//!   opened for writing, not truncated, not removed. An own part that is expired, empty or
//!   longer than the file is removed.
//! - A temporary file is found again later only if it has the identity it was created or
//!   checked with, and is still trusted; it is removed only under that identity.

use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::time::SystemTime;

use rand_core::RngCore;
use rustix::fs::{AtFlags, Mode, OFlags};

use super::walk::{entry_meta, Id, Spot};
use super::Ttl;
use crate::protocol::{self, CHUNK};

/// `.NAME.udt-partial`, or a name derived from NAME's hash if that would exceed 255 bytes.
pub fn temp_name(name: &str) -> String {
    let temp = format!(".{name}.udt-partial");
    if temp.len() <= protocol::MAX_NAME_LEN {
        temp
    } else {
        let hash = blake3::hash(name.as_bytes()).to_hex();
        format!(".udt-partial-{}", &hash[..32])
    }
}

/// Whether `name` has the form of a temporary file (of either kind).
pub fn is_temp_name(name: &str) -> bool {
    let of = name.strip_prefix('.').and_then(|n| n.strip_suffix(".udt-partial"));
    of.is_some_and(|n| !n.is_empty()) || name.starts_with(".udt-partial-")
}

/// Why a file that is in the way is not this receiver's to reuse (`None`: it is).
pub fn distrust(meta: &Metadata, euid: u32) -> Option<&'static str> {
    if !meta.file_type().is_file() {
        Some("not a regular file")
    } else if meta.uid() != euid {
        Some("owned by another user")
    } else if meta.nlink() != 1 {
        Some("it has other hard links")
    } else if meta.mode() & 0o022 != 0 {
        Some("writable by group or others")
    } else {
        None
    }
}

/// What an interrupted transfer left under a temporary file's name.
pub enum Left {
    /// Nothing (or an own part that was of no use and is now removed).
    Nothing,
    /// An own part to resume from: its length, its hash so far, its identity.
    Resume {
        /// Bytes held.
        len: u64,
        /// BLAKE3 over them.
        hasher: Box<blake3::Hasher>,
        /// The part's identity.
        id: Id,
    },
    /// Something not to be trusted, left as it is; why.
    SetAside(&'static str),
}

/// Look at what is under `temp` in `dir` for a file of `size` bytes.
pub fn inspect(dir: &File, temp: &str, size: u64, ttl: Ttl, euid: u32) -> io::Result<Left> {
    let meta = match entry_meta(dir, temp) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Left::Nothing),
        Err(e) => return Err(e),
    };
    if !meta.file_type().is_file() {
        // Not opened at all: opening a FIFO or a device can block or act.
        return Ok(Left::SetAside("not a regular file"));
    }
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let mut file = match rustix::fs::openat(dir, temp, flags, Mode::empty()) {
        Ok(fd) => File::from(fd),
        Err(rustix::io::Errno::NOENT) => return Ok(Left::Nothing),
        Err(_) => return Ok(Left::SetAside("it cannot be opened")),
    };
    let meta = file.metadata()?;
    if Id::of_meta(&meta) != Id::of_meta(&entry_meta(dir, temp)?) {
        return Ok(Left::SetAside("it changed while being checked"));
    }
    if let Some(why) = distrust(&meta, euid) {
        return Ok(Left::SetAside(why));
    }
    let id = Id::of_meta(&meta);
    let mtime = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
    if ttl.expired(mtime, SystemTime::now()) || meta.len() == 0 || meta.len() > size {
        remove_if_same(dir, temp, id)?;
        return Ok(Left::Nothing);
    }
    let hasher = hash_all(&mut file)?;
    Ok(Left::Resume { len: meta.len(), hasher: Box::new(hasher), id })
}

/// Hash the whole of `file` from where it stands.
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

/// Remove `name` from `dir` if it is still the file `id`; whether it was removed.
pub fn remove_if_same(dir: &File, name: &str, id: Id) -> io::Result<bool> {
    match entry_meta(dir, name) {
        Ok(m) if Id::of_meta(&m) == id => {
            rustix::fs::unlinkat(dir, name, AtFlags::empty())?;
            Ok(true)
        }
        Ok(_) => Ok(false),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// Create a temporary file in `dir`, exclusively, 0600: under `preferred` if given and free,
/// else under a fresh random name. Returns its name, its identity and whether it is under the
/// preferred name (the only one a later session can resume).
pub fn create_temp(dir: &File, preferred: Option<&str>) -> io::Result<(String, Id, bool)> {
    if let Some(name) = preferred {
        match create_exclusive(dir, name) {
            Ok(id) => return Ok((name.to_string(), id, true)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    let mut last = io::Error::from(io::ErrorKind::AlreadyExists);
    for _ in 0..8 {
        let mut bytes = [0u8; 16];
        rand_core::OsRng.try_fill_bytes(&mut bytes).map_err(|e| io::Error::other(e.to_string()))?;
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let name = format!(".udt-partial-{hex}");
        match create_exclusive(dir, &name) {
            Ok(id) => return Ok((name, id, false)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = e,
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// `openat(O_CREAT | O_EXCL | O_NOFOLLOW, 0600)`; the mode set again on the descriptor, so a
/// umask that takes the owner's write away does not lock the receiver out.
fn create_exclusive(dir: &File, name: &str) -> io::Result<Id> {
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let file = File::from(rustix::fs::openat(dir, name, flags, Mode::from_raw_mode(0o600))?);
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    Id::of(&file)
}

/// A file's temporary file, removed when dropped while armed.
#[derive(Debug)]
pub struct Temp<'r> {
    /// The directory it is in (the destination's).
    pub spot: Spot<'r>,
    /// Its name there.
    pub name: String,
    /// Its identity.
    pub id: Id,
    /// Under the name a later session looks for (`.NAME.udt-partial`).
    pub resumable: bool,
    /// Removed when dropped.
    pub armed: bool,
}

impl Temp<'_> {
    /// Open it for writing in `dir` (its directory, found again): only the same file, still
    /// trusted.
    pub fn open(&self, dir: &File) -> Result<File, String> {
        self.open_with(dir, OFlags::WRONLY)
    }

    /// As [`Temp::open`], for reading too (a striped file is hashed once its ranges are in).
    pub fn open_read_write(&self, dir: &File) -> Result<File, String> {
        self.open_with(dir, OFlags::RDWR)
    }

    fn open_with(&self, dir: &File, access: OFlags) -> Result<File, String> {
        let flags = access | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let file = rustix::fs::openat(dir, self.name.as_str(), flags, Mode::empty())
            .map(File::from)
            .map_err(|e| format!("cannot open the temporary file: {}", io::Error::from(e)))?;
        let meta = file.metadata().map_err(|e| format!("cannot check the temporary file: {e}"))?;
        if Id::of_meta(&meta) != self.id {
            return Err("the temporary file was replaced on the receiver; not stored".into());
        }
        if let Some(why) = distrust(&meta, self.spot.root().euid) {
            return Err(format!("the temporary file is no longer private ({why}); not stored"));
        }
        Ok(file)
    }

    /// Leave it in place: committed, or (if resumable and resumes are on) kept for a resume.
    pub fn keep(&mut self) {
        self.armed = false;
    }

    /// After a connection failure: keep it for a resume when a later session can use it.
    pub fn keep_for_resume(&mut self) {
        if self.resumable && self.spot.root().ttl.resumes() {
            self.armed = false;
        }
    }
}

impl Drop for Temp<'_> {
    fn drop(&mut self) {
        if self.armed {
            if let Ok(dir) = self.spot.open() {
                if let Err(e) = remove_if_same(&dir, &self.name, self.id) {
                    tracing::warn!("cannot remove a temporary file: {e}");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use std::time::Duration;

    #[test]
    fn temp_names() {
        assert_eq!(temp_name("c.txt"), ".c.txt.udt-partial");
        let long = "x".repeat(250);
        let t = temp_name(&long);
        assert!(t.starts_with(".udt-partial-") && t.len() <= 255);
        assert!(is_temp_name(&t) && is_temp_name(".c.txt.udt-partial"));
        assert!(!is_temp_name("c.txt.udt-partial") && !is_temp_name(".udt-partial"));
    }

    fn open(path: &std::path::Path) -> File {
        File::open(path).unwrap()
    }

    #[test]
    fn own_parts_resume_others_are_set_aside() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = open(tmp.path());
        let euid = rustix::process::geteuid().as_raw();
        let day = Ttl(Some(Duration::from_secs(86_400)));
        let (name, id, resumable) = create_temp(&dir, Some(".a.udt-partial")).unwrap();
        assert!(resumable);
        std::fs::write(tmp.path().join(&name), b"hello").unwrap();
        match inspect(&dir, &name, 10, day, euid).unwrap() {
            Left::Resume { len, hasher, id: found } => {
                assert_eq!((len, found), (5, id));
                assert_eq!(hasher.finalize(), blake3::hash(b"hello"));
            }
            _ => panic!("an own part is resumed"),
        }
        // Longer than the file: removed.
        assert!(matches!(inspect(&dir, &name, 3, day, euid).unwrap(), Left::Nothing));
        assert!(!tmp.path().join(&name).exists());

        // Taken: a fresh random name instead.
        std::fs::write(tmp.path().join(".b.udt-partial"), b"x").unwrap();
        let (other, _, resumable) = create_temp(&dir, Some(".b.udt-partial")).unwrap();
        assert!(!resumable && other.starts_with(".udt-partial-") && other.len() == 13 + 32);
        let mode = std::fs::metadata(tmp.path().join(&other)).unwrap().mode();
        assert_eq!(mode & 0o777, 0o600);

        // Hard-linked, group-writable, not a file, someone else's: set aside and untouched.
        std::fs::write(tmp.path().join("precious"), b"keep").unwrap();
        std::fs::hard_link(tmp.path().join("precious"), tmp.path().join(".l.udt-partial")).unwrap();
        assert!(matches!(inspect(&dir, ".l.udt-partial", 10, day, euid).unwrap(), Left::SetAside(_)));
        std::fs::write(tmp.path().join(".g.udt-partial"), b"x").unwrap();
        std::fs::set_permissions(tmp.path().join(".g.udt-partial"), std::fs::Permissions::from_mode(0o664))
            .unwrap();
        assert!(matches!(inspect(&dir, ".g.udt-partial", 10, day, euid).unwrap(), Left::SetAside(_)));
        std::fs::create_dir(tmp.path().join(".d.udt-partial")).unwrap();
        assert!(matches!(inspect(&dir, ".d.udt-partial", 10, day, euid).unwrap(), Left::SetAside(_)));
        std::os::unix::fs::symlink("precious", tmp.path().join(".s.udt-partial")).unwrap();
        assert!(matches!(inspect(&dir, ".s.udt-partial", 10, day, euid).unwrap(), Left::SetAside(_)));
        assert!(matches!(inspect(&dir, ".b.udt-partial", 10, day, euid + 1).unwrap(), Left::SetAside(_)));
        assert_eq!(std::fs::read(tmp.path().join("precious")).unwrap(), b"keep");
        assert_eq!(std::fs::read(tmp.path().join(".b.udt-partial")).unwrap(), b"x");

        // Never resume: an own part is removed.
        assert!(matches!(inspect(&dir, ".b.udt-partial", 10, Ttl(None), euid).unwrap(), Left::Nothing));
        assert!(!tmp.path().join(".b.udt-partial").exists());
    }
}
