//! What a new user meets on the first day: one error message per cause, naming the fix; usage
//! errors exit 2 with the subcommand's usage; the code phrase on standard output with
//! `--json`, and handed on in `UDT_CODE`; a plain end and a secured one told what to do, the
//! listening end still listening; Ctrl-C ending every wait at once. Loopback only.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod listening;

use common::{run_within, text, udt};
use listening::Listening;
use std::process::{Command, Output, Stdio};
use std::thread;
use std::time::Duration;

/// "At once" after Ctrl-C: well under both what ends a command that ignored it (the second
/// chance's watchdog, 3 s) and a connection attempt's timeout (3 s, started before the signal),
/// and long enough for a process to exit on a loaded machine.
const AT_ONCE: Duration = Duration::from_millis(1500);

/// Run to the end (at most 30 s).
fn run(cmd: Command) -> Output {
    run_within(cmd, 30)
}

/// A file to send.
fn file() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("note.txt");
    std::fs::write(&path, b"first day\n").unwrap();
    (dir, path)
}

#[test]
fn usage_errors_exit_2_with_the_subcommands_usage() {
    for (args, usage) in [
        (&["send", "--code", "hello", "f", "127.0.0.1:9"][..], "Usage: udt send"),
        (&["sim", "nosuch"], "Usage: udt sim"),
        (&["sim", "--loss", "1%"], "Usage: udt sim"),
        (&["recv", "h1:a", "h2:b"], "Usage: udt recv"),
        (&["send", "f", "127.0.0.1:9", "--force", "--insecure"], "Usage: udt send"),
    ] {
        let done = run({
            let mut c = udt();
            c.args(args);
            c
        });
        assert_eq!(done.status.code(), Some(2), "udt {args:?}: {}", text(&done.stderr));
        assert!(text(&done.stderr).contains(usage), "udt {args:?}: {}", text(&done.stderr));
    }
}

/// With `--json`, the code phrase is a JSON line on standard output too; the hint hands it on
/// in `UDT_CODE`, never as `--code` on a command line.
#[test]
fn the_code_phrase_is_in_json_and_the_hint_uses_udt_code() {
    let out = tempfile::tempdir().unwrap();
    let mut cmd = udt();
    cmd.args(["recv", "--json", "-l", "127.0.0.1:0", "-o"]).arg(out.path());
    let recv = Listening::start(cmd);
    let line = Listening::line(&recv.out, "\"type\":\"code\"");
    let json: serde_json::Value = serde_json::from_str(&line).unwrap();
    let code = json["code_phrase"].as_str().unwrap().to_string();
    assert_eq!(code.split('-').count(), 4, "{line}");
    assert!(json["command"].as_str().unwrap().starts_with(&format!("UDT_CODE={code} udt send")), "{line}");
    let hint = Listening::line(&recv.err, "UDT_CODE=");
    assert!(!hint.contains("--code"), "{hint}");
}

/// A wrong code phrase: the sender is told the receiver's code is spent and what to do.
#[test]
fn a_wrong_code_names_the_fix() {
    let out = tempfile::tempdir().unwrap();
    let mut cmd = udt();
    cmd.args(["recv", "-l", "127.0.0.1:0", "-o"]).arg(out.path());
    let mut recv = Listening::start(cmd);
    let port = recv.port();
    let (_dir, path) = file();
    let mut send = udt();
    send.arg("send").arg(&path).arg(format!("127.0.0.1:{port}")).args(["--code", "1111-wrong-code-guess"]);
    let done = run(send);
    assert_eq!(done.status.code(), Some(1));
    let err = text(&done.stderr);
    assert!(err.contains("code phrase is spent") && err.contains("use the new code"), "{err}");
    assert_eq!(err.matches("error:").count(), 1, "{err}");
    assert_eq!(recv.wait(), Some(1));
}

