//! `--delete`: once a session's entries are all known, remove from each directory it sent
//! what the sender's tree does not have, as rsync's `--delete` does.
//!
//! Invariants:
//! - Only directories this session announced and walked are pruned, each found again from the
//!   output directory with `O_NOFOLLOW` at every step and only if it is still the directory
//!   the session walked ([`Id`]); nothing outside them (the output directory's own top level
//!   included) is ever looked at.
//! - Entries are looked at without following links (`O_PATH | O_NOFOLLOW`); a symbolic link is
//!   removed itself, never what it points to; a directory is entered with
//!   `openat(O_DIRECTORY | O_NOFOLLOW)` only if it is the one just looked at and on the same
//!   file system as the pruned directory (a mount point is kept), at most [`MAX_DEPTH`] levels.
//! - Kept: what the session announced, what the sender's exclude patterns match (with
//!   everything under it; a directory holding such an entry stays, as rsync's does), names the
//!   protocol cannot carry in a directory the sender sent (the sender may have them and could
//!   not say so), the receiver's temporary files there, and paths another session is receiving.

use std::collections::{BTreeMap, HashSet};
use std::ffi::CStr;
use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;

use rustix::fs::AtFlags;

use super::walk::{entry_meta, open_dir, walk, Id};
use super::Root;
use crate::protocol::{self, display_name};
use crate::Exclude;

/// Levels below a pruned directory entered to delete what is inside, at most.
pub const MAX_DEPTH: usize = 64;

/// What the sender's tree has, and what it wants kept.
pub struct Keep<'k> {
    /// Every path the session announced (files and directories, refused ones included).
    pub announced: &'k HashSet<String>,
    /// The sender's exclude patterns.
    pub exclude: &'k Exclude,
    /// Whether another session is receiving this path now.
    pub busy: &'k dyn Fn(&str) -> bool,
}

/// What pruning did: paths relative to the output directory, in the order they went (what is
/// inside a directory before the directory).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Deleted.
    pub deleted: Vec<String>,
    /// Not deleted, and why (safe to show).
    pub failed: Vec<(String, String)>,
}

/// Prune each of `dirs` (relative path -> the identity the session walked it with).
pub fn prune(root: &Root, dirs: &BTreeMap<String, Id>, keep: &Keep<'_>) -> Pruned {
    let mut pruned = Pruned::default();
    for (path, id) in dirs {
        let parts: Vec<&str> = path.split('/').collect();
        let dir = match walk(root.dir(), &parts, None) {
            Ok(dir) => dir,
            Err(why) => {
                pruned.failed.push((path.clone(), format!("not pruned: {why}")));
                continue;
            }
        };
        if Id::of(&dir).ok() != Some(*id) {
            let why = "not pruned: the directory was replaced on the receiver during the transfer";
            pruned.failed.push((path.clone(), why.into()));
            continue;
        }
        let Ok(meta) = dir.metadata() else { continue };
        let mut prune = Prune { keep, dev: meta.dev(), pruned: &mut pruned };
        prune.sent_dir(&dir, path);
    }
    pruned
}

/// One pruning pass's state.
struct Prune<'p, 'k> {
    keep: &'p Keep<'k>,
    /// The file system of the directory being pruned.
    dev: u64,
    pruned: &'p mut Pruned,
}

/// The names in `dir` but `.` and `..`, read before anything is removed.
fn names(dir: &File) -> io::Result<Vec<Vec<u8>>> {
    let mut found = Vec::new();
    for entry in rustix::fs::Dir::read_from(dir)? {
        let name = entry?.file_name().to_bytes().to_vec();
        if name != b"." && name != b".." {
            found.push(name);
        }
    }
    Ok(found)
}

impl Prune<'_, '_> {
    /// A directory the sender sent: remove what it did not send.
    fn sent_dir(&mut self, dir: &File, path: &str) {
        let names = match names(dir) {
            Ok(names) => names,
            Err(e) => return self.failed(path, format!("cannot read the directory: {e}")),
        };
        for raw in names {
            // A name the protocol cannot carry (or a temporary file's): kept.
            let Ok(name) = protocol::check_name(&raw) else { continue };
            self.extraneous(dir, name.as_bytes(), &format!("{path}/{name}"), 0);
        }
    }

