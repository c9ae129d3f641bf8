//! Striped transfers (`udt send -P N`) end to end over loopback: a file over two and four
//! connections (plain and secured) and a tree over three arrive byte-exact; a hostile sender's
//! bad token, overlapping range or range past the end is refused without a byte written
//! outside the file; a connection lost in the middle fails the transfer with a reason naming
//! it, and a rerun resumes the part it left.

#![allow(clippy::unwrap_used)]

mod common;

use common::data;
use std::fs;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use udt::secure::Credential;
use udt::{Options, UdtListener, UdtStream};
use udt_transfer::protocol::{
    self, FileHeader, Header, Kind, Start, Status, Tag, CHUNK, FLAG_JOIN, FLAG_SKIPS, FLAG_STRIPES,
    HELLO_LEN, VERSION,
};
use udt_transfer::{
    greet, send, Error, Event, Plan, ReceiveOptions, ReceiveReport, Receiver, SendOptions, Striping, Turn,
};

fn options(secured: bool) -> Options {
    let mut options = Options::default();
    if secured {
        options.security = Some(Credential::Key([0x5a; 32]));
    }
    options
}

/// What the receiver's connections ended with: the sessions' reports and every error.
type Outcomes = Arc<Mutex<(Vec<ReceiveReport>, Vec<String>)>>;

/// A receiver serving every connection on a thread of its own (as a library user would), for
/// `accepts` connections.
fn serve(out: &Path, secured: bool, accepts: usize) -> (SocketAddr, JoinHandle<()>, Outcomes) {
    let receiver = Arc::new(Receiver::new(out, ReceiveOptions::default()).unwrap());
    let listener = UdtListener::bind_with("127.0.0.1:0", options(secured)).unwrap();
    let addr = listener.local_addr().unwrap();
    let outcomes: Outcomes = Arc::default();
    let seen = Arc::clone(&outcomes);
    let handle = std::thread::spawn(move || {
        let mut threads = Vec::new();
        for _ in 0..accepts {
            let (stream, _) = listener.accept().unwrap();
            greet(&stream, Turn::Now).unwrap();
            let (receiver, seen) = (Arc::clone(&receiver), Arc::clone(&seen));
            threads.push(std::thread::spawn(move || {
                match receiver.serve(stream, &mut udt_transfer::Ignore) {
                    Ok(report) if report.files > 0 => seen.lock().unwrap().0.push(report),
                    Ok(_) => {}
                    Err(e) => seen.lock().unwrap().1.push(e.chain()),
                }
            }));
        }
        for t in threads {
            t.join().unwrap();
        }
    });
    (addr, handle, outcomes)
}

/// Striping over `connections` to `addr`, each opened with `options`.
fn striping(addr: SocketAddr, connections: u16, secured: bool) -> Striping {
    let mut token = [0u8; 16];
    token[..8].copy_from_slice(&u64::from(addr.port()).wrapping_mul(0x9e37_79b9_7f4a_7c15).to_le_bytes());
    token[8] = connections as u8;
    let connect = Arc::new(move || UdtStream::connect_with(addr, options(secured)));
    Striping { token, connections, connect }
}

/// Send `paths` striped over `connections`; the result and the events' resumes.
fn send_striped(
    paths: &[std::path::PathBuf],
    addr: SocketAddr,
    connections: u16,
    secured: bool,
) -> (Result<udt_transfer::SendReport, Error>, Vec<u64>) {
    let plan = Plan::collect(paths, None, &mut udt_transfer::Ignore);
    let mut send_options = SendOptions::default();
    send_options.striping = Some(striping(addr, connections, secured));
    let stream = UdtStream::connect_with(addr, options(secured)).unwrap();
    let mut resumed = Vec::new();
    let result = send(stream, &plan, &send_options, &mut |e: Event<'_>| {
        if let Event::Resuming { offset, .. } = e {
            resumed.push(offset);
        }
    });
    (result, resumed)
}