/// An insecure receiver refuses a secured sender and keeps listening; a plain sender at a
/// receiver that wants a code is told to drop --insecure, and the receiver keeps listening.
#[test]
fn plain_and_secured_ends_are_told_what_to_do_and_the_receiver_keeps_listening() {
    let (_dir, path) = file();
    let out = tempfile::tempdir().unwrap();
    let mut cmd = udt();
    cmd.args(["recv", "--insecure", "-l", "127.0.0.1:0", "-o"]).arg(out.path());
    let mut plain = Listening::start(cmd);
    let target = format!("127.0.0.1:{}", plain.port());
    let mut secured = udt();
    secured.arg("send").arg(&path).arg(&target).args(["--code", "2222-secured-sender-code"]);
    let done = run(secured);
    assert_eq!(done.status.code(), Some(1));
    assert!(text(&done.stderr).contains("give --insecure"), "{}", text(&done.stderr));
    Listening::line(&plain.err, "still listening");
    let mut ok = udt();
    ok.arg("send").arg(&path).arg(&target).arg("--insecure");
    let done = run(ok);
    assert!(done.status.success(), "{}", text(&done.stderr));
    assert_eq!(plain.wait(), Some(0));

    let out = tempfile::tempdir().unwrap();
    let mut cmd = udt();
    cmd.args(["recv", "--code", "3333-amber-lotus-quartz", "-l", "127.0.0.1:0", "-o"]).arg(out.path());
    let mut coded = Listening::start(cmd);
    let target = format!("127.0.0.1:{}", coded.port());
    let mut insecure = udt();
    insecure.arg("send").arg(&path).arg(&target).arg("--insecure");
    let done = run(insecure);
    assert_eq!(done.status.code(), Some(1));
    assert!(text(&done.stderr).contains("without --insecure"), "{}", text(&done.stderr));
    let mut ok = udt();
    ok.arg("send").arg(&path).arg(&target).env("UDT_CODE", "3333-amber-lotus-quartz");
    let done = run(ok);
    assert!(done.status.success(), "{}", text(&done.stderr));
    assert_eq!(coded.wait(), Some(0));
}

/// A peer that connects and then falls silent before it says anything (its host stopped, its
/// path cut) is refused once its silence says it is gone, and the receiver takes the next
/// connection.
#[test]
fn a_peer_that_vanishes_before_its_header_leaves_the_receiver_listening() {
    let (_dir, path) = file();
    let out = tempfile::tempdir().unwrap();
    let mut cmd = udt();
    cmd.args(["recv", "--insecure", "--peer-timeout", "1", "-l", "127.0.0.1:0", "-o"]).arg(out.path());
    cmd.env("RUST_LOG", "info");
    let mut recv = Listening::start(cmd);
    let target = format!("127.0.0.1:{}", recv.port());
    let mut silent = udt();
    silent.args(["cat", &target, "--insecure"]).stdin(Stdio::piped());
    let silent = Listening::start(silent);
    Listening::line(&recv.err, "serving a connection");
    // Stopped, not killed: its socket stays open, so nothing (not even the kernel's port
    // unreachable) tells the receiver it went; only its silence does.
    let pid = silent.child.id().to_string();
    assert!(Command::new("kill").args(["-STOP", &pid]).status().unwrap().success());
    let refused = Listening::line(&recv.err, "still listening");
    // Its silence (or, if it closed before it stopped, its close) is told as such.
    assert!(refused.contains("`udt send` header"), "{refused}");
    let mut ok = udt();
    ok.arg("send").arg(&path).arg(&target).arg("--insecure");
    let done = run(ok);
    assert!(done.status.success(), "{}", text(&done.stderr));
    assert_eq!(recv.wait(), Some(0));
}

/// Ctrl-C while `udt cat --listen` and `udt serve -k` wait for a connection ends them at once.
#[test]
fn ctrl_c_ends_every_wait_at_once() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        vec!["cat", "--listen", "127.0.0.1:0", "--insecure"],
        vec!["serve", "--protocol", "fobs", "-k", "--insecure", "--rate", "100m", "-l", "127.0.0.1:0"],
    ] {
        let mut cmd = udt();
        cmd.args(&args);
        if args[0] == "serve" {
            cmd.arg(dir.path());
        }
        let mut waiting = Listening::start(cmd);
        waiting.port();
        let asked = waiting.interrupt();
        assert_eq!(waiting.wait(), Some(130), "{args:?}");
        let took = asked.elapsed();
        assert!(took < AT_ONCE, "{args:?}: {took:?}");
    }
}

/// A refused connection is said once, not twice.
#[test]
fn an_error_is_said_once() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = udt();
    cmd.args(["fetch", "--protocol", "fobs", &format!("127.0.0.1:{port}"), "x", "--insecure", "-o"]);
    cmd.arg(dir.path());
    let done = run(cmd);
    assert_eq!(done.status.code(), Some(1));
    let err = text(&done.stderr);
    assert_eq!(err.matches("Connection refused").count(), 1, "{err}");
}