    /// An entry of `dir`: removed (a directory with what is inside) unless the sender has it
    /// or it is kept. Returns whether it is gone.
    fn extraneous(&mut self, dir: &File, name: &[u8], path: &str, depth: usize) -> bool {
        if self.keep.announced.contains(path) {
            return false;
        }
        let Ok(cname) = std::ffi::CString::new(name) else { return false };
        let meta = match entry_meta(dir, cname.as_c_str()) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return true,
            Err(e) => {
                self.failed(path, format!("cannot look at it: {e}"));
                return false;
            }
        };
        if self.keep.exclude.matches(path, meta.is_dir()) || (self.keep.busy)(path) {
            return false;
        }
        if !meta.is_dir() {
            return self.remove(dir, &cname, path, AtFlags::empty());
        }
        if meta.dev() != self.dev {
            self.failed(path, "another file system is mounted there; not deleted".into());
            return false;
        }
        if depth >= MAX_DEPTH {
            self.failed(path, format!("more than {MAX_DEPTH} levels deep; not deleted"));
            return false;
        }
        let sub = match open_dir(dir, cname.as_c_str()) {
            Ok(sub) if Id::of(&sub).ok() == Some(Id::of_meta(&meta)) => sub,
            Ok(_) => {
                self.failed(path, "it changed while being deleted; not deleted".into());
                return false;
            }
            Err(e) => {
                self.failed(path, format!("cannot open it: {e}"));
                return false;
            }
        };
        let names = match names(&sub) {
            Ok(names) => names,
            Err(e) => {
                self.failed(path, format!("cannot read the directory: {e}"));
                return false;
            }
        };
        let mut emptied = true;
        for raw in names {
            let child = format!("{path}/{}", String::from_utf8_lossy(&raw));
            emptied &= self.extraneous(&sub, &raw, &child, depth + 1);
        }
        // Something inside is kept (excluded, being received): so is the directory.
        emptied && self.remove(dir, &cname, path, AtFlags::REMOVEDIR)
    }

    /// Remove `name` from `dir` (never following it): recorded either way.
    fn remove(&mut self, dir: &File, name: &CStr, path: &str, flags: AtFlags) -> bool {
        match rustix::fs::unlinkat(dir, name, flags) {
            Ok(()) => {
                self.pruned.deleted.push(path.to_string());
                true
            }
            Err(rustix::io::Errno::NOENT) => true,
            Err(e) => {
                self.failed(path, format!("cannot delete it: {}", io::Error::from(e)));
                false
            }
        }
    }

    fn failed(&mut self, path: &str, why: String) {
        tracing::warn!(path = %display_name(path), "--delete: {why}");
        self.pruned.failed.push((path.to_string(), why));
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::os::unix::fs::symlink;

    use super::*;
    use crate::landing::{walk::Created, Ttl};

    /// The tree the sender has: `t/keep.txt`, `t/sub/keep.txt`; the receiver holds more.
    #[test]
    fn removes_what_the_sender_lacks_and_nothing_else() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("precious"), b"x").unwrap();
        let p = tmp.path();
        std::fs::create_dir_all(p.join("t/sub/old/deeper")).unwrap();
        std::fs::create_dir_all(p.join("t/objs")).unwrap();
        for f in [
            "t/keep.txt",
            "t/sub/keep.txt",
            "t/gone.txt",
            "t/sub/old/deeper/gone.txt",
            "t/sub/x.o",
            "t/objs/y.o",
            "t/objs/gone.txt",
            "t/.keep.txt.udt-partial",
            "top-level.txt",
        ] {
            std::fs::write(p.join(f), b"x").unwrap();
        }
        symlink(outside.path(), p.join("t/link-out")).unwrap();
        symlink(outside.path().join("precious"), p.join("t/sub/file-link")).unwrap();
        let root = Root::open(p, 0o022, Ttl(None)).unwrap();
        let mut dirs = BTreeMap::new();
        for d in ["t", "t/sub"] {
            let parts: Vec<&str> = d.split('/').collect();
            let dir = walk(root.dir(), &parts, Some(&mut Created::new())).unwrap();
            dirs.insert(d.to_string(), Id::of(&dir).unwrap());
        }
        let announced: HashSet<String> =
            ["t", "t/keep.txt", "t/sub", "t/sub/keep.txt"].iter().map(|s| s.to_string()).collect();
        let exclude = Exclude::new(&["*.o"]);
        let busy = |path: &str| path == "t/busy.txt";
        std::fs::write(p.join("t/busy.txt"), b"x").unwrap();
        let keep = Keep { announced: &announced, exclude: &exclude, busy: &busy };
        let mut pruned = prune(&root, &dirs, &keep);
        assert!(pruned.failed.is_empty(), "{pruned:?}");
        pruned.deleted.sort();
        assert_eq!(
            pruned.deleted,
            [
                "t/gone.txt",
                "t/link-out",
                "t/objs/gone.txt",
                "t/sub/file-link",
                "t/sub/old",
                "t/sub/old/deeper",
                "t/sub/old/deeper/gone.txt"
            ]
        );
        for kept in ["t/keep.txt", "t/sub/keep.txt", "t/sub/x.o", "t/objs/y.o", "t/busy.txt"] {
            assert!(p.join(kept).exists(), "{kept}");
        }
        assert!(p.join("t/.keep.txt.udt-partial").exists(), "a temporary file is not the sender's business");
        assert!(p.join("top-level.txt").exists(), "the top level is not a directory the sender sent");
        assert!(p.join("t/objs").is_dir(), "it holds an excluded file");
        assert!(outside.path().join("precious").exists(), "a link's target is never touched");
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 1);
    }

    /// A pruned directory swapped for a link to somewhere else, or for another directory, is
    /// left alone.
    #[test]
    fn a_replaced_directory_is_not_pruned() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("precious"), b"x").unwrap();
        let p = tmp.path();
        let root = Root::open(p, 0o022, Ttl(None)).unwrap();
        let dir = walk(root.dir(), &["t"], Some(&mut Created::new())).unwrap();
        let dirs = BTreeMap::from([("t".to_string(), Id::of(&dir).unwrap())]);
        drop(dir);
        std::fs::rename(p.join("t"), p.join("moved")).unwrap();
        symlink(outside.path(), p.join("t")).unwrap();
        let announced = HashSet::new();
        let keep = Keep { announced: &announced, exclude: &Exclude::default(), busy: &|_| false };
        let pruned = prune(&root, &dirs, &keep);
        assert!(pruned.deleted.is_empty());
        assert!(pruned.failed[0].1.contains("symbolic link"), "{pruned:?}");
        assert!(outside.path().join("precious").exists());
        std::fs::remove_file(p.join("t")).unwrap();
        std::fs::create_dir(p.join("t")).unwrap();
        std::fs::write(p.join("t/other"), b"x").unwrap();
        let pruned = prune(&root, &dirs, &keep);
        assert!(pruned.failed[0].1.contains("replaced"), "{pruned:?}");
        assert!(p.join("t/other").exists());
    }
}
