//! The acceptance test of the C++ layer: UDT4's own programs (the interoperability peers in
//! `interop/src`, written for UDT4 4.11) compile unchanged against `include/udt/udt.h`, link
//! this crate's library instead of libudt, and carry stream, message, file, rendezvous and
//! throughput transfers to and from the reference peers linked with Debian's libudt 4.11
//! (`interop/build`, built by `interop/setup.sh`, which `scripts/test.sh` runs first), in both
//! directions, data checked by the FNV-1a hashes both ends print.
//!
//! Skips, saying why, only where g++ or the reference library are not installed; fails when
//! the library is installed and the reference peers are not built.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use support::{compile, crate_dir, missing_compiler, Peer};

/// The nine programs of `interop/src`.
const PROGRAMS: [&str; 9] = [
    "udt4_gen",
    "udt4_stream_server",
    "udt4_stream_client",
    "udt4_msg_server",
    "udt4_msg_client",
    "udt4_sendfile",
    "udt4_recvfile",
    "udt4_rendezvous",
    "udt4_perf",
];

/// Where the programs are built against this crate, and where the reference ones are; `None`
/// (after printing why) when the tests cannot run here.
struct Sides {
    ours: PathBuf,
    reference: PathBuf,
}

impl Sides {
    fn ours(&self, name: &str) -> PathBuf {
        self.ours.join(name)
    }
    fn reference(&self, name: &str) -> PathBuf {
        self.reference.join(name)
    }
}

fn sides() -> Option<&'static Sides> {
    static SIDES: OnceLock<Option<Sides>> = OnceLock::new();
    SIDES
        .get_or_init(|| {
            if let Some(why) = missing_compiler() {
                eprintln!("SKIP: the UDT4 programs cannot be built here: {why}");
                return None;
            }
            if !Path::new("/usr/include/udt/udt.h").exists() {
                eprintln!(
                    "SKIP: the reference UDT4 (Debian libudt-dev) is not installed; interop/setup.sh installs it"
                );
                return None;
            }
            let interop = crate_dir().join("../interop");
            let reference = interop.join("build");
            for name in PROGRAMS {
                let path = reference.join(name);
                assert!(path.exists(), "{} is missing: run interop/setup.sh", path.display());
            }
            let ours = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("udt4-programs");
            std::fs::create_dir_all(&ours).unwrap();
            std::thread::scope(|scope| {
                for name in PROGRAMS {
                    let (src, out) = (interop.join(format!("src/{name}.cpp")), ours.join(name));
                    scope.spawn(move || compile("g++", &[&src], &out, &["-std=c++11"], false));
                }
            });
            Some(Sides { ours, reference })
        })
        .as_ref()
}

/// Run a listening `server` and a `client` connecting to it; the `DONE` lines of both.
fn pair(
    server: &Path,
    server_args: &[&str],
    client: &Path,
    client_args: &[&str],
) -> (std::collections::HashMap<String, String>, std::collections::HashMap<String, String>) {
    let mut s = Peer::spawn(server, &[&["--port", "0"], server_args].concat());
    let target = format!("127.0.0.1:{}", s.ready_port());
    let mut c = Peer::spawn(client, &[&["--connect", target.as_str()], client_args].concat());
    let (client_done, server_done) = (c.line("DONE"), s.line("DONE"));
    c.finish();
    s.finish();
    (server_done, client_done)
}

/// Both directions of one kind of transfer: ours as server with the reference as client, then
/// the other way round.
fn both_ways(
    sides: &Sides,
    server: &str,
    server_args: &[&str],
    client: &str,
    client_args: &[&str],
) -> Vec<[String; 2]> {
    let mut hashes = Vec::new();
    for (s, c) in
        [(sides.ours(server), sides.reference(client)), (sides.reference(server), sides.ours(client))]
    {
        let (server_done, client_done) = pair(&s, server_args, &c, client_args);
        assert_eq!(server_done["bytes"], client_done["bytes"], "{} <- {}", s.display(), c.display());
        hashes.push([server_done["fnv1a64"].clone(), client_done["fnv1a64"].clone()]);
    }
    hashes
}

#[test]
fn streams_both_ways() {
    let Some(sides) = sides() else { return };
    for [received, sent] in
        both_ways(sides, "udt4_stream_server", &[], "udt4_stream_client", &["--bytes", "10000000"])
    {
        assert_eq!(received, sent);
        assert_eq!(received, "e16bf97a2d614014", "the 10 MB stream of seed 1");
    }
}

