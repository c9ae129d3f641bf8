//! Directories below the output directory, reached from its descriptor one component at a time.
//!
//! Invariants: every component is opened with `openat(O_DIRECTORY | O_NOFOLLOW)` relative to
//! the descriptor of the one before, so a symbolic link (or a file) anywhere on the path stops
//! the walk instead of leading elsewhere; a missing directory is created with `mkdirat` (0700)
//! only when the caller asks, and recorded with its identity ([`Id`]) as created by this
//! session. A [`Spot`] remembers a directory by its components and identity and is found again
//! only if it is still the same directory. Messages name paths relative to the output directory.

use std::collections::BTreeMap;
use std::fs::{File, Metadata};
use std::io;
use std::os::unix::fs::MetadataExt;

use rustix::fs::{Mode, OFlags};
use rustix::path::Arg;

use super::Root;
use crate::protocol;

/// A file's identity: device and inode number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Id {
    dev: u64,
    ino: u64,
}

impl Id {
    /// The identity of an open file.
    pub fn of(file: &File) -> io::Result<Id> {
        file.metadata().map(|m| Id::of_meta(&m))
    }

    /// The identity in a file's metadata.
    pub fn of_meta(meta: &Metadata) -> Id {
        Id { dev: meta.dev(), ino: meta.ino() }
    }
}

/// Directories created by one session: path relative to the output directory -> identity.
pub type Created = BTreeMap<String, Id>;

/// Open the directory `name` in `dir`, never through a symbolic link.
pub fn open_dir<P: Arg>(dir: &File, name: P) -> io::Result<File> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    Ok(File::from(rustix::fs::openat(dir, name, flags, Mode::empty())?))
}

/// The metadata of the entry `name` in `dir` itself (a symbolic link is not followed): `lstat`
/// relative to a descriptor, through an `O_PATH` open that opens nothing's contents.
pub fn entry_meta<P: Arg>(dir: &File, name: P) -> io::Result<Metadata> {
    let flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    File::from(rustix::fs::openat(dir, name, flags, Mode::empty())?).metadata()
}

/// Open the existing file `name` in `dir` to read it, never following a link (a link or
/// anything but a regular file is an error).
pub fn open_existing<P: Arg>(dir: &File, name: P) -> io::Result<File> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
    let file = File::from(rustix::fs::openat(dir, name, flags, Mode::empty())?);
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a regular file"));
    }
    Ok(file)
}

/// Walk `parts` from `root`, creating missing directories (0700) when `created` is given and
/// recording them there; returns the last directory's descriptor (a duplicate of `root` for no
/// parts). `Err` is the reason, for the sender.
pub fn walk<S: AsRef<str>>(
    root: &File,
    parts: &[S],
    mut created: Option<&mut Created>,
) -> Result<File, String> {
    let mut held: Option<File> = None;
    for (i, part) in parts.iter().enumerate() {
        let part = part.as_ref();
        let shown = || protocol::display_name(&join(&parts[..=i]));
        let dir = held.as_ref().unwrap_or(root);
        let next = match open_dir(dir, part) {
            Ok(next) => next,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let Some(created) = created.as_deref_mut() else {
                    return Err(format!("{} no longer exists on the receiver", shown()));
                };
                let made = match rustix::fs::mkdirat(dir, part, Mode::from_raw_mode(0o700)) {
                    Ok(()) => true,
                    Err(rustix::io::Errno::EXIST) => false,
                    Err(e) => {
                        return Err(format!(
                            "cannot create the directory {}: {}",
                            shown(),
                            io::Error::from(e)
                        ))
                    }
                };
                let next = open_dir(dir, part).map_err(|e| explain(dir, part, &shown(), e))?;
                if made {
                    let id = Id::of(&next).map_err(|e| format!("cannot check {}: {e}", shown()))?;
                    created.insert(join(&parts[..=i]), id);
                }
                next
            }
            Err(e) => return Err(explain(dir, part, &shown(), e)),
        };
        held = Some(next);
    }
    match held {
        Some(dir) => Ok(dir),
        None => root.try_clone().map_err(|e| format!("cannot use the output directory: {e}")),
    }
}

/// Why `name` in `dir` could not be opened as a directory.
fn explain(dir: &File, name: &str, shown: &str, e: io::Error) -> String {
    match entry_meta(dir, name) {
        Ok(m) if m.file_type().is_symlink() => {
            format!("{shown} is a symbolic link on the receiver; not followed")
        }
        Ok(m) if !m.is_dir() => format!("{shown} exists as a file on the receiver"),
        _ => format!("cannot open the directory {shown}: {e}"),
    }
}

