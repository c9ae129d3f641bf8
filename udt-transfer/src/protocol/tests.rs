//! The wire format's own tests: every message round-trips, hostile bytes are refused.

use super::*;

#[test]
fn header_round_trip() {
    let h = Header::new(3);
    let b = h.encode();
    assert_eq!(&b[..4], b"UDTF");
    assert_eq!(Header::read(&mut &b[..]).unwrap(), h);
    let e = Header::read(&mut &b"HTTP/1.1 200"[..]).unwrap_err();
    assert!(e.to_string().contains("it sent \"HTTP\""), "{e}");
    let e = Header::read(&mut &b"UDTP\x01\x00\x00\x00\x00\x00\x00\x00"[..]).unwrap_err();
    assert!(e.to_string().contains("`udt perf`"), "{e}");
}

#[test]
fn greetings() {
    let g = |b: &[u8]| read_greeting(&mut &b[..]).unwrap();
    assert_eq!(g(&hello(RECEIVER_MAGIC, VERSION)), Greeting::Receiver(VERSION));
    assert_eq!(g(&hello(*b"UDTP", 1)), Greeting::PerfServer(1));
    assert!(matches!(g(b"SSH-2.0-x"), Greeting::Other(m) if m.contains("SSH-")));
    // A version-1 receiver's refusal of a version-2 header.
    let mut v1 = Vec::new();
    Status::Error("unsupported protocol version 2 (this receiver speaks 1)".into()).write(&mut v1).unwrap();
    assert!(matches!(g(&v1), Greeting::Other(m) if m.contains("speaks 1")));
    assert!(read_greeting(&mut &b"UD"[..]).is_err());
    // An error status whose message is empty or one byte long: some other peer, never a
    // panic.
    for odd in [&b"\x01\x00\x00\x00"[..], b"\x01\x01\x00x", b"\x01\x05\x00ab"] {
        assert!(matches!(g(odd), Greeting::Other(_)), "{odd:?}");
    }
}

#[test]
fn file_header_and_status_round_trip() {
    let f = FileHeader {
        kind: Kind::File,
        name: b"d/c.txt".to_vec(),
        size: 1 << 40,
        mode: 0o755,
        mtime: (-5, 7),
    };
    let mut b = Vec::new();
    f.write(&mut b).unwrap();
    assert_eq!(b.len(), 3 + 7 + 24);
    assert_eq!(FileHeader::read(&mut &b[..]).unwrap(), f);
    let mut dir_with_size = b.clone();
    dir_with_size[0] = 1;
    assert!(FileHeader::read(&mut &dir_with_size[..]).is_err());
    let mut long = vec![0u8];
    long.extend_from_slice(&5000u16.to_le_bytes());
    assert!(FileHeader::read(&mut &long[..]).is_err(), "a path over the limit is not read");
    for s in [
        Status::Ok,
        Status::Error("exists; use --force".into()),
        Status::Wait("busy".into()),
        Status::Abort("interrupted".into()),
        Status::Resume { offset: 12345 },
        Status::Have,
        Status::Skip("identical (same size and BLAKE3)".into()),
    ] {
        let mut b = Vec::new();
        s.write(&mut b).unwrap();
        assert_eq!(Status::read(&mut &b[..]).unwrap(), s);
    }
    // A resume offer says how much is held and nothing about its bytes.
    let mut b = Vec::new();
    Status::Resume { offset: 7 }.write(&mut b).unwrap();
    assert_eq!(b, [4, 8, 0, 7, 0, 0, 0, 0, 0, 0, 0]);
    let mut old = vec![4u8, 40, 0];
    old.extend_from_slice(&[0; 40]);
    assert!(Status::read(&mut &old[..]).is_err(), "a version-3 resume with a hash");
    let mut b = Vec::new();
    Status::Error("é".repeat(1000)).write(&mut b).unwrap();
    assert_eq!(b.len(), 3 + MAX_MESSAGE_LEN);
    assert!(Status::read(&mut &[9u8, 0, 0][..]).is_err());
    // A message over the limit is a protocol violation, not a truncation that desyncs.
    let mut long = vec![1u8];
    long.extend_from_slice(&1025u16.to_le_bytes());
    long.extend(std::iter::repeat_n(b'x', 1025));
    assert!(Status::read(&mut &long[..]).is_err());
    let mut abort = ABORT_MARK.to_le_bytes().to_vec();
    abort.push(0);
    abort.extend_from_slice(&2000u16.to_le_bytes());
    abort.extend(std::iter::repeat_n(b'x', 2000));
    assert!(read_record(&mut &abort[..], 5).is_err());
}

