//! Hostile bytes into every parser of the file-transfer protocol (`udt-transfer/src/protocol.rs`,
//! `udt-transfer/PROTOCOL.md`): as the receiver reads a sender (header, tagged messages,
//! entries, data records, paths) and as the sender reads a receiver (greeting, statuses).
//! Nothing may panic or allocate beyond the protocol's bounds; an entry that parses re-encodes
//! to the same value.
#![no_main]

#[path = "../../udt-transfer/src/protocol.rs"]
#[allow(dead_code)]
mod protocol;

use libfuzzer_sys::fuzz_target;
use protocol::{FileHeader, Header, Status};

fuzz_target!(|data: &[u8]| {
    let _ = Header::read(&mut &data[..]);
    let _ = protocol::read_greeting(&mut &data[..]);
    let _ = protocol::read_message_tag(&mut &data[..]);
    let _ = protocol::read_start(&mut &data[..]);
    let _ = protocol::read_stripe(&mut &data[..]);
    let _ = protocol::read_join(&mut &data[..]);
    let _ = protocol::read_greeting_with_flags(&mut &data[..]);
    let mut ranges = data;
    while protocol::read_range(&mut ranges).is_ok() {}
    let _ = protocol::check_path(data);
    let _ = protocol::check_name(data);
    let mut r = data;
    while !r.is_empty() {
        let left = u64::from(r[0]) * 1000;
        if protocol::read_record(&mut r, left).is_err() {
            break;
        }
    }
    if let Ok(fh) = FileHeader::read(&mut &data[..]) {
        let mut again = Vec::new();
        fh.write(&mut again).expect("a header that parsed re-encodes");
        assert_eq!(FileHeader::read(&mut &again[..]).expect("re-parse"), fh);
    }
    if let Ok(status) = Status::read(&mut &data[..]) {
        // Messages are read lossily (invalid UTF-8 grows) and cut to 1024 bytes when written:
        // what re-encodes must parse, and be stable from then on.
        let mut again = Vec::new();
        status.write(&mut again).expect("a status that parsed re-encodes");
        let once = Status::read(&mut &again[..]).expect("re-parse");
        let mut twice = Vec::new();
        once.write(&mut twice).expect("re-encode");
        assert_eq!(Status::read(&mut &twice[..]).expect("re-parse"), once);
    }
});
