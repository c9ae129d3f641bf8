//! End-to-end tests of the `udt` binary over loopback (127.0.0.1 only). Every child process is
//! killed if it outlives its deadline (and when its handle is dropped).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use common::data;
use udt::{Options, UdtStream};

/// Deadline of any one child process.
const DEADLINE: Duration = Duration::from_secs(30);

/// "At once" for a refusal or an interruption told to the peer: well under the peer and
/// handshake timeouts (10 s) that would end a command nobody told, with room for a loaded
/// machine's process starts and key exchanges.
const AT_ONCE: Duration = Duration::from_secs(8);

fn udt() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_udt"));
    c.env_remove("RUST_LOG");
    // Both ends of every transfer here are secured with the same code phrase (the tool's
    // default is secure; the connecting end must be given the listening end's code).
    c.env("UDT_CODE", TEST_CODE);
    c
}

/// The code phrase both ends of a test's transfers use.
const TEST_CODE: &str = "4242-test-code-phrase";

/// A running child whose output is collected; killed on drop.
struct Proc {
    child: Child,
    name: String,
    stdout: Option<JoinHandle<Vec<u8>>>,
    stdout_lines: mpsc::Receiver<String>,
    stderr_lines: mpsc::Receiver<String>,
    stderr: Option<JoinHandle<String>>,
}

/// What a finished child produced.
#[derive(Debug)]
struct Done {
    status: ExitStatus,
    stdout: Vec<u8>,
    stderr: String,
}

impl Done {
    fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
}

impl Proc {
    /// Spawn `cmd` with piped stdout and stderr (stdin as the caller set it, else null).
    fn spawn(name: &str, mut cmd: Command, stdin: Stdio) -> Proc {
        cmd.stdin(stdin).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn udt");
        let out = child.stdout.take().unwrap();
        let (tx, stdout_lines) = mpsc::channel();
        let stdout = thread::spawn(move || {
            let mut v = Vec::new();
            let mut out = BufReader::new(out);
            loop {
                let start = v.len();
                match out.read_until(b'\n', &mut v) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let _ = tx.send(String::from_utf8_lossy(&v[start..]).trim_end().to_string());
                    }
                }
            }
            v
        });
        let err = child.stderr.take().unwrap();
        let (tx, stderr_lines) = mpsc::channel();
        let stderr = thread::spawn(move || {
            let mut all = String::new();
            for line in BufReader::new(err).lines() {
                let Ok(line) = line else { break };
                all.push_str(&line);
                all.push('\n');
                let _ = tx.send(line);
            }
            all
        });
        Proc {
            child,
            name: name.into(),
            stdout: Some(stdout),
            stdout_lines,
            stderr_lines,
            stderr: Some(stderr),
        }
    }

    /// Wait (at most `limit`) for a line of standard error containing `needle`; returns it.
    fn stderr_line(&mut self, needle: &str, limit: Duration) -> Option<String> {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stderr_lines.recv_timeout(left) {
                Ok(line) if line.contains(needle) => return Some(line),
                Ok(_) => {}
                Err(_) => return None,
            }
        }
    }

    /// Wait for a `listening on ADDR` line on standard output and return ADDR.
    fn stdout_listening_addr(&mut self) -> SocketAddr {
        let deadline = Instant::now() + Duration::from_secs(10);
        let line = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stdout_lines.recv_timeout(left) {
                Ok(line) if line.contains("listening on ") => break line,
                Ok(_) => {}
                Err(_) => panic!("{}: no `listening on` line", self.name),
            }
        };
        let rest = line.split("listening on ").nth(1).unwrap();
        rest.split([',', ' ']).next().unwrap().parse().unwrap()
    }

    /// Send SIGINT (as Ctrl-C would).
    fn interrupt(&self) {
        common::interrupt(&self.child);
    }

    /// Wait for a `listening on ADDR` line on stderr and return ADDR.
    fn listening_addr(&mut self) -> SocketAddr {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .stderr_lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("{}: no `listening on` line", self.name));
            if let Some(rest) = line.split("listening on ").nth(1) {
                let addr = rest.split([',', ' ']).next().unwrap();
                return addr.parse().unwrap_or_else(|_| panic!("bad address in {line:?}"));
            }
        }
    }

    /// Wait for the exit, at most `DEADLINE`; kill and panic after that.
    fn wait(mut self) -> Done {
        let deadline = Instant::now() + DEADLINE;
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                let err = self.stderr.take().unwrap().join().unwrap_or_default();
                panic!("{} did not finish within {DEADLINE:?}; stderr:\n{err}", self.name);
            }
            thread::sleep(Duration::from_millis(10));
        };
        let stdout = self.stdout.take().unwrap().join().unwrap();
        let stderr = self.stderr.take().unwrap().join().unwrap();
        Done { status, stdout, stderr }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Run `cmd` to completion (stdin null) under the deadline.
fn run(name: &str, cmd: Command) -> Done {
    Proc::spawn(name, cmd, Stdio::null()).wait()
}

/// Start `udt recv` on an ephemeral loopback port; returns it and its address.
fn start_recv(out: &Path, extra: &[&str]) -> (Proc, SocketAddr) {
    let mut cmd = udt();
    cmd.args(["recv", "--listen", "127.0.0.1:0", "--out"]).arg(out).args(extra);
    let mut p = Proc::spawn("udt recv", cmd, Stdio::null());
    let addr = p.listening_addr();
    (p, addr)
}

fn send_cmd(files: &[&Path], addr: SocketAddr) -> Command {
    let mut cmd = udt();
    cmd.arg("send").args(files).arg(addr.to_string());
    cmd
}

/// The secret of the key file the tests' keyed ends share.
const KEY_SECRET: &str = "a secret shared by the test's ends";

/// Write the shared key file into `dir`; its path.
fn write_key(dir: &Path) -> String {
    let key = dir.join("key");
    std::fs::write(&key, KEY_SECRET).unwrap();
    key.to_str().unwrap().to_string()
}

/// Start a `udt recv --keep-listening --key-file KEY` (plus `extra`) into `out`.
fn start_keyed_recv(out: &Path, key: &str, extra: &[&str]) -> (Proc, SocketAddr) {
    let mut cmd = udt();
    cmd.env_remove("UDT_CODE").args([
        "recv",
        "--listen",
        "127.0.0.1:0",
        "--keep-listening",
        "--key-file",
        key,
    ]);
    cmd.args(extra).arg("--out").arg(out);
    let mut p = Proc::spawn("udt recv", cmd, Stdio::null());
    let addr = p.listening_addr();
    (p, addr)
}

/// Files left in `dir` (names).
fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn send_recv_several_files_verified() {
    let src = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(src.path().join("a/b")).unwrap();
    let files = [
        ("empty", Vec::new()),
        ("small.txt", b"hello, udt\n".to_vec()),
        ("big.bin", data(50 << 20, 7)),
        ("a/b/c.txt", data(100_000, 9)),
    ];
    for (name, content) in &files {
        std::fs::write(src.path().join(name), content).unwrap();
    }
    let paths: Vec<_> = files.iter().map(|(n, _)| src.path().join(n)).collect();
    let path_refs: Vec<&Path> = paths.iter().map(|p| p.as_path()).collect();

    let (recv, addr) = start_recv(out.path(), &[]);
    let sent = run("udt send", send_cmd(&path_refs, addr));
    let received = recv.wait();
    assert!(sent.status.success(), "send failed: {}", sent.stderr);
    assert!(received.status.success(), "recv failed: {}", received.stderr);

    for (name, content) in &files {
        let base = Path::new(name).file_name().unwrap();
        let got = std::fs::read(out.path().join(base)).unwrap();
        assert!(got == *content, "{name} differs");
    }
    assert_eq!(listing(out.path()), ["big.bin", "c.txt", "empty", "small.txt"]);
    let summary = sent.stdout_text();
    assert_eq!(summary.matches("blake3 ok").count(), 4, "{summary}");
    assert!(summary.contains("big.bin: 50.0 MiB in"), "{summary}");
    assert_eq!(received.stdout_text().matches("blake3 ok").count(), 4);
}

