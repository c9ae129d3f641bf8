//! Each Tsunami session driven by hand, byte by byte, against a scripted peer that behaves like
//! the reference program on the other side: the exact control bytes, block placement (past
//! 4 GiB too), missing-block requests, restarts, the rate control, silence and refusals, and
//! the digest request after the stop (our server's answer, a reference's refusal, garbage).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use udt_bulk::digest;
use udt_bulk::storage::{Memory, Sink, Source};
use udt_bulk::tsunami::auth::proof;
use udt_bulk::tsunami::wire::{BlockHeader, BlockKind, FileInfo, Record, TransferRequest, REVISION};
use udt_bulk::tsunami::{Client, Params, Server};
use udt_bulk::{Event, Instant, Session};

const SECRET: &[u8] = b"scripted";

fn params() -> Params {
    Params { secret: Some(SECRET.to_vec()), ..Params::default() }
}

fn at_ms(ms: u64) -> Instant {
    Instant::from_micros(ms * 1000)
}

/// Everything the session wants to write on its control channel, concatenated.
fn control(s: &mut dyn Session) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some((channel, bytes)) = s.poll_control() {
        assert_eq!(channel, 0);
        out.extend(bytes);
    }
    out
}

fn events(s: &mut dyn Session) -> Vec<Event> {
    std::iter::from_fn(|| s.poll_event()).collect()
}

/// The digest request line our client sends after its stop record.
fn digest_request() -> Vec<u8> {
    [digest::TSUNAMI_REQUEST.as_bytes(), b"\n"].concat()
}

/// The stop record and the digest request: what our client writes once it has every block.
fn stop_and_request() -> Vec<u8> {
    [&Record::stop().encode()[..], &digest_request()].concat()
}

fn records(bytes: &[u8]) -> Vec<Record> {
    assert_eq!(bytes.len() % Record::LEN, 0, "whole records");
    bytes.chunks(Record::LEN).map(|r| Record::decode(r).unwrap()).collect()
}

fn datagram(block: u32, kind: BlockKind, body: &[u8]) -> Vec<u8> {
    let mut d = vec![0u8; 6 + body.len()];
    BlockHeader { block, kind }.encode_into(&mut d);
    d[6..].copy_from_slice(body);
    d
}

/// A sink that remembers where it was written and how it was sized, keeping no data.
#[derive(Default)]
struct Recorder {
    writes: Vec<(u64, usize)>,
    len: Option<u64>,
    finished: bool,
}

impl Sink for Recorder {
    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.writes.push((offset, data.len()));
        Ok(())
    }
    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.len = Some(len);
        Ok(())
    }
    fn finish(&mut self) -> io::Result<()> {
        self.finished = true;
        Ok(())
    }
}

/// Play a reference server up to the start of the transfer; returns what the client wrote.
fn client_to_transfer(c: &mut Client<'_>, info: FileInfo) -> Vec<u8> {
    let challenge = [0x33u8; 64];
    let mut written = control(c);
    c.handle_control(at_ms(0), 0, &REVISION.to_be_bytes());
    c.handle_control(at_ms(0), 0, &challenge);
    let proof_sent = control(c);
    assert_eq!(proof_sent, proof(&challenge, SECRET));
    written.extend(proof_sent);
    c.handle_control(at_ms(1), 0, &[0]);
    written.extend(control(c));
    c.handle_control(at_ms(21), 0, &[0]);
    written.extend(control(c));
    c.handle_control(at_ms(21), 0, &info.encode());
    written.extend(control(c));
    written
}

fn info(size: u64, block_size: u32, block_count: u32) -> FileInfo {
    FileInfo { size, block_size, block_count, epoch: 0 }
}

