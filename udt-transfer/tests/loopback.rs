//! The library alone, end to end over loopback: a tree and a file sent from one thread to a
//! receiver on another, one file resuming from a part an interrupted transfer left, files the
//! receiver holds identical kept on the sender's proof; the bytes, the permission bits, the
//! times and the events are checked.

#![allow(clippy::unwrap_used)]

mod common;

use common::data;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use udt::{UdtListener, UdtStream};
use udt_transfer::{greet, send, Event, Plan, ReceiveOptions, Receiver, SendOptions, Turn};

/// The process's umask, as the kernel shows it.
fn umask() -> u32 {
    let status = fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find_map(|l| l.strip_prefix("Umask:")).unwrap();
    u32::from_str_radix(line.trim(), 8).unwrap()
}

fn write(path: &Path, bytes: &[u8], mode: u32) {
    fs::write(path, bytes).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

/// What an observer saw, owned.
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    Resuming(String, u64),
    Done(String, u64, [u8; 32]),
    Failed(String),
}

fn record(seen: &mut Vec<Seen>, event: Event<'_>) {
    match event {
        Event::Resuming { path, offset } => seen.push(Seen::Resuming(path.into(), offset)),
        Event::FileDone { path, bytes, hash, .. } => seen.push(Seen::Done(path.into(), bytes, hash)),
        Event::FileFailed { path, .. } => seen.push(Seen::Failed(path.into())),
        _ => {}
    }
}

#[test]
fn a_tree_and_a_resumed_file_arrive_verified_with_their_modes() {
    let src = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let top = src.path().join("top");
    fs::create_dir_all(top.join("sub")).unwrap();
    let small = data(10_000, 1);
    let nested = data(300_000, 2);
    let big = data(3 << 20, 3);
    write(&top.join("a.txt"), &small, 0o640);
    write(&top.join("sub/run.sh"), &nested, 0o755);
    write(&src.path().join("big.bin"), &big, 0o604);
    fs::File::options()
        .write(true)
        .open(top.join("a.txt"))
        .unwrap()
        .set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000))
        .unwrap();
    fs::set_permissions(top.join("sub"), fs::Permissions::from_mode(0o750)).unwrap();
    // What an interrupted transfer of big.bin left: its first bytes, private, under the name a
    // later session resumes.
    let held = (1 << 20) + 12_345;
    write(&out.path().join(".big.bin.udt-partial"), &big[..held], 0o600);

    let receiver = Receiver::new(out.path(), ReceiveOptions::default()).unwrap();
    let listener = UdtListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let receiving = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        greet(&stream, Turn::Now).unwrap();
        let mut seen = Vec::new();
        let report = receiver.serve(stream, &mut |e: Event<'_>| record(&mut seen, e)).unwrap();
        (report, seen)
    });

    let mut sent_seen = Vec::new();
    let mut skipped = 0;
    let plan = Plan::collect(&[top.clone(), src.path().join("big.bin")], None, &mut |e: Event<'_>| {
        if matches!(e, Event::Skipped { .. }) {
            skipped += 1;
        }
    });
    assert_eq!((plan.entries().len(), plan.files(), skipped), (5, 3, 0));
    let stream = UdtStream::connect(addr).unwrap();
    let report =
        send(stream, &plan, &SendOptions::default(), &mut |e: Event<'_>| record(&mut sent_seen, e)).unwrap();
    let (received, recv_seen) = receiving.join().unwrap();

    assert_eq!((report.files, report.sent, report.failed.len()), (3, 3, 0), "{report:?}");
    assert_eq!((received.files, received.stored, received.failed.len()), (3, 3, 0), "{received:?}");
    let resumed_bytes = (big.len() - held) as u64;
    assert_eq!(report.bytes, (small.len() + nested.len()) as u64 + resumed_bytes);
    assert_eq!(received.bytes, report.bytes);
    let hash = |b: &[u8]| *blake3::hash(b).as_bytes();
    // All five entries go out in the first window, so every go-ahead (big.bin's offer to
    // resume among them) is read before the first verdict.
    assert_eq!(
        sent_seen,
        [
            Seen::Resuming("big.bin".into(), held as u64),
            Seen::Done("top/a.txt".into(), small.len() as u64, hash(&small)),
            Seen::Done("top/sub/run.sh".into(), nested.len() as u64, hash(&nested)),
            Seen::Done("big.bin".into(), resumed_bytes, hash(&big)),
        ]
    );
    assert_eq!(
        recv_seen,
        [
            Seen::Done("top/a.txt".into(), small.len() as u64, hash(&small)),
            Seen::Done("top/sub/run.sh".into(), nested.len() as u64, hash(&nested)),
            Seen::Done("big.bin".into(), resumed_bytes, hash(&big)),
        ]
    );

    // The bytes.
    let o = out.path();
    assert_eq!(fs::read(o.join("top/a.txt")).unwrap(), small);
    assert_eq!(fs::read(o.join("top/sub/run.sh")).unwrap(), nested);
    assert_eq!(fs::read(o.join("big.bin")).unwrap(), big);
    assert!(!o.join(".big.bin.udt-partial").exists(), "the part became the file");
    // The modes: the sender's, less the umask, never group or other write; directories this
    // session created keep owner rwx.
    let mask = umask();
    let mode = |p: &str| fs::metadata(o.join(p)).unwrap().mode() & 0o7777;
    assert_eq!(mode("top/a.txt"), 0o640 & !mask & !0o022);
    assert_eq!(mode("top/sub/run.sh"), 0o755 & !mask & !0o022);
    assert_eq!(mode("big.bin"), 0o604 & !mask & !0o022);
    assert_eq!(mode("top/sub"), (0o750 & !mask & !0o022) | 0o700);
    assert_eq!(fs::metadata(o.join("top/a.txt")).unwrap().mtime(), 1_000_000_000, "the time is kept");
}