#[test]
fn refuses_to_overwrite_without_force() {
    let src = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let file = src.path().join("x.txt");
    std::fs::write(&file, "new").unwrap();
    std::fs::write(out.path().join("x.txt"), "old").unwrap();

    let (recv, addr) = start_recv(out.path(), &[]);
    let sent = run("udt send", send_cmd(&[&file], addr));
    let received = recv.wait();
    assert_eq!(sent.status.code(), Some(1), "{sent:?}");
    // Of the same size: compared, and it differs.
    assert!(
        sent.stderr.contains("x.txt") && sent.stderr.contains("exists and differs; use --force"),
        "{}",
        sent.stderr
    );
    assert_eq!(received.status.code(), Some(1));
    assert_eq!(std::fs::read_to_string(out.path().join("x.txt")).unwrap(), "old");
    assert_eq!(listing(out.path()), ["x.txt"], "no partial file left");

    let (recv, addr) = start_recv(out.path(), &["--force"]);
    let sent = run("udt send", send_cmd(&[&file], addr));
    let received = recv.wait();
    assert!(sent.status.success(), "{}", sent.stderr);
    assert!(received.status.success(), "{}", received.stderr);
    assert_eq!(std::fs::read_to_string(out.path().join("x.txt")).unwrap(), "new");
}

/// Headers go ahead of the answers (udt-transfer/PROTOCOL.md): a refused first file, then an accepted one,
/// then another; the stream stays in step and the two accepted files arrive intact.
#[test]
fn a_refused_file_between_accepted_ones_keeps_the_stream_in_step() {
    let src = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let names = ["a.bin", "b.bin", "c.bin"];
    let paths: Vec<_> = names.iter().map(|n| src.path().join(n)).collect();
    for (i, p) in paths.iter().enumerate() {
        std::fs::write(p, data(200_000 + i * 1000, i as u64)).unwrap();
    }
    std::fs::write(out.path().join("a.bin"), "old").unwrap();

    let (recv, addr) = start_recv(out.path(), &[]);
    let refs: Vec<&Path> = paths.iter().map(|p| p.as_path()).collect();
    let sent = run("udt send", send_cmd(&refs, addr));
    let received = recv.wait();
    assert_eq!(sent.status.code(), Some(1), "{sent:?}");
    assert!(sent.stderr.contains("a.bin") && sent.stderr.contains("exists"), "{}", sent.stderr);
    assert!(sent.stderr.contains("1 of 3 files failed"), "{}", sent.stderr);
    assert_eq!(received.status.code(), Some(1));
    assert_eq!(std::fs::read_to_string(out.path().join("a.bin")).unwrap(), "old");
    for (i, n) in names.iter().enumerate().skip(1) {
        assert_eq!(std::fs::read(out.path().join(n)).unwrap(), data(200_000 + i * 1000, i as u64), "{n}");
    }
    assert_eq!(listing(out.path()), ["a.bin", "b.bin", "c.bin"], "no partial file left");
}

fn read_status(s: &mut UdtStream) -> (u8, String) {
    let mut head = [0u8; 3];
    s.read_exact(&mut head).unwrap();
    let mut msg = vec![0u8; u16::from_le_bytes([head[1], head[2]]) as usize];
    s.read_exact(&mut msg).unwrap();
    (head[0], String::from_utf8(msg).unwrap())
}

/// A hand-made sender of the file protocol (version 4), for what `udt send` would not send.
struct RawSender {
    s: UdtStream,
    /// Entries announced so far.
    announced: u32,
}

impl RawSender {
    /// Connect, check the receiver's greeting, announce `count` files; the session is accepted.
    fn start(addr: SocketAddr, count: u32) -> RawSender {
        let options = Options {
            read_timeout: Some(Duration::from_secs(10)),
            security: Some(udt::secure::Credential::CodePhrase(TEST_CODE.into())),
            ..Options::default()
        };
        let mut s = UdtStream::connect_with(addr, options).unwrap();
        let mut header = Vec::new();
        header.extend_from_slice(b"UDTF");
        header.extend_from_slice(&4u16.to_le_bytes());
        header.extend_from_slice(&0u16.to_le_bytes());
        header.extend_from_slice(&count.to_le_bytes());
        s.write_all(&header).unwrap();
        let mut hello = [0u8; 8];
        s.read_exact(&mut hello).unwrap();
        assert_eq!(&hello[..6], b"UDTR\x04\x00", "the receiver's greeting");
        assert_eq!(read_status(&mut s), (0, String::new()), "session accepted");
        RawSender { s, announced: 0 }
    }

    /// Announce a file; returns the receiver's answer.
    fn announce(&mut self, name: &[u8], size: u64) -> (u8, String) {
        self.announced += 1;
        let mut fh = vec![b'H', 0u8];
        fh.extend_from_slice(&(name.len() as u16).to_le_bytes());
        fh.extend_from_slice(name);
        fh.extend_from_slice(&size.to_le_bytes());
        fh.extend_from_slice(&0o644u32.to_le_bytes());
        fh.extend_from_slice(&0i64.to_le_bytes());
        fh.extend_from_slice(&u32::MAX.to_le_bytes());
        self.s.write_all(&fh).unwrap();
        read_status(&mut self.s)
    }

    /// Send an accepted file's data in chunks of at most 1000 bytes, then `hash`; returns the
    /// verdict.
    fn data(&mut self, content: &[u8], hash: [u8; 32]) -> (u8, String) {
        self.s.write_all(b"D").unwrap();
        self.s.write_all(&(self.announced - 1).to_le_bytes()).unwrap();
        self.s.write_all(&0u64.to_le_bytes()).unwrap();
        for chunk in content.chunks(1000) {
            self.s.write_all(&(chunk.len() as u32).to_le_bytes()).unwrap();
            self.s.write_all(chunk).unwrap();
        }
        self.s.write_all(&hash).unwrap();
        read_status(&mut self.s)
    }
}