#[test]
fn the_client_speaks_the_reference_exchange() {
    let mut sink = Memory::default();
    let p = Params { block_size: 1000, ..params() };
    let mut c = Client::new(&p, "dir/data.bin", 0xabcd, &mut sink).unwrap();
    let written = client_to_transfer(&mut c, info(2500, 1000, 3));
    let request = TransferRequest {
        block_size: 1000,
        target_rate: 650_000_000,
        error_threshold: 7500,
        slower: (25, 24),
        faster: (5, 6),
    };
    let expected = [
        &REVISION.to_be_bytes()[..],
        &proof(&[0x33; 64], SECRET),
        b"dir/data.bin\n",
        &request.encode(),
        &[0xab, 0xcd],
    ]
    .concat();
    assert_eq!(written, expected);
    assert_eq!(events(&mut c), vec![Event::Size(2500)]);
    assert_eq!(c.rtt(), Duration::from_millis(20), "from the request to its answer");
    // The blocks, out of order; the last one padded to the block size and truncated.
    let body = |b: u8| vec![b; 1000];
    c.handle_datagram(at_ms(30), &datagram(3, BlockKind::Terminate, &body(3)));
    c.handle_datagram(at_ms(30), &datagram(1, BlockKind::Original, &body(1)));
    c.handle_datagram(at_ms(30), &datagram(1, BlockKind::Retransmission, &body(1)));
    assert!(events(&mut c).is_empty());
    c.handle_datagram(at_ms(31), &datagram(2, BlockKind::Retransmission, &body(2)));
    assert!(events(&mut c).is_empty(), "the digest is awaited");
    assert!(control(&mut c).ends_with(&stop_and_request()), "the stop ends the transfer");
    // A reference server cannot open that name: done, without a digest.
    c.handle_control(at_ms(32), 0, &[8]);
    assert_eq!(events(&mut c), vec![Event::Done]);
    assert_eq!(c.peer_digest(), None);
    let counters = c.counters();
    assert_eq!((counters.datagrams_received, counters.duplicates, counters.delivered), (4, 1, 2500));
    drop(c);
    assert_eq!(sink.0, [vec![1u8; 1000], vec![2; 1000], vec![3; 500]].concat());
}

#[test]
fn blocks_past_4_gib_land_at_64_bit_offsets() {
    let mut sink = Recorder::default();
    let size = 5u64 << 30;
    let b = 65_000u32;
    let count = size.div_ceil(u64::from(b)) as u32; // 82,596
    let p = Params { block_size: b, ..params() };
    let mut c = Client::new(&p, "big", 1, &mut sink).unwrap();
    client_to_transfer(&mut c, info(size, b, count));
    let body = vec![7u8; b as usize];
    c.handle_datagram(at_ms(30), &datagram(count, BlockKind::Terminate, &body));
    c.handle_datagram(at_ms(30), &datagram(70_000, BlockKind::Original, &body));
    drop(c);
    let last = u64::from(count - 1) * u64::from(b);
    assert_eq!(sink.len, Some(size));
    assert_eq!(sink.writes, vec![(last, (size - last) as usize), (69_999 * 65_000, 65_000)]);
    assert!(last > 1 << 32);
}

#[test]
fn the_client_refuses_a_wrapped_block_count_with_a_clear_reason() {
    // A reference server with a file of 2^32 + 5 one-byte blocks wraps the count to 5.
    let mut sink = Memory::default();
    let p = Params { block_size: 1, ..params() };
    let mut c = Client::new(&p, "huge", 1, &mut sink).unwrap();
    client_to_transfer(&mut c, info((1 << 32) + 5, 1, 5));
    let [Event::Failed(why)] = &events(&mut c)[..] else { panic!() };
    assert!(why.contains("more than 2^32-1 blocks of 1 bytes") && why.contains("larger blocks"), "{why}");
}

#[test]
fn the_client_refuses_a_bad_description_or_revision() {
    for (bad, want) in [
        (info(100, 512, 1), "protocol error: the server answered blocks of 512 bytes, not the 1024 asked"),
        (info(2049, 1024, 2), "protocol error: the server announced 2 blocks for 2049 bytes"),
    ] {
        let mut sink = Memory::default();
        let mut c = Client::new(&params(), "f", 1, &mut sink).unwrap();
        client_to_transfer(&mut c, bad);
        let [Event::Failed(why)] = &events(&mut c)[..] else { panic!() };
        assert!(why.starts_with(want), "{why}");
    }
    let mut sink = Memory::default();
    let mut c = Client::new(&params(), "f", 1, &mut sink).unwrap();
    c.handle_control(at_ms(0), 0, &0x2005_0101u32.to_be_bytes());
    assert_eq!(
        events(&mut c),
        vec![Event::Failed(
            "protocol error: the server speaks protocol revision 0x20050101, not 0x20061025".into()
        )]
    );
}

#[test]
fn the_client_drops_and_counts_malformed_datagrams() {
    let mut sink = Recorder::default();
    let p = Params { block_size: 8, ..params() };
    let mut c = Client::new(&p, "f", 1, &mut sink).unwrap();
    client_to_transfer(&mut c, info(20, 8, 3));
    let good = datagram(1, BlockKind::Original, &[1; 8]);
    let mut unknown = good.clone();
    unknown[5] = b'Q';
    for bad in [
        &good[..13],
        &[good.as_slice(), &[0]].concat()[..],
        &datagram(0, BlockKind::Original, &[1; 8])[..],
        &datagram(4, BlockKind::Original, &[1; 8])[..],
        &datagram(u32::MAX, BlockKind::Terminate, &[1; 8])[..],
        &unknown[..],
        &[][..],
    ] {
        c.handle_datagram(at_ms(30), bad);
    }
    assert_eq!(c.counters().malformed, 7);
    assert_eq!(c.counters().datagrams_received, 0);
    assert_eq!(events(&mut c), vec![Event::Size(20)], "nothing else happened");
    drop(c);
    assert!(sink.writes.is_empty());
}

