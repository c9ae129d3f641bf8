//! The `udt` binary's network safety over loopback: a second `udt recv` on a port in use
//! fails at once with "address in use" (as the same user and as `nobody`, where the test runs as
//! root and `setpriv` exists) and the first still receives; the default listen address
//! (`-l PORT`) takes senders to `[::1]` and to `127.0.0.1` alike; and a peer killed mid-transfer
//! is reported by the survivor within the tool's peer timeout (10 s; asserted under 25 s).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// Any one child's deadline.
const DEADLINE: Duration = Duration::from_secs(40);
/// Bound on noticing a killed peer (the tool's timeout is 10 s).
const DEAD_PEER_BOUND: Duration = Duration::from_secs(25);

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

/// A background `udt` process whose stderr lines arrive on a channel; killed on drop.
struct Proc {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Proc {
    fn spawn(mut cmd: Command) -> Proc {
        let mut child =
            cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
        let err = child.stderr.take().unwrap();
        let (tx, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(err).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Proc { child, lines }
    }

    /// Wait for a stderr line containing `what`.
    fn expect_line(&self, what: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).unwrap_or_else(|_| panic!("no line with {what:?}"));
            if line.contains(what) {
                return line;
            }
        }
    }

    /// Wait for the exit (at most `DEADLINE`): whether it succeeded, and the rest of stderr.
    fn wait(mut self) -> (bool, String, Instant) {
        let deadline = Instant::now() + DEADLINE;
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            assert!(Instant::now() < deadline, "udt did not exit within {DEADLINE:?}");
            thread::sleep(Duration::from_millis(10));
        };
        let exited = Instant::now();
        let mut rest = String::new();
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(2)) {
            rest.push_str(&line);
            rest.push('\n');
        }
        (status.success(), rest, exited)
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Run to completion under the deadline.
fn run(mut cmd: Command) -> Output {
    let child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let (tx, rx) = mpsc::channel();
    let pid = child.id();
    thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(DEADLINE) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("udt (pid {pid}) did not finish within {DEADLINE:?}");
        }
    }
}

/// A UDP port free on both families right now (bound dual-stack for a moment).
fn free_port() -> u16 {
    UdpSocket::bind("[::]:0").unwrap().local_addr().unwrap().port()
}

fn recv(listen: &str, out: &Path, extra: &[&str]) -> Command {
    let mut c = udt();
    c.args(["recv", "-l", listen, "-o"]).arg(out).args(extra);
    c
}

fn send(file: &Path, target: &str, extra: &[&str]) -> Command {
    let mut c = udt();
    c.arg("send").arg(file).arg(target).args(extra);
    c
}

fn assert_in_use(out: &Output, listen: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a second `udt recv -l {listen}` started: {stderr}");
    assert!(stderr.contains("address in use"), "{stderr}");
    assert!(stderr.contains("cannot listen on"), "{stderr}");
}

#[test]
fn a_second_recv_on_a_port_in_use_fails_and_the_first_still_receives() {
    let dir = tempfile::tempdir().unwrap();
    let (first_out, second_out) = (dir.path().join("first"), dir.path().join("second"));
    std::fs::create_dir(&first_out).unwrap();
    std::fs::create_dir(&second_out).unwrap();
    let port = free_port();
    let listen = port.to_string();
    let first = Proc::spawn(recv(&listen, &first_out, &[]));
    first.expect_line("listening on");
    // Over the dual-stack default: the same form, and IPv4 and IPv6 addresses of the port.
    for second in
        [listen.clone(), format!("0.0.0.0:{port}"), format!("127.0.0.1:{port}"), format!("[::1]:{port}")]
    {
        let started = Instant::now();
        assert_in_use(&run(recv(&second, &second_out, &[])), &second);
        assert!(started.elapsed() < Duration::from_secs(10), "the refusal took {:?}", started.elapsed());
    }
    let file = dir.path().join("b.txt");
    std::fs::write(&file, b"for the first receiver only\n").unwrap();
    let out = run(send(&file, &format!("127.0.0.1:{port}"), &[]));
    assert!(out.status.success(), "send: {}", String::from_utf8_lossy(&out.stderr));
    let (ok, stderr, _) = first.wait();
    assert!(ok, "first receiver: {stderr}");
    assert_eq!(std::fs::read(first_out.join("b.txt")).unwrap(), b"for the first receiver only\n");
    assert_eq!(std::fs::read_dir(&second_out).unwrap().count(), 0);
}