/// A hand-made sender naming files the receiver must refuse (outside `--out`, `.`, `..`, NUL,
/// a bidirectional override): each is refused on its own, while ordinary names with dots in
/// the same session are stored byte for byte; then a file with a wrong hash is refused and
/// nothing is left behind.
#[test]
fn receiver_refuses_bad_names_per_file() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let (recv, addr) = start_recv(&out, &[]);

    let bad: [&[u8]; 8] = [
        b"../evil",
        b"/tmp/evil-absolute",
        b"sub/../../evil",
        b"..",
        b".",
        b"nul\0byte",
        "evil\u{202e}txt.exe".as_bytes(),
        b"tab\there",
    ];
    let good: [(&[u8], Vec<u8>); 2] = [(b"backup..2024.txt", data(3000, 1)), (b"wait...txt", data(10, 2))];
    let mut raw = RawSender::start(addr, (bad.len() + good.len() + 1) as u32);
    let mut messages = Vec::new();
    for (i, name) in bad.iter().enumerate() {
        let (code, msg) = raw.announce(name, 5);
        assert_eq!(code, 1, "{} accepted", String::from_utf8_lossy(name));
        assert!(msg.contains("file name"), "{msg}");
        messages.push(msg);
        // Interleave the good names with the bad ones.
        if let Some((name, content)) = good.get(i) {
            assert_eq!(raw.announce(name, content.len() as u64), (0, String::new()));
            assert_eq!(raw.data(content, *blake3::hash(content).as_bytes()), (0, String::new()));
        }
    }
    let (dotdot, dot) = (&messages[3], &messages[4]);
    assert!(dotdot.contains("\"..\"") && dot.contains("\".\"") && dot != dotdot, "{dot} / {dotdot}");
    assert!(!dot.contains("\"..\""), "{dot}");
    assert!(messages[6].contains("\\u{202e}"), "the override is escaped: {}", messages[6]);
    // A well-named file whose hash does not match its bytes: refused, nothing left behind.
    assert_eq!(raw.announce(b"bad-hash.txt", 5), (0, String::new()), "a plain name is accepted");
    let (code, msg) = raw.data(b"hello", [0u8; 32]);
    assert_eq!(code, 1);
    assert!(msg.contains("BLAKE3 mismatch"), "{msg}");
    raw.s.write_all(b"E").unwrap();
    raw.s.close().unwrap();

    let received = recv.wait();
    assert_eq!(received.status.code(), Some(1));
    assert!(received.stderr.contains("9 of 11 files failed"), "{}", received.stderr);
    assert!(received.stderr.contains("../evil"), "{}", received.stderr);
    assert!(!received.stderr.contains('\u{202e}'), "a bidi override printed raw: {}", received.stderr);
    for (name, content) in &good {
        let got = std::fs::read(out.join(String::from_utf8_lossy(name).as_ref())).unwrap();
        assert!(got == *content, "{} differs", String::from_utf8_lossy(name));
    }
    assert_eq!(listing(&out), ["backup..2024.txt", "wait...txt"]);
    assert_eq!(listing(root.path()), ["out"]);
    assert!(!Path::new("/tmp/evil-absolute").exists());
}

/// `udt send` itself: names with dots arrive; names it cannot send (a tab, not UTF-8) are
/// refused one by one while the rest of the batch goes; `--as` renames; a multi-file send
/// prints a total; `-q` keeps the summaries.
#[test]
fn sender_names_per_file_and_rename() {
    use std::os::unix::ffi::OsStrExt;
    let src = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let a = src.path().join("backup..2024.txt");
    let b = src.path().join("wait...txt");
    let tab = src.path().join("tab\there");
    let latin1 = src.path().join(std::ffi::OsStr::from_bytes(b"caf\xe9.txt"));
    std::fs::write(&a, data(70_000, 4)).unwrap();
    std::fs::write(&b, data(3, 5)).unwrap();
    std::fs::write(&tab, "t").unwrap();
    std::fs::write(&latin1, "l").unwrap();

    let (recv, addr) = start_recv(out.path(), &[]);
    let mut cmd = udt();
    cmd.arg("-q").arg("send").args([&tab, &a, &latin1, &b]).arg(addr.to_string());
    let sent = run("udt send", cmd);
    let received = recv.wait();
    assert_eq!(sent.status.code(), Some(1), "{sent:?}");
    assert!(received.status.success(), "{}", received.stderr);
    assert!(
        sent.stderr.contains("tab\\there") && sent.stderr.contains("control character"),
        "{}",
        sent.stderr
    );
    assert!(sent.stderr.contains("not valid UTF-8"), "{}", sent.stderr);
    assert!(sent.stderr.contains("2 of 4 files failed"), "{}", sent.stderr);
    let stdout = sent.stdout_text();
    assert_eq!(stdout.matches("blake3 ok").count(), 2, "-q keeps the summaries: {stdout}");
    assert!(stdout.contains("total: 4 files") && stdout.contains("2 of 4 failed"), "{stdout}");
    assert_eq!(std::fs::read(out.path().join("backup..2024.txt")).unwrap(), data(70_000, 4));
    assert_eq!(std::fs::read(out.path().join("wait...txt")).unwrap(), data(3, 5));
    assert_eq!(listing(out.path()), ["backup..2024.txt", "wait...txt"]);

    // --as: one file under another name.
    let (recv, addr) = start_recv(out.path(), &[]);
    let mut cmd = udt();
    cmd.arg("send").arg(&latin1).arg(addr.to_string()).args(["--as", "cafe.txt"]);
    let sent = run("udt send --as", cmd);
    let received = recv.wait();
    assert!(sent.status.success(), "{}", sent.stderr);
    assert!(received.status.success(), "{}", received.stderr);
    assert_eq!(std::fs::read(out.path().join("cafe.txt")).unwrap(), b"l");

    // --as with two files is a usage error, before anything is tried.
    let mut cmd = udt();
    cmd.arg("send").args([&a, &b]).arg("127.0.0.1:9").args(["--as", "x"]);
    let done = run("udt send --as", cmd);
    assert_eq!(done.status.code(), Some(2), "{done:?}");
    assert!(done.stderr.contains("--as"), "{}", done.stderr);
}

/// `udt cat --listen` and `udt cat HOST:PORT` joined by pipes, both directions.
#[test]
fn cat_round_trip_through_pipes() {
    let mut listen_cmd = udt();
    listen_cmd.args(["cat", "--listen", "127.0.0.1:0"]);
    let mut listener = Proc::spawn("udt cat --listen", listen_cmd, Stdio::piped());
    let addr = listener.listening_addr();
    let reply = b"pong from the listener\n".to_vec();
    let mut listener_in = listener.child.stdin.take().unwrap();

    let mut send_cmd = udt();
    send_cmd.args(["cat", &addr.to_string()]);
    let mut sender = Proc::spawn("udt cat", send_cmd, Stdio::piped());
    let payload = data(5 << 20, 3);
    let mut sender_in = sender.child.stdin.take().unwrap();
    let feed = {
        let payload = payload.clone();
        thread::spawn(move || {
            sender_in.write_all(&payload).unwrap();
        })
    };
    listener_in.write_all(&reply).unwrap();
    drop(listener_in);
    feed.join().unwrap();

    let sent = sender.wait();
    let received = listener.wait();
    assert!(sent.status.success(), "sender: {}", sent.stderr);
    assert!(received.status.success(), "listener: {}", received.stderr);
    assert_eq!(received.stdout.len(), payload.len());
    assert!(received.stdout == payload, "data differs");
    assert_eq!(sent.stdout, reply);
}

#[test]
fn perf_self_json() {
    let mut cmd = udt();
    cmd.args(["perf", "--self", "--time", "2", "--json"]);
    let done = run("udt perf --self", cmd);
    assert!(done.status.success(), "{}", done.stderr);
    let v: serde_json::Value = serde_json::from_slice(&done.stdout).expect("one JSON object");
    let bytes = v["summary"]["bytes"].as_u64().unwrap();
    assert!(bytes > 0);
    assert_eq!(v["summary"]["receiver"]["bytes"].as_u64(), Some(bytes));
    assert!(v["summary"]["gbps"].as_f64().unwrap() > 0.0);
    assert!(v["summary"]["cpu_user_s"].is_number());
    let intervals = v["intervals"].as_array().unwrap();
    assert!(intervals.len() >= 2, "{intervals:?}");
    assert!(intervals[0]["streams"][0]["rtt_ms"].is_number());
}

