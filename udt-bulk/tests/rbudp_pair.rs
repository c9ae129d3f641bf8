//! RBUDP, ours against ours, over the in-memory pair harness in virtual time: byte-exact
//! transfers of every size shape, through loss, reordering, duplication and a bottleneck the
//! sender overruns, a big-endian sender, and the failures that must be clear (no rate, a silent
//! sender, nothing getting through, payload sizes that differ, a refused request). Every
//! complete transfer also carries the sender's BLAKE3 digest to the receiver
//! (`udt_bulk::digest`); a sender that sends none, or something else, leaves the receiver done
//! without one.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use udt_bulk::digest;
use udt_bulk::pair::{run_pair, PairOutcome, Path};
use udt_bulk::rbudp::{model_rounds, wire, Params, Receiver, Sender, NO_RATE};
use udt_bulk::storage::{pattern_byte, Memory, Source};
use udt_bulk::{Counters, Event, Instant, Session};

const LIMIT: Duration = Duration::from_secs(600);

fn params() -> Params {
    Params { rate_bps: Some(100_000_000), ..Params::default() }
}

fn data(len: usize, seed: u64) -> Vec<u8> {
    (0..len as u64).map(|i| pattern_byte(seed, i)).collect()
}

struct Run {
    out: PairOutcome,
    sent: Counters,
    got: Counters,
    bytes: Vec<u8>,
    digest: Option<[u8; 32]>,
}

/// What the sender's control messages become on their way ([`Tamper`]).
type Rewrite = fn(Vec<u8>) -> Option<Vec<u8>>;

/// `data` from a sender with `sender_params` to a receiver with `receiver_params` over `path`,
/// the sender disguised as a big-endian host if `big_endian` (see [`BigEndian`]).
fn transfer_with(
    data: &[u8],
    path: &Path,
    sender_params: &Params,
    receiver_params: &Params,
    big_endian: bool,
) -> Run {
    tampered(data, path, sender_params, receiver_params, big_endian, Some)
}

/// [`transfer_with`], the sender's control messages passed through `rewrite`.
fn tampered(
    data: &[u8],
    path: &Path,
    sender_params: &Params,
    receiver_params: &Params,
    big_endian: bool,
    rewrite: Rewrite,
) -> Run {
    let served = data.to_vec();
    let resolve = Box::new(move |name: &str| match name {
        "dir/file.bin" => Ok(Box::new(Memory(served.clone())) as Box<dyn Source>),
        _ => Err(format!("{name}: no such file")),
    });
    let mut sender = Sender::new(sender_params, resolve).expect("a sender with a rate");
    let mut sink = Memory::default();
    let mut receiver = Receiver::new("dir/file.bin", &mut sink, receiver_params).expect("a receiver");
    let out = if big_endian {
        run_pair(&mut Tamper(&mut BigEndian(&mut sender), rewrite), &mut receiver, path, LIMIT)
    } else {
        run_pair(&mut Tamper(&mut sender, rewrite), &mut receiver, path, LIMIT)
    };
    let (sent, got, digest) = (sender.counters(), receiver.counters(), receiver.peer_digest());
    drop(receiver);
    Run { out, sent, got, bytes: sink.0, digest }
}

fn transfer(data: &[u8], path: &Path) -> Run {
    transfer_with(data, path, &params(), &params(), false)
}

fn assert_exact(run: &Run, data: &[u8]) {
    assert_eq!((&run.out.a, &run.out.b), (&Some(Ok(())), &Some(Ok(()))), "both ends done");
    assert_eq!(run.bytes.len(), data.len());
    assert!(run.bytes == data, "the bytes differ");
    assert_eq!(run.got.delivered, data.len() as u64);
    assert_eq!(run.sent.delivered, data.len() as u64);
    assert_eq!(run.got.rounds, run.sent.rounds, "one bitmap per blast");
    assert_eq!(run.digest, Some(*blake3::hash(data).as_bytes()), "the sender's digest");
}

