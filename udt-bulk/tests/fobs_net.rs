//! FOBS over real sockets on 127.0.0.1: ours against ours through `serve_connection` and
//! `fetch` (small files, both acknowledgement schemes, each with the sender's digest of it),
//! refusals with a clear error on the
//! fetching side, and the joining of control channel 1 to its session by token.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::Path;
use std::thread;
use std::time::Duration;

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use udt_bulk::driver::{self, RunOptions, Sockets};
use udt_bulk::fobs::wire::{self, Message};
use udt_bulk::fobs::{fetch, serve_connection, AckScheme, Params, ReceiverSession, ServeReport, Transfer};
use udt_bulk::storage::Memory;
use udt_bulk::BulkError;

fn options() -> RunOptions<'static> {
    RunOptions { idle_limit: Duration::from_secs(10), ..RunOptions::default() }
}

fn params(scheme: AckScheme) -> Params {
    Params { ack_scheme: scheme, setup_timeout: Duration::from_secs(5), ..Params::default() }
}

fn bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut v = vec![0u8; len];
    rng.fill_bytes(&mut v);
    v
}

/// A server on 127.0.0.1 serving one connection from `root`.
fn serve(root: &Path, params: Params) -> (SocketAddr, thread::JoinHandle<Result<ServeReport, BulkError>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let root = root.to_path_buf();
    let handle = thread::spawn(move || serve_connection(&listener, &root, &params, options()));
    (addr, handle)
}

#[test]
fn small_files_arrive_byte_for_byte_with_both_schemes() {
    let dir = tempfile::tempdir().unwrap();
    let files = [("empty", 0usize), ("one", 1), ("odd.bin", 100_003), ("three.bin", 3 << 20)];
    for (name, len) in files {
        std::fs::write(dir.path().join(name), bytes(len, len as u64)).unwrap();
    }
    for scheme in [AckScheme::SegmentedTcp, AckScheme::ChunkMapUdp] {
        for (name, len) in files {
            let (addr, server) = serve(dir.path(), params(scheme));
            let mut sink = Memory::default();
            let outcome = fetch(addr, name, &mut sink, &params(scheme), options()).unwrap();
            let report = server.join().unwrap().unwrap();
            let data = bytes(len, len as u64);
            assert!(sink.0 == data, "{name} ({scheme:?}) arrived byte for byte");
            assert_eq!(outcome.peer_digest, Some(*blake3::hash(&data).as_bytes()), "{name} ({scheme:?})");
            assert_eq!(report.outcome.peer_digest, None, "a sender has no peer digest");
            assert_eq!(report.name, name);
            assert_eq!(outcome.counters.size, Some(len as u64));
            assert_eq!(report.outcome.counters.delivered, len as u64);
        }
    }
}

#[test]
fn a_subdirectory_name_is_served_and_the_file_lands_in_a_file_sink() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let data = bytes(200_000, 5);
    std::fs::write(dir.path().join("sub/data.bin"), &data).unwrap();
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("copy.bin");
    let file = std::fs::OpenOptions::new().create(true).write(true).truncate(true).open(&target).unwrap();
    let mut sink = udt_bulk::storage::FileSink::new(file);
    let (addr, server) = serve(dir.path(), params(AckScheme::SegmentedTcp));
    let outcome =
        fetch(addr, "sub/data.bin", &mut sink, &params(AckScheme::SegmentedTcp), options()).unwrap();
    server.join().unwrap().unwrap();
    assert!(std::fs::read(&target).unwrap() == data);
    assert_eq!(outcome.peer_digest, Some(*blake3::hash(&data).as_bytes()));
    assert!(outcome.elapsed < udt_bulk::digest::wait(0), "no digest wait: {:?}", outcome.elapsed);
}

/// Fetch `name` and expect a refusal whose reason contains `expect`, on both ends.
fn refused(root: &Path, name: &str, expect: &str) {
    let (addr, server) = serve(root, params(AckScheme::SegmentedTcp));
    let err =
        fetch(addr, name, &mut Memory::default(), &params(AckScheme::SegmentedTcp), options()).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, BulkError::Refused(_)), "{name}: {text}");
    assert!(text.starts_with("refused: ") && text.contains(expect), "{name}: {text}");
    let server_err = server.join().unwrap().unwrap_err();
    assert!(server_err.to_string().contains(expect), "the server says why too: {server_err}");
}

#[test]
fn names_outside_the_root_missing_files_and_directories_are_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::create_dir(root.join("sub")).unwrap();
    std::fs::write(dir.path().join("secret"), b"not served").unwrap();
    std::os::unix::fs::symlink(dir.path().join("secret"), root.join("escape")).unwrap();
    // The reasons are those of `udt_bulk::confine`, the one rule every server here keeps.
    refused(&root, "../secret", "`..` leaves the served directory");
    refused(&root, "sub/../../secret", "`..` leaves the served directory");
    refused(&root, dir.path().join("secret").to_str().unwrap(), "absolute");
    refused(&root, "escape", "outside the served directory");
    refused(&root, "missing.bin", "missing.bin: no such file");
    refused(&root, "sub", "not a regular file");
    refused(&root, "", "not a file name");
}