#[test]
fn a_file_striped_over_two_and_four_connections_arrives_byte_exact_plain_and_secured() {
    for (connections, secured) in [(2, false), (4, false), (2, true), (4, true)] {
        let src = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        let content = data(9 * CHUNK + 12_345, u64::from(connections) + u64::from(secured));
        fs::write(src.path().join("big.bin"), &content).unwrap();
        let (addr, receiving, outcomes) = serve(out.path(), secured, usize::from(connections));
        let (result, _) = send_striped(&[src.path().join("big.bin")], addr, connections, secured);
        let report = result.unwrap();
        receiving.join().unwrap();
        assert_eq!((report.sent, report.bytes), (1, content.len() as u64), "{report:?}");
        let (reports, errors) = &*outcomes.lock().unwrap();
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(reports.len(), 1);
        assert_eq!((reports[0].stored, reports[0].bytes), (1, content.len() as u64));
        assert!(fs::read(out.path().join("big.bin")).unwrap() == content, "-P {connections}: the bytes");
    }
}

#[test]
fn a_tree_striped_over_three_connections_arrives_whole() {
    let src = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let top = src.path().join("tree");
    fs::create_dir_all(top.join("sub")).unwrap();
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("a.txt", data(10_000, 1)),
        ("big1.bin", data(6 * CHUNK + 1, 2)),
        ("sub/empty", Vec::new()),
        ("sub/mid.bin", data(CHUNK + 99, 3)),
        ("sub/big2.bin", data(5 * CHUNK - 7, 4)),
        ("z.txt", data(123, 5)),
    ];
    for (path, bytes) in &files {
        fs::write(top.join(path), bytes).unwrap();
    }
    let (addr, receiving, outcomes) = serve(out.path(), false, 3);
    let report = send_striped(&[top], addr, 3, false).0.unwrap();
    receiving.join().unwrap();
    assert_eq!((report.files, report.sent, report.failed.len()), (6, 6, 0), "{report:?}");
    assert!(outcomes.lock().unwrap().1.is_empty());
    for (path, bytes) in &files {
        assert!(fs::read(out.path().join("tree").join(path)).unwrap() == *bytes, "{path}");
    }
}

/// A raw striped session of one file of `size` bytes named `name`, accepted up to its
/// go-ahead; the connection and the receiver's handle.
fn raw_session(addr: SocketAddr, token: [u8; 16], name: &str, size: u64) -> UdtStream {
    let mut s = UdtStream::connect(addr).unwrap();
    let mut hello = [0u8; HELLO_LEN];
    s.read_exact(&mut hello).unwrap();
    assert_eq!(u16::from_le_bytes([hello[6], hello[7]]) & protocol::HELLO_STRIPES, 1, "the receiver stripes");
    s.write_all(&Header { version: VERSION, flags: FLAG_SKIPS | FLAG_STRIPES, file_count: 1 }.encode())
        .unwrap();
    protocol::write_message_tag(&mut s, Tag::Stripe).unwrap();
    protocol::write_stripe(&mut s, &token, 2).unwrap();
    protocol::write_message_tag(&mut s, Tag::Entry).unwrap();
    let header =
        FileHeader { kind: Kind::File, name: name.as_bytes().to_vec(), size, mode: 0o644, mtime: (0, 0) };
    let mut entry = Vec::new();
    header.write(&mut entry).unwrap();
    s.write_all(&entry).unwrap();
    assert_eq!(Status::read(&mut s).unwrap(), Status::Ok, "the session");
    assert_eq!(Status::read(&mut s).unwrap(), Status::Ok, "the entry");
    s
}

/// A raw joining connection: its answer, and the connection.
fn raw_join(addr: SocketAddr, token: [u8; 16], member: u16) -> (Status, UdtStream) {
    let mut m = UdtStream::connect(addr).unwrap();
    let mut hello = [0u8; HELLO_LEN];
    m.read_exact(&mut hello).unwrap();
    m.write_all(&Header { version: VERSION, flags: FLAG_JOIN, file_count: 0 }.encode()).unwrap();
    protocol::write_message_tag(&mut m, Tag::Join).unwrap();
    protocol::write_join(&mut m, &token, member).unwrap();
    (Status::read(&mut m).unwrap(), m)
}

fn range(s: &mut UdtStream, index: u32, offset: u64, bytes: &[u8]) {
    s.write_all(&protocol::range_head(bytes.len(), index, offset)).unwrap();
    s.write_all(bytes).unwrap();
}

/// Nothing in `out` but what is expected, and no file larger than `size`.
fn nothing_outside(out: &Path, size: u64) {
    for entry in fs::read_dir(out).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        assert!(name == "x.bin" || name == ".x.bin.udt-partial", "unexpected {name}");
        assert!(entry.metadata().unwrap().len() <= size, "{name} grew past the file's size");
    }
}