/// `udt perf --json` writes an estimate not made yet as `null` (no `4294967295`) and floats
/// rounded to what they measure (at most six decimals).
#[test]
fn perf_json_has_no_sentinels_or_float_noise() {
    let mut cmd = udt();
    cmd.args(["perf", "--self", "--time", "1", "--json"]);
    let done = run(cmd);
    assert!(done.status.success(), "{}", text(&done.stderr));
    let out = text(&done.stdout);
    assert!(!out.contains("4294967295"), "{out}");
    fn walk(v: &serde_json::Value, bad: &mut Vec<String>) {
        match v {
            serde_json::Value::Number(n) if n.is_f64() => {
                let shown = n.to_string();
                if shown.split('.').nth(1).is_some_and(|d| d.len() > 6) {
                    bad.push(shown);
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|x| walk(x, bad)),
            serde_json::Value::Object(o) => o.values().for_each(|x| walk(x, bad)),
            _ => {}
        }
    }
    let mut bad = Vec::new();
    walk(&serde_json::from_str(out.trim()).unwrap(), &mut bad);
    assert!(bad.is_empty(), "float noise: {bad:?}");
}

/// iperf3's -n (bytes instead of time, split over the streams) and -O (the first seconds left
/// out of the results, their intervals marked).
#[test]
fn perf_sends_a_number_of_bytes_and_omits_the_first_seconds() {
    let json = |args: &[&str]| {
        let mut cmd = udt();
        cmd.args(["perf", "--self", "--json", "--insecure"]).args(args);
        let done = run(cmd);
        assert!(done.status.success(), "{}", text(&done.stderr));
        serde_json::from_str::<serde_json::Value>(text(&done.stdout).trim()).unwrap()
    };
    let sized = json(&["-n", "20000001", "-P", "2"]);
    assert_eq!(sized["summary"]["bytes"], 20_000_001u64, "{}", sized["summary"]);
    assert_eq!(sized["summary"]["receiver"]["bytes"], 20_000_001u64);
    assert_eq!(sized["start"]["bytes"], 20_000_001u64);
    let streams = sized["summary"]["streams"].as_array().unwrap();
    assert_eq!(
        (streams[0]["bytes"].as_u64(), streams[1]["bytes"].as_u64()),
        (Some(10_000_001), Some(10_000_000))
    );

    // A counted second: a loaded machine may stall a transfer for a while.
    let omitted = json(&["-t", "1", "-O", "0.5", "-i", "0.25"]);
    assert_eq!(omitted["start"]["omit_s"], 0.5);
    common::assert_counts_after_omitted(&omitted, common::End::Sender);
    let mut both = udt();
    both.args(["perf", "--self", "-n", "1M", "-O", "1"]);
    assert_eq!(run(both).status.code(), Some(2));
}

/// Every missing requirement of a seed protocol in one message, Tsunami's reference default
/// secret named.
#[test]
fn a_seed_protocols_requirements_come_in_one_message() {
    let mut cmd = udt();
    cmd.env_remove("UDT_TSUNAMI_SECRET").args(["fetch", "--protocol", "tsunami", "127.0.0.1", "x"]);
    let done = run(cmd);
    assert_eq!(done.status.code(), Some(2));
    let err = text(&done.stderr);
    assert!(err.contains("--insecure") && err.contains("shared secret") && err.contains("kitten"), "{err}");
    assert_eq!(err.matches("error:").count(), 1, "{err}");
    let mut cmd = udt();
    cmd.args(["serve", "--protocol", "rbudp", "."]);
    let err = text(&run(cmd).stderr);
    assert!(err.contains("--insecure") && err.contains("--rate"), "{err}");
}

/// `udt fetch` creates --out and keeps a name's directories; a second name from a `udt serve`
/// that served one fetch and exited gets the hint to start it with -k.
#[test]
fn fetch_keeps_the_tree_and_hints_at_keep_listening() {
    let served = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(served.path().join("tree/sub")).unwrap();
    std::fs::write(served.path().join("tree/sub/c.txt"), b"see\n").unwrap();
    std::fs::write(served.path().join("a.txt"), b"alpha\n").unwrap();
    let mut cmd = udt();
    cmd.args(["serve", "--protocol", "fobs", "--insecure", "--rate", "100m", "-l", "127.0.0.1:0"]);
    cmd.arg(served.path());
    let server = Listening::start(cmd);
    let port = server.port();
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("new/dir");
    let mut cmd = udt();
    cmd.args(["fetch", "--protocol", "fobs", &format!("127.0.0.1:{port}"), "tree/sub/c.txt", "a.txt"]);
    cmd.args(["--insecure", "--rate", "100m", "-o"]).arg(&dest);
    let done = run(cmd);
    assert_eq!(done.status.code(), Some(1), "{}", text(&done.stderr));
    assert_eq!(std::fs::read(dest.join("tree/sub/c.txt")).unwrap(), b"see\n");
    let err = text(&done.stderr);
    assert!(err.contains("a.txt") && err.contains("start it with -k"), "{err}");
}

/// iperf3's -R: the server sends, the client receives and reports as a receiver; every byte
/// the server wrote arrives.
#[test]
fn perf_reverse_has_the_server_send() {
    let mut cmd = udt();
    cmd.args(["perf", "--self", "--json", "--insecure", "-R", "-t", "1", "-P", "2"]);
    let done = run(cmd);
    assert!(done.status.success(), "{}", text(&done.stderr));
    let report: serde_json::Value = serde_json::from_str(text(&done.stdout).trim()).unwrap();
    assert_eq!(report["start"]["reverse"], true);
    let received = report["summary"]["bytes"].as_u64().unwrap();
    assert!(received > 0);
    assert_eq!(report["summary"]["receiver"]["bytes"].as_u64(), Some(received), "sent by the server");
    assert_eq!(report["summary"]["streams"].as_array().unwrap().len(), 2);
    let mut both = udt();
    both.args(["perf", "--self", "-R", "-n", "1M"]);
    assert_eq!(run(both).status.code(), Some(2));
}

/// `udt cat -l -k` (netcat's keep-listening): one connection after another, each one's bytes
/// on standard output whole and in turn, a foreign peer refused without ending it; Ctrl-C ends
/// it at once. A code phrase, which serves one connection, is refused with -k.
#[test]
fn cat_keeps_listening_and_writes_each_connection_in_turn() {
    let mut cmd = udt();
    cmd.args(["cat", "-l", "127.0.0.1:0", "-k", "--insecure"]);
    let mut listening = Listening::start(cmd);
    let target = format!("127.0.0.1:{}", listening.port());
    let send = |what: &str| {
        let mut c = udt();
        c.args(["cat", "--insecure", &target]).stdin(Stdio::piped());
        c.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = c.spawn().unwrap();
        use std::io::Write;
        child.stdin.take().unwrap().write_all(what.as_bytes()).unwrap();
        let done = child.wait_with_output().unwrap();
        assert!(done.status.success(), "{}", text(&done.stderr));
    };
    send("first line\nsecond line\n");
    assert_eq!(Listening::line(&listening.out, "line"), "first line");
    assert_eq!(Listening::line(&listening.out, "line"), "second line");
    // A `udt send` is no `udt cat` peer: refused, and the next connection is served.
    let (_dir, path) = file();
    let done = run({
        let mut c = udt();
        c.arg("send").arg(&path).arg(&target).arg("--insecure");
        c
    });
    assert_eq!(done.status.code(), Some(1));
    Listening::line(&listening.err, "still listening");
    send("third\n");
    assert_eq!(Listening::line(&listening.out, "third"), "third");
    let asked = listening.interrupt();
    assert_eq!(listening.wait(), Some(130));
    assert!(asked.elapsed() < AT_ONCE, "{:?}", asked.elapsed());

    let mut coded = udt();
    coded.args(["cat", "-l", "127.0.0.1:0", "-k", "--code", "4444-amber-lotus-quartz"]);
    let done = run(coded);
    assert_eq!(done.status.code(), Some(2));
    assert!(text(&done.stderr).contains("--key-file"), "{}", text(&done.stderr));
    let done = run({
        let mut c = udt();
        c.args(["cat", "-k", "--insecure", "127.0.0.1:9"]);
        c
    });
    assert_eq!(done.status.code(), Some(2), "-k needs --listen");
}

/// Ctrl-C while a connecting end waits for an answer from a port nothing listens on ends it at
/// once, not when the connection attempt times out.
#[test]
fn ctrl_c_ends_a_connection_attempt_at_once() {
    let (_dir, path) = file();
    let port = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let target = format!("127.0.0.1:{port}");
    for args in [
        vec!["send", "--insecure", path.to_str().unwrap(), &target],
        vec!["cat", "--insecure", &target],
        vec!["perf", "client", "--insecure", &target],
    ] {
        let mut cmd = udt();
        cmd.args(&args);
        let mut waiting = Listening::start(cmd);
        thread::sleep(Duration::from_millis(300));
        let asked = waiting.interrupt();
        assert_eq!(waiting.wait(), Some(130), "{args:?}");
        let took = asked.elapsed();
        assert!(took < AT_ONCE, "{args:?}: {took:?}");
    }
}