#[test]
fn a_stray_peer_on_the_listener_is_refused_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, server) = serve(dir.path(), params(AckScheme::SegmentedTcp));
    let mut stray = TcpStream::connect(addr).unwrap();
    stray.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
    let err = server.join().unwrap().unwrap_err();
    assert!(err.to_string().contains("not a FOBS peer"), "{err}");
}

#[test]
fn a_connection_with_a_wrong_token_is_refused_and_the_session_still_runs() {
    let dir = tempfile::tempdir().unwrap();
    let data = bytes(300_000, 9);
    std::fs::write(dir.path().join("f"), &data).unwrap();
    let (addr, server) = serve(dir.path(), params(AckScheme::SegmentedTcp));

    // The receiver's side by hand: request on channel 0.
    let mut ctrl = TcpStream::connect(addr).unwrap();
    ctrl.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    let request = Message::Request {
        udp_port: udp.local_addr().unwrap().port(),
        scheme: AckScheme::SegmentedTcp,
        name: "f".into(),
    };
    ctrl.write_all(&request.encode()).unwrap();
    let Message::Accept(accept) = read_one(&mut ctrl) else { panic!("accepted") };

    // An intruder guesses the token: refused with a reason, and closed.
    let mut intruder = TcpStream::connect(addr).unwrap();
    intruder.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    intruder.write_all(&Message::Hello { token: accept.token ^ 1 }.encode()).unwrap();
    assert_eq!(read_one(&mut intruder), Message::Refuse { reason: "unknown session token".into() });
    // Another client asking for a file meanwhile is told the server is busy.
    let mut other = TcpStream::connect(addr).unwrap();
    other.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    other.write_all(&request.encode()).unwrap();
    assert!(matches!(read_one(&mut other), Message::Refuse { reason } if reason.contains("busy")));

    // The right token joins channel 1 and the transfer runs.
    let mut second = TcpStream::connect(addr).unwrap();
    second.write_all(&Message::Hello { token: accept.token }.encode()).unwrap();
    let t = Transfer::new(
        accept.size,
        accept.payload,
        accept.chunk_packets,
        accept.segment_packets,
        accept.scheme,
    )
    .unwrap();
    let mut session = ReceiverSession::new(Memory::default(), t);
    let sockets = Sockets {
        controls: vec![ctrl, second],
        udp,
        data_peer: Some(SocketAddr::new(addr.ip(), accept.udp_port)),
    };
    let outcome = driver::run(&mut session, sockets, options()).unwrap();
    server.join().unwrap().unwrap();
    assert!(session.sink().0 == data);
    assert_eq!(outcome.peer_digest, Some(*blake3::hash(&data).as_bytes()));
}

fn read_one(s: &mut TcpStream) -> Message {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    for _ in 0..1000 {
        if let Some((msg, _)) = wire::decode_frame(&buf).unwrap() {
            return msg;
        }
        let n = s.read(&mut chunk).unwrap();
        assert!(n > 0, "the peer closed before a whole message");
        buf.extend_from_slice(&chunk[..n]);
    }
    panic!("no message")
}

#[test]
fn a_sender_that_closes_without_the_digest_leaves_a_prompt_fetch_without_one() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    // A sender of an empty file by hand that sets up both channels and closes them at once.
    let server = thread::spawn(move || {
        let (mut ctrl, _) = listener.accept().unwrap();
        assert!(matches!(read_one(&mut ctrl), Message::Request { .. }));
        let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
        let accept = wire::Accept {
            token: 7,
            size: 0,
            chunk_packets: 10,
            segment_packets: 4,
            payload: 1000,
            udp_port: udp.local_addr().unwrap().port(),
            scheme: AckScheme::SegmentedTcp,
        };
        ctrl.write_all(&Message::Accept(accept).encode()).unwrap();
        let (mut second, _) = listener.accept().unwrap();
        assert_eq!(read_one(&mut second), Message::Hello { token: 7 });
    });
    let started = std::time::Instant::now();
    let mut sink = Memory(vec![1, 2, 3]);
    let outcome = fetch(addr, "f", &mut sink, &params(AckScheme::SegmentedTcp), options()).unwrap();
    server.join().unwrap();
    assert_eq!((outcome.peer_digest, sink.0.len()), (None, 0), "done, sized, without a digest");
    // The digest wait would be 5 s.
    assert!(started.elapsed() < Duration::from_secs(4), "the close ends the wait: {:?}", started.elapsed());
}