#[test]
fn no_listener_is_a_clear_failure() {
    // A port nobody listens on: bind one, note it, free it.
    let port = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let file = tempfile::NamedTempFile::new().unwrap();
    let start = Instant::now();
    let mut cmd = udt();
    cmd.arg("send").arg(file.path()).arg(format!("127.0.0.1:{port}"));
    let done = run("udt send", cmd);
    assert_eq!(done.status.code(), Some(1), "{done:?}");
    assert!(done.stderr.contains(&format!("cannot connect to 127.0.0.1:{port}")), "{}", done.stderr);
    assert!(start.elapsed() < Duration::from_secs(10));

    let mut cmd = udt();
    cmd.args(["cat", &format!("127.0.0.1:{port}")]);
    let done = run("udt cat", cmd);
    assert_eq!(done.status.code(), Some(1), "{done:?}");
    assert!(done.stderr.contains("cannot connect"), "{}", done.stderr);
}

#[test]
fn bad_arguments_exit_2() {
    for args in [
        &["frobnicate"][..],
        &["send", "only-one-argument"],
        &["send", "file", "host-without-port"],
        &["recv", "--listen", "not an address"],
        &["cat"],
        &["perf", "--time", "2"],
        &["perf", "--self", "--parallel", "0"],
        &[],
    ] {
        let done = run("udt", {
            let mut c = udt();
            c.args(args);
            c
        });
        assert_eq!(done.status.code(), Some(2), "udt {args:?}: {done:?}");
        assert!(!done.stderr.is_empty());
    }
}

#[test]
fn help_documents_exit_status() {
    let mut cmd = udt();
    cmd.arg("--help");
    let done = run("udt --help", cmd);
    assert!(done.status.success());
    let help = done.stdout_text();
    for needle in ["send", "recv", "cat", "perf", "Exit status", "2  usage error", "130  interrupted"] {
        assert!(help.contains(needle), "{needle} missing from:\n{help}");
    }
}

#[test]
fn missing_file_fails_before_connecting() {
    let dir = tempfile::tempdir().unwrap();
    // A port that would see the connection request, had one been sent.
    let peer = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    peer.set_nonblocking(true).unwrap();
    let mut cmd = udt();
    cmd.arg("send").arg(dir.path().join("nope")).arg(peer.local_addr().unwrap().to_string());
    let done = run("udt send", cmd);
    assert_eq!(done.status.code(), Some(1));
    assert!(done.stderr.contains("cannot read"), "{}", done.stderr);
    let mut buf = [0u8; 2048];
    let heard = peer.recv_from(&mut buf);
    assert!(
        heard.as_ref().is_err_and(|e| e.kind() == std::io::ErrorKind::WouldBlock),
        "it should not have tried to connect: {heard:?}"
    );
}

#[test]
fn sim_lists_scenarios_and_runs_one_deterministically() {
    let mut cmd = udt();
    cmd.args(["sim", "list"]);
    let done = run("udt sim list", cmd);
    assert!(done.status.success(), "{}", done.stderr);
    let list = String::from_utf8_lossy(&done.stdout);
    for name in ["fig4-2", "fig4-3", "fig4-4", "fig4-6", "fig4-15", "fig4-16", "custom"] {
        assert!(list.contains(name), "{name} missing from: {list}");
    }
    let json = || {
        let mut cmd = udt();
        cmd.args([
            "sim", "custom", "--bw", "100", "--rtt", "10", "--flows", "2", "--time", "10", "--seed", "7",
            "--json",
        ]);
        let done = run("udt sim custom", cmd);
        assert!(done.status.success(), "{}", done.stderr);
        serde_json::from_slice::<serde_json::Value>(&done.stdout).expect("one JSON object")
    };
    let (a, b) = (json(), json());
    // Same seed, same run: the trace hash and every measure agree (wall-clock fields differ).
    for key in ["trace_hash", "utilization", "fairness", "stability", "loss_rate", "flows"] {
        assert_eq!(a["runs"][0][key], b["runs"][0][key], "{key}");
    }
    assert!(a["runs"][0]["utilization"].as_f64().unwrap() > 0.5);
    let text = a.to_string();
    for key in ["utilization", "efficiency", "fairness", "stability", "loss_rate"] {
        assert!(text.contains(key), "{key} missing from {text}");
    }
    let mut cmd = udt();
    cmd.args(["sim", "no-such-scenario"]);
    let done = run("udt sim no-such-scenario", cmd);
    assert_eq!(done.status.code(), Some(2), "a usage error");
    assert!(done.stderr.contains("udt sim list"), "{}", done.stderr);
}

#[test]
fn sim_takes_catalog_specifications_and_sweeps() {
    // The catalog's vocabulary, not the simulator's former private names.
    let custom = |cc: &str| {
        let mut cmd = udt();
        cmd.args(["sim", "custom", "--bw", "10", "--rtt", "10", "--time", "1", "--json", "--cc", cc]);
        run("udt sim custom --cc", cmd)
    };
    let done = custom("thesis:noisy=true");
    assert!(done.status.success(), "{}", done.stderr);
    let json: serde_json::Value = serde_json::from_slice(&done.stdout).expect("one JSON object");
    assert_eq!(json["runs"][0]["params"]["cc"], "daimd:noisy=true", "the canonical name");
    // A receiver standing in for UDT4's: the run says so, and the sender learns from UDT4's
    // reports only (`copa` then reads its queue from the RTT the ACKs carry).
    let mut cmd = udt();
    cmd.args(["sim", "custom", "--bw", "10", "--rtt", "10", "--time", "1", "--json", "--udt4-receiver"]);
    let done = run("udt sim custom --udt4-receiver", cmd);
    assert!(done.status.success(), "{}", done.stderr);
    let json: serde_json::Value = serde_json::from_slice(&done.stdout).expect("one JSON object");
    assert_eq!(json["runs"][0]["params"]["udt4_receivers"], true);
    let mut cmd = udt();
    cmd.args(["sim", "sweep", "--count", "1", "--udt4-receiver"]);
    let done = run("udt sim sweep --udt4-receiver", cmd);
    assert!(!done.status.success() && done.stderr.contains("does not apply to the sweep"), "{}", done.stderr);
    let done = custom("udt+noisy");
    assert_eq!(done.status.code(), Some(2), "a usage error");
    assert!(done.stderr.contains("udt cc list"), "{}", done.stderr);
    // A tiny sweep: one JSON object with every scenario, the table on standard error.
    let mut cmd = udt();
    cmd.args(["sim", "sweep", "--count", "2", "--seed", "3", "--max-packets", "50000", "--json"]);
    let done = run("udt sim sweep", cmd);
    assert!(done.status.success(), "{}", done.stderr);
    let json: serde_json::Value = serde_json::from_slice(&done.stdout).expect("one JSON object");
    assert_eq!(json["scenarios"].as_array().map(Vec::len), Some(2));
    assert_eq!(json["cc"], udt_sim::CcChoice::default_cc().label().as_str());
    assert!(done.stderr.contains("median"), "{}", done.stderr);
    let mut cmd = udt();
    cmd.args(["sim", "sweep", "--count", "2", "--bw", "10"]);
    let done = run("udt sim sweep --bw", cmd);
    assert_eq!(done.status.code(), Some(2), "a usage error");
    assert!(done.stderr.contains("--bw"), "{}", done.stderr);
}