#[test]
fn the_client_asks_for_missing_blocks_on_its_timer_and_on_the_last_block() {
    let mut sink = Memory::default();
    let p = Params { block_size: 4, ..params() };
    let mut c = Client::new(&p, "f", 1, &mut sink).unwrap();
    client_to_transfer(&mut c, info(40, 4, 10));
    for b in [1, 2, 4, 5] {
        c.handle_datagram(at_ms(30), &datagram(b, BlockKind::Original, &[b as u8; 4]));
    }
    assert!(control(&mut c).is_empty(), "nothing asked before the update period");
    let due = c.poll_timeout().unwrap();
    assert_eq!(due, at_ms(21 + 350));
    c.handle_timeout(due);
    // Block 3 is below the horizon (one past the highest original): asked; the error rate:
    // 0.75 x 50,000 x 1 / (1 + 1 + 4) = 6250.
    assert_eq!(records(&control(&mut c)), vec![Record::retransmit(3), Record::error_rate(6250)]);
    // The last block, within two round trips (40 ms) of that batch: nothing asked yet.
    c.handle_datagram(at_ms(400), &datagram(10, BlockKind::Terminate, &[10; 4]));
    assert!(control(&mut c).is_empty());
    // Its repeat, later: everything missing up to it is asked at once.
    c.handle_datagram(at_ms(411), &datagram(10, BlockKind::Terminate, &[10; 4]));
    assert_eq!(records(&control(&mut c)), [3, 6, 7, 8, 9].map(Record::retransmit));
    c.handle_datagram(at_ms(450), &datagram(10, BlockKind::Terminate, &[10; 4]));
    assert!(control(&mut c).is_empty());
    c.handle_datagram(at_ms(451), &datagram(10, BlockKind::Terminate, &[10; 4]));
    assert_eq!(records(&control(&mut c)).len(), 5);
    for b in [3, 6, 7, 8, 9] {
        c.handle_datagram(at_ms(460), &datagram(b, BlockKind::Retransmission, &[b as u8; 4]));
    }
    assert_eq!(events(&mut c), vec![Event::Size(40)]);
    assert_eq!(control(&mut c), stop_and_request());
    assert_eq!(c.poll_timeout(), Some(at_ms(460) + digest::wait(40)), "only the digest wait");
    c.handle_control_closed(at_ms(461), 0);
    assert_eq!(events(&mut c), vec![Event::Done], "a server that closes has no digest");
    assert_eq!(c.poll_timeout(), None);
    drop(c);
    assert_eq!(sink.0, (1..=10u8).flat_map(|b| [b; 4]).collect::<Vec<_>>());
}

#[test]
fn too_many_missing_blocks_ask_for_a_restart_that_old_originals_do_not_undo() {
    let mut sink = Memory::default();
    let p = Params { block_size: 1, ..params() };
    let mut c = Client::new(&p, "f", 1, &mut sink).unwrap();
    client_to_transfer(&mut c, info(10_000, 1, 10_000));
    c.handle_datagram(at_ms(30), &datagram(1, BlockKind::Original, &[0]));
    c.handle_datagram(at_ms(30), &datagram(5000, BlockKind::Original, &[0]));
    c.handle_timeout(at_ms(400));
    // A restart counts as 2048 asked: 0.75 x 50,000 x 2048 / (1 + 2048 + 2) = 37,445.
    assert_eq!(records(&control(&mut c)), vec![Record::restart(2), Record::error_rate(37_445)]);
    assert_eq!(c.counters().rounds, 1);
    // Originals sent before the restart arrive: they are kept, but ask for nothing.
    c.handle_datagram(at_ms(401), &datagram(5001, BlockKind::Original, &[0]));
    c.handle_datagram(at_ms(401), &datagram(10_000, BlockKind::Terminate, &[0]));
    assert!(control(&mut c).is_empty());
    // The restarted stream: a reference server resumes one block after the one named.
    c.handle_datagram(at_ms(420), &datagram(3, BlockKind::Original, &[0]));
    c.handle_datagram(at_ms(420), &datagram(4, BlockKind::Original, &[0]));
    c.handle_timeout(at_ms(750));
    let asked = records(&control(&mut c));
    assert_eq!(asked.first(), Some(&Record::retransmit(2)), "the block the reference skipped");
    assert_eq!(asked.len(), 2, "and the error rate: {asked:?}");
}