#[test]
fn a_bad_token_an_overlapping_range_and_a_range_past_the_end_are_refused() {
    let size = 3 * CHUNK as u64;
    let content = data(size as usize, 9);
    for hostile in ["token", "number", "overlap", "past the end", "duplicate"] {
        let out = tempfile::tempdir().unwrap();
        let (addr, receiving, outcomes) = serve(out.path(), false, 3);
        let token = [hostile.len() as u8; 16];
        let mut s = raw_session(addr, token, "x.bin", size);
        protocol::write_message_tag(&mut s, Tag::Striped).unwrap();
        s.write_all(&0u32.to_le_bytes()).unwrap();
        protocol::write_start(&mut s, &Start::Whole).unwrap();
        match hostile {
            "token" => {
                let (answer, _m) = raw_join(addr, [0xee; 16], 1);
                assert!(
                    matches!(&answer, Status::Error(why) if why.contains("no striped transfer of this token")),
                    "{answer:?}"
                );
                let (answer, _m2) = raw_join(addr, token, 1);
                assert_eq!(answer, Status::Ok, "the right token still joins");
            }
            "number" => {
                let (answer, _m) = raw_join(addr, token, 2);
                assert!(
                    matches!(&answer, Status::Error(why) if why.contains("has 2 connections")),
                    "{answer:?}"
                );
                let (answer, _m2) = raw_join(addr, token, 1);
                assert_eq!(answer, Status::Ok);
            }
            _ => {
                let (answer, mut m) = raw_join(addr, token, 1);
                assert_eq!(answer, Status::Ok);
                let (_, m2) = raw_join(addr, token, 1);
                drop(m2);
                range(&mut s, 0, 0, &content[..CHUNK]);
                // The receiver refuses the range from its head: the rest may find the
                // connection closed.
                let (offset, bytes) = match hostile {
                    "overlap" => (CHUNK as u64 / 2, &content[CHUNK / 2..CHUNK / 2 + 1000]),
                    "duplicate" => (0, &content[..CHUNK]),
                    _ => (size - 10, &[0x41; 20][..]),
                };
                m.write_all(&protocol::range_head(bytes.len(), 0, offset)).unwrap();
                let _ = m.write_all(bytes);
                // The session's connection hears why.
                let mut answer = Status::Ok;
                for _ in 0..4 {
                    answer = Status::read(&mut s).unwrap_or(Status::Ok);
                    if answer != Status::Ok {
                        break;
                    }
                }
                let expect = if hostile == "past the end" { "outside" } else { "over one received already" };
                assert!(
                    matches!(&answer, Status::Abort(why) if why.contains(expect)),
                    "{hostile}: {answer:?}"
                );
            }
        }
        drop(s);
        receiving.join().unwrap();
        nothing_outside(out.path(), size);
        assert!(!out.path().join("x.bin").exists(), "{hostile}: nothing stored");
        let errors = &outcomes.lock().unwrap().1;
        assert!(!errors.is_empty(), "{hostile}: the receiver reports it");
    }
}

#[test]
fn a_connection_lost_mid_transfer_fails_clearly_and_a_rerun_resumes_the_part() {
    let out = tempfile::tempdir().unwrap();
    let size = 8 * CHUNK as u64;
    let content = data(size as usize, 21);
    let src = tempfile::tempdir().unwrap();
    fs::write(src.path().join("x.bin"), &content).unwrap();

    // A sender whose joined connection drops after the first ranges.
    let (addr, receiving, outcomes) = serve(out.path(), false, 2);
    let token = [0x33; 16];
    let mut s = raw_session(addr, token, "x.bin", size);
    protocol::write_message_tag(&mut s, Tag::Striped).unwrap();
    s.write_all(&0u32.to_le_bytes()).unwrap();
    protocol::write_start(&mut s, &Start::Whole).unwrap();
    let (answer, mut m) = raw_join(addr, token, 1);
    assert_eq!(answer, Status::Ok);
    // The joined connection carries the first three ranges (read before its end, whatever
    // the session's connection did meanwhile); the session's one past a hole.
    let chunk = |k: usize| &content[k * CHUNK..(k + 1) * CHUNK];
    range(&mut s, 0, 4 * CHUNK as u64, chunk(4));
    for k in 0..3 {
        range(&mut m, 0, (k * CHUNK) as u64, chunk(k));
    }
    m.close().unwrap();
    let answer = Status::read(&mut s).unwrap();
    assert!(
        matches!(&answer, Status::Abort(why) if why.contains("connection 1 of the striped transfer failed")),
        "{answer:?}"
    );
    drop(s);
    receiving.join().unwrap();
    let errors = outcomes.lock().unwrap().1.clone();
    assert!(errors.iter().any(|e| e.contains("connection 1 of the striped transfer failed")), "{errors:?}");
    let part = fs::read(out.path().join(".x.bin.udt-partial")).unwrap();
    assert_eq!(part.len(), 3 * CHUNK, "the bytes without a hole from the start");
    assert!(part == content[..3 * CHUNK]);

    // A rerun resumes there and completes the file.
    let (addr, receiving, _) = serve(out.path(), false, 2);
    let (result, resumed) = send_striped(&[src.path().join("x.bin")], addr, 2, false);
    let report = result.unwrap();
    receiving.join().unwrap();
    assert_eq!(resumed, [3 * CHUNK as u64]);
    assert_eq!((report.sent, report.bytes), (1, size - 3 * CHUNK as u64));
    assert!(fs::read(out.path().join("x.bin")).unwrap() == content);
    assert!(!out.path().join(".x.bin.udt-partial").exists());
}

