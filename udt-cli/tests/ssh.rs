//! `udt send PATH... HOST:DIR` and `udt recv HOST:PATH... DIR`: transfers whose far end is
//! started through ssh. Most tests use a fake `ssh` (a script that ignores the host and runs
//! the far command here, with `sh -c` as sshd would), so the whole flow runs fast and
//! deterministically; one runs against a real `sshd` on loopback with throw-away keys.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use common::data;

/// Deadline of any one child process.
const DEADLINE: Duration = Duration::from_secs(60);

/// The `udt` binary under test.
fn udt_path() -> &'static str {
    env!("CARGO_BIN_EXE_udt")
}

fn udt() -> Command {
    let mut c = Command::new(udt_path());
    c.env_remove("RUST_LOG").env_remove("UDT_CODE");
    c
}

/// What a finished child produced.
#[derive(Debug)]
struct Done {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

/// A child with its output collected on threads; killed on drop.
struct Running {
    child: Child,
    out: Option<thread::JoinHandle<String>>,
    err: Option<thread::JoinHandle<String>>,
}

impl Running {
    fn start(mut cmd: Command) -> Running {
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn");
        let collect = |mut r: Box<dyn Read + Send>| {
            thread::spawn(move || {
                let mut s = String::new();
                let _ = r.read_to_string(&mut s);
                s
            })
        };
        let out = collect(Box::new(child.stdout.take().unwrap()));
        let err = collect(Box::new(child.stderr.take().unwrap()));
        Running { child, out: Some(out), err: Some(err) }
    }

    fn wait(mut self) -> Done {
        let deadline = Instant::now() + DEADLINE;
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            assert!(Instant::now() < deadline, "a child ran past {DEADLINE:?}");
            thread::sleep(Duration::from_millis(10));
        };
        let stdout = self.out.take().unwrap().join().unwrap();
        let stderr = self.err.take().unwrap().join().unwrap();
        Done { status, stdout, stderr }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn run(cmd: Command) -> Done {
    Running::start(cmd).wait()
}

/// Write an executable script.
fn script(path: &Path, body: &str) -> PathBuf {
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_path_buf()
}

/// A fake ssh: logs its arguments to `log`, skips to `--`, drops the destination and runs the
/// far command here with `sh -c`, as sshd runs it through the user's shell. With `blocked`, the
/// port the far end announces is replaced by that one (nothing answers there).
fn fake_ssh(dir: &Path, blocked: Option<u16>) -> String {
    let log = dir.join("ssh.log");
    let announce = match blocked {
        Some(port) => format!(" | sed -u 's/^UDT-BOOTSTRAP 1 [0-9]*/UDT-BOOTSTRAP 1 {port}/'"),
        None => String::new(),
    };
    let body = format!(
        "#!/bin/sh\necho \"$@\" >> '{}'\nwhile [ \"$1\" != \"--\" ]; do shift; done\nshift; shift\n\
         sh -c \"$1\"{announce}\n",
        log.display()
    );
    let name = if blocked.is_some() { "blocked-ssh" } else { "fake-ssh" };
    script(&dir.join(name), &body).to_str().unwrap().to_string()
}

/// A tree with a nested file, an empty directory and a larger file.
fn make_tree(root: &Path) {
    std::fs::create_dir_all(root.join("tree/sub/deeper")).unwrap();
    std::fs::create_dir_all(root.join("tree/empty")).unwrap();
    std::fs::write(root.join("tree/a.txt"), b"alpha\n").unwrap();
    std::fs::write(root.join("tree/sub/c.txt"), b"see\n").unwrap();
    std::fs::write(root.join("tree/sub/deeper/big.bin"), data(3 << 20, 5)).unwrap();
    std::fs::write(root.join("single.txt"), b"one file\n").unwrap();
}

/// Every file and directory below `root`, with the files' contents.
fn contents(root: &Path) -> Vec<(String, Option<Vec<u8>>)> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                found.push((name, None));
                stack.push(path);
            } else {
                found.push((name, Some(std::fs::read(&path).unwrap())));
            }
        }
    }
    found.sort();
    found
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Push a tree and a file to `host:DIR` (created), then pull them back into a new directory:
/// both arrive exactly, the key never appears on a command line, and the far end's lines are
/// shown prefixed with the host.
#[test]
fn push_and_pull_a_tree_through_ssh() {
    let tmp = tempfile::tempdir().unwrap();
    let ssh = fake_ssh(tmp.path(), None);
    let src = tmp.path().join("src");
    make_tree(&src);
    let far = tmp.path().join("far dir/new");
    let mut push = udt();
    push.args(["send", "--ssh", &ssh, "--remote-udt", udt_path()])
        .arg(src.join("tree"))
        .arg(src.join("single.txt"))
        .arg(format!("localhost:{}", s(&far)));
    let pushed = run(push);
    assert!(pushed.status.success(), "{pushed:?}");
    assert!(pushed.stdout.contains("tree/sub/deeper/big.bin"), "{}", pushed.stdout);
    assert_eq!(contents(&far), contents(&src));

    let back = tmp.path().join("back");
    let mut pull = udt();
    pull.args(["recv", "--ssh", &ssh, "--remote-udt", udt_path(), "--json", "--rate", "2gbit"])
        .arg(format!("localhost:{}", s(&far.join("tree"))))
        .arg(format!("localhost:{}", s(&far.join("single.txt"))))
        .arg(&back);
    let pulled = run(pull);
    assert!(pulled.status.success(), "{pulled:?}");
    assert_eq!(contents(&back), contents(&src));
    let files: Vec<serde_json::Value> =
        pulled.stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(files.last().unwrap()["type"], "total", "{}", pulled.stdout);
    assert_eq!(files.last().unwrap()["ok"], 4, "{}", pulled.stdout);

    let log = std::fs::read_to_string(tmp.path().join("ssh.log")).unwrap();
    assert_eq!(log.lines().count(), 2, "{log}");
    assert!(log.lines().all(|l| l.contains("-- localhost ") && l.contains("--bootstrap")), "{log}");
    assert!(log.lines().nth(1).unwrap().contains("--rate 2000000000"), "the far sender's cap: {log}");
    assert!(!log.contains("udt-key"), "the key is on a command line: {log}");
}