#[test]
fn the_client_says_when_the_server_closes() {
    let mut sink = Memory::default();
    let mut c = Client::new(&params(), "f", 1, &mut sink).unwrap();
    client_to_transfer(&mut c, info(10, 1024, 1));
    c.handle_control_closed(at_ms(40), 0);
    assert_eq!(
        events(&mut c),
        vec![Event::Size(10), Event::Failed("the server closed the connection during the transfer".into())]
    );
    let mut sink = Memory::default();
    let mut c = Client::new(&params(), "f", 1, &mut sink).unwrap();
    c.handle_control(at_ms(0), 0, &REVISION.to_be_bytes());
    c.handle_control(at_ms(0), 0, &[0; 64]);
    c.handle_control(at_ms(0), 0, &[1]);
    assert_eq!(
        events(&mut c),
        vec![Event::Failed("refused: the server did not accept the shared secret".into())]
    );
}

#[test]
fn unusable_client_settings_are_refused_up_front() {
    let mut sink = Memory::default();
    for (p, name, want) in [
        (Params::default(), "f", "no shared secret"),
        (Params { secret: Some(vec![]), ..params() }, "f", "empty"),
        (Params { block_size: 0, ..params() }, "f", "block size of 0"),
        (Params { block_size: 65_502, ..params() }, "f", "1 to 65501"),
        (Params { target_rate: 0, ..params() }, "f", "rate of 0"),
        (Params { faster: (5, 0), ..params() }, "f", "zero denominator"),
        (params(), "a\nb", "newline"),
        (params(), "", "empty"),
    ] {
        let Err(why) = Client::new(&p, name, 1, &mut sink) else { panic!("{want}") };
        assert!(why.to_string().contains(want), "{why}");
    }
}

// The server.