/// Start `udt perf server` on an ephemeral loopback port; returns it and its address.
fn start_perf_server(extra: &[&str]) -> (Proc, SocketAddr) {
    let mut cmd = udt();
    if extra.contains(&"--insecure") {
        cmd.env_remove("UDT_CODE");
    }
    cmd.args(["perf", "server", "--listen", "127.0.0.1:0"]).args(extra);
    let mut p = Proc::spawn("udt perf server", cmd, Stdio::null());
    // With --json, standard output carries nothing but JSON lines.
    let addr = if extra.contains(&"--json") { p.listening_addr() } else { p.stdout_listening_addr() };
    (p, addr)
}

/// A `udt send` that reaches a `udt perf server` fails at once and says so; so does a
/// `udt perf client` that reaches a `udt recv`.
#[test]
fn wrong_service_fails_at_once() {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), b"content").unwrap();
    let (server, addr) = start_perf_server(&["--insecure"]);
    let start = Instant::now();
    let mut cmd = send_cmd(&[file.path()], addr);
    cmd.env_remove("UDT_CODE").arg("--insecure");
    let sent = run("udt send", cmd);
    let took = start.elapsed();
    assert_eq!(sent.status.code(), Some(1), "{sent:?}");
    let expected = format!("the peer at {addr} is not a `udt recv` (it is a `udt perf server`)");
    assert!(sent.stderr.contains(&expected), "{}", sent.stderr);
    assert!(took < AT_ONCE, "took {took:?}");
    drop(server);

    // A secured `udt send` says the perf server does not encrypt.
    let (server, addr) = start_perf_server(&["--insecure"]);
    let sent = run("udt send", send_cmd(&[file.path()], addr));
    assert_eq!(sent.status.code(), Some(1), "{sent:?}");
    assert!(sent.stderr.contains("the peer does not encrypt"), "{}", sent.stderr);
    drop(server);

    let out = tempfile::tempdir().unwrap();
    let mut cmd = udt();
    cmd.env_remove("UDT_CODE")
        .args(["recv", "--listen", "127.0.0.1:0", "--insecure", "--out"])
        .arg(out.path());
    let mut recv = Proc::spawn("udt recv", cmd, Stdio::null());
    let addr = recv.listening_addr();
    let mut cmd = udt();
    cmd.env_remove("UDT_CODE").args(["perf", "client", &addr.to_string(), "--time", "1", "--insecure"]);
    let start = Instant::now();
    let client = run("udt perf client", cmd);
    assert_eq!(client.status.code(), Some(1), "{client:?}");
    let expected = format!("the peer at {addr} is not a `udt perf server` (it is a `udt recv`)");
    assert!(client.stderr.contains(&expected), "{}", client.stderr);
    assert!(start.elapsed() < AT_ONCE, "took {:?}", start.elapsed());
    // The receiver refuses it and goes on listening for a `udt send`.
    let refused = recv.stderr_line("still listening", Duration::from_secs(10)).expect("a refusal");
    assert!(refused.contains("not a `udt send`"), "{refused}");
    assert!(recv.child.try_wait().unwrap().is_none(), "the receiver still runs");
    assert!(listing(out.path()).is_empty());
}

/// `udt send` to a `udt cat --listen`: the sender fails at once, cat refuses the stream and
/// writes none of it.
#[test]
fn send_to_cat_fails_and_cat_writes_nothing() {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), data(100_000, 8)).unwrap();
    let mut cmd = udt();
    cmd.args(["cat", "--listen", "127.0.0.1:0"]);
    let mut cat = Proc::spawn("udt cat --listen", cmd, Stdio::null());
    let addr = cat.listening_addr();
    let start = Instant::now();
    let sent = run("udt send", send_cmd(&[file.path()], addr));
    let took = start.elapsed();
    let catted = cat.wait();
    assert_eq!(sent.status.code(), Some(1), "{sent:?}");
    assert!(sent.stderr.contains(&format!("the peer at {addr} is not a `udt recv`")), "{}", sent.stderr);
    assert!(took < AT_ONCE, "took {took:?}");
    assert_eq!(catted.status.code(), Some(1), "{catted:?}");
    assert!(catted.stderr.contains("the peer is a `udt send`"), "{}", catted.stderr);
    assert!(catted.stdout.is_empty(), "cat wrote {} bytes", catted.stdout.len());
    assert!(!catted.stdout_text().contains("UDTF"));
}

/// Every line of `--json` output parses, on both ends of a transfer and of `perf`, and the
/// two ends of `perf` share one schema.
#[test]
fn json_output_parses_line_by_line() {
    let src = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let files =
        [("one.bin", data(123_456, 11)), ("two.txt", b"two\n".to_vec()), ("old.txt", b"new".to_vec())];
    for (name, content) in &files {
        std::fs::write(src.path().join(name), content).unwrap();
    }
    std::fs::write(out.path().join("old.txt"), "old").unwrap();
    let paths: Vec<_> = files.iter().map(|(n, _)| src.path().join(n)).collect();
    let refs: Vec<&Path> = paths.iter().map(|p| p.as_path()).collect();

    let (recv, addr) = start_recv(out.path(), &["--json"]);
    let mut cmd = send_cmd(&refs, addr);
    cmd.arg("--json");
    let sent = run("udt send --json", cmd);
    let received = recv.wait();
    assert_eq!(sent.status.code(), Some(1), "{sent:?}");
    assert_eq!(received.status.code(), Some(1), "{received:?}");
    for (who, done) in [("send", &sent), ("recv", &received)] {
        let lines: Vec<serde_json::Value> = done
            .stdout_text()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{who}: {e}: {l:?}")))
            .collect();
        assert_eq!(lines.len(), 4, "{who}: {lines:?}");
        // One line per file as each is decided (a refusal before the files still in flight).
        for (name, content) in &files {
            let line = lines.iter().find(|l| l["name"] == *name).unwrap_or_else(|| panic!("{who}: {name}"));
            assert_eq!(line["type"], "file", "{who}");
            if *name == "old.txt" {
                assert_eq!(line["status"], "error", "{who}");
                assert!(line["reason"].as_str().unwrap().contains("exists"), "{who}: {line}");
                assert!(line["blake3"].is_null());
            } else {
                assert_eq!(line["status"], "ok", "{who}");
                assert_eq!(line["bytes"].as_u64(), Some(content.len() as u64), "{who}");
                assert_eq!(
                    line["blake3"].as_str().unwrap(),
                    blake3::hash(content).to_hex().as_str(),
                    "{who}"
                );
                assert!(line["seconds"].is_number() && line["bits_per_second"].is_number(), "{who}");
            }
        }
        let total = &lines[3];
        assert_eq!(total["type"], "total", "{who}");
        assert_eq!(
            (total["files"].as_u64(), total["ok"].as_u64(), total["failed"].as_u64()),
            (Some(3), Some(2), Some(1))
        );
        assert_eq!(total["bytes"].as_u64(), Some(123_456 + 4), "{who}");
        assert_eq!(total["status"], "error");
    }
    assert_eq!(std::fs::read(out.path().join("one.bin")).unwrap(), files[0].1);

    // perf: the server's line and the client's line have the same fields.
    let (server, addr) = start_perf_server(&["-1", "--json"]);
    let mut cmd = udt();
    cmd.args(["perf", "client", &addr.to_string(), "--time", "1", "--json"]);
    let client = run("udt perf client --json", cmd);
    let server = server.wait();
    assert!(client.status.success(), "{}", client.stderr);
    assert!(server.status.success(), "{}", server.stderr);
    let one_line = |done: &Done| -> serde_json::Value {
        let text = done.stdout_text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1, "{text}");
        serde_json::from_str(lines[0]).unwrap()
    };
    let (c, s) = (one_line(&client), one_line(&server));
    assert_eq!(c["role"], "client");
    assert_eq!(s["role"], "server");
    let keys = |v: &serde_json::Value| -> Vec<String> {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    for pointer in ["", "/start", "/summary", "/intervals/0", "/intervals/0/streams/0", "/summary/streams/0"]
    {
        let (cv, sv) = (c.pointer(pointer).unwrap(), s.pointer(pointer).unwrap());
        assert_eq!(keys(cv), keys(sv), "{pointer}");
    }
    assert!(c["summary"]["bytes"].as_u64().unwrap() > 0);
    assert!(s["summary"]["bytes"].as_u64().unwrap() > 0);
}

