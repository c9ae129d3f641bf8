//! The output directory, opened once, and what the receiver learned about itself at
//! startup (its umask, its effective user, how long partial files are worth keeping).
//!
//! Invariants: the output directory is resolved by path exactly once, here (a symbolic link given on the
//! command line is the user's own choice and is followed); everything after goes through
//! [`Root::dir`]. Nothing here changes after startup, so sessions on several threads share it.

use std::fs::File;
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};

use super::Ttl;
use crate::Error;

/// The output directory and the receiver's own identity.
#[derive(Debug)]
pub struct Root {
    dir: File,
    /// The output directory as resolved at startup, for this host's own messages (never sent).
    shown: PathBuf,
    /// The umask, read once at startup.
    pub umask: u32,
    /// The effective user id: partial files are trusted only if they are this user's.
    pub euid: u32,
    /// How long an interrupted transfer's part may be resumed.
    pub ttl: Ttl,
}

impl Root {
    /// Open `path` as a directory.
    pub fn open(path: &Path, umask: u32, ttl: Ttl) -> Result<Root, Error> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let dir = match rustix::fs::open(path, flags, Mode::empty()) {
            Ok(fd) => File::from(fd),
            Err(rustix::io::Errno::NOTDIR) => return Err(Error::NotADirectory(path.to_path_buf())),
            Err(e) => {
                return Err(Error::io(format!("output directory {} is not usable", path.display()), e.into()))
            }
        };
        let shown = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let euid = rustix::process::geteuid().as_raw();
        Ok(Root { dir, shown, umask, euid, ttl })
    }

    /// The descriptor of the output directory.
    pub fn dir(&self) -> &File {
        &self.dir
    }

    /// The output directory as this host shows it (not for the sender).
    pub fn shown(&self) -> &Path {
        &self.shown
    }
}