/// Serve one connection on a fresh listener into `out`, on a thread; its address and handle.
fn serve_once(
    out: &Path,
) -> (std::net::SocketAddr, std::thread::JoinHandle<(udt_transfer::ReceiveReport, Vec<String>)>) {
    let receiver = Receiver::new(out, ReceiveOptions::default()).unwrap();
    let listener = UdtListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let handle = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        greet(&stream, Turn::Now).unwrap();
        let mut kept = Vec::new();
        let report = receiver
            .serve(stream, &mut |e: Event<'_>| {
                if let Event::Unchanged { path, reason } = e {
                    kept.push(format!("{path}: {reason}"));
                }
            })
            .unwrap();
        (report, kept)
    });
    (addr, handle)
}

/// A file the receiver holds identical is kept on the sender's proof and reported as
/// unchanged on both ends; one of the same size that differs is refused; a sender that does
/// not announce the skips flag is answered `error` as before.
#[test]
fn identical_files_are_kept_on_the_senders_proof() {
    use udt_transfer::protocol::{self, FileHeader, Header, Kind, Status, Tag, HELLO_LEN, VERSION};
    let src = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let same = data(2_000_000, 7);
    write(&src.path().join("same.bin"), &same, 0o644);
    write(&out.path().join("same.bin"), &same, 0o644);
    write(&src.path().join("other.bin"), &data(1000, 10), 0o644);
    write(&out.path().join("other.bin"), &data(1000, 9), 0o644);
    let (addr, receiving) = serve_once(out.path());
    let plan =
        Plan::collect(&[src.path().join("same.bin"), src.path().join("other.bin")], None, &mut |_: Event<
            '_,
        >| {});
    let mut kept = Vec::new();
    let mut failed = Vec::new();
    let report = send(UdtStream::connect(addr).unwrap(), &plan, &SendOptions::default(), &mut |e: Event<
        '_,
    >| {
        match e {
            Event::Unchanged { path, .. } => kept.push(path.to_string()),
            Event::FileFailed { path, reason } => failed.push(format!("{path}: {reason}")),
            Event::DataStarted { path, .. } => panic!("{path}: data moved"),
            _ => {}
        }
    })
    .unwrap();
    let (received, recv_kept) = receiving.join().unwrap();
    assert_eq!((report.sent, report.skipped, report.bytes), (0, 1, 0), "{report:?}");
    assert_eq!(kept, ["same.bin"]);
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert!(failed[0].starts_with("other.bin") && failed[0].contains("exists and differs"), "{failed:?}");
    assert_eq!((received.stored, received.skipped), (0, 1), "{received:?}");
    assert_eq!(recv_kept, ["same.bin: identical (same size and BLAKE3)"]);
    assert_eq!(fs::read(out.path().join("other.bin")).unwrap(), data(1000, 9), "kept as it was");

    // A sender without the flag: `error`, as before it existed.
    let (addr, receiving) = serve_once(out.path());
    let mut s = UdtStream::connect(addr).unwrap();
    use std::io::{Read, Write};
    s.write_all(&Header { version: VERSION, flags: 0, file_count: 1 }.encode()).unwrap();
    protocol::write_message_tag(&mut s, Tag::Entry).unwrap();
    let mut entry = Vec::new();
    FileHeader {
        kind: Kind::File,
        name: b"same.bin".to_vec(),
        size: same.len() as u64,
        mode: 0o644,
        mtime: (0, 0),
    }
    .write(&mut entry)
    .unwrap();
    s.write_all(&entry).unwrap();
    let mut hello = [0u8; HELLO_LEN];
    s.read_exact(&mut hello).unwrap();
    assert_eq!(Status::read(&mut s).unwrap(), Status::Ok, "the session");
    match Status::read(&mut s).unwrap() {
        Status::Error(why) => assert!(why.contains("exists; use --force"), "{why}"),
        other => panic!("{other:?}"),
    }
    protocol::write_message_tag(&mut s, Tag::End).unwrap();
    let (received, _) = receiving.join().unwrap();
    assert_eq!((received.skipped, received.failed.len()), (0, 1));
}

