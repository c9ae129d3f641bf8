//! Interoperation with the reference UDT4 4.11 (Debian libudt-dev) through the C++ peers in
//! `interop/` (built by `interop/setup.sh`, which `scripts/test.sh` runs first). Both directions,
//! stream, file and message modes, and rendezvous, all on 127.0.0.1, data verified byte for byte
//! (FNV-1a 64 over the exact generator of `interop/src/common.h`).
//!
//! These tests fail, they never skip, when the peers are missing: the project's test command
//! builds them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Duration;

use udt::{Options, UdtListener, UdtStream};

/// The xorshift64 byte stream of `interop/src/common.h`.
fn generate(len: usize, seed: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 8);
    let mut s = seed;
    while out.len() < len {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        out.extend_from_slice(&s.to_le_bytes());
    }
    out.truncate(len);
    out
}

/// Message `i` of size `size` (interop/src/common.h).
fn message(i: u32, size: usize) -> Vec<u8> {
    let mut m = i.to_be_bytes().to_vec();
    m.extend(generate(size - 4, (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)));
    m
}

fn fnv1a64(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

fn options() -> Options {
    Options {
        read_timeout: Some(Duration::from_secs(60)),
        write_timeout: Some(Duration::from_secs(60)),
        ..Options::default()
    }
}

/// A reference peer process, killed when dropped.
struct Peer {
    child: Child,
    out: BufReader<ChildStdout>,
    name: &'static str,
}

impl Peer {
    fn spawn(name: &'static str, args: &[&str]) -> Peer {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../interop/build").join(name);
        assert!(path.exists(), "{} is missing: run interop/setup.sh (scripts/test.sh does)", path.display());
        let mut child = Command::new(&path)
            .args(args)
            .args(["--timeout", "60"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        let out = BufReader::new(child.stdout.take().unwrap());
        Peer { child, out, name }
    }

    /// The next output line starting with `prefix`, as `key=value` fields (the word after the
    /// prefix is field "0").
    fn line(&mut self, prefix: &str) -> HashMap<String, String> {
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

    fn ready_port(&mut self) -> u16 {
        self.line("READY").get("0").unwrap().parse().unwrap()
    }

    fn finish(mut self) {
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

fn local(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

#[test]
fn our_client_streams_to_the_reference_server() {
    let mut server = Peer::spawn("udt4_stream_server", &["--port", "0"]);
    let port = server.ready_port();
    let data = generate(32 << 20, 7);
    let mut c = UdtStream::connect_with(local(port), options()).unwrap();
    c.write_all(&data).unwrap();
    c.close().unwrap();
    let done = server.line("DONE");
    assert_eq!(done["bytes"], data.len().to_string());
    assert_eq!(done["fnv1a64"], fnv1a64(&data));
    server.finish();
}

/// Several of our connections from one UDP port (the process's shared client port) to one
/// reference listener: UDT4 tells them apart by socket id, as we do, and each carries its own
/// bytes.
#[test]
fn several_of_our_connections_from_one_port_to_the_reference_server() {
    const N: usize = 3;
    let mut server = Peer::spawn("udt4_stream_server", &["--port", "0", "--count", &N.to_string()]);
    let port = server.ready_port();
    // All connected before the reference server accepts the second: its listener completes the
    // handshakes on its own, each with our socket id.
    let clients: Vec<UdtStream> =
        (0..N).map(|_| UdtStream::connect_with(local(port), options()).unwrap()).collect();
    let ours = clients[0].local_addr().unwrap();
    assert!(clients.iter().all(|c| c.local_addr().unwrap() == ours), "not one shared port");
    // Each sends its own bytes (fitting the reference's receive buffer, so all can finish
    // before it reads them); it reads them one after another in an order of its own (by its
    // socket ids), so the hashes are compared as a set.
    let mut expected: Vec<String> = Vec::new();
    std::thread::scope(|scope| {
        for (i, mut c) in clients.into_iter().enumerate() {
            let data = generate(1 << 20, 20 + i as u64);
            expected.push(fnv1a64(&data));
            scope.spawn(move || {
                c.write_all(&data).unwrap();
                c.close().unwrap();
            });
        }
    });
    let mut got: Vec<String> = (0..N)
        .map(|_| {
            let done = server.line("DONE");
            assert_eq!(done["bytes"], (1 << 20).to_string());
            done["fnv1a64"].clone()
        })
        .collect();
    got.sort();
    expected.sort();
    assert_eq!(got, expected, "the reference received other bytes");
    server.finish();
}

#[test]
fn the_reference_client_streams_to_our_server() {
    let listener = UdtListener::bind_with("127.0.0.1:0", options()).unwrap();
    let port = listener.local_addr().unwrap().port();
    let addr = format!("127.0.0.1:{port}");
    let mut client =
        Peer::spawn("udt4_stream_client", &["--connect", &addr, "--bytes", "33554432", "--seed", "9"]);
    let (mut s, _) = listener.accept().unwrap();
    let mut got = Vec::new();
    s.read_to_end(&mut got).unwrap();
    let done = client.line("DONE");
    assert!(got == generate(32 << 20, 9), "received bytes differ from the reference client's");
    assert_eq!(done["fnv1a64"], fnv1a64(&got));
    client.finish();
}

#[test]
fn echo_both_ways_with_the_reference_server() {
    let mut server = Peer::spawn("udt4_stream_server", &["--port", "0", "--echo"]);
    let port = server.ready_port();
    let data = generate(4 << 20, 3);
    let c = UdtStream::connect_with(local(port), options()).unwrap();
    // UDT is full duplex: read the echo while still writing.
    let got = std::thread::scope(|scope| {
        let reader = scope.spawn(|| {
            let mut got = vec![0u8; data.len()];
            (&c).read_exact(&mut got).unwrap();
            got
        });
        (&c).write_all(&data).unwrap();
        reader.join().unwrap()
    });
    assert!(got == data, "echoed bytes differ");
    c.close().unwrap();
    server.line("DONE");
    server.finish();
}

#[test]
fn our_sendfile_to_the_reference_recvfile() {
    let dir = std::env::temp_dir().join(format!("udt-interop-{}-a", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("received.bin");
    let mut server = Peer::spawn("udt4_recvfile", &["--port", "0", "--out", out.to_str().unwrap()]);
    let port = server.ready_port();
    let data = generate(16 << 20, 11);
    let src = dir.join("source.bin");
    std::fs::write(&src, &data).unwrap();
    let c = UdtStream::connect_with(local(port), options()).unwrap();
    (&c).write_all(&(data.len() as u64).to_le_bytes()).unwrap();
    let file = std::fs::File::open(&src).unwrap();
    assert_eq!(c.send_file(&file, 0, data.len() as u64).unwrap(), data.len() as u64);
    c.close().unwrap();
    let done = server.line("DONE");
    assert_eq!(done["fnv1a64"], fnv1a64(&data));
    server.finish();
    assert!(std::fs::read(&out).unwrap() == data);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_reference_sendfile_to_our_recv_file() {
    let dir = std::env::temp_dir().join(format!("udt-interop-{}-b", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let data = generate(16 << 20, 12);
    let src = dir.join("source.bin");
    std::fs::write(&src, &data).unwrap();
    let listener = UdtListener::bind_with("127.0.0.1:0", options()).unwrap();
    let addr = format!("127.0.0.1:{}", listener.local_addr().unwrap().port());
    let mut client = Peer::spawn("udt4_sendfile", &["--connect", &addr, "--file", src.to_str().unwrap()]);
    let (s, _) = listener.accept().unwrap();
    let mut len = [0u8; 8];
    (&s).read_exact(&mut len).unwrap();
    let len = u64::from_le_bytes(len);
    assert_eq!(len, data.len() as u64);
    let dst = dir.join("received.bin");
    let out = std::fs::File::create(&dst).unwrap();
    assert_eq!(s.recv_file(&out, 0, len).unwrap(), len);
    client.line("DONE");
    client.finish();
    assert!(std::fs::read(&dst).unwrap() == data);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn our_messages_to_the_reference_msg_server() {
    let mut server = Peer::spawn("udt4_msg_server", &["--port", "0"]);
    let port = server.ready_port();
    let c = UdtStream::connect_with(local(port), Options { ..Options::message() }).unwrap();
    for i in 0..300u32 {
        c.send_msg(&message(i, 4 + (i as usize * 131) % 9000), None, true).unwrap();
    }
    // Every message reached the reference intact and in order (its MSG lines say so).
    for i in 0..300u32 {
        let m = server.line("MSG");
        assert_eq!(m["0"], i.to_string(), "message order");
        assert_eq!(m["1"], (4 + (i as usize * 131) % 9000).to_string());
        assert_eq!(m["2"], "ok", "message {i} corrupted on the reference side");
    }
    c.close().unwrap();
    assert_eq!(server.line("DONE")["messages"], "300");
    server.finish();
}

#[test]
fn the_reference_msg_client_to_our_server() {
    let listener = UdtListener::bind_with("127.0.0.1:0", Options::message()).unwrap();
    let addr = format!("127.0.0.1:{}", listener.local_addr().unwrap().port());
    let mut client = Peer::spawn(
        "udt4_msg_client",
        &["--connect", &addr, "--count", "300", "--size", "5000", "--inorder"],
    );
    let (s, _) = listener.accept().unwrap();
    let mut buf = vec![0u8; 65536];
    for i in 0..300u32 {
        let n = s.recv_msg(&mut buf).unwrap();
        assert_eq!(&buf[..n], &message(i, 5000)[..], "message {i}");
    }
    client.line("DONE");
    client.finish();
}

#[test]
fn rendezvous_with_the_reference() {
    let ours = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let peer_arg = ours.to_string();
    let mut theirs = Peer::spawn(
        "udt4_rendezvous",
        &["--local", "0", "--peer", &peer_arg, "--bytes", "2097152", "--role", "send"],
    );
    let their_port = theirs.ready_port();
    let mut s = UdtStream::rendezvous(ours, local(their_port), options()).unwrap();
    let mut got = vec![0u8; 2 << 20];
    s.read_exact(&mut got).unwrap();
    assert!(got == generate(2 << 20, 1));
    let done = theirs.line("DONE");
    assert_eq!(done["fnv1a64"], fnv1a64(&got));
    drop(s);
    theirs.finish();
}

/// Composable UDT never changes the wire: our client with each non-default congestion control
/// (window-based, delay-based, model-based, fixed-rate, receiver-driven; Copa on the RTT reports,
/// as the reference receiver sends no queueing-delay reports) streams to the reference server,
/// data checked by content. GTP's sender gets no allocations from a UDT4 receiver and
/// keeps its initial rate.
#[test]
fn our_client_with_other_congestion_controls_to_the_reference_server() {
    for spec in
        ["newreno", "cubic", "bbr", "copa", "vegas", "fast", "scalable", "blast:rate=2g", "gtp:init=400m"]
    {
        let mut server = Peer::spawn("udt4_stream_server", &["--port", "0"]);
        let port = server.ready_port();
        let data = generate(8 << 20, 11);
        let mut o = options();
        o.set_congestion_control(spec).unwrap();
        let mut c = UdtStream::connect_with(local(port), o).unwrap();
        c.write_all(&data).unwrap();
        c.close().unwrap();
        let done = server.line("DONE");
        assert_eq!(done["bytes"], data.len().to_string(), "{spec}");
        assert_eq!(done["fnv1a64"], fnv1a64(&data), "{spec}");
        server.finish();
    }
}

/// The receiving side of a TCP-like controller acknowledges every packet or every other packet
/// (UDT4 receivers send full ACKs only on the 10 ms timer): the reference sender handles that.
#[test]
fn the_reference_client_to_our_server_acknowledging_every_packet() {
    for spec in ["newreno:ack=1", "cubic"] {
        let mut o = options();
        o.set_congestion_control(spec).unwrap();
        let listener = UdtListener::bind_with("127.0.0.1:0", o).unwrap();
        let port = listener.local_addr().unwrap().port();
        let addr = format!("127.0.0.1:{port}");
        let mut client =
            Peer::spawn("udt4_stream_client", &["--connect", &addr, "--bytes", "8388608", "--seed", "5"]);
        let (mut s, _) = listener.accept().unwrap();
        let mut got = Vec::new();
        s.read_to_end(&mut got).unwrap();
        let done = client.line("DONE");
        assert!(got == generate(8 << 20, 5), "{spec}: received bytes differ from the reference client's");
        assert_eq!(done["fnv1a64"], fnv1a64(&got), "{spec}");
        client.finish();
    }
}