#[test]
fn every_size_shape_arrives_byte_exact_in_one_blast_on_a_clean_path() {
    for (len, packets) in [(0, 0), (1, 1), (1460 * 4, 4), (1460 * 4 + 7, 5), (3 << 20 | 123, 2155)] {
        let d = data(len, len as u64);
        let run = transfer(&d, &Path::default());
        assert_exact(&run, &d);
        assert_eq!(run.sent.datagrams_sent, packets, "{len} bytes");
        assert_eq!((run.sent.rounds, run.sent.retransmitted), (u64::from(len > 0), 0), "{len} bytes");
        assert_eq!(run.got.size, Some(len as u64));
    }
}

#[test]
fn a_clean_transfer_takes_the_request_the_sending_time_and_a_round_trip() {
    // The request reaches the sender in 10 ms; 100 packets of 1460 bytes at 100 Mb/s take 99
    // gaps of 116.8 us; the marker leaves with the last packet, the done bitmap reaches the
    // sender one round trip (20 ms) later and the digest the receiver 10 ms after that.
    let run = transfer(&data(146_000, 3), &Path::default());
    assert_eq!(run.out.elapsed, Duration::from_millis(10 + 20 + 10) + Duration::from_nanos(99 * 116_800));
}

#[test]
fn a_receiver_whose_sender_sends_no_digest_is_done_without_one_after_the_wait() {
    let d = data(146_000, 3);
    let drop_digest: Rewrite = |m| (!m.starts_with(&digest::TAG)).then_some(m);
    let run = tampered(&d, &Path::default(), &params(), &params(), false, drop_digest);
    assert_eq!((&run.out.a, &run.out.b), (&Some(Ok(())), &Some(Ok(()))), "both ends done");
    assert!(run.bytes == d);
    assert_eq!((run.digest, run.got.malformed), (None, 0));
    // The receiver has every byte once the marker is in (10 ms + 99 gaps + 10 ms), then waits.
    let complete = Duration::from_millis(20) + Duration::from_nanos(99 * 116_800);
    assert_eq!(run.out.elapsed, complete + digest::wait(d.len() as u64));
}

#[test]
fn anything_but_a_digest_after_the_done_flag_is_malformed_and_the_receiver_done_without_one() {
    let d = data(146_000, 3);
    let other_tag: Rewrite = |mut m| {
        if m.starts_with(&digest::TAG) {
            m[3] = b'X';
        }
        Some(m)
    };
    let marker: Rewrite =
        |m| Some(if m.starts_with(&digest::TAG) { wire::encode_marker(1).to_vec() } else { m });
    for rewrite in [other_tag, marker] {
        let run = tampered(&d, &Path::default(), &params(), &params(), false, rewrite);
        assert_eq!((&run.out.a, &run.out.b), (&Some(Ok(())), &Some(Ok(()))), "both ends done");
        assert!(run.bytes == d);
        assert_eq!((run.digest, run.got.malformed), (None, 1));
        assert!(run.out.elapsed < Duration::from_millis(100), "not waited for: {:?}", run.out.elapsed);
    }
}

#[test]
fn loss_reordering_and_duplication_cost_rounds_not_bytes() {
    let d = data((1 << 20) + 777, 9);
    for (loss, reorder, duplicate, seed) in
        [(0.01, 0.0, 0.0, 1), (0.05, 0.05, 0.05, 2), (0.10, 0.10, 0.10, 3), (0.10, 0.0, 0.0, 4)]
    {
        let path = Path { loss, reorder, duplicate, seed, ..Path::default() };
        let run = transfer(&d, &path);
        assert_exact(&run, &d);
        eprintln!(
            "loss {loss} reorder {reorder} duplicate {duplicate}: {} rounds, {} resent, {} duplicates \
             (model: {:.1} re-blasts)",
            run.sent.rounds,
            run.sent.retransmitted,
            run.got.duplicates,
            model_rounds(loss, 1460, d.len() as u64)
        );
        assert!(run.sent.rounds >= 2, "a loss of {loss} on 719 packets needs a re-blast");
        assert!(run.sent.retransmitted > 0);
        if duplicate > 0.0 {
            assert!(run.got.duplicates > 0, "duplicates are counted");
        }
        // He et al. eq. (5) counts re-blasts until under one packet is left; a few more rounds
        // at most, as loss is random (and reordered packets land after their blast's marker).
        let model = model_rounds(loss, 1460, d.len() as u64);
        assert!(((run.sent.rounds - 1) as f64) < model + 4.0, "{} rounds, model {model}", run.sent.rounds);
    }
}

