//! Which file a server may send for a requested name: the one place that keeps a server inside
//! what its user chose to serve.
//!
//! A server serves either a directory (any regular file under it, by its relative path) or one
//! file (only that file, by its name). A request is refused, with a one-line reason, when it is
//! empty, too long, holds a NUL or control character, is absolute, has a `..` component, names
//! something that is not a regular file, or resolves (through symbolic links) outside the
//! served directory. The reference servers open whatever path they are sent; ours never does.
//! All three protocols' servers open what they send through [`open`].

use std::fs::File;
use std::path::{Component, Path, PathBuf};

use crate::storage::FileSource;

/// Longest request name accepted, in bytes (RBUDP's request field is 256 bytes).
pub const MAX_NAME: usize = 4096;

/// Resolve `requested` against `served` (a directory or a single file) to the file to open.
pub fn resolve(served: &Path, requested: &str) -> Result<PathBuf, String> {
    let shown = requested.escape_debug().to_string();
    if requested.is_empty() || requested.len() > MAX_NAME {
        return Err(format!("{shown:.80}: not a file name"));
    }
    if requested.chars().any(char::is_control) {
        return Err(format!("{shown:.80}: control characters in the name"));
    }
    let rel = Path::new(requested);
    for component in rel.components() {
        match component {
            Component::Normal(_) | Component::CurDir => {}
            Component::ParentDir => return Err(format!("{shown}: `..` leaves the served directory")),
            Component::RootDir | Component::Prefix(_) => {
                return Err(format!("{shown}: absolute paths are not served"))
            }
        }
    }
    let meta = std::fs::metadata(served).map_err(|e| format!("{}: {e}", served.display()))?;
    let (root, candidate) = if meta.is_dir() {
        (served.to_path_buf(), served.join(rel))
    } else {
        let name = served.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let asked: PathBuf = rel.components().filter(|c| *c != Component::CurDir).collect();
        if asked != Path::new(&name) {
            return Err(format!("{shown}: not served (this server sends only {name})"));
        }
        (served.parent().map(Path::to_path_buf).unwrap_or_default(), served.to_path_buf())
    };
    let root = std::fs::canonicalize(if root.as_os_str().is_empty() { Path::new(".") } else { &root })
        .map_err(|e| format!("{}: {e}", root.display()))?;
    let real = std::fs::canonicalize(&candidate).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!("{shown}: no such file"),
        _ => format!("{shown}: {e}"),
    })?;
    if !real.starts_with(&root) {
        return Err(format!("{shown}: resolves outside the served directory"));
    }
    let meta = std::fs::metadata(&real).map_err(|e| format!("{shown}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("{shown}: not a regular file"));
    }
    Ok(real)
}

/// Open the file `requested` names under `served` (by [`resolve`]) as the source to send, or
/// say why not in one line for the peer. The opened file is checked again, so a name swapped
/// for something else between resolving and opening is not sent.
pub fn open(served: &Path, requested: &str) -> Result<FileSource, String> {
    let shown = requested.escape_debug();
    let real = resolve(served, requested)?;
    let file = File::open(&real).map_err(|e| format!("{shown}: cannot open: {e}"))?;
    match file.metadata() {
        Ok(meta) if meta.is_file() => {}
        Ok(_) => return Err(format!("{shown}: not a regular file")),
        Err(e) => return Err(format!("{shown}: {e}")),
    }
    FileSource::new(file).map_err(|e| format!("{shown}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_serves_its_files_and_nothing_outside() {
        let top = tempfile::tempdir().unwrap();
        let served = top.path().join("served");
        std::fs::create_dir_all(served.join("sub dir")).unwrap();
        std::fs::write(served.join("sub dir/é.bin"), b"x").unwrap();
        std::fs::write(top.path().join("secret"), b"s").unwrap();
        std::os::unix::fs::symlink(top.path().join("secret"), served.join("link")).unwrap();

        assert!(resolve(&served, "sub dir/é.bin").unwrap().ends_with("sub dir/é.bin"));
        assert!(resolve(&served, "./sub dir/é.bin").is_ok());
        for (bad, why) in [
            ("../secret", "`..`"),
            ("sub dir/../../secret", "`..`"),
            ("/etc/passwd", "absolute"),
            ("link", "outside"),
            ("sub dir", "not a regular file"),
            ("missing", "no such file"),
            ("", "not a file name"),
            ("a\nb", "control"),
        ] {
            let err = resolve(&served, bad).unwrap_err();
            assert!(err.contains(why), "{bad:?}: {err}");
        }
    }

    #[test]
    fn a_single_file_serves_only_itself() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("one.bin"), b"1").unwrap();
        std::fs::write(dir.path().join("other.bin"), b"2").unwrap();
        let served = dir.path().join("one.bin");
        assert!(resolve(&served, "one.bin").is_ok());
        assert!(resolve(&served, "./one.bin").is_ok());
        assert!(resolve(&served, "other.bin").unwrap_err().contains("sends only one.bin"));
    }

    #[test]
    fn open_gives_the_source_or_one_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f.bin"), b"12345").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let source = open(dir.path(), "f.bin").unwrap();
        assert_eq!(crate::storage::Source::len(&source), 5);
        assert!(open(dir.path(), "sub").err().unwrap().contains("not a regular file"));
        assert!(open(dir.path(), "../f.bin").err().unwrap().contains("`..`"));
    }
}