#[test]
fn echoed_streams_both_ways() {
    let Some(sides) = sides() else { return };
    let args = ["--bytes", "4000000", "--echo", "--seed", "9"];
    for [received, sent] in both_ways(sides, "udt4_stream_server", &["--echo"], "udt4_stream_client", &args) {
        assert_eq!(received, sent);
    }
}

#[test]
fn messages_both_ways() {
    let Some(sides) = sides() else { return };
    let args = ["--count", "200", "--size", "1000", "--inorder"];
    for [received, sent] in both_ways(sides, "udt4_msg_server", &["--quiet"], "udt4_msg_client", &args) {
        assert_eq!(received, sent);
        assert_eq!(received, "3dd1f64881be1e24", "messages 0..199 of 1000 bytes");
    }
}

#[test]
fn files_both_ways() {
    let Some(sides) = sides() else { return };
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("udt4-files");
    std::fs::create_dir_all(&dir).unwrap();
    let source = dir.join("source.bin");
    let gen = std::process::Command::new(sides.reference("udt4_gen"))
        .args(["--bytes", "5000000", "--seed", "3", "--out"])
        .arg(&source)
        .output()
        .unwrap();
    assert!(gen.status.success());
    for (i, (server, client)) in [
        (sides.ours("udt4_recvfile"), sides.reference("udt4_sendfile")),
        (sides.reference("udt4_recvfile"), sides.ours("udt4_sendfile")),
    ]
    .into_iter()
    .enumerate()
    {
        let out = dir.join(format!("received-{i}.bin"));
        let (received, sent) =
            pair(&server, &["--out", out.to_str().unwrap()], &client, &["--file", source.to_str().unwrap()]);
        assert_eq!((received["bytes"].as_str(), &received["fnv1a64"]), ("5000000", &sent["fnv1a64"]));
        assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&source).unwrap());
    }
}

/// Two free UDP ports on 127.0.0.1.
fn free_ports() -> [u16; 2] {
    let a = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let b = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    [a.local_addr().unwrap().port(), b.local_addr().unwrap().port()]
}

#[test]
fn rendezvous_both_ways() {
    let Some(sides) = sides() else { return };
    for (sender, receiver) in [
        (sides.ours("udt4_rendezvous"), sides.reference("udt4_rendezvous")),
        (sides.reference("udt4_rendezvous"), sides.ours("udt4_rendezvous")),
    ] {
        let [p, q] = free_ports();
        let (p, q) = (p.to_string(), q.to_string());
        let (to_p, to_q) = (format!("127.0.0.1:{p}"), format!("127.0.0.1:{q}"));
        let common = ["--bytes", "1000000", "--seed", "5"];
        let mut s = Peer::spawn(
            &sender,
            &[&["--local", &p, "--peer", &to_q, "--role", "send"], &common[..]].concat(),
        );
        let mut r = Peer::spawn(
            &receiver,
            &[&["--local", &q, "--peer", &to_p, "--role", "recv"], &common[..]].concat(),
        );
        let (sent, received) = (s.line("DONE"), r.line("DONE"));
        s.finish();
        r.finish();
        assert_eq!((&received["bytes"], &received["fnv1a64"]), (&sent["bytes"], &sent["fnv1a64"]));
    }
}

#[test]
fn throughput_both_ways() {
    let Some(sides) = sides() else { return };
    for (receiver, sender) in [
        (sides.ours("udt4_perf"), sides.reference("udt4_perf")),
        (sides.reference("udt4_perf"), sides.ours("udt4_perf")),
    ] {
        let mut r = Peer::spawn(&receiver, &["--listen", "0"]);
        let target = format!("127.0.0.1:{}", r.ready_port());
        let mut s = Peer::spawn(&sender, &["--connect", &target, "--secs", "1"]);
        let (sent, received) = (s.line("DONE"), r.line("DONE"));
        s.finish();
        r.finish();
        assert_eq!(sent["bytes"], received["bytes"]);
        let mbps: f64 = received["mbps"].parse().unwrap();
        eprintln!("{} -> {}: {mbps} Mb/s", sender.display(), receiver.display());
        assert!(mbps > 10.0, "{mbps} Mb/s");
    }
}

#[test]
fn the_generator_agrees_with_the_reference() {
    let Some(sides) = sides() else { return };
    let run = |path: PathBuf| {
        let out = std::process::Command::new(path)
            .args(["--msg-index", "1", "--size", "16", "--hex"])
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap().lines().next().unwrap().to_string()
    };
    let ours = run(sides.ours("udt4_gen"));
    assert_eq!(ours, "000000015a9be6175cef36b8ecc0dc04");
    assert_eq!(ours, run(sides.reference("udt4_gen")));
}