#[test]
fn a_sender_faster_than_the_bottleneck_still_delivers_every_byte() {
    // 100 Mb/s into 40 Mb/s with a 50-packet queue: most of each blast overflows.
    let d = data(1 << 20, 5);
    let path = Path { rate_bps: 40_000_000, queue_packets: 50, ..Path::default() };
    let run = transfer(&d, &path);
    assert_exact(&run, &d);
    assert!(run.out.dropped > 300, "{} dropped", run.out.dropped);
    assert!(run.sent.rounds >= 3, "{} rounds", run.sent.rounds);
}

#[test]
fn a_big_endian_sender_is_understood_through_loss() {
    let d = data(500_000, 11);
    let path = Path { loss: 0.05, reorder: 0.05, seed: 8, ..Path::default() };
    let run = transfer_with(&d, &path, &params(), &params(), true);
    assert_exact(&run, &d);
    assert_eq!(run.got.malformed, 0, "no datagram read in the wrong order");
}

#[test]
fn there_is_no_sender_without_a_rate() {
    let resolve = Box::new(|_: &str| Err::<Box<dyn Source>, String>("unused".into()));
    let err = Sender::new(&Params::default(), resolve).err().expect("refused");
    assert_eq!(err.to_string(), NO_RATE);
}

#[test]
fn a_silent_sender_fails_the_receiver_with_a_clear_error() {
    let mut sink = Memory::default();
    let p = Params { silence_limit: Duration::from_secs(5), ..params() };
    let mut receiver = Receiver::new("f", &mut sink, &p).unwrap();
    let out = run_pair(&mut Mute, &mut receiver, &Path::default(), LIMIT);
    let why = out.b.expect("the receiver ended").expect_err("failed");
    assert!(why.contains("went silent"), "{why}");
    assert_eq!(out.elapsed, Duration::from_secs(5));
}

#[test]
fn nothing_getting_through_fails_both_ends_instead_of_blasting_forever() {
    let path = Path { loss: 1.0, ..Path::default() };
    let run = transfer(&data(100_000, 1), &path);
    let why = run.out.b.clone().expect("the receiver ended").expect_err("failed");
    assert!(why.contains("no packet got through in 20 blasts"), "{why}");
    assert!(matches!(run.out.a, Some(Err(_))), "the sender too: {:?}", run.out.a);
    assert_eq!(run.got.rounds, 20);
}

#[test]
fn payload_sizes_that_differ_are_named() {
    let sender = Params { payload: 1000, ..params() };
    let run = transfer_with(&data(100_000, 1), &Path::default(), &sender, &params(), false);
    let why = run.out.b.clone().expect("the receiver ended").expect_err("failed");
    assert!(why.contains("same payload size (ours is 1460 bytes)"), "{why}");
}

#[test]
fn a_refused_request_fails_the_sender_and_leaves_the_receiver_nothing() {
    let served = data(1000, 1);
    let resolve = Box::new(move |name: &str| match name {
        "here" => Ok(Box::new(Memory(served.clone())) as Box<dyn Source>),
        _ => Err(format!("{name}: no such file")),
    });
    let mut sender = Sender::new(&params(), resolve).unwrap();
    let mut sink = Memory::default();
    let p = Params { silence_limit: Duration::from_secs(2), ..params() };
    let mut receiver = Receiver::new("elsewhere", &mut sink, &p).unwrap();
    let out = run_pair(&mut sender, &mut receiver, &Path::default(), LIMIT);
    assert_eq!(out.a, Some(Err("elsewhere: no such file".into())));
    assert_eq!(sender.refusal(), Some("elsewhere: no such file"));
    assert!(matches!(out.b, Some(Err(_))));
}

