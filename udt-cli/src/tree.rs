//! What `udt send` sends: its arguments expanded into entries. A file argument is one file
//! entry under its own name (or `--as NAME`); a directory argument is a directory entry and,
//! depth first in name order, everything under it, with paths relative to the directory's
//! parent (`udt send photos` sends `photos`, `photos/a.jpg`, ...).
//!
//! Invariants: every path sent passes the receiver's rules (`protocol::check_path`) and appears
//! once; a directory comes before anything in it; symbolic links and special files (devices,
//! sockets, FIFOs) are skipped with a message on standard error, never followed; an entry whose
//! name would be refused is reported as failed and left out. Files are opened only when sent,
//! so a tree of any number of files needs no more than one open file.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::protocol::{self, Kind};
use crate::report::Report;

/// One entry to send.
#[derive(Clone, Debug)]
pub struct Entry {
    /// File or directory.
    pub kind: Kind,
    /// The path sent, `/`-separated.
    pub path: String,
    /// The path as printed.
    pub shown: String,
    /// Where it is read from.
    pub source: PathBuf,
    /// Bytes (0 for a directory).
    pub size: u64,
    /// Permission bits.
    pub mode: u32,
    /// Modification time: seconds and nanoseconds since the Unix epoch.
    pub mtime: (i64, u32),
}

/// Expand `args` (files and directories; `rename` renames the single argument) into entries,
/// reporting what cannot be sent to `report` (failures) or standard error (skipped links).
pub fn collect(args: &[PathBuf], rename: Option<&OsStr>, report: &mut Report) -> Vec<Entry> {
    let mut walk = Walk { entries: Vec::new(), paths: HashSet::new(), report };
    for path in args {
        let lossy = path.to_string_lossy();
        let shown = protocol::display_name(&lossy);
        let meta = match fs::symlink_metadata(path) {
            Ok(m) => m,
            Err(e) => {
                walk.report.failed(&lossy, &shown, &format!("cannot read it: {e}"));
                continue;
            }
        };
        // A link given by name is what the user means: follow it (only links met while
        // walking a directory are skipped).
        let meta = if meta.file_type().is_symlink() { fs::metadata(path).unwrap_or(meta) } else { meta };
        let Some(name) = rename.or_else(|| path.file_name()) else {
            walk.report.failed(
                &lossy,
                &shown,
                "has no name to send it under (give a path that ends in a name)",
            );
            continue;
        };
        let name = match protocol::check_name(name.as_bytes()) {
            Ok(n) => n.to_string(),
            Err(e) => {
                walk.report.failed(
                    &lossy,
                    &shown,
                    &format!("cannot be sent under this name: {e} (rename it with --as NAME)"),
                );
                continue;
            }
        };
        walk.visit(path, &meta, name);
    }
    walk.entries
}

struct Walk<'r> {
    entries: Vec<Entry>,
    paths: HashSet<String>,
    report: &'r mut Report,
}

impl Walk<'_> {
    /// Add `source` (whose metadata is `meta`) under the path `path`, and what is under it.
    fn visit(&mut self, source: &Path, meta: &fs::Metadata, path: String) {
        let shown = protocol::display_name(&path);
        if !self.paths.insert(path.clone()) {
            self.report.failed(
                &path,
                &shown,
                "another argument is sent under the same path; the receiver keeps one",
            );
            return;
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
            eprintln!("udt send: skipped {shown}: {what}");
            return;
        };
        let mtime = (meta.mtime(), u32::try_from(meta.mtime_nsec()).unwrap_or(protocol::NO_MTIME));
        let size = if kind == Kind::File { meta.len() } else { 0 };
        let mode = meta.mode() & 0o7777;
        self.entries.push(Entry {
            kind,
            path: path.clone(),
            shown,
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
            Err(e) => {
                self.report.failed(path, &protocol::display_name(path), &format!("cannot list it: {e}"));
                return;
            }
        };
        children.sort_by(|a, b| a.1.cmp(&b.1));
        for (child, name) in children {
            let child_path = format!("{path}/{}", String::from_utf8_lossy(name.as_bytes()));
            let shown = protocol::display_name(&child_path);
            if let Err(e) = protocol::check_name(name.as_bytes()) {
                self.report.failed(&child_path, &shown, &format!("cannot be sent under this name: {e}"));
                continue;
            }
            if child_path.len() > protocol::MAX_PATH_LEN {
                self.report.failed(&child_path, &shown, "path longer than 4096 bytes");
                continue;
            }
            match fs::symlink_metadata(&child) {
                Ok(meta) => self.visit(&child, &meta, child_path),
                Err(e) => self.report.failed(&child_path, &shown, &format!("cannot read it: {e}")),
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
        let mut report = Report::new("send", false);
        let entries = collect(std::slice::from_ref(&root), None, &mut report);
        let paths: Vec<_> = entries.iter().map(|e| (e.kind, e.path.as_str(), e.size)).collect();
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
        assert!(report.failures().is_empty());
        // The same file twice: once.
        let twice = collect(&[root.join("a.txt"), root.join("a.txt")], None, &mut report);
        assert_eq!(twice.len(), 1);
        assert_eq!(report.failures().len(), 1);
    }
}