#[test]
fn starts_carry_the_senders_proof() {
    for start in [Start::Whole, Start::Resume { offset: 99, prefix_hash: [7; 32] }] {
        let mut b = Vec::new();
        write_start(&mut b, &start).unwrap();
        assert_eq!(b.len(), if start == Start::Whole { 8 } else { 40 });
        assert_eq!(read_start(&mut &b[..]).unwrap(), start);
    }
    assert!(write_start(&mut Vec::new(), &Start::Resume { offset: 0, prefix_hash: [0; 32] }).is_err());
    assert!(read_start(&mut &5u64.to_le_bytes()[..]).is_err(), "a resume without its proof");
}

#[test]
fn paths_are_checked_component_by_component() {
    assert_eq!(check_path(b"a/b c/d.txt"), Ok(vec!["a", "b c", "d.txt"]));
    assert_eq!(check_path(b".hidden/x"), Ok(vec![".hidden", "x"]));
    for bad in [&b"/etc/passwd"[..], b"a/../b", b"..", b"a//b", b"a/", b"a/./b", b"a/.x.udt-partial"] {
        assert!(check_path(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
    }
    assert!(check_path(&vec![b'a'; 5000]).is_err());
}

#[test]
fn names_of_temporary_files_are_reserved() {
    for reserved in [".c.txt.udt-partial", ".a.udt-partial", ".udt-partial-0123456789abcdef"] {
        let e = check_name(reserved.as_bytes()).unwrap_err();
        assert!(e.contains("temporary files"), "{reserved}: {e}");
    }
    for fine in ["c.txt.udt-partial", ".udt-partial", "..udt-partial", "udt-partial-1"] {
        assert_eq!(check_name(fine.as_bytes()), Ok(fine), "{fine}");
    }
}

#[test]
fn records() {
    let mut b = Vec::new();
    b.extend_from_slice(&chunk_prefix(10));
    assert_eq!(read_record(&mut &b[..], 10).unwrap(), Record::Chunk(10));
    assert!(read_record(&mut &b[..], 9).is_err(), "longer than what is left");
    assert!(read_record(&mut &0u32.to_le_bytes()[..], 9).is_err(), "empty chunk");
    let mut b = Vec::new();
    write_abort(&mut b, AbortScope::File, "the file shrank").unwrap();
    assert_eq!(
        read_record(&mut &b[..], 5).unwrap(),
        Record::Abort(AbortScope::File, "the file shrank".into())
    );
    let mut b = Vec::new();
    write_abort(&mut b, AbortScope::Session, "").unwrap();
    assert_eq!(
        read_record(&mut &b[..], 5).unwrap(),
        Record::Abort(AbortScope::Session, "no reason given".into())
    );
}

#[test]
fn names() {
    for good in [
        "c.txt",
        ".hidden",
        "a b",
        "naïve.txt",
        "x.tar.gz",
        "backup..2024.txt",
        "wait...txt",
        "...",
        "..hidden",
        "trailing..",
    ] {
        assert_eq!(check_name(good.as_bytes()), Ok(good), "{good}");
    }
    for bad in [
        &b""[..],
        b".",
        b"..",
        b"../evil",
        b"a/../../b",
        b"/etc/passwd",
        b"a/b",
        b"a\\b",
        b"..\\evil",
        b"nul\0byte",
        b"esc\x1b[2J",
        b"tab\there",
        b"\xff\xfe",
        "evil\u{202e}txt.exe".as_bytes(),
        "iso\u{2066}late".as_bytes(),
        &[b'a'; 256],
    ] {
        assert!(check_name(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
    }
    let dot = check_name(b".").unwrap_err();
    let dotdot = check_name(b"..").unwrap_err();
    assert_ne!(dot, dotdot);
    assert!(dot.contains("\".\"") && !dot.contains("\"..\""), "{dot}");
    assert!(check_name(b"tab\there").unwrap_err().contains("tab\\there"));
    assert!(check_name(b"\xff\xfe").unwrap_err().contains("UTF-8"));
}

#[test]
fn names_are_displayed_safely() {
    assert_eq!(display_name("evil\u{202e}txt.exe"), "evil\\u{202e}txt.exe");
    assert_eq!(display_name("a\tb\x1b"), "a\\tb\\u{1b}");
    assert_eq!(display_name("naïve"), "naïve");
}

#[test]
fn delete_requests_and_deleted_paths_round_trip() {
    let patterns = vec!["*.o".to_string(), "/tree/build".to_string(), String::new()];
    let mut b = Vec::new();
    write_message_tag(&mut b, Tag::Delete).unwrap();
    write_patterns(&mut b, &patterns).unwrap();
    let mut r = &b[..];
    assert_eq!(read_message_tag(&mut r).unwrap(), Tag::Delete);
    assert_eq!(read_patterns(&mut r).unwrap(), patterns);
    assert!(write_patterns(&mut Vec::new(), &vec![String::new(); MAX_PATTERNS + 1]).is_err());
    let mut too_many = ((MAX_PATTERNS + 1) as u16).to_le_bytes().to_vec();
    too_many.extend_from_slice(&[0; 4]);
    assert!(read_patterns(&mut &too_many[..]).is_err());
    let not_utf8 = [1, 0, 1, 0, 0xff];
    assert!(read_patterns(&mut &not_utf8[..]).is_err());

    // A deleted path may be longer than a status message, up to a path's limit.
    let long = "d/".repeat(1000) + "f";
    let mut b = Vec::new();
    Status::Deleted(long.clone()).write(&mut b).unwrap();
    assert_eq!(Status::read(&mut &b[..]).unwrap(), Status::Deleted(long));
    let mut over = vec![7u8];
    over.extend_from_slice(&((MAX_PATH_LEN + 1) as u16).to_le_bytes());
    over.extend(std::iter::repeat_n(b'a', MAX_PATH_LEN + 1));
    assert!(Status::read(&mut &over[..]).is_err());
}

#[test]
fn stripe_join_and_range_records_round_trip_and_refuse_what_does_not_fit() {
    let token = [9u8; TOKEN_LEN];
    let mut b = Vec::new();
    write_stripe(&mut b, &token, 4).unwrap();
    assert_eq!(read_stripe(&mut &b[..]).unwrap(), (token, 4));
    for bad in [0u16, 1, MAX_STRIPES + 1] {
        let mut b = Vec::new();
        write_token_and(&mut b, &token, bad).unwrap();
        assert!(read_stripe(&mut &b[..]).is_err(), "{bad} connections");
    }
    let mut b = Vec::new();
    write_join(&mut b, &token, 3).unwrap();
    assert_eq!(read_join(&mut &b[..]).unwrap(), (token, 3));
    for bad in [0u16, MAX_STRIPES] {
        let mut b = Vec::new();
        write_token_and(&mut b, &token, bad).unwrap();
        assert!(read_join(&mut &b[..]).is_err(), "member {bad}");
    }
    let mut b = range_head(CHUNK, 7, 1 << 33).to_vec();
    b.extend_from_slice(&RANGE_END);
    write_abort(&mut b, AbortScope::File, "gone").unwrap();
    let r = &mut &b[..];
    assert_eq!(read_range(r).unwrap(), RangeRecord::Range { len: CHUNK as u32, index: 7, offset: 1 << 33 });
    assert_eq!(read_range(r).unwrap(), RangeRecord::End);
    assert_eq!(read_range(r).unwrap(), RangeRecord::Abort(AbortScope::File, "gone".into()));
    let too_long = range_head(CHUNK + 1, 0, 0);
    assert!(read_range(&mut &too_long[..]).is_err());
    let (greeting, flags) =
        read_greeting_with_flags(&mut &hello_with_flags(RECEIVER_MAGIC, VERSION, HELLO_STRIPES)[..]).unwrap();
    assert_eq!((greeting, flags), (Greeting::Receiver(VERSION), HELLO_STRIPES));
    for tag in [Tag::Stripe, Tag::Join, Tag::Striped] {
        let mut b = Vec::new();
        write_message_tag(&mut b, tag).unwrap();
        assert_eq!(read_message_tag(&mut &b[..]).unwrap(), tag);
    }
}
