//! What a sender sends: the paths it is given expanded into entries ([`Plan`]). A file is one
//! file entry under its own name (or the one given instead, `udt send --as NAME`); a directory
//! is a directory entry and, depth first in name order, everything under it, with paths
//! relative to the directory's parent (sending `photos` sends `photos`, `photos/a.jpg`, ...).
//!
//! Invariants: every path sent passes the receiver's rules (`protocol::check_path`) and appears
//! once; a directory comes before anything in it; symbolic links and special files (devices,
//! sockets, FIFOs) are skipped ([`Event::Skipped`]), never followed; an entry whose name would
//! be refused is reported as failed ([`Event::FileFailed`]) and left out. Files are opened only
//! when sent, so a tree of any number of files needs no more than one open file.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::exclude::Exclude;
use crate::protocol::{self, Kind};
use crate::{Event, Observer};

/// One entry to send.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Entry {
    /// File or directory.
    pub kind: Kind,
    /// The path sent, `/`-separated.
    pub path: String,
    /// Where it is read from.
    pub source: PathBuf,
    /// Bytes (0 for a directory).
    pub size: u64,
    /// Permission bits.
    pub mode: u32,
    /// Modification time: seconds and nanoseconds since the Unix epoch.
    pub mtime: (i64, u32),
}

/// What a sender sends: the entries, in order, and the paths that cannot be sent.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    entries: Vec<Entry>,
    failed: Vec<String>,
}

impl Plan {
    /// Expand `paths` (files and directories; `rename` renames a single one) into entries,
    /// telling `observer` what cannot be sent ([`Event::FileFailed`]) or is skipped
    /// ([`Event::Skipped`]).
    pub fn collect(paths: &[PathBuf], rename: Option<&OsStr>, observer: &mut dyn Observer) -> Plan {
        Plan::collect_excluding(paths, rename, &Exclude::default(), observer)
    }

    /// As [`Plan::collect`], leaving out what `exclude` matches (silently, with everything
    /// under an excluded directory).
    pub fn collect_excluding(
        paths: &[PathBuf],
        rename: Option<&OsStr>,
        exclude: &Exclude,
        observer: &mut dyn Observer,
    ) -> Plan {
        let mut walk = Walk { plan: Plan::default(), paths: HashSet::new(), exclude, observer };
        for path in paths {
            walk.argument(path, rename);
        }
        walk.plan
    }

    /// The entries, in the order they are sent.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The paths that cannot be sent (already told to the observer).
    pub fn failed(&self) -> &[String] {
        &self.failed
    }

    /// The files the transfer is about: the file entries and the paths that cannot be sent.
    pub fn files(&self) -> usize {
        self.entries.iter().filter(|e| e.kind == Kind::File).count() + self.failed.len()
    }
}

struct Walk<'o> {
    plan: Plan,
    paths: HashSet<String>,
    exclude: &'o Exclude,
    observer: &'o mut dyn Observer,
}