type Files = Vec<(&'static str, Vec<u8>)>;

fn catalog(files: Files) -> impl FnMut(&str) -> Result<Box<dyn Source>, String> {
    move |name: &str| match files.iter().find(|(n, _)| *n == name) {
        Some((_, data)) => Ok(Box::new(Memory(data.clone())) as Box<dyn Source>),
        None => Err(format!("{name}: no such file")),
    }
}

const CHALLENGE: [u8; 64] = [0x42; 64];

/// Play a reference client up to the start of the transfer of `name`.
fn server_to_transfer(s: &mut Server<'_>, name: &str, request: TransferRequest) -> Vec<u8> {
    let mut written = control(s);
    s.handle_control(at_ms(0), 0, &REVISION.to_be_bytes());
    written.extend(control(s));
    s.handle_control(at_ms(0), 0, &proof(&CHALLENGE, SECRET));
    written.extend(control(s));
    s.handle_control(at_ms(0), 0, format!("{name}\n").as_bytes());
    written.extend(control(s));
    s.handle_control(at_ms(0), 0, &request.encode());
    written.extend(control(s));
    s.handle_control(at_ms(0), 0, &[0x9c, 0x40]);
    written
}

fn request(block_size: u32, target_rate: u32) -> TransferRequest {
    TransferRequest { block_size, target_rate, error_threshold: 7500, slower: (25, 24), faster: (5, 6) }
}

/// The next datagram due at `now`: (block, type, body).
fn next(s: &mut Server<'_>, now: Instant) -> Option<(u32, BlockKind, Vec<u8>)> {
    let mut buf = vec![0u8; s.max_datagram()];
    let n = s.poll_datagram(now, &mut buf)?;
    let block_size = n - 6;
    let (h, body) = BlockHeader::decode(&buf[..n], block_size as u32).unwrap();
    Some((h.block, h.kind, body.to_vec()))
}

#[test]
fn the_server_speaks_the_reference_exchange_and_paces_its_blocks() {
    let data: Vec<u8> = (0..2500u32).map(|i| i as u8).collect();
    let mut cat = catalog(vec![("f", data.clone())]);
    let mut s = Server::new(&params(), CHALLENGE, 0x6543_2100, &mut cat).unwrap();
    // 8e6 x 1000 / 80e6 = 100 us base, 300 us to start.
    let written = server_to_transfer(&mut s, "f", request(1000, 80_000_000));
    let expected = [
        &REVISION.to_be_bytes()[..],
        &CHALLENGE,
        &[0],
        &[0],
        &info(2500, 1000, 3).encode()[..16],
        &[0x65, 0x43, 0x21, 0],
    ]
    .concat();
    assert_eq!(written, expected);
    assert_eq!(events(&mut s), vec![Event::DataPeerPort(40_000)]);
    assert_eq!(s.ipd_us(), Some(300.0));
    let t0 = at_ms(0);
    assert_eq!(next(&mut s, t0), Some((1, BlockKind::Original, data[..1000].to_vec())));
    assert_eq!(s.poll_timeout(), Some(t0 + Duration::from_micros(300)));
    assert_eq!(next(&mut s, t0 + Duration::from_micros(299)), None, "paced");
    let t1 = t0 + Duration::from_micros(300);
    assert_eq!(next(&mut s, t1).map(|d| (d.0, d.1)), Some((2, BlockKind::Original)));
    let t2 = t1 + Duration::from_micros(300);
    let last = next(&mut s, t2).unwrap();
    let padded = [&data[2000..], &[0u8; 500][..]].concat();
    assert_eq!(last, (3, BlockKind::Terminate, padded), "the last block is X, padded with zeros");
}

#[test]
fn the_server_merges_repeated_requests_repeats_the_last_block_and_stops() {
    let data = vec![9u8; 3000];
    let mut cat = catalog(vec![("f", data)]);
    let mut s = Server::new(&params(), CHALLENGE, 0, &mut cat).unwrap();
    server_to_transfer(&mut s, "f", request(1000, 80_000_000));
    let mut now = at_ms(1);
    let step = Duration::from_micros(300);
    for want in [1, 2, 3] {
        assert_eq!(next(&mut s, now).map(|d| d.0), Some(want));
        now += step;
    }
    // A reference client asks for block 2 again and again: it goes out once per request queued.
    let ask =
        [Record::retransmit(2).encode(), Record::retransmit(2).encode(), Record::retransmit(2).encode()]
            .concat();
    s.handle_control(now, 0, &ask);
    assert_eq!(next(&mut s, now).map(|d| (d.0, d.1)), Some((2, BlockKind::Retransmission)));
    now += step;
    // Then only the last block, every 10 x the delay but at least 1 ms apart, until a stop.
    let mut repeats = 0;
    for _ in 0..50 {
        now += Duration::from_micros(100);
        if let Some((block, kind, _)) = next(&mut s, now) {
            assert_eq!((block, kind), (3, BlockKind::Terminate));
            repeats += 1;
        }
    }
    assert_eq!(repeats, 1, "one repeat in 5 ms at a 300 us delay (3 ms apart)");
    s.handle_control(now, 0, &Record::stop().encode());
    assert_eq!(next(&mut s, now + Duration::from_secs(1)), None);
    assert_eq!(s.counters().delivered, 3000);
    // Another name on the same connection, then the client closes: done.
    s.handle_control(now, 0, b"missing\n");
    assert_eq!(control(&mut s), vec![8]);
    let ev = events(&mut s);
    assert_eq!(ev.last(), Some(&Event::Failed("refused: missing: no such file".into())));
}

#[test]
fn the_server_ends_when_the_client_closes_or_stays_silent_after_a_stop() {
    let mut cat = catalog(vec![("a", vec![1; 10]), ("b", vec![2; 20])]);
    let mut s = Server::new(&params(), CHALLENGE, 0, &mut cat).unwrap();
    server_to_transfer(&mut s, "a", request(1024, 80_000_000));
    s.handle_control(at_ms(5), 0, &Record::stop().encode());
    // A second file on the same connection.
    s.handle_control(at_ms(6), 0, b"b\n");
    s.handle_control(at_ms(6), 0, &request(1024, 80_000_000).encode());
    s.handle_control(at_ms(6), 0, &[0x9c, 0x41]);
    assert_eq!(
        next(&mut s, at_ms(7)).map(|d| (d.0, d.1, d.2[..20].to_vec())),
        Some((1, BlockKind::Terminate, vec![2; 20]))
    );
    s.handle_control(at_ms(8), 0, &Record::stop().encode());
    s.handle_control_closed(at_ms(9), 0);
    let ev = events(&mut s);
    assert_eq!(ev.last(), Some(&Event::Done));
    let names: Vec<_> = s.served().iter().map(|f| (f.name.as_str(), f.size)).collect();
    assert_eq!(names, vec![("a", 10), ("b", 20)]);

    // A client that neither asks again nor closes: done after the wait for another name.
    let mut cat = catalog(vec![("a", vec![1; 10])]);
    let mut s = Server::new(&params(), CHALLENGE, 0, &mut cat).unwrap();
    server_to_transfer(&mut s, "a", request(1024, 80_000_000));
    s.handle_control(at_ms(5), 0, &Record::stop().encode());
    assert_eq!(s.poll_timeout(), Some(at_ms(2005)));
    s.handle_timeout(at_ms(2005));
    assert_eq!(events(&mut s).last(), Some(&Event::Done));
}

#[test]
fn a_restart_resends_originals_from_the_named_block_even_after_the_last() {
    let mut cat = catalog(vec![("f", vec![0; 5000])]);
    let mut s = Server::new(&params(), CHALLENGE, 0, &mut cat).unwrap();
    server_to_transfer(&mut s, "f", request(1000, 80_000_000));
    let mut now = at_ms(1);
    let mut sent = vec![];
    for _ in 0..5 {
        sent.push(next(&mut s, now).map(|d| d.0).unwrap());
        now += Duration::from_millis(1);
    }
    assert_eq!(sent, [1, 2, 3, 4, 5]);
    s.handle_control(now, 0, &Record::restart(3).encode());
    let again: Vec<_> =
        (0..3).map(|i| next(&mut s, now + Duration::from_millis(i)).map(|d| (d.0, d.1)).unwrap()).collect();
    assert_eq!(again, [(3, BlockKind::Original), (4, BlockKind::Original), (5, BlockKind::Terminate)]);
    assert_eq!(s.counters().rounds, 1);
}

#[test]
fn error_reports_and_silence_steer_the_delay_and_a_long_silence_ends_the_transfer() {
    let mut cat = catalog(vec![("f", vec![0; 100_000])]);
    let p = Params { heartbeat_timeout: Duration::from_secs(3), ..params() };
    let mut s = Server::new(&p, CHALLENGE, 0, &mut cat).unwrap();
    server_to_transfer(&mut s, "f", request(1000, 80_000_000));
    s.handle_control(at_ms(100), 0, &Record::error_rate(0).encode());
    assert_eq!(s.ipd_us(), Some(250.0), "below the threshold: x 5/6");
    s.handle_control(at_ms(200), 0, &Record::error_rate(50_000).encode());
    let slowed = 250.0 * (1.0 + (1.0 / 24.0) * (42_501.0 / 92_500.0));
    assert!((s.ipd_us().unwrap() - slowed).abs() < 1e-9);
    // Silence: a 100 % report every 500 ms.
    assert_eq!(s.poll_timeout().map(|t| t >= at_ms(700)), Some(false), "datagrams are due first");
    s.handle_timeout(at_ms(699));
    assert!((s.ipd_us().unwrap() - slowed).abs() < 1e-9);
    s.handle_timeout(at_ms(700));
    let silent = slowed * (1.0 + (1.0 / 24.0) * (92_501.0 / 92_500.0));
    assert!((s.ipd_us().unwrap() - silent).abs() < 1e-9);
    s.handle_timeout(at_ms(1100));
    assert!((s.ipd_us().unwrap() - silent).abs() < 1e-9, "once per 500 ms");
    s.handle_timeout(at_ms(3199));
    assert!(events(&mut s).iter().all(|e| !matches!(e, Event::Failed(_))));
    s.handle_timeout(at_ms(3200));
    assert_eq!(events(&mut s), vec![Event::Failed("no word from the client for 3s while sending f".into())]);
    assert_eq!(next(&mut s, at_ms(3300)), None);
}

#[test]
fn an_empty_file_is_one_terminate_block_numbered_0() {
    let mut cat = catalog(vec![("empty", vec![])]);
    let mut s = Server::new(&params(), CHALLENGE, 0, &mut cat).unwrap();
    let written = server_to_transfer(&mut s, "empty", request(64, 80_000_000));
    assert!(written.ends_with(&info(0, 64, 0).encode()));
    assert_eq!(next(&mut s, at_ms(1)), Some((0, BlockKind::Terminate, vec![0; 64])));
    assert_eq!(next(&mut s, at_ms(2)), Some((0, BlockKind::Terminate, vec![0; 64])), "repeated");
}

#[test]
fn the_server_fails_on_bad_requests_and_records() {
    let cases: [(TransferRequest, Vec<u8>, &str); 6] = [
        (request(0, 1), vec![], "protocol error: the client asked for blocks of 0 bytes"),
        (request(70_000, 1), vec![], "protocol error: the client asked for blocks of 70000 bytes"),
        (request(1024, 0), vec![], "protocol error: the client asked for a rate of 0 bit/s"),
        (
            request(1024, 1_000_000),
            Record::retransmit(0).encode().to_vec(),
            "protocol error: the client asked for block 0 of 1",
        ),
        (
            request(1024, 1_000_000),
            Record::restart(2).encode().to_vec(),
            "protocol error: the client asked for block 2 of 1",
        ),
        (
            request(1024, 1_000_000),
            [0, 7, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0].to_vec(),
            "protocol error: control record of unknown type 7",
        ),
    ];
    for (req, then, want) in cases {
        let mut cat = catalog(vec![("f", vec![1; 100])]);
        let mut s = Server::new(&params(), CHALLENGE, 0, &mut cat).unwrap();
        server_to_transfer(&mut s, "f", req);
        s.handle_control(at_ms(1), 0, &then);
        let ev = events(&mut s);
        let Some(Event::Failed(why)) = ev.last() else { panic!("{want}: {ev:?}") };
        assert!(why.starts_with(want), "{why}");
    }
    // A wrong proof is answered 1, then the session fails.
    let mut cat = catalog(vec![]);
    let mut s = Server::new(&params(), CHALLENGE, 0, &mut cat).unwrap();
    control(&mut s);
    s.handle_control(at_ms(0), 0, &REVISION.to_be_bytes());
    control(&mut s);
    s.handle_control(at_ms(0), 0, &proof(&CHALLENGE, b"kitten"));
    assert_eq!(control(&mut s), vec![1]);
    assert_eq!(
        events(&mut s),
        vec![Event::Failed("refused: the client did not prove the shared secret".into())]
    );
    // No secret: no server.
    let mut cat = catalog(vec![]);
    assert!(Server::new(&Params::default(), CHALLENGE, 0, &mut cat).is_err());
}

// The digest after the stop.

/// A client that has every block of a 10-byte file and asked for the digest at 30 ms.
fn client_awaiting_digest(sink: &mut Memory) -> Client<'_> {
    let mut c = Client::new(&params(), "f", 1, sink).unwrap();
    client_to_transfer(&mut c, info(10, 1024, 1));
    c.handle_datagram(at_ms(30), &datagram(1, BlockKind::Terminate, &[5; 1024]));
    assert_eq!(events(&mut c), vec![Event::Size(10)]);
    assert!(control(&mut c).ends_with(&stop_and_request()));
    c
}