/// `perf -q`: the summary without the interval lines.
#[test]
fn perf_quiet_hides_intervals() {
    let mut cmd = udt();
    cmd.args(["-q", "perf", "--self", "--time", "1"]);
    let done = run("udt -q perf --self", cmd);
    assert!(done.status.success(), "{}", done.stderr);
    let text = done.stdout_text();
    assert!(text.contains("bytes in") && text.contains("receiver:"), "{text}");
    assert!(!text.contains("Period"), "interval lines with -q: {text}");
}

/// A sparse file of `len` bytes (nothing written to disk).
fn sparse(path: &Path, len: u64) {
    std::fs::File::create(path).unwrap().set_len(len).unwrap();
}

/// A sender queued behind another transfer says it waits, and its reported time leaves the
/// wait out.
#[test]
fn queued_sender_says_it_waits() {
    let src = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let big = src.path().join("big.bin");
    sparse(&big, 40 << 20);
    let small = src.path().join("small.txt");
    std::fs::write(&small, data(1000, 3)).unwrap();

    // A receiver that serves several senders shares a key file with them.
    let key = write_key(src.path());
    let key = key.as_str();
    let (mut recv, addr) = start_keyed_recv(out.path(), key, &["--max-transfers", "1"]);
    // About 3 s at 100 Mbit/s.
    let mut cmd = send_cmd(&[&big], addr);
    cmd.env_remove("UDT_CODE").args(["--cc", "blast:rate=100m", "--key-file", key]);
    let first = Proc::spawn("udt send (first)", cmd, Stdio::null());
    assert!(
        recv.stderr_line("big.bin:", Duration::from_secs(10)).is_some(),
        "no progress from the first transfer"
    );
    let start = Instant::now();
    let mut cmd = send_cmd(&[&small], addr);
    cmd.env_remove("UDT_CODE").args(["--json", "--key-file", key]);
    let second = run("udt send (second)", cmd);
    let waited = start.elapsed();
    let first = first.wait();
    assert!(first.status.success(), "{}", first.stderr);
    assert!(second.status.success(), "{}", second.stderr);
    assert!(
        second.stderr.contains("waiting for the receiver (busy with another transfer)"),
        "{}",
        second.stderr
    );
    let line: serde_json::Value = serde_json::from_str(second.stdout_text().lines().next().unwrap()).unwrap();
    let secs = line["seconds"].as_f64().unwrap();
    assert!(waited > Duration::from_millis(500), "it did not wait: {waited:?}");
    assert!(secs < waited.as_secs_f64() / 2.0, "{secs} s reported after waiting {waited:?}");
    assert_eq!(std::fs::read(out.path().join("small.txt")).unwrap(), data(1000, 3));
    assert_eq!(std::fs::metadata(out.path().join("big.bin")).unwrap().len(), 40 << 20);
}

/// A file that shrinks while being sent: the sender aborts it with the reason, the receiver
/// prints that reason at once, and the next file of the batch still arrives.
#[test]
fn sender_side_failure_is_reported_by_the_receiver_at_once() {
    let src = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let big = src.path().join("shrinks.bin");
    sparse(&big, 1 << 30);
    let after = src.path().join("after.txt");
    std::fs::write(&after, data(5000, 6)).unwrap();

    let (mut recv, addr) = start_recv(out.path(), &[]);
    let mut cmd = send_cmd(&[&big, &after], addr);
    cmd.args(["--cc", "blast:rate=200m"]);
    let sender = Proc::spawn("udt send", cmd, Stdio::null());
    assert!(recv.stderr_line("shrinks.bin:", Duration::from_secs(10)).is_some(), "no progress");
    std::fs::File::options().write(true).open(&big).unwrap().set_len(0).unwrap();
    let start = Instant::now();
    let line = recv.stderr_line("the file shrank", Duration::from_secs(10));
    let took = start.elapsed();
    assert!(line.is_some(), "the receiver did not report the sender's failure");
    assert!(took < Duration::from_secs(5), "reported after {took:?}");
    let sent = sender.wait();
    let received = recv.wait();
    assert_eq!(sent.status.code(), Some(1), "{sent:?}");
    assert!(sent.stderr.contains("the file shrank while being sent"), "{}", sent.stderr);
    assert_eq!(received.status.code(), Some(1), "{received:?}");
    assert_eq!(std::fs::read(out.path().join("after.txt")).unwrap(), data(5000, 6));
    assert_eq!(listing(out.path()), ["after.txt"], "no partial file left");
}

/// Ctrl-C (SIGINT) exits with status 130: an idle `recv`, `cat --listen` and `perf server`; a
/// `send` in the middle of a file (the receiver is told at once and keeps nothing); a `recv` in
/// the middle of a file (the sender is told at once); a `perf client` in the middle of a test.
#[test]
fn interrupt_exits_130_and_tells_the_peer() {
    let out = tempfile::tempdir().unwrap();
    let (recv, _) = start_recv(out.path(), &[]);
    let mut cmd = udt();
    cmd.args(["cat", "--listen", "127.0.0.1:0"]);
    let mut cat = Proc::spawn("udt cat --listen", cmd, Stdio::null());
    cat.listening_addr();
    let (server, _) = start_perf_server(&[]);
    for p in [recv, cat, server] {
        p.interrupt();
        let done = p.wait();
        assert_eq!(done.status.code(), Some(130), "{done:?}");
        assert!(done.stderr.contains("interrupted"), "{}", done.stderr);
    }

    let src = tempfile::tempdir().unwrap();
    let big = src.path().join("big.bin");
    sparse(&big, 1 << 30);
    // The sender is interrupted.
    let (mut recv, addr) = start_recv(out.path(), &[]);
    let mut cmd = send_cmd(&[&big], addr);
    cmd.args(["--cc", "blast:rate=200m"]);
    let sender = Proc::spawn("udt send", cmd, Stdio::null());
    assert!(recv.stderr_line("big.bin:", Duration::from_secs(10)).is_some(), "no progress");
    sender.interrupt();
    let start = Instant::now();
    let line = recv.stderr_line("the sender was interrupted", Duration::from_secs(10));
    assert!(line.is_some() && start.elapsed() < AT_ONCE, "{line:?} after {:?}", start.elapsed());
    let sent = sender.wait();
    let received = recv.wait();
    assert_eq!(sent.status.code(), Some(130), "{sent:?}");
    assert_eq!(received.status.code(), Some(1), "{received:?}");
    // Nothing under the final name; what arrived waits, hidden, for a resume.
    assert_eq!(listing(out.path()), [".big.bin.udt-partial"]);

    // The receiver is interrupted.
    let (mut recv, addr) = start_recv(out.path(), &[]);
    let mut cmd = send_cmd(&[&big], addr);
    cmd.args(["--cc", "blast:rate=200m"]);
    let mut sender = Proc::spawn("udt send", cmd, Stdio::null());
    assert!(recv.stderr_line("big.bin:", Duration::from_secs(10)).is_some(), "no progress");
    recv.interrupt();
    let start = Instant::now();
    let line =
        sender.stderr_line("the receiver stopped: the receiver was interrupted", Duration::from_secs(10));
    assert!(line.is_some() && start.elapsed() < AT_ONCE, "{line:?} after {:?}", start.elapsed());
    let sent = sender.wait();
    let received = recv.wait();
    assert_eq!(received.status.code(), Some(130), "{received:?}");
    assert_eq!(sent.status.code(), Some(1), "{sent:?}");
    assert_eq!(listing(out.path()), [".big.bin.udt-partial"]);

    // perf client in the middle of a test.
    let (server, addr) = start_perf_server(&[]);
    let mut cmd = udt();
    cmd.args(["perf", "client", &addr.to_string(), "--time", "20", "-b", "100m"]);
    let client = Proc::spawn("udt perf client", cmd, Stdio::null());
    assert!(client.stdout_lines.recv_timeout(Duration::from_secs(10)).is_ok(), "the client did not start");
    client.interrupt();
    let done = client.wait();
    assert_eq!(done.status.code(), Some(130), "{done:?}");
    drop(server);
}

