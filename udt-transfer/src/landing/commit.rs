//! Putting a verified temporary file in its place.
//!
//! Invariants: both names are taken relative to the one directory descriptor the file was
//! written through; the temporary file must still be the one written (its identity) right
//! before the move. Without `force` nothing in the way is ever replaced:
//! `renameat2(RENAME_NOREPLACE)`, or where the file system lacks it a hard link that fails if
//! the name exists; with `force`, `renameat` replaces what is there (a directory in the way
//! makes it fail).

use std::fs::File;
use std::io;

use rustix::fs::{AtFlags, RenameFlags};
use rustix::io::Errno;

use super::walk::{entry_meta, Id};

/// The refusal when the destination appeared during the transfer.
fn exists() -> String {
    "exists (appeared during the transfer); use --force to overwrite (udt recv --force; udt send --force to a host:path)".to_string()
}

/// Move `temp` (identity `id`) to `dest`, both in `dir`. `Err` is the reason, for the sender.
pub fn commit(dir: &File, temp: &str, id: Id, dest: &str, force: bool) -> Result<(), String> {
    match entry_meta(dir, temp) {
        Ok(m) if Id::of_meta(&m) == id => {}
        Ok(_) => return Err("the temporary file was replaced on the receiver; not stored".into()),
        Err(e) => return Err(format!("the temporary file is gone: {e}")),
    }
    let failed = |e: Errno| format!("cannot move the file into place: {}", io::Error::from(e));
    if force {
        return rustix::fs::renameat(dir, temp, dir, dest).map_err(failed);
    }
    match rustix::fs::renameat_with(dir, temp, dir, dest, RenameFlags::NOREPLACE) {
        Ok(()) => Ok(()),
        Err(Errno::EXIST) => Err(exists()),
        // A file system without RENAME_NOREPLACE: a hard link, which never replaces either.
        Err(Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => {
            match rustix::fs::linkat(dir, temp, dir, dest, AtFlags::empty()) {
                Ok(()) => {
                    if let Err(e) = rustix::fs::unlinkat(dir, temp, AtFlags::empty()) {
                        tracing::warn!("cannot remove the temporary file after linking it: {e}");
                    }
                    Ok(())
                }
                Err(Errno::EXIST) => Err(exists()),
                Err(e) => Err(failed(e)),
            }
        }
        Err(e) => Err(failed(e)),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn never_replaces_without_force() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = File::open(tmp.path()).unwrap();
        std::fs::write(tmp.path().join(".t"), b"new").unwrap();
        std::fs::write(tmp.path().join("dest"), b"old").unwrap();
        let id = Id::of_meta(&entry_meta(&dir, ".t").unwrap());
        let e = commit(&dir, ".t", id, "dest", false).unwrap_err();
        assert!(e.contains("exists"), "{e}");
        assert_eq!(std::fs::read(tmp.path().join("dest")).unwrap(), b"old");
        commit(&dir, ".t", id, "dest", true).unwrap();
        assert_eq!(std::fs::read(tmp.path().join("dest")).unwrap(), b"new");
        assert!(!tmp.path().join(".t").exists());
        // Not the file written: refused.
        std::fs::write(tmp.path().join(".t"), b"other").unwrap();
        let e = commit(&dir, ".t", id, "fresh", false).unwrap_err();
        assert!(e.contains("replaced"), "{e}");
        assert!(!tmp.path().join("fresh").exists());
    }
}