/// A file of several chunks, sent in records of uneven sizes (as any sender may): stored whole
/// and verified when its hash matches; refused with nothing stored when one byte of one chunk
/// differs from what the hash covers.
#[test]
fn a_large_file_in_uneven_records_is_verified_and_a_corrupted_chunk_is_refused() {
    use std::io::{Read, Write};
    use udt_transfer::protocol::{
        self, FileHeader, Header, Kind, Start, Status, Tag, CHUNK, FLAG_SKIPS, HELLO_LEN, VERSION,
    };
    let content = data(3 * CHUNK + 777, 11);
    let out = tempfile::tempdir().unwrap();
    for (name, corrupt) in [("good.bin", false), ("bad.bin", true)] {
        let (addr, receiving) = serve_once(out.path());
        let mut s = UdtStream::connect(addr).unwrap();
        s.write_all(&Header { version: VERSION, flags: FLAG_SKIPS, file_count: 1 }.encode()).unwrap();
        protocol::write_message_tag(&mut s, Tag::Entry).unwrap();
        let header = FileHeader {
            kind: Kind::File,
            name: name.as_bytes().to_vec(),
            size: content.len() as u64,
            mode: 0o644,
            mtime: (0, 0),
        };
        let mut entry = Vec::new();
        header.write(&mut entry).unwrap();
        s.write_all(&entry).unwrap();
        let mut hello = [0u8; HELLO_LEN];
        s.read_exact(&mut hello).unwrap();
        assert_eq!(Status::read(&mut s).unwrap(), Status::Ok, "the session");
        assert_eq!(Status::read(&mut s).unwrap(), Status::Ok, "the entry");
        protocol::write_message_tag(&mut s, Tag::Data).unwrap();
        s.write_all(&0u32.to_le_bytes()).unwrap();
        protocol::write_start(&mut s, &Start::Whole).unwrap();
        let mut sent = content.clone();
        if corrupt {
            sent[2 * CHUNK + 5] ^= 0x40;
        }
        let mut at = 0;
        for len in [1000, CHUNK, 333_333, CHUNK].into_iter().cycle() {
            let len = len.min(sent.len() - at);
            if len == 0 {
                break;
            }
            s.write_all(&protocol::chunk_prefix(len)).unwrap();
            s.write_all(&sent[at..at + len]).unwrap();
            at += len;
        }
        s.write_all(blake3::hash(&content).as_bytes()).unwrap();
        let verdict = Status::read(&mut s).unwrap();
        protocol::write_message_tag(&mut s, Tag::End).unwrap();
        let (received, _) = receiving.join().unwrap();
        if corrupt {
            match verdict {
                Status::Error(why) => assert!(why.contains("BLAKE3 mismatch"), "{why}"),
                other => panic!("{other:?}"),
            }
            assert_eq!((received.stored, received.failed.len()), (0, 1), "{received:?}");
            assert!(!out.path().join(name).exists(), "nothing stored");
        } else {
            assert_eq!(verdict, Status::Ok);
            assert_eq!(received.stored, 1, "{received:?}");
            assert!(fs::read(out.path().join(name)).unwrap() == content, "the bytes");
        }
    }
}

/// A peer that closes the connection before the sender has written its header (as `udt cat`
/// does on reading a transfer's magic) is named as not a receiver, whichever of the sender's
/// writes meets the close first.
#[test]
fn a_peer_that_closes_at_once_is_not_a_receiver() {
    let src = tempfile::tempdir().unwrap();
    for i in 0..300 {
        write(&src.path().join(format!("f{i}")), &data(100, i), 0o644);
    }
    let listener = UdtListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (connected, told) = std::sync::mpsc::channel::<()>();
    let closing = std::thread::spawn(move || {
        let accepted = listener.accept().unwrap();
        told.recv().unwrap();
        drop(accepted);
        listener
    });
    let plan = Plan::collect(&[src.path().to_path_buf()], None, &mut |_: Event<'_>| {});
    let stream = UdtStream::connect(addr).unwrap();
    connected.send(()).unwrap();
    let _listener = closing.join().unwrap();
    // The close reaches this end before it writes.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let err = send(stream, &plan, &SendOptions::default(), &mut |_: Event<'_>| {}).unwrap_err();
    assert!(matches!(err, udt_transfer::Error::NotAReceiver(_)), "{err}");
}