/// `udt recv` without a credential shows a fresh code phrase; `udt send` with it transfers; a
/// wrong code fails on both ends with a message and leaves no file; a sender without any
/// credential is a usage error.
#[test]
fn code_phrases_secure_transfers_by_default() {
    let src = tempfile::tempdir().unwrap();
    let file = src.path().join("secret.txt");
    std::fs::write(&file, data(300_000, 21)).unwrap();

    let out = tempfile::tempdir().unwrap();
    let mut cmd = udt();
    cmd.env_remove("UDT_CODE").args(["recv", "--listen", "127.0.0.1:0", "--out"]).arg(out.path());
    let mut recv = Proc::spawn("udt recv", cmd, Stdio::null());
    let addr = recv.listening_addr();
    let line = recv.stderr_line("code phrase ", Duration::from_secs(10)).expect("a code phrase line");
    let code = line.split("code phrase ").nth(1).unwrap().split(';').next().unwrap().to_string();
    assert_eq!(code.split('-').count(), 4, "{line}");
    let mut cmd = send_cmd(&[&file], addr);
    cmd.env_remove("UDT_CODE").args(["--code", &code]);
    let sent = run("udt send", cmd);
    assert!(sent.status.success(), "{}", sent.stderr);
    assert!(recv.wait().status.success());
    assert_eq!(std::fs::read(out.path().join("secret.txt")).unwrap(), data(300_000, 21));

    let out = tempfile::tempdir().unwrap();
    let (recv, addr) = start_recv(out.path(), &[]);
    let mut cmd = send_cmd(&[&file], addr);
    cmd.args(["--code", "9999-not-the-code"]);
    let sent = run("udt send", cmd);
    assert_eq!(sent.status.code(), Some(1), "{sent:?}");
    assert!(sent.stderr.contains("code phrase does not match"), "{}", sent.stderr);
    let received = recv.wait();
    assert_eq!(received.status.code(), Some(1), "{received:?}");
    assert!(received.stderr.contains("the code phrase is spent"), "{}", received.stderr);
    assert!(listing(out.path()).is_empty(), "no file written");

    let mut cmd = send_cmd(&[&file], "127.0.0.1:9".parse().unwrap());
    cmd.env_remove("UDT_CODE");
    let done = run("udt send", cmd);
    assert_eq!(done.status.code(), Some(2), "{done:?}");
    assert!(done.stderr.contains("--code") && done.stderr.contains("--insecure"), "{}", done.stderr);
    let mut cmd = udt();
    cmd.env_remove("UDT_CODE").args(["recv", "--keep-listening", "--listen", "127.0.0.1:0"]);
    let done = run("udt recv", cmd);
    assert_eq!(done.status.code(), Some(2), "{done:?}");
    assert!(done.stderr.contains("--key-file"), "{}", done.stderr);
}

/// A receiver serving several senders: a peer that connects, announces a transfer and goes
/// silent is dropped after `--idle-timeout` while another sender's transfer completes beside it;
/// a file over `--max-size` is refused before any of it is written.
#[test]
fn a_silent_sender_is_dropped_while_others_complete_and_max_size_refuses_early() {
    let src = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let key = write_key(src.path());
    let key = key.as_str();
    let (mut recv, addr) = start_keyed_recv(out.path(), key, &["--idle-timeout", "2", "--max-size", "100K"]);

    // The silent one: a hand-made sender that stops after the transfer's header.
    let options = Options {
        read_timeout: Some(Duration::from_secs(10)),
        security: Some(udt::secure::Credential::Key(blake3::derive_key(
            "udt 2026 key file",
            KEY_SECRET.as_bytes(),
        ))),
        ..Options::default()
    };
    let mut silent = UdtStream::connect_with(addr, options).unwrap();
    let mut header = b"UDTF".to_vec();
    header.extend_from_slice(&4u16.to_le_bytes());
    header.extend_from_slice(&0u16.to_le_bytes());
    header.extend_from_slice(&1u32.to_le_bytes());
    silent.write_all(&header).unwrap();

    let small = src.path().join("small.bin");
    std::fs::write(&small, data(50_000, 4)).unwrap();
    let mut cmd = send_cmd(&[&small], addr);
    cmd.env_remove("UDT_CODE").args(["--key-file", key]);
    let sent = run("udt send (small)", cmd);
    assert!(sent.status.success(), "{}", sent.stderr);
    assert_eq!(std::fs::read(out.path().join("small.bin")).unwrap(), data(50_000, 4));

    let big = src.path().join("big.bin");
    std::fs::write(&big, data(200_000, 5)).unwrap();
    let mut cmd = send_cmd(&[&big], addr);
    cmd.env_remove("UDT_CODE").args(["--key-file", key]);
    let sent = run("udt send (big)", cmd);
    assert_eq!(sent.status.code(), Some(1), "{sent:?}");
    assert!(sent.stderr.contains("too large") && sent.stderr.contains("--max-size"), "{}", sent.stderr);
    assert!(!out.path().join("big.bin").exists());

    let dropped = recv.stderr_line("nothing came from the peer", Duration::from_secs(30));
    assert!(dropped.is_some(), "the silent sender was not dropped");
    recv.interrupt();
    let _ = recv.wait();
    assert_eq!(listing(out.path()), ["small.bin"], "nothing else written");
}

/// Every regular file under `root`, relative path -> (bytes, permission bits, mtime seconds).
fn tree_of(root: &Path) -> std::collections::BTreeMap<String, (Vec<u8>, u32, i64)> {
    use std::os::unix::fs::MetadataExt;
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if meta.is_dir() {
                out.insert(format!("{rel}/"), (Vec::new(), meta.mode() & 0o777, 0));
                stack.push(p);
            } else if meta.is_file() {
                out.insert(rel, (std::fs::read(&p).unwrap(), meta.mode() & 0o777, meta.mtime()));
            }
        }
    }
    out
}