#[test]
fn another_user_cannot_take_over_a_listening_port() {
    let Some(setpriv) = ["/usr/bin/setpriv", "/bin/setpriv"].into_iter().find(|p| Path::new(p).exists())
    else {
        eprintln!("skipped: setpriv is not installed");
        return;
    };
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let euid = status.lines().find(|l| l.starts_with("Uid:")).and_then(|l| l.split_whitespace().nth(2));
    if euid != Some("0") {
        eprintln!("skipped: switching to another user needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let stolen = dir.path().join("stolen");
    std::fs::create_dir(&stolen).unwrap();
    let chmod = Command::new("chmod").args(["0777"]).arg(dir.path()).arg(&stolen).status().unwrap();
    assert!(chmod.success());
    for listen in ["0.0.0.0:0", "127.0.0.1:0", "[::]:0"] {
        let first = Proc::spawn(recv(listen, dir.path(), &[]));
        let line = first.expect_line("listening on ");
        let addr = line.split("listening on ").nth(1).unwrap().split([',', ' ']).next().unwrap().to_string();
        let mut cmd = Command::new(setpriv);
        cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", env!("CARGO_BIN_EXE_udt")])
            .args(["recv", "-l", &addr, "-o"])
            .arg(&stolen)
            .env_remove("RUST_LOG");
        assert_in_use(&run(cmd), &addr);
    }
}

#[test]
fn the_default_listen_address_takes_ipv6_and_ipv4_senders() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let port = free_port();
    // Several senders: a shared key file.
    let key = dir.path().join("key");
    std::fs::write(&key, "a secret shared by the test's ends").unwrap();
    let key = key.to_str().unwrap();
    let mut r = recv(&port.to_string(), &out, &["--keep-listening", "--key-file", key]);
    r.env_remove("UDT_CODE");
    let receiver = Proc::spawn(r);
    receiver.expect_line("listening on");
    for (name, target) in [("v6.txt", format!("[::1]:{port}")), ("v4.txt", format!("127.0.0.1:{port}"))] {
        let file = dir.path().join(name);
        std::fs::write(&file, format!("sent to {target}\n")).unwrap();
        let started = Instant::now();
        let mut s = send(&file, &target, &["--key-file", key]);
        s.env_remove("UDT_CODE");
        let sent = run(s);
        assert!(sent.status.success(), "send to {target}: {}", String::from_utf8_lossy(&sent.stderr));
        assert!(started.elapsed() < Duration::from_secs(20), "send to {target} took {:?}", started.elapsed());
        assert_eq!(std::fs::read_to_string(out.join(name)).unwrap(), format!("sent to {target}\n"));
    }
}

/// A file big enough, and a rate low enough (blast at 16 Mb/s: about 20 s for 40 MB), that the
/// transfer is still running when a side is killed.
fn slow_transfer(dir: &Path) -> (std::path::PathBuf, Proc, u16) {
    let out = dir.join("out");
    std::fs::create_dir(&out).unwrap();
    let file = dir.join("big.bin");
    std::fs::write(&file, vec![0x5au8; 40 << 20]).unwrap();
    let port = free_port();
    let receiver = Proc::spawn(recv(&format!("127.0.0.1:{port}"), &out, &[]));
    receiver.expect_line("listening on");
    (file, receiver, port)
}

#[test]
fn a_sender_notices_a_killed_receiver_within_the_peer_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let (file, mut receiver, port) = slow_transfer(dir.path());
    let sender = Proc::spawn(send(&file, &format!("127.0.0.1:{port}"), &["--cc", "blast:rate=16m"]));
    // The transfer is under way: the receiver reports the file's progress.
    receiver.expect_line("big.bin:");
    receiver.child.kill().unwrap();
    receiver.child.wait().unwrap();
    let killed = Instant::now();
    let (ok, stderr, exited) = sender.wait();
    let after = exited - killed;
    eprintln!("udt send exited {after:?} after the receiver was killed: {}", stderr.trim());
    assert!(!ok, "the sender reported success to a killed receiver: {stderr}");
    assert!(after < DEAD_PEER_BOUND, "noticed only after {after:?}");
}

