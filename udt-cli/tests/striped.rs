//! `udt send -P N`: a file and a tree striped over several connections to one `udt recv`,
//! secured with a key file and plain, arrive byte-exact and are reported as one transfer each;
//! `-P` with a target that is not HOST:PORT is a usage error. Loopback only.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod listening;

use common::{data, run_within, text, udt};
use listening::Listening;
use std::path::Path;
use std::process::{Command, Output};

/// Run to the end (at most 60 s).
fn run(cmd: Command) -> Output {
    run_within(cmd, 60)
}

/// A `udt recv` into `out` with `security` (`--insecure`, or `--key-file KEY`) and `extra`.
fn recv(out: &Path, security: &[&str], extra: &[&str]) -> Listening {
    let mut cmd = udt();
    cmd.args(["recv", "--listen", "127.0.0.1:0", "--io-threads", "2"])
        .args(security)
        .args(extra)
        .arg("--out")
        .arg(out);
    Listening::start(cmd)
}

/// `udt send -P n` of `paths` to `port`.
fn send(paths: &[&Path], port: u16, n: u16, security: &[&str]) -> Output {
    let mut cmd = udt();
    cmd.arg("send").args(["-P", &n.to_string()]).args(security).args(paths).arg(format!("127.0.0.1:{port}"));
    run(cmd)
}

#[test]
fn a_file_over_two_connections_and_a_tree_over_three_arrive_byte_exact_secured() {
    let src = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let key = src.path().join("key");
    std::fs::write(&key, "a secret the striped test's ends share").unwrap();
    let key = key.to_str().unwrap();
    let big = data(20 << 20, 3);
    std::fs::write(src.path().join("big.bin"), &big).unwrap();
    let tree = src.path().join("tree");
    std::fs::create_dir_all(tree.join("sub")).unwrap();
    let files = [("a.txt", data(5_000, 4)), ("sub/large.bin", data(9 << 20, 5)), ("sub/b", data(1, 6))];
    for (name, bytes) in &files {
        std::fs::write(tree.join(name), bytes).unwrap();
    }
    let security = ["--key-file", key];
    let mut receiver = recv(out.path(), &security, &["--keep-listening"]);
    let port = receiver.port();

    let sent = send(&[&src.path().join("big.bin")], port, 2, &security);
    assert!(sent.status.success(), "{}", text(&sent.stderr));
    assert!(text(&sent.stdout).contains("big.bin: 20.0 MiB in"), "{}", text(&sent.stdout));
    assert!(text(&sent.stdout).contains("blake3 ok"));
    Listening::line(&receiver.out, "big.bin: 20.0 MiB");
    assert!(std::fs::read(out.path().join("big.bin")).unwrap() == big);

    let sent = send(&[&tree], port, 3, &security);
    assert!(sent.status.success(), "{}", text(&sent.stderr));
    assert_eq!(text(&sent.stdout).matches("blake3 ok").count(), 3, "{}", text(&sent.stdout));
    Listening::line(&receiver.out, "large.bin");
    for (name, bytes) in &files {
        assert!(std::fs::read(out.path().join("tree").join(name)).unwrap() == *bytes, "{name}");
    }
    receiver.interrupt();
    receiver.wait();
}

#[test]
fn a_plain_file_over_four_connections_arrives_byte_exact_and_recv_exits() {
    let src = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let content = data((12 << 20) + 4321, 8);
    std::fs::write(src.path().join("f.bin"), &content).unwrap();
    let mut receiver = recv(out.path(), &["--insecure"], &[]);
    let port = receiver.port();
    let sent = send(&[&src.path().join("f.bin")], port, 4, &["--insecure"]);
    assert!(sent.status.success(), "{}", text(&sent.stderr));
    assert_eq!(receiver.wait(), Some(0), "one transfer, however many connections");
    assert!(std::fs::read(out.path().join("f.bin")).unwrap() == content);
}

#[test]
fn parallel_streams_need_a_host_port_target() {
    let src = tempfile::tempdir().unwrap();
    std::fs::write(src.path().join("f"), b"x").unwrap();
    let mut cmd = udt();
    cmd.args(["send", "-P", "2", "--insecure"]).arg(src.path().join("f")).arg("somehost:dir");
    let refused = run(cmd);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused.stderr));
    assert!(text(&refused.stderr).contains("-P N stripes a transfer"), "{}", text(&refused.stderr));
    let mut cmd = udt();
    cmd.args(["send", "-P", "17", "--insecure"]).arg(src.path().join("f")).arg("127.0.0.1:9");
    assert_eq!(run(cmd).status.code(), Some(2), "at most 16");
}