/// `udt send DIR`: a tree with odd names (spaces, unicode, leading dots, dots elsewhere) arrives
/// exactly, permissions and modification times kept; a symbolic link inside is skipped with a
/// message; a file in the way of a directory is refused with a message.
#[test]
fn a_directory_tree_arrives_exactly() {
    use std::os::unix::fs::PermissionsExt;
    let src = tempfile::tempdir().unwrap();
    let root = src.path().join("photos 2026");
    for dir in ["a b", "ünï cødé", ".hidden", "x/y/z"] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    let files = [
        ("a b/one two.txt", data(10_000, 1)),
        ("ünï cødé/ça.bin", data(2_000_000, 2)),
        (".hidden/.dot", data(5, 3)),
        ("x/y/z/..weird", data(0, 4)),
        ("top.txt", data(70_000, 5)),
    ];
    for (name, content) in &files {
        std::fs::write(root.join(name), content).unwrap();
    }
    std::fs::set_permissions(root.join("top.txt"), std::fs::Permissions::from_mode(0o640)).unwrap();
    std::fs::set_permissions(root.join("x/y"), std::fs::Permissions::from_mode(0o750)).unwrap();
    std::fs::File::options()
        .write(true)
        .open(root.join("a b/one two.txt"))
        .unwrap()
        .set_modified(std::time::UNIX_EPOCH + Duration::from_secs(1_000_000_000))
        .unwrap();
    std::os::unix::fs::symlink("/etc/passwd", root.join("a b/link")).unwrap();

    let out = tempfile::tempdir().unwrap();
    let (recv, addr) = start_recv(out.path(), &[]);
    let sent = run("udt send", send_cmd(&[&root], addr));
    assert!(sent.status.success(), "{}", sent.stderr);
    assert!(sent.stderr.contains("skipped photos 2026/a b/link: a symbolic link"), "{}", sent.stderr);
    assert!(recv.wait().status.success());
    let mut expected = tree_of(&root);
    expected.retain(|k, _| !k.ends_with("/link"));
    assert_eq!(tree_of(&out.path().join("photos 2026")), expected);

    // A file where the tree needs a directory: that entry and what is under it are refused.
    let out = tempfile::tempdir().unwrap();
    std::fs::write(out.path().join("photos 2026"), "in the way").unwrap();
    let (recv, addr) = start_recv(out.path(), &[]);
    let sent = run("udt send", send_cmd(&[&root], addr));
    assert_eq!(sent.status.code(), Some(1));
    assert!(sent.stderr.contains("exists as a file on the receiver"), "{}", sent.stderr);
    let _ = recv.wait();
    assert_eq!(std::fs::read(out.path().join("photos 2026")).unwrap(), b"in the way");
}

/// A transfer killed (SIGKILL) on either side resumes from what the receiver holds and arrives
/// byte for byte; when the receiver's part differs from the file (it changed meanwhile), that
/// file fails with a reason, the part is discarded, and the next run sends it whole.
#[test]
fn a_killed_transfer_resumes_byte_exact() {
    let src = tempfile::tempdir().unwrap();
    let big = src.path().join("big.bin");
    std::fs::write(&big, data(48 << 20, 9)).unwrap();
    let out = tempfile::tempdir().unwrap();
    for kill_receiver in [false, true] {
        // About 4 s at 100 Mb/s: killed in the middle.
        let (mut recv, addr) = start_recv(out.path(), &["--peer-timeout", "1"]);
        let mut cmd = send_cmd(&[&big], addr);
        cmd.args(["--cc", "blast:rate=100m", "--peer-timeout", "1"]);
        let mut sender = Proc::spawn("udt send", cmd, Stdio::null());
        assert!(recv.stderr_line("big.bin:", Duration::from_secs(10)).is_some(), "no progress");
        // Killed once a few MiB are held, long before the end (however slowly the test runs).
        let partial = out.path().join(".big.bin.udt-partial");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::fs::metadata(&partial).map_or(0, |m| m.len()) < 4 << 20 && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(20));
        }
        if kill_receiver {
            recv.child.kill().unwrap();
            let _ = sender.wait();
            let _ = recv.wait();
        } else {
            sender.child.kill().unwrap();
            let _ = sender.wait();
            let _ = recv.wait();
        }
        let held = std::fs::metadata(&partial).map(|m| m.len()).unwrap_or(0);
        assert!(held > 0 && held < 48 << 20, "kill_receiver={kill_receiver}: {held} bytes held");
        let (recv, addr) = start_recv(out.path(), &[]);
        let sent = run("udt send", send_cmd(&[&big], addr));
        assert!(sent.status.success(), "{}", sent.stderr);
        assert!(sent.stderr.contains("resuming"), "{}", sent.stderr);
        assert!(recv.wait().status.success());
        assert!(std::fs::read(out.path().join("big.bin")).unwrap() == data(48 << 20, 9), "differs");
        std::fs::remove_file(out.path().join("big.bin")).unwrap();
    }
    // A partial whose bytes differ from the file's: refused on the sender's proof, discarded.
    std::fs::write(out.path().join(".big.bin.udt-partial"), data(1 << 20, 77)).unwrap();
    let (recv, addr) = start_recv(out.path(), &[]);
    let sent = run("udt send", send_cmd(&[&big], addr));
    assert_eq!(sent.status.code(), Some(1), "{}", sent.stderr);
    assert!(sent.stderr.contains("send the file again to send it whole"), "{}", sent.stderr);
    assert_eq!(recv.wait().status.code(), Some(1));
    assert!(listing(out.path()).is_empty(), "the part is discarded: {:?}", listing(out.path()));
    let (recv, addr) = start_recv(out.path(), &[]);
    let sent = run("udt send", send_cmd(&[&big], addr));
    assert!(sent.status.success(), "{}", sent.stderr);
    assert!(!sent.stderr.contains("resuming"), "{}", sent.stderr);
    assert!(recv.wait().status.success());
    assert!(std::fs::read(out.path().join("big.bin")).unwrap() == data(48 << 20, 9), "differs");
}

/// `udt keygen` writes a random key readable by its owner only, never replaces a file without
/// --force, and the key it wrote secures a transfer; a guessable passphrase is refused.
#[test]
fn keygen_writes_a_private_random_key_that_secures_a_transfer() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let key = dir.path().join("key");
    let mut cmd = udt();
    cmd.arg("keygen").arg(&key);
    let done = run("udt keygen", cmd);
    assert!(done.status.success(), "{}", done.stderr);
    let text = std::fs::read_to_string(&key).unwrap();
    assert_eq!(text.len(), 65, "{text:?}");
    assert!(text.trim_end().bytes().all(|b| b.is_ascii_hexdigit()), "{text:?}");
    assert_eq!(std::fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600);
    let mut again = udt();
    again.arg("keygen").arg(&key);
    let done = run("udt keygen (again)", again);
    assert_eq!(done.status.code(), Some(1), "{}", done.stderr);
    assert!(done.stderr.contains("--force"), "{}", done.stderr);
    assert_eq!(std::fs::read_to_string(&key).unwrap(), text, "the key was replaced");

    let key = key.to_str().unwrap();
    let (recv, addr) = start_keyed_recv(out.path(), key, &[]);
    let file = dir.path().join("f.bin");
    std::fs::write(&file, data(100_000, 9)).unwrap();
    let mut cmd = send_cmd(&[&file], addr);
    cmd.env_remove("UDT_CODE").args(["--key-file", key]);
    let sent = run("udt send", cmd);
    assert!(sent.status.success(), "{}", sent.stderr);
    assert_eq!(std::fs::read(out.path().join("f.bin")).unwrap(), data(100_000, 9));
    drop(recv);

    let weak = dir.path().join("weak");
    std::fs::write(&weak, "password123password").unwrap();
    let mut cmd = send_cmd(&[&file], addr);
    cmd.env_remove("UDT_CODE").arg("--key-file").arg(&weak);
    let done = run("udt send (weak key)", cmd);
    assert_eq!(done.status.code(), Some(1), "{}", done.stderr);
    assert!(done.stderr.contains("too easy to guess"), "{}", done.stderr);
}