#[test]
fn a_receiver_notices_a_killed_sender_within_the_peer_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let (file, receiver, port) = slow_transfer(dir.path());
    let mut sender = Proc::spawn(send(&file, &format!("127.0.0.1:{port}"), &["--cc", "blast:rate=16m"]));
    // The transfer is under way: the receiver reports the file's progress.
    receiver.expect_line("big.bin:");
    sender.child.kill().unwrap();
    sender.child.wait().unwrap();
    let killed = Instant::now();
    let (ok, stderr, exited) = receiver.wait();
    let after = exited - killed;
    eprintln!("udt recv exited {after:?} after the sender was killed: {}", stderr.trim());
    assert!(!ok, "the receiver reported success from a killed sender: {stderr}");
    assert!(after < DEAD_PEER_BOUND, "noticed only after {after:?}");
}

/// `send FILE localhost:PORT` in a mount namespace whose /etc/hosts lists `::1 localhost` first
/// (the usual Debian and Fedora file), or `None` where that needs root or `unshare` is missing.
fn send_via_ipv6_first_localhost(dir: &Path, file: &Path, port: u16) -> Option<Output> {
    let unshare = ["/usr/bin/unshare", "/bin/unshare"].into_iter().find(|p| Path::new(p).exists())?;
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let euid = status.lines().find(|l| l.starts_with("Uid:")).and_then(|l| l.split_whitespace().nth(2));
    if euid != Some("0") {
        return None;
    }
    let hosts = dir.join("hosts");
    std::fs::write(&hosts, "::1 localhost ip6-localhost\n127.0.0.1 localhost\n").unwrap();
    let script = r#"mount --bind "$1" /etc/hosts && exec "$2" send "$3" "localhost:$4""#;
    let mut cmd = Command::new(unshare);
    cmd.args(["--mount", "sh", "-c", script, "sh"])
        .arg(&hosts)
        .arg(env!("CARGO_BIN_EXE_udt"))
        .arg(file)
        .arg(port.to_string())
        .env_remove("RUST_LOG")
        .env("UDT_CODE", TEST_CODE);
    Some(run(cmd))
}

#[test]
fn localhost_reaches_a_listener_when_it_resolves_to_ipv6_first() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    // An IPv4-only listener (the sender must fall back from ::1) and the default listener.
    for listen in ["127.0.0.1:0", "0"] {
        let receiver = Proc::spawn(recv(listen, &out, &["--force"]));
        let line = receiver.expect_line("listening on ");
        let addr = line.split("listening on ").nth(1).unwrap().split([',', ' ']).next().unwrap();
        let port: u16 = addr.rsplit(':').next().unwrap().parse().unwrap();
        let file = dir.path().join("b.txt");
        std::fs::write(&file, format!("to localhost via {listen}\n")).unwrap();
        let started = Instant::now();
        let Some(sent) = send_via_ipv6_first_localhost(dir.path(), &file, port) else {
            eprintln!("skipped: a private /etc/hosts needs root and unshare");
            return;
        };
        assert!(sent.status.success(), "send to localhost: {}", String::from_utf8_lossy(&sent.stderr));
        assert!(started.elapsed() < Duration::from_secs(20), "took {:?}", started.elapsed());
        let (ok, stderr, _) = receiver.wait();
        assert!(ok, "receiver: {stderr}");
        assert_eq!(
            std::fs::read_to_string(out.join("b.txt")).unwrap(),
            format!("to localhost via {listen}\n")
        );
    }
}
