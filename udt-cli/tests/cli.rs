//! End-to-end tests of the `udt` binary over loopback (127.0.0.1 only). Every child process is
//! killed if it outlives its deadline (and when its handle is dropped).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use udt::{Options, UdtStream};

/// Deadline of any one child process.
const DEADLINE: Duration = Duration::from_secs(30);

fn udt() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_udt"));
    c.env_remove("RUST_LOG");
    c
}

/// Pseudo-random bytes (xorshift), reproducible.
fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.truncate(len);
    v
}

/// A running child whose output is collected; killed on drop.
struct Proc {
    child: Child,
    name: String,
    stdout: Option<JoinHandle<Vec<u8>>>,
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
        let mut out = child.stdout.take().unwrap();
        let stdout = thread::spawn(move || {
            let mut v = Vec::new();
            let _ = out.read_to_end(&mut v);
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
        Proc { child, name: name.into(), stdout: Some(stdout), stderr_lines, stderr: Some(stderr) }
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
    assert!(sent.stderr.contains("x.txt") && sent.stderr.contains("exists; use --force"), "{}", sent.stderr);
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

/// Headers go ahead of the answers (PROTOCOL.md): a refused first file, then an accepted one,
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

/// A hand-made sender naming files outside `--out` (each is refused, nothing is written), then
/// sending a file with a wrong hash (refused, no partial file left).
#[test]
fn rejects_names_escaping_out() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let (recv, addr) = start_recv(&out, &[]);

    let options = Options { read_timeout: Some(Duration::from_secs(10)), ..Options::default() };
    let mut s = UdtStream::connect_with(addr, options).unwrap();
    let names: [&[u8]; 4] = [b"../evil", b"/tmp/evil-absolute", b"sub/../../evil", b".."];
    let mut header = Vec::new();
    header.extend_from_slice(b"UDTF");
    header.extend_from_slice(&1u16.to_le_bytes());
    header.extend_from_slice(&0u16.to_le_bytes());
    header.extend_from_slice(&(names.len() as u32 + 1).to_le_bytes());
    s.write_all(&header).unwrap();
    assert_eq!(read_status(&mut s), (0, String::new()), "session accepted");
    for name in names {
        let mut fh = Vec::new();
        fh.extend_from_slice(&(name.len() as u16).to_le_bytes());
        fh.extend_from_slice(name);
        fh.extend_from_slice(&5u64.to_le_bytes());
        fh.extend_from_slice(&0o644u32.to_le_bytes());
        s.write_all(&fh).unwrap();
        let (code, msg) = read_status(&mut s);
        assert_eq!(code, 1, "{} accepted", String::from_utf8_lossy(name));
        assert!(msg.contains("file name"), "{msg}");
    }
    // A well-named file whose hash does not match its bytes: refused, nothing left behind.
    let mut fh = Vec::new();
    fh.extend_from_slice(&12u16.to_le_bytes());
    fh.extend_from_slice(b"bad-hash.txt");
    fh.extend_from_slice(&5u64.to_le_bytes());
    fh.extend_from_slice(&0o644u32.to_le_bytes());
    s.write_all(&fh).unwrap();
    assert_eq!(read_status(&mut s), (0, String::new()), "a plain name is accepted");
    s.write_all(b"hello").unwrap();
    s.write_all(&[0u8; 32]).unwrap();
    let (code, msg) = read_status(&mut s);
    assert_eq!(code, 1);
    assert!(msg.contains("BLAKE3 mismatch"), "{msg}");
    s.close().unwrap();

    let received = recv.wait();
    assert_eq!(received.status.code(), Some(1));
    assert!(received.stderr.contains("5 of 5 files failed"), "{}", received.stderr);
    assert!(received.stderr.contains("../evil"), "{}", received.stderr);
    assert!(listing(&out).is_empty(), "{:?}", listing(&out));
    assert_eq!(listing(root.path()), ["out"]);
    assert!(!Path::new("/tmp/evil-absolute").exists());
}

fn read_status(s: &mut UdtStream) -> (u8, String) {
    let mut head = [0u8; 3];
    s.read_exact(&mut head).unwrap();
    let mut msg = vec![0u8; u16::from_le_bytes([head[1], head[2]]) as usize];
    s.read_exact(&mut msg).unwrap();
    (head[0], String::from_utf8(msg).unwrap())
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
    for needle in ["send", "recv", "cat", "perf", "Exit status", "2  usage error"] {
        assert!(help.contains(needle), "{needle} missing from:\n{help}");
    }
}

#[test]
fn missing_file_fails_before_connecting() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = udt();
    cmd.arg("send").arg(dir.path().join("nope")).arg("127.0.0.1:9");
    let start = Instant::now();
    let done = run("udt send", cmd);
    assert_eq!(done.status.code(), Some(1));
    assert!(done.stderr.contains("cannot read"), "{}", done.stderr);
    assert!(start.elapsed() < Duration::from_secs(2), "it should not have tried to connect");
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
    assert_eq!(done.status.code(), Some(1));
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
    let done = custom("udt+noisy");
    assert_eq!(done.status.code(), Some(1));
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
    assert_eq!(done.status.code(), Some(1));
    assert!(done.stderr.contains("--bw"), "{}", done.stderr);
}