/// A far host without `udt` (the far shell's exit status 127) is named with the fix.
#[test]
fn a_far_host_without_udt_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let ssh = fake_ssh(tmp.path(), None);
    std::fs::write(tmp.path().join("f"), b"x").unwrap();
    let mut push = udt();
    push.args(["send", "--ssh", &ssh, "--remote-udt", "/nonexistent/bin/udt"])
        .arg(tmp.path().join("f"))
        .arg("me@localhost:dir");
    let done = run(push);
    assert_eq!(done.status.code(), Some(1), "{done:?}");
    assert!(done.stderr.contains("has no `/nonexistent/bin/udt`"), "{}", done.stderr);
    assert!(done.stderr.contains("--remote-udt PATH"), "{}", done.stderr);
    assert_eq!(done.stderr.matches("error:").count(), 1, "{}", done.stderr);
}

/// The far end failing before it listens (its directory cannot be made), or after (a path
/// that does not exist there), is reported with its status and its own words.
#[test]
fn a_far_failure_is_reported_with_its_words() {
    let tmp = tempfile::tempdir().unwrap();
    let ssh = fake_ssh(tmp.path(), None);
    std::fs::write(tmp.path().join("plain"), b"a file where a directory should be").unwrap();
    let mut push = udt();
    push.args(["send", "--ssh", &ssh, "--remote-udt", udt_path()])
        .arg(tmp.path().join("plain"))
        .arg(format!("localhost:{}", s(&tmp.path().join("plain/sub"))));
    let done = run(push);
    assert_eq!(done.status.code(), Some(1), "{done:?}");
    assert!(
        done.stderr.contains("the far `udt recv` on localhost failed before it listened"),
        "{}",
        done.stderr
    );
    assert!(done.stderr.contains("cannot create the directory"), "{}", done.stderr);

    let mut pull = udt();
    pull.args(["recv", "--ssh", &ssh, "--remote-udt", udt_path()])
        .arg(format!("localhost:{}", s(&tmp.path().join("missing"))))
        .arg(tmp.path().join("back"));
    let done = run(pull);
    assert_eq!(done.status.code(), Some(1), "{done:?}");
    assert!(done.stderr.contains("localhost: udt send:"), "{}", done.stderr);
    assert!(done.stderr.contains("missing"), "{}", done.stderr);
}