/// A peer that takes everything and says nothing.
struct Mute;

impl Session for Mute {
    fn handle_control(&mut self, _: Instant, _: usize, _: &[u8]) {}
    fn handle_control_closed(&mut self, _: Instant, _: usize) {}
    fn handle_datagram(&mut self, _: Instant, _: &[u8]) {}
    fn handle_timeout(&mut self, _: Instant) {}
    fn poll_control(&mut self) -> Option<(usize, Vec<u8>)> {
        None
    }
    fn poll_datagram(&mut self, _: Instant, _: &mut [u8]) -> Option<usize> {
        None
    }
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    fn poll_event(&mut self) -> Option<Event> {
        None
    }
    fn counters(&self) -> Counters {
        Counters::default()
    }
    fn max_datagram(&self) -> usize {
        0
    }
}

/// A sender whose control messages pass through a [`Rewrite`] (`None` drops one).
struct Tamper<'s>(&'s mut dyn Session, Rewrite);

impl Session for Tamper<'_> {
    fn handle_control(&mut self, now: Instant, channel: usize, bytes: &[u8]) {
        self.0.handle_control(now, channel, bytes)
    }
    fn handle_control_closed(&mut self, now: Instant, channel: usize) {
        self.0.handle_control_closed(now, channel)
    }
    fn handle_datagram(&mut self, now: Instant, datagram: &[u8]) {
        self.0.handle_datagram(now, datagram)
    }
    fn handle_timeout(&mut self, now: Instant) {
        self.0.handle_timeout(now)
    }
    fn poll_control(&mut self) -> Option<(usize, Vec<u8>)> {
        loop {
            let (channel, bytes) = self.0.poll_control()?;
            if let Some(bytes) = (self.1)(bytes) {
                return Some((channel, bytes));
            }
        }
    }
    fn poll_datagram(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        self.0.poll_datagram(now, buf)
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.0.poll_timeout()
    }
    fn poll_event(&mut self) -> Option<Event> {
        self.0.poll_event()
    }
    fn counters(&self) -> Counters {
        self.0.counters()
    }
    fn max_datagram(&self) -> usize {
        self.0.max_datagram()
    }
}

/// Our sender disguised as a big-endian host: sequence numbers and marker rounds byte-swapped
/// (the size is big-endian on the wire whatever the host).
struct BigEndian<'s, 'a>(&'s mut Sender<'a>);

impl Session for BigEndian<'_, '_> {
    fn handle_control(&mut self, now: Instant, channel: usize, bytes: &[u8]) {
        self.0.handle_control(now, channel, bytes)
    }
    fn handle_control_closed(&mut self, now: Instant, channel: usize) {
        self.0.handle_control_closed(now, channel)
    }
    fn handle_datagram(&mut self, now: Instant, datagram: &[u8]) {
        self.0.handle_datagram(now, datagram)
    }
    fn handle_timeout(&mut self, now: Instant) {
        self.0.handle_timeout(now)
    }
    fn poll_control(&mut self) -> Option<(usize, Vec<u8>)> {
        let (channel, mut bytes) = self.0.poll_control()?;
        if bytes.len() == 8 && bytes[4..7] == *b"EEE" {
            bytes[..4].reverse();
        }
        Some((channel, bytes))
    }
    fn poll_datagram(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        let n = self.0.poll_datagram(now, buf)?;
        buf[..4].reverse();
        Some(n)
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.0.poll_timeout()
    }
    fn poll_event(&mut self) -> Option<Event> {
        self.0.poll_event()
    }
    fn counters(&self) -> Counters {
        self.0.counters()
    }
    fn max_datagram(&self) -> usize {
        self.0.max_datagram()
    }
}