#[test]
fn the_client_keeps_our_servers_digest_even_split_across_arrivals() {
    let mut sink = Memory::default();
    let mut c = client_awaiting_digest(&mut sink);
    let sum: [u8; 32] = std::array::from_fn(|i| i as u8 * 7);
    let answer = [&[digest::TSUNAMI_ANSWER][..], &sum].concat();
    c.handle_control(at_ms(40), 0, &answer[..1]);
    c.handle_control(at_ms(41), 0, &answer[1..20]);
    assert!(events(&mut c).is_empty() && c.peer_digest().is_none(), "not whole yet");
    // What follows the answer is not looked at.
    c.handle_control(at_ms(42), 0, &[&answer[20..], b"trailing"].concat());
    assert_eq!(events(&mut c), vec![Event::Done]);
    assert_eq!(c.peer_digest(), Some(sum));
    assert_eq!(c.counters().malformed, 0);
    assert_eq!(c.poll_timeout(), None);
    assert!(control(&mut c).is_empty());
}

#[test]
fn the_client_ends_without_a_digest_on_garbage_a_close_or_the_wait() {
    // Any other answer (a reference that opened a file of that name answers 0): malformed.
    for garbage in [&[0u8][..], &[1u8, 2, 3][..], &[0xffu8; 40][..]] {
        let mut sink = Memory::default();
        let mut c = client_awaiting_digest(&mut sink);
        c.handle_control(at_ms(40), 0, garbage);
        assert_eq!(events(&mut c), vec![Event::Done], "{garbage:?}");
        assert_eq!((c.peer_digest(), c.counters().malformed), (None, 1), "{garbage:?}");
    }
    // A server that says nothing: done after the wait, not before; the X repeats change nothing.
    let mut sink = Memory::default();
    let mut c = client_awaiting_digest(&mut sink);
    let until = at_ms(30) + digest::wait(10);
    assert_eq!(c.poll_timeout(), Some(until));
    c.handle_datagram(at_ms(50), &datagram(1, BlockKind::Terminate, &[5; 1024]));
    c.handle_timeout(until - Duration::from_micros(1));
    assert!(events(&mut c).is_empty());
    c.handle_timeout(until);
    assert_eq!(events(&mut c), vec![Event::Done]);
    assert_eq!((c.peer_digest(), c.counters().malformed), (None, 0));
    c.handle_control(at_ms(6000), 0, &[digest::TSUNAMI_ANSWER; 33]);
    c.handle_control_closed(at_ms(6000), 0);
    assert!(events(&mut c).is_empty() && c.peer_digest().is_none(), "nothing after the end");
    drop(c);
    assert_eq!(sink.0, vec![5; 10]);
}