impl Walk<'_> {
    /// `path` cannot be sent, for `reason`.
    fn failed(&mut self, path: &str, reason: &str) {
        self.plan.failed.push(path.to_string());
        self.observer.event(Event::FileFailed { path, reason });
    }

    /// Add the argument `path`, sent under its own name or `rename`.
    fn argument(&mut self, path: &Path, rename: Option<&OsStr>) {
        let lossy = path.to_string_lossy();
        let meta = match fs::symlink_metadata(path) {
            Ok(m) => m,
            Err(e) => return self.failed(&lossy, &format!("cannot read it: {e}")),
        };
        // A link given by name is what the user means: follow it (only links met while
        // walking a directory are skipped).
        let meta = if meta.file_type().is_symlink() { fs::metadata(path).unwrap_or(meta) } else { meta };
        let Some(name) = rename.or_else(|| path.file_name()) else {
            return self.failed(&lossy, "has no name to send it under (give a path that ends in a name)");
        };
        let name = match protocol::check_name(name.as_bytes()) {
            Ok(n) => n.to_string(),
            Err(e) => {
                return self.failed(
                    &lossy,
                    &format!("cannot be sent under this name: {e} (rename it with --as NAME)"),
                )
            }
        };
        self.visit(path, &meta, name);
    }

    /// Add `source` (whose metadata is `meta`) under the path `path`, and what is under it.
    fn visit(&mut self, source: &Path, meta: &fs::Metadata, path: String) {
        if self.exclude.matches(&path, meta.is_dir()) {
            return;
        }
        if !self.paths.insert(path.clone()) {
            return self
                .failed(&path, "another argument is sent under the same path; the receiver keeps one");
        }
        let kind = if meta.is_dir() {
            Kind::Dir
        } else if meta.is_file() {
            Kind::File
        } else {
            let what = if meta.file_type().is_symlink() {
                "a symbolic link (not followed)"
            } else {
                "not a regular file"
            };
            self.observer.event(Event::Skipped { path: &path, what });
            return;
        };
        let mtime = (meta.mtime(), u32::try_from(meta.mtime_nsec()).unwrap_or(protocol::NO_MTIME));
        let size = if kind == Kind::File { meta.len() } else { 0 };
        let mode = meta.mode() & 0o7777;
        self.plan.entries.push(Entry {
            kind,
            path: path.clone(),
            source: source.to_path_buf(),
            size,
            mode,
            mtime,
        });
        if kind == Kind::Dir {
            self.visit_children(source, &path);
        }
    }

    fn visit_children(&mut self, dir: &Path, path: &str) {
        let mut children: Vec<(PathBuf, std::ffi::OsString)> = match fs::read_dir(dir) {
            Ok(rd) => rd.filter_map(Result::ok).map(|e| (e.path(), e.file_name())).collect(),
            Err(e) => return self.failed(path, &format!("cannot list it: {e}")),
        };
        children.sort_by(|a, b| a.1.cmp(&b.1));
        for (child, name) in children {
            let child_path = format!("{path}/{}", String::from_utf8_lossy(name.as_bytes()));
            if let Err(e) = protocol::check_name(name.as_bytes()) {
                self.failed(&child_path, &format!("cannot be sent under this name: {e}"));
                continue;
            }
            if child_path.len() > protocol::MAX_PATH_LEN {
                self.failed(&child_path, "path longer than 4096 bytes");
                continue;
            }
            match fs::symlink_metadata(&child) {
                Ok(meta) => self.visit(&child, &meta, child_path),
                Err(e) => self.failed(&child_path, &format!("cannot read it: {e}")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_is_walked_in_order_with_links_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("top");
        fs::create_dir_all(root.join("sub/deeper")).unwrap();
        fs::write(root.join("b.txt"), "b").unwrap();
        fs::write(root.join("a.txt"), "aa").unwrap();
        fs::write(root.join("sub/deeper/c"), "ccc").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", root.join("link")).unwrap();
        let mut skipped = Vec::new();
        let plan = Plan::collect(std::slice::from_ref(&root), None, &mut |e: Event<'_>| {
            if let Event::Skipped { path, .. } = e {
                skipped.push(path.to_string());
            }
        });
        let paths: Vec<_> = plan.entries().iter().map(|e| (e.kind, e.path.as_str(), e.size)).collect();
        assert_eq!(
            paths,
            [
                (Kind::Dir, "top", 0),
                (Kind::File, "top/a.txt", 2),
                (Kind::File, "top/b.txt", 1),
                (Kind::Dir, "top/sub", 0),
                (Kind::Dir, "top/sub/deeper", 0),
                (Kind::File, "top/sub/deeper/c", 3),
            ]
        );
        assert!(plan.failed().is_empty());
        assert_eq!(skipped, ["top/link"]);
        assert_eq!(plan.files(), 3);
        // The same file twice: once.
        let twice = Plan::collect(&[root.join("a.txt"), root.join("a.txt")], None, &mut crate::Ignore);
        assert_eq!(twice.entries().len(), 1);
        assert_eq!(twice.failed(), ["a.txt"], "reported under the path it would be sent as");
    }
}