/// `a/b/c` of components.
fn join<S: AsRef<str>>(parts: &[S]) -> String {
    parts.iter().map(AsRef::as_ref).collect::<Vec<_>>().join("/")
}

/// A directory below the output directory, remembered by its components and its identity so that it can be
/// found again later (a file's data comes after its announcement) without holding a descriptor
/// meanwhile.
#[derive(Debug)]
pub struct Spot<'r> {
    root: &'r Root,
    parts: Vec<String>,
    id: Id,
}

impl<'r> Spot<'r> {
    /// Remember `dir`, reached by `parts` from `root`.
    pub fn new<S: AsRef<str>>(root: &'r Root, parts: &[S], dir: &File) -> Result<Spot<'r>, String> {
        let id = Id::of(dir).map_err(|e| format!("cannot check the directory: {e}"))?;
        Ok(Spot { root, parts: parts.iter().map(|p| p.as_ref().to_string()).collect(), id })
    }

    /// Walk to it again: the same directory, or why not.
    pub fn open(&self) -> Result<File, String> {
        let dir = walk(self.root.dir(), &self.parts, None)?;
        match Id::of(&dir) {
            Ok(id) if id == self.id => Ok(dir),
            Ok(_) => Err(format!(
                "the directory {} was replaced on the receiver during the transfer",
                protocol::display_name(&join(&self.parts))
            )),
            Err(e) => Err(format!("cannot check the directory: {e}")),
        }
    }

    /// The receiver this directory is in.
    pub fn root(&self) -> &'r Root {
        self.root
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::landing::Ttl;

    fn root_at(path: &std::path::Path) -> Root {
        Root::open(path, 0o022, Ttl(None)).unwrap()
    }

    #[test]
    fn creates_and_records_only_what_is_missing() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("a")).unwrap();
        let root = root_at(tmp.path());
        let mut created = Created::new();
        walk(root.dir(), &["a", "b", "c"], Some(&mut created)).unwrap();
        assert_eq!(created.keys().collect::<Vec<_>>(), ["a/b", "a/b/c"]);
        assert!(tmp.path().join("a/b/c").is_dir());
        let again = walk(root.dir(), &["a", "b", "c"], Some(&mut created)).unwrap();
        assert_eq!(created.len(), 2);
        assert_eq!(Id::of(&again).unwrap(), created["a/b/c"]);
    }

    #[test]
    fn symbolic_links_and_files_stop_the_walk() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), tmp.path().join("link")).unwrap();
        std::fs::write(tmp.path().join("file"), "x").unwrap();
        let root = root_at(tmp.path());
        let mut created = Created::new();
        let e = walk(root.dir(), &["link", "x"], Some(&mut created)).unwrap_err();
        assert!(e.contains("link is a symbolic link on the receiver"), "{e}");
        let e = walk(root.dir(), &["file", "x"], Some(&mut created)).unwrap_err();
        assert!(e.contains("file exists as a file on the receiver"), "{e}");
        assert!(created.is_empty());
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0, "nothing made outside");
        assert!(!e.contains(&tmp.path().display().to_string()), "no absolute path: {e}");
    }

    /// A component swapped for a symbolic link (or another directory) between the moment a
    /// directory is remembered and the moment it is used: never followed, never mistaken.
    #[test]
    fn a_swapped_component_is_not_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(outside.path().join("b")).unwrap();
        let root = root_at(tmp.path());
        let dir = walk(root.dir(), &["a", "b"], Some(&mut Created::new())).unwrap();
        let spot = Spot::new(&root, &["a", "b"], &dir).unwrap();
        assert!(spot.open().is_ok());
        // A symbolic link in place of `a`, to a tree that has a `b` too.
        std::fs::rename(tmp.path().join("a"), tmp.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(outside.path(), tmp.path().join("a")).unwrap();
        let e = spot.open().unwrap_err();
        assert!(e.contains("a is a symbolic link on the receiver; not followed"), "{e}");
        // Another real directory of the same name: a different identity.
        std::fs::remove_file(tmp.path().join("a")).unwrap();
        std::fs::create_dir_all(tmp.path().join("a/b")).unwrap();
        let e = spot.open().unwrap_err();
        assert!(e.contains("was replaced on the receiver"), "{e}");
        // The original, back in place: found again.
        std::fs::remove_dir_all(tmp.path().join("a")).unwrap();
        std::fs::rename(tmp.path().join("moved"), tmp.path().join("a")).unwrap();
        assert!(spot.open().is_ok());
    }
}