/// A far port nothing answers on (UDP blocked in between) names the port and --port-range;
/// --port-range is what the far end listens in.
#[test]
fn a_blocked_port_names_the_port_and_the_range_is_used() {
    let tmp = tempfile::tempdir().unwrap();
    let unused = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let blocked = fake_ssh(tmp.path(), Some(unused));
    std::fs::write(tmp.path().join("f"), b"x").unwrap();
    let mut push = udt();
    push.args(["send", "--ssh", &blocked, "--remote-udt", udt_path()])
        .arg(tmp.path().join("f"))
        .arg(format!("127.0.0.1:{}", s(&tmp.path().join("out"))));
    let started = Instant::now();
    let done = run(push);
    assert_eq!(done.status.code(), Some(1), "{done:?}");
    assert!(done.stderr.contains(&format!("UDP port {unused}")), "{}", done.stderr);
    assert!(done.stderr.contains("--port-range LO-HI"), "{}", done.stderr);
    assert!(started.elapsed() < Duration::from_secs(15), "took {:?}", started.elapsed());

    let free = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let ssh = fake_ssh(tmp.path(), None);
    let mut push = udt();
    push.args(["send", "--ssh", &ssh, "--remote-udt", udt_path(), "-v", "--port-range"])
        .arg(format!("{free}-{free}"))
        .arg(tmp.path().join("f"))
        .arg(format!("127.0.0.1:{}", s(&tmp.path().join("out"))));
    let done = run(push);
    assert!(done.status.success(), "{done:?}");
    assert!(done.stderr.contains(&format!("port={free}")), "{}", done.stderr);
    assert_eq!(std::fs::read(tmp.path().join("out/f")).unwrap(), b"x");
}

/// `--bootstrap` by hand without a key on standard input refuses to run.
#[test]
fn the_far_end_needs_its_key_on_standard_input() {
    let tmp = tempfile::tempdir().unwrap();
    let mut c = udt();
    c.args(["recv", "--bootstrap", "-o"]).arg(tmp.path().join("not-made"));
    let done = run(c);
    assert_eq!(done.status.code(), Some(1), "{done:?}");
    assert!(done.stderr.contains("reads a key from standard input"), "{}", done.stderr);
    assert!(!tmp.path().join("not-made").exists());
    let mut c = udt();
    c.args(["send", "--bootstrap", "/etc/hostname"]);
    let done = run(c);
    assert_eq!(done.status.code(), Some(1), "{done:?}");
    assert!(done.stderr.contains("reads a key from standard input"), "{}", done.stderr);
}

/// A throw-away `sshd` on loopback: its own host key, one authorized client key, no PAM.
struct Sshd {
    _process: Running,
    dir: tempfile::TempDir,
    port: u16,
}

impl Sshd {
    /// Start one, or say why it cannot run here.
    fn start() -> Result<Sshd, String> {
        let sshd = Path::new("/usr/sbin/sshd");
        if !sshd.exists() {
            return Err("no /usr/sbin/sshd (Debian's openssh-server; scripts/test.sh installs it)".into());
        }
        let dir = tempfile::tempdir().unwrap();
        for key in ["host_key", "client_key"] {
            let made = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(dir.path().join(key))
                .stdin(Stdio::null())
                .output()
                .map_err(|e| format!("cannot run ssh-keygen: {e}"))?;
            if !made.status.success() {
                return Err(format!("ssh-keygen failed: {}", String::from_utf8_lossy(&made.stderr)));
            }
        }
        std::fs::copy(dir.path().join("client_key.pub"), dir.path().join("authorized_keys")).unwrap();
        if !Path::new("/run/sshd").exists() {
            std::fs::create_dir_all("/run/sshd").map_err(|e| format!("cannot create /run/sshd: {e}"))?;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let config = dir.path().join("sshd_config");
        std::fs::write(
            &config,
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\nAuthorizedKeysFile {d}/authorized_keys\n\
                 PidFile none\nStrictModes no\nUsePAM no\nPasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\nPubkeyAuthentication yes\nPermitRootLogin prohibit-password\n",
                d = dir.path().display()
            ),
        )
        .unwrap();
        let mut cmd = Command::new(sshd);
        cmd.args(["-D", "-e", "-f"]).arg(&config);
        let mut process = Running::start(cmd);
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(_)) = process.child.try_wait() {
                let err = process.err.take().unwrap().join().unwrap();
                return Err(format!("sshd exited at once: {err}"));
            }
            if Instant::now() > deadline {
                return Err("sshd did not listen within 10 s".into());
            }
            thread::sleep(Duration::from_millis(20));
        }
        Ok(Sshd { _process: process, dir, port })
    }

    /// `--ssh` for it.
    fn ssh(&self) -> String {
        format!(
            "ssh -F /dev/null -p {} -i {}/client_key -o IdentitiesOnly=yes -o BatchMode=yes \
             -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR",
            self.port,
            self.dir.path().display()
        )
    }
}

