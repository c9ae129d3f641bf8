//! The directories of one session: those it created, and the permissions and time the sender
//! asked for each directory entry, applied when the session ends (so a read-only source
//! directory still receives its files).
//!
//! Invariants: one record per path, however often an entry repeats (a map, not a list); only
//! directories this session created get anything, with the bits of [`super::mode::dir_mode`]
//! (a directory created along a file's path without an entry of its own gets the default);
//! each is found again from the output directory with `O_NOFOLLOW` at every step and must have the identity
//! it was created with, or it is left alone. Existing directories are never touched.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;

use super::mode;
use super::walk::{walk, Created, Id};
use super::Root;
use crate::protocol::NO_MTIME;

/// What one session did to directories, and what it was asked to give them.
#[derive(Debug, Default)]
pub struct SessionDirs {
    /// Created by this session: relative path -> identity.
    created: Created,
    /// Asked for by directory entries: relative path -> (mode, mtime); the last entry wins.
    wanted: BTreeMap<String, (u32, (i64, u32))>,
}

impl SessionDirs {
    /// Where [`walk`] records what it creates.
    pub fn created_mut(&mut self) -> &mut Created {
        &mut self.created
    }

    /// A directory entry for `path` asked for these permission bits and time.
    pub fn want(&mut self, path: String, mode: u32, mtime: (i64, u32)) {
        self.wanted.insert(path, (mode, mtime));
    }

    /// Give the directories this session created their permissions and times, deepest first
    /// (a directory's time is set after everything inside it). Best effort: a failure is
    /// logged; the files are in place.
    pub fn finish(&self, root: &Root) {
        for (path, id) in self.created.iter().rev() {
            let (sent_mode, sent_mtime) = self.wanted.get(path).copied().unwrap_or((0, (0, NO_MTIME)));
            let parts: Vec<&str> = path.split('/').collect();
            let dir = match walk(root.dir(), &parts, None) {
                Ok(dir) if Id::of(&dir).is_ok_and(|found| found == *id) => dir,
                _ => {
                    tracing::warn!("{path}: not the directory this session created any more; left alone");
                    continue;
                }
            };
            let bits = mode::dir_mode(sent_mode, root.umask);
            if let Err(e) = dir.set_permissions(std::fs::Permissions::from_mode(bits)) {
                tracing::warn!("cannot set the permissions of {path}: {e}");
            }
            if let Some(t) = mode::mtime(sent_mtime) {
                if let Err(e) = dir.set_modified(t) {
                    tracing::warn!("cannot set the modification time of {path}: {e}");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::os::unix::fs::MetadataExt;

    use super::*;
    use crate::landing::Ttl;

    #[test]
    fn repeated_entries_do_not_grow_the_record() {
        let mut dirs = SessionDirs::default();
        for i in 0..10_000 {
            dirs.want("a/b".into(), 0o755, (i, 0));
        }
        dirs.want("a".into(), 0o700, (1, 0));
        assert_eq!(dirs.wanted.len(), 2);
        assert_eq!(dirs.wanted["a/b"], (0o755, (9_999, 0)), "the last entry wins");
    }

    #[test]
    fn only_created_directories_get_metadata() {
        let tmp = tempfile::tempdir().unwrap();
        let old = tmp.path().join("old");
        std::fs::create_dir(&old).unwrap();
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o700)).unwrap();
        let root = Root::open(tmp.path(), 0o022, Ttl(None)).unwrap();
        let mut dirs = SessionDirs::default();
        walk(root.dir(), &["old", "new", "deeper"], Some(dirs.created_mut())).unwrap();
        let before = std::fs::metadata(&old).unwrap();
        dirs.want("old".into(), 0o777, (1_000_000_000, 0));
        dirs.want("old/new".into(), 0o1000, (1_000_000_000, 0));
        dirs.finish(&root);
        let after = std::fs::metadata(&old).unwrap();
        assert_eq!(after.mode(), before.mode(), "an existing directory keeps its mode");
        assert_eq!(after.mtime(), before.mtime(), "and its time");
        let new = std::fs::metadata(old.join("new")).unwrap();
        assert_eq!(new.mode() & 0o7777, 0o700, "owner rwx kept, no sticky bit");
        assert_eq!(new.mtime(), 1_000_000_000);
        let deeper = std::fs::metadata(old.join("new/deeper")).unwrap();
        assert_eq!(deeper.mode() & 0o7777, 0o755, "no entry of its own: the default");
    }
}
