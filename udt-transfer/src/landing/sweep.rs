//! The startup sweep: what interrupted transfers left in the output directory and nobody resumed within
//! the partial TTL is removed before the first connection.
//!
//! Invariants: directories are entered with `openat(O_DIRECTORY | O_NOFOLLOW)` from their
//! parent's descriptor (no symbolic link is followed); at most [`MAX_ENTRIES`] entries are
//! looked at and [`MAX_DEPTH`] levels entered, so a huge output directory costs a bounded time at
//! startup (what is left past the bound is still judged when a transfer meets it); only files
//! of the temporary files' names, regular, owned by this user, with one link, not writable by
//! group or others and expired, are removed (each under the identity it was checked with).

use std::fs::File;
use std::time::SystemTime;

use super::partial::{distrust, is_temp_name, remove_if_same};
use super::walk::{entry_meta, open_dir, Id};
use super::Root;

/// Entries looked at, at most.
pub const MAX_ENTRIES: usize = 100_000;
/// Directory levels entered below the output directory, at most.
pub const MAX_DEPTH: usize = 32;

/// What a sweep did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Swept {
    /// Expired parts removed.
    pub removed: usize,
    /// Entries looked at.
    pub seen: usize,
    /// Whether the bound stopped it before the end.
    pub cut_short: bool,
}

/// Remove this user's expired parts under the output directory.
pub fn sweep(root: &Root) -> Swept {
    let mut swept = Swept::default();
    visit(root, root.dir(), 0, SystemTime::now(), &mut swept);
    swept
}

/// Sweep `dir`, `depth` levels below the output directory.
fn visit(root: &Root, dir: &File, depth: usize, now: SystemTime, swept: &mut Swept) {
    let Ok(entries) = rustix::fs::Dir::read_from(dir) else { return };
    for entry in entries {
        let Ok(entry) = entry else { return };
        let name = entry.file_name();
        if name.to_bytes() == b"." || name.to_bytes() == b".." {
            continue;
        }
        if swept.seen >= MAX_ENTRIES {
            swept.cut_short = true;
            return;
        }
        swept.seen += 1;
        let Ok(meta) = entry_meta(dir, name) else { continue };
        if meta.is_dir() {
            if depth + 1 < MAX_DEPTH {
                if let Ok(sub) = open_dir(dir, name) {
                    visit(root, &sub, depth + 1, now, swept);
                }
            } else {
                swept.cut_short = true;
            }
            continue;
        }
        let Ok(text) = name.to_str() else { continue };
        if !is_temp_name(text) || distrust(&meta, root.euid).is_some() {
            continue;
        }
        let mtime = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
        if root.ttl.expired(mtime, now) {
            match remove_if_same(dir, text, Id::of_meta(&meta)) {
                Ok(true) => swept.removed += 1,
                Ok(false) => {}
                Err(e) => tracing::warn!("cannot remove an expired partial file: {e}"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::Duration;

    use super::*;
    use crate::landing::Ttl;

    fn age(path: &std::path::Path, secs: u64) {
        let t = SystemTime::now() - Duration::from_secs(secs);
        File::options().write(true).open(path).unwrap().set_modified(t).unwrap();
    }

    #[test]
    fn removes_own_expired_parts_only() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let p = tmp.path();
        std::fs::create_dir_all(p.join("a/b")).unwrap();
        for f in [".x.udt-partial", "a/b/.y.udt-partial", ".fresh.udt-partial", "a/keep.txt"] {
            std::fs::write(p.join(f), b"part").unwrap();
        }
        std::fs::write(outside.path().join(".z.udt-partial"), b"part").unwrap();
        std::os::unix::fs::symlink(outside.path(), p.join("link")).unwrap();
        std::fs::hard_link(p.join("a/keep.txt"), p.join(".linked.udt-partial")).unwrap();
        for f in [".x.udt-partial", "a/b/.y.udt-partial", "a/keep.txt", ".linked.udt-partial"] {
            age(&p.join(f), 5 * 86_400);
        }
        age(&outside.path().join(".z.udt-partial"), 5 * 86_400);
        let root = Root::open(p, 0o022, Ttl(Some(Duration::from_secs(3 * 86_400)))).unwrap();
        let swept = sweep(&root);
        assert_eq!(swept.removed, 2, "{swept:?}");
        assert!(!swept.cut_short);
        assert!(!p.join(".x.udt-partial").exists() && !p.join("a/b/.y.udt-partial").exists());
        assert!(p.join(".fresh.udt-partial").exists(), "not expired");
        assert!(p.join("a/keep.txt").exists(), "not a partial's name");
        assert!(p.join(".linked.udt-partial").exists(), "another link: not ours to remove");
        assert!(outside.path().join(".z.udt-partial").exists(), "links are not followed");
    }
}