#[test]
fn an_empty_file_asks_for_its_digest_at_once() {
    assert_eq!(digest::wait(0), Duration::from_secs(5));
    let mut sink = Memory::default();
    let mut c = Client::new(&params(), "f", 1, &mut sink).unwrap();
    let written = client_to_transfer(&mut c, info(0, 1024, 0));
    assert_eq!(events(&mut c), vec![Event::Size(0)], "an empty file is complete at once");
    assert!(written.ends_with(&[&[0x00, 0x01][..], &stop_and_request()].concat()), "port, stop, request");
    assert_eq!(c.poll_timeout(), Some(at_ms(21) + Duration::from_secs(5)));
}

/// A catalog of `files` that records every name it is asked to open.
fn recording_catalog(
    files: Files,
    asked: Arc<Mutex<Vec<String>>>,
) -> impl FnMut(&str) -> Result<Box<dyn Source>, String> {
    let mut inner = catalog(files);
    move |name: &str| {
        asked.lock().unwrap().push(name.to_owned());
        inner(name)
    }
}

#[test]
fn the_server_answers_the_digest_of_the_file_it_last_sent() {
    let (a, b) = (vec![1u8; 3000], (0..=255u8).collect::<Vec<_>>());
    let asked: Arc<Mutex<Vec<String>>> = Arc::default();
    // A file named like the request is never opened.
    let files = vec![("a", a.clone()), ("b", b.clone()), (digest::TSUNAMI_REQUEST, vec![9; 9])];
    let mut cat = recording_catalog(files, Arc::clone(&asked));
    let mut s = Server::new(&params(), CHALLENGE, 0, &mut cat).unwrap();
    server_to_transfer(&mut s, "a", request(1024, 80_000_000));
    control(&mut s);
    s.handle_control(at_ms(5), 0, &stop_and_request());
    let answer = |sum: &[u8]| [&[digest::TSUNAMI_ANSWER][..], sum].concat();
    assert_eq!(control(&mut s), answer(blake3::hash(&a).as_bytes()));
    assert_eq!(s.poll_timeout(), Some(at_ms(2005)), "then it waits for another name");
    // Asked again (computed once): the same answer, and the wait starts again.
    s.handle_control(at_ms(1000), 0, &digest_request());
    assert_eq!(control(&mut s), answer(blake3::hash(&a).as_bytes()));
    assert_eq!(s.poll_timeout(), Some(at_ms(3000)));
    // Another file on the same connection, then its digest.
    s.handle_control(at_ms(1001), 0, b"b\n");
    s.handle_control(at_ms(1001), 0, &request(1024, 80_000_000).encode());
    s.handle_control(at_ms(1001), 0, &[0x9c, 0x41]);
    s.handle_control(at_ms(1002), 0, &stop_and_request());
    assert!(control(&mut s).ends_with(&answer(blake3::hash(&b).as_bytes())));
    s.handle_control_closed(at_ms(1003), 0);
    assert_eq!(events(&mut s).last(), Some(&Event::Done));
    assert_eq!(s.served().len(), 2);
    assert_eq!(*asked.lock().unwrap(), ["a", "b"]);
}

