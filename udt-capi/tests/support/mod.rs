//! What the C and C++ tests share: finding the library cargo built for this test run,
//! compiling C and C++ sources against `include/` with it, and running peer processes that
//! print `READY <port>` and `DONE key=value ...` lines (interop/README.md).

#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};

/// The crate's directory.
pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The directory of this test's executable, where cargo put the library's `cdylib` and
/// `staticlib` for this run (`target/<profile>/deps`).
pub fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap().to_path_buf();
    for name in ["libudt_capi.so", "libudt_capi.a"] {
        assert!(deps.join(name).exists(), "{} is missing next to the test executable", name);
    }
    deps
}

/// Why the C/C++ tests cannot run here (`None`: they can): no C++ compiler.
pub fn missing_compiler() -> Option<String> {
    match Command::new("g++").arg("--version").stdout(Stdio::null()).status() {
        Ok(s) if s.success() => None,
        _ => Some("g++ is not installed (apt-get install g++)".to_string()),
    }
}

/// Compile `sources` with `compiler` (`gcc`/`g++`) against `include/` into `out`, linking the
/// shared library (`static_link`: the static one).
pub fn compile(compiler: &str, sources: &[&Path], out: &Path, flags: &[&str], static_link: bool) {
    let lib = lib_dir();
    let mut cmd = Command::new(compiler);
    cmd.args(flags).arg("-O2").arg("-Wall").arg("-Wextra").arg("-pthread");
    cmd.arg("-I").arg(crate_dir().join("include")).args(sources).arg("-o").arg(out);
    if static_link {
        cmd.arg(lib.join("libudt_capi.a")).args(["-lpthread", "-ldl", "-lm"]);
    } else {
        cmd.arg("-L").arg(&lib).arg("-ludt_capi").arg(format!("-Wl,-rpath,{}", lib.display()));
    }
    let result = cmd.output().unwrap_or_else(|e| panic!("cannot run {compiler}: {e}"));
    assert!(
        result.status.success(),
        "{compiler} failed for {}:\n{}",
        out.display(),
        String::from_utf8_lossy(&result.stderr)
    );
}

/// A peer process, killed when dropped.
pub struct Peer {
    child: Child,
    out: BufReader<ChildStdout>,
    name: String,
}

impl Peer {
    /// Start an interoperability peer `path` with `args` (and `--timeout 30`).
    pub fn spawn(path: &Path, args: &[&str]) -> Peer {
        Peer::spawn_plain(path, &[args, &["--timeout", "30"]].concat())
    }

    /// Start `path` with `args`.
    pub fn spawn_plain(path: &Path, args: &[&str]) -> Peer {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let mut child = Command::new(path)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", path.display()));
        let out = BufReader::new(child.stdout.take().unwrap());
        Peer { child, out, name }
    }

    /// The next output line starting with `prefix`, as `key=value` fields (a bare word after
    /// the prefix is field "0").
    pub fn line(&mut self, prefix: &str) -> HashMap<String, String> {
        let mut line = String::new();
        loop {
            line.clear();
            let n = self.out.read_line(&mut line).unwrap();
            assert!(n > 0, "{} ended without printing {prefix}", self.name);
            if let Some(rest) = line.trim().strip_prefix(prefix) {
                let mut fields = HashMap::new();
                for (i, word) in rest.split_whitespace().enumerate() {
                    match word.split_once('=') {
                        Some((k, v)) => fields.insert(k.to_string(), v.to_string()),
                        None => fields.insert(i.to_string(), word.to_string()),
                    };
                }
                return fields;
            }
        }
    }

    /// The port of the `READY` line.
    pub fn ready_port(&mut self) -> u16 {
        self.line("READY").get("0").unwrap().parse().unwrap()
    }

    /// Wait for the exit; it must be a success.
    pub fn finish(mut self) {
        let status = self.child.wait().unwrap();
        assert!(status.success(), "{} exited with {status}", self.name);
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