/// Whether any process's command line holds 64 hexadecimal digits in a row (a key).
fn key_in_process_list() -> Option<String> {
    let ps = Command::new("ps").args(["-eo", "args"]).output().ok()?;
    String::from_utf8_lossy(&ps.stdout)
        .lines()
        .find(|line| {
            let mut run = 0;
            line.bytes().any(|b| {
                run = if b.is_ascii_hexdigit() { run + 1 } else { 0 };
                run >= 64
            }) || line.contains("udt-key")
        })
        .map(str::to_string)
}

/// Against a real sshd on loopback: push a tree to `USER@127.0.0.1:DIR`, pull it back, a rerun
/// that skips, `--delete`, a far host without `udt`, and an interrupted push resumed; no key
/// ever shows in `ps`.
#[test]
fn a_real_sshd_on_loopback() {
    let sshd = match Sshd::start() {
        Ok(s) => s,
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    let user = String::from_utf8(Command::new("id").arg("-un").output().unwrap().stdout).unwrap();
    let user = user.trim();
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    make_tree(&src);
    let far = tmp.path().join("far");
    let ssh = sshd.ssh();
    let send = |files: &[PathBuf], dir: &Path, extra: &[&str]| {
        let mut c = udt();
        c.args(["send", "--ssh", &ssh, "--remote-udt", udt_path()]).args(extra).args(files);
        c.arg(format!("{user}@127.0.0.1:{}", s(dir)));
        c
    };

    let mut push = Running::start(send(&[src.join("tree"), src.join("single.txt")], &far, &[]));
    let mut leaked = None;
    while matches!(push.child.try_wait(), Ok(None)) && leaked.is_none() {
        leaked = key_in_process_list();
        thread::sleep(Duration::from_millis(20));
    }
    let pushed = push.wait();
    assert!(pushed.status.success(), "{pushed:?}");
    assert_eq!(leaked, None, "a key on a command line");
    assert_eq!(contents(&far), contents(&src));

    let back = tmp.path().join("back");
    let mut pull = udt();
    pull.args(["recv", "--ssh", &ssh, "--remote-udt", udt_path()])
        .arg(format!("{user}@127.0.0.1:{}", s(&far.join("tree"))))
        .arg(format!("{user}@127.0.0.1:{}", s(&far.join("single.txt"))))
        .arg(&back);
    let pulled = run(pull);
    assert!(pulled.status.success(), "{pulled:?}");
    assert_eq!(contents(&back), contents(&src));

    // A rerun: every file is there, identical: skipped, nothing moves.
    let again = run(send(&[src.join("tree"), src.join("single.txt")], &far, &[]));
    assert!(again.status.success(), "{again:?}");
    assert!(again.stdout.contains("4 skipped"), "{}", again.stdout);
    assert!(again.stdout.contains("0 B in"), "{}", again.stdout);

    // --delete through the real sshd: what the far tree holds beyond ours goes, nothing else.
    std::fs::write(far.join("tree/sub/stale.txt"), b"stale\n").unwrap();
    let pruned = run(send(&[src.join("tree")], &far, &["--delete"]));
    assert!(pruned.status.success(), "{pruned:?}");
    assert!(pruned.stdout.contains("deleted tree/sub/stale.txt"), "{}", pruned.stdout);
    assert!(!far.join("tree/sub/stale.txt").exists());
    assert_eq!(contents(&far), contents(&src));

    let mut none = udt();
    none.args(["send", "--ssh", &ssh, "--remote-udt", "/nonexistent/bin/udt"])
        .arg(src.join("single.txt"))
        .arg(format!("{user}@127.0.0.1:{}", s(&far)));
    let done = run(none);
    assert_eq!(done.status.code(), Some(1), "{done:?}");
    assert!(done.stderr.contains("has no `/nonexistent/bin/udt`"), "{}", done.stderr);

    // Interrupted (SIGINT, as Ctrl-C) in the middle, then run again: it resumes.
    let big = src.join("big.bin");
    std::fs::write(&big, data(24 << 20, 11)).unwrap();
    let resumed = tmp.path().join("resumed");
    let slow = ["--cc", "blast:rate=40m", "--peer-timeout", "2"];
    let push = Running::start(send(std::slice::from_ref(&big), &resumed, &slow));
    let partial = resumed.join(".big.bin.udt-partial");
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::fs::metadata(&partial).map_or(0, |m| m.len()) < 1 << 20 {
        assert!(Instant::now() < deadline, "no part arrived");
        thread::sleep(Duration::from_millis(20));
    }
    let pid = push.child.id().to_string();
    assert!(Command::new("kill").args(["-INT", &pid]).status().unwrap().success());
    let stopped = push.wait();
    assert_eq!(stopped.status.code(), Some(130), "{stopped:?}");
    let held = std::fs::metadata(&partial).map(|m| m.len()).unwrap_or(0);
    assert!(held > 0 && held < 24 << 20, "{held} bytes held");
    let again = run(send(std::slice::from_ref(&big), &resumed, &[]));
    assert!(again.status.success(), "{again:?}");
    assert!(again.stderr.contains("resuming"), "{}", again.stderr);
    assert!(std::fs::read(resumed.join("big.bin")).unwrap() == data(24 << 20, 11), "differs");
}

/// rsync's habits: a rerun skips identical files (and says so, in text and JSON); a changed
/// file of the same size is refused unless --force; --update keeps newer files and replaces
/// older ones; --ignore-existing keeps them all; --exclude leaves names out.
#[test]
fn reruns_skip_identical_files_and_follow_rsyncs_flags() {
    let tmp = tempfile::tempdir().unwrap();
    let ssh = fake_ssh(tmp.path(), None);
    let src = tmp.path().join("src");
    make_tree(&src);
    let far = tmp.path().join("far");
    let push = |extra: &[&str]| {
        let mut c = udt();
        c.args(["send", "--ssh", &ssh, "--remote-udt", udt_path()]).args(extra).arg(src.join("tree"));
        c.arg(format!("localhost:{}", s(&far)));
        run(c)
    };
    assert!(push(&["--exclude", "*.bin", "--exclude", "empty/"]).status.success());
    assert!(far.join("tree/a.txt").exists() && far.join("tree/sub/c.txt").exists());
    assert!(!far.join("tree/sub/deeper/big.bin").exists() && !far.join("tree/empty").exists());

    let again = push(&["--json"]);
    assert!(again.status.success(), "{again:?}");
    let lines: Vec<serde_json::Value> =
        again.stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let status = |name: &str| {
        let line = lines.iter().find(|l| l["name"] == name).unwrap_or_else(|| panic!("{}", again.stdout));
        (line["status"].as_str().unwrap().to_string(), line["reason"].as_str().unwrap_or("").to_string())
    };
    assert_eq!(status("tree/a.txt"), ("skipped".into(), "identical (same size and BLAKE3)".into()));
    assert_eq!(status("tree/sub/deeper/big.bin").0, "ok");
    let total = lines.last().unwrap();
    assert_eq!((total["skipped"].as_u64(), total["failed"].as_u64()), (Some(2), Some(0)), "{total}");
    let text = push(&[]);
    assert!(text.stdout.contains("tree/a.txt: skipped, identical"), "{}", text.stdout);
    assert!(text.stdout.contains("3 skipped"), "{}", text.stdout);

    // The same size, other bytes: refused without --force, replaced with it.
    std::fs::write(src.join("tree/a.txt"), b"ALPHA\n").unwrap();
    let refused = push(&[]);
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    assert!(refused.stderr.contains("exists and differs"), "{}", refused.stderr);
    assert_eq!(std::fs::read(far.join("tree/a.txt")).unwrap(), b"alpha\n");
    assert!(push(&["--ignore-existing"]).status.success());
    assert_eq!(std::fs::read(far.join("tree/a.txt")).unwrap(), b"alpha\n");
    // The far copy is older: --update replaces it; then the far copy is newer: kept.
    let old = std::time::SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options().write(true).open(far.join("tree/a.txt")).unwrap().set_modified(old).unwrap();
    let updated = push(&["--update"]);
    assert!(updated.status.success(), "{updated:?}");
    assert_eq!(std::fs::read(far.join("tree/a.txt")).unwrap(), b"ALPHA\n");
    std::fs::write(src.join("tree/a.txt"), b"changed again\n").unwrap();
    std::fs::File::options().write(true).open(src.join("tree/a.txt")).unwrap().set_modified(old).unwrap();
    let kept = push(&["--update"]);
    assert!(kept.status.success(), "{kept:?}");
    assert!(kept.stdout.contains("as new or newer (--update)"), "{}", kept.stdout);
    assert_eq!(std::fs::read(far.join("tree/a.txt")).unwrap(), b"ALPHA\n");
    assert!(push(&["--force"]).status.success());
    assert_eq!(std::fs::read(far.join("tree/a.txt")).unwrap(), b"changed again\n");
}