#[test]
fn a_sender_whose_joined_connection_is_lost_says_which_and_the_rerun_completes() {
    let out = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    let content = data(80 * CHUNK, 31);
    fs::write(src.path().join("x.bin"), &content).unwrap();
    let (addr, receiving, _) = serve(out.path(), false, 1);
    // The joined connection goes to an impostor that takes the join, reads a little and drops.
    let impostor = UdtListener::bind("127.0.0.1:0").unwrap();
    let impostor_addr = impostor.local_addr().unwrap();
    let dropping = std::thread::spawn(move || {
        let (mut m, _) = impostor.accept().unwrap();
        greet(&m, Turn::Now).unwrap();
        let mut head = [0u8; 12 + 1 + 18];
        m.read_exact(&mut head).unwrap();
        Status::Ok.write(&mut m).unwrap();
        let mut some = vec![0u8; CHUNK];
        m.read_exact(&mut some).unwrap();
        drop(m);
    });
    let plan = Plan::collect(&[src.path().join("x.bin")], None, &mut udt_transfer::Ignore);
    let mut send_options = SendOptions::default();
    let mut stripes = striping(addr, 2, false);
    stripes.connect = Arc::new(move || UdtStream::connect(impostor_addr));
    send_options.striping = Some(stripes);
    let err =
        send(UdtStream::connect(addr).unwrap(), &plan, &send_options, &mut udt_transfer::Ignore).unwrap_err();
    dropping.join().unwrap();
    receiving.join().unwrap();
    // The sender sees the connection fail; or, if its share was all written before, the
    // receiver's word that it never joined.
    assert!(err.chain().contains("connection 1 of the striped transfer"), "{}", err.chain());
    let part = out.path().join(".x.bin.udt-partial");
    let held = fs::metadata(&part).map(|m| m.len()).unwrap_or(0);
    assert_eq!(held % CHUNK as u64, 0, "cut at a range's end");
    assert!(fs::read(&part).unwrap_or_default() == content[..held as usize]);

    let (addr, receiving, _) = serve(out.path(), false, 2);
    let (result, resumed) = send_striped(&[src.path().join("x.bin")], addr, 2, false);
    result.unwrap();
    receiving.join().unwrap();
    assert!(held == 0 || resumed == [held], "{resumed:?} after {held}");
    assert!(fs::read(out.path().join("x.bin")).unwrap() == content);
}

#[test]
fn a_receiver_without_striping_is_refused_before_anything_is_sent() {
    // An older receiver: a hello without the striping flag.
    let listener = UdtListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let old = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        s.write_all(&protocol::hello(protocol::RECEIVER_MAGIC, VERSION)).unwrap();
        let mut got = Vec::new();
        let _ = s.read_to_end(&mut got);
        got
    });
    let src = tempfile::tempdir().unwrap();
    fs::write(src.path().join("f"), b"x").unwrap();
    let (result, _) = send_striped(&[src.path().join("f")], addr, 2, false);
    let err = result.unwrap_err();
    assert!(matches!(err, Error::StripingUnsupported), "{}", err.chain());
    assert!(err.to_string().contains("-P 1"), "{err}");
    assert!(old.join().unwrap().is_empty(), "not a byte sent");
}