#[test]
fn the_server_refuses_the_digest_before_any_file_and_never_opens_that_name() {
    let asked: Arc<Mutex<Vec<String>>> = Arc::default();
    let files = vec![(digest::TSUNAMI_REQUEST, vec![9; 9])];
    let mut cat = recording_catalog(files, Arc::clone(&asked));
    let mut s = Server::new(&params(), CHALLENGE, 0, &mut cat).unwrap();
    control(&mut s);
    s.handle_control(at_ms(0), 0, &REVISION.to_be_bytes());
    s.handle_control(at_ms(0), 0, &proof(&CHALLENGE, SECRET));
    control(&mut s);
    s.handle_control(at_ms(0), 0, &digest_request());
    assert_eq!(control(&mut s), vec![8]);
    let [Event::Failed(why)] = &events(&mut s)[..] else { panic!() };
    assert!(why.starts_with("refused: the client asked for the digest") && why.contains("before any file"));
    assert!(asked.lock().unwrap().is_empty());
}

/// A source whose reads fail once `reads` of them were served.
struct Flaky {
    len: u64,
    reads: u32,
}

impl Source for Flaky {
    fn len(&self) -> u64 {
        self.len
    }
    fn read_at(&mut self, _offset: u64, buf: &mut [u8]) -> io::Result<()> {
        if self.reads == 0 {
            return Err(io::Error::other("the disk went away"));
        }
        self.reads -= 1;
        buf.fill(3);
        Ok(())
    }
}

#[test]
fn a_file_that_cannot_be_read_again_is_refused_its_digest() {
    let mut cat = |_: &str| -> Result<Box<dyn Source>, String> { Ok(Box::new(Flaky { len: 100, reads: 1 })) };
    let mut s = Server::new(&params(), CHALLENGE, 0, &mut cat).unwrap();
    server_to_transfer(&mut s, "f", request(1024, 80_000_000));
    assert_eq!(next(&mut s, at_ms(1)).map(|d| d.0), Some(1));
    control(&mut s);
    s.handle_control(at_ms(5), 0, &stop_and_request());
    assert_eq!(control(&mut s), vec![8]);
    let ev = events(&mut s);
    assert_eq!(
        ev.last(),
        Some(&Event::Failed("cannot read f to compute its digest: the disk went away".into()))
    );
}
