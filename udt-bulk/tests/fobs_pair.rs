//! FOBS sender against FOBS receiver in the virtual-time pair harness: every size shape, both
//! acknowledgement schemes, byte-exact through loss, reordering and duplication, and the rate
//! control against a bottleneck. Every transfer ends with the sender's BLAKE3 digest of the
//! file at the receiver; a sender that withholds, mangles or corrupts it leaves the receiver
//! Done without it (or with the wrong one, for the application to catch).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use udt_bulk::digest;
use udt_bulk::fobs::wire::{self, Message, FRAME_HEADER};
use udt_bulk::fobs::{loss_percent, AckScheme, FobsStats, Params, ReceiverSession, SenderSession, Transfer};
use udt_bulk::pair::{run_pair, Path};
use udt_bulk::storage::Memory;
use udt_bulk::{Counters, Event, Instant, Session};

const LIMIT: Duration = Duration::from_secs(3_600);

/// Small chunks so that a few kilobytes make several: 1000-byte packets, 20 to a chunk, 8 to a
/// segment.
fn small(scheme: AckScheme) -> Params {
    Params { payload: 1000, chunk_bytes: 20_000, segment_packets: 8, ack_scheme: scheme, ..Params::default() }
}

fn bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut v = vec![0u8; len];
    rng.fill_bytes(&mut v);
    v
}

struct Run {
    sender: Counters,
    receiver: Counters,
    sender_stats: FobsStats,
    receiver_stats: FobsStats,
    elapsed: Duration,
}

/// Send `data` over `path` and check it arrived byte for byte.
fn transfer(data: &[u8], params: &Params, path: &Path) -> Run {
    let t = Transfer::from_params(data.len() as u64, params, params.ack_scheme).unwrap();
    let mut s = SenderSession::new(Memory(data.to_vec()), t, params);
    let mut r = ReceiverSession::new(Memory::default(), t);
    let out = run_pair(&mut s, &mut r, path, LIMIT);
    assert_eq!((out.a.clone(), out.b.clone()), (Some(Ok(())), Some(Ok(()))), "both ends finish: {out:?}");
    let run = Run {
        sender: s.counters(),
        receiver: r.counters(),
        sender_stats: s.stats(),
        receiver_stats: r.stats(),
        elapsed: out.elapsed,
    };
    assert!(r.sink().0 == data, "the file arrived byte for byte ({} bytes)", data.len());
    assert_eq!(r.peer_digest(), Some(*blake3::hash(data).as_bytes()), "the sender's digest arrived");
    assert_eq!((run.sender_stats.digests, run.receiver_stats.digests), (1, 1));
    assert_eq!(run.receiver_stats.digests_missing, 0, "and was not waited out");
    assert_eq!(run.sender.delivered, data.len() as u64);
    assert_eq!(run.receiver.delivered, data.len() as u64);
    run
}

#[test]
fn every_size_shape_arrives_with_both_schemes() {
    // Empty, one byte, one short packet, exactly three chunks, odd, several chunks.
    for scheme in [AckScheme::SegmentedTcp, AckScheme::ChunkMapUdp] {
        for len in [0, 1, 999, 60_000, 54_321, 250_001] {
            let data = bytes(len, len as u64);
            let run = transfer(&data, &small(scheme), &Path::default());
            let chunks = (len as u64).div_ceil(20_000);
            assert_eq!((run.sender.rounds, run.receiver.rounds), (chunks, chunks), "{scheme:?} {len}");
            assert_eq!(run.sender.retransmitted, 0, "a clean path needs no resend ({scheme:?} {len})");
            assert_eq!(run.receiver.duplicates, 0);
        }
    }
}

#[test]
fn a_few_megabytes_with_the_default_parameters() {
    let data = bytes(3 << 20, 3);
    let run = transfer(&data, &Params::default(), &Path::default());
    assert_eq!(run.sender.retransmitted, 0);
    assert!(run.sender_stats.end_of_segments > 0, "segments announced");
    assert!(run.sender_stats.segment_acks > 0, "and acknowledged by composite ACKs");
}

#[test]
fn byte_exact_through_loss_with_the_segmented_scheme() {
    for (loss, seed) in [(0.01, 1), (0.05, 2), (0.10, 3)] {
        let path = Path { loss, seed, ..Path::default() };
        let run = transfer(&bytes(300_000, seed), &small(AckScheme::SegmentedTcp), &path);
        assert!(run.sender.retransmitted > 0, "{loss}: losses were repaired");
        assert!(
            run.sender_stats.nacks > 0 || run.sender_stats.segment_bits > 0,
            "{loss}: by acknowledgements"
        );
    }
}

#[test]
fn byte_exact_through_loss_with_chunk_maps_over_udp() {
    let (mut maps_sent, mut maps_heard) = (0, 0);
    for (loss, seed) in [(0.01, 4), (0.05, 5), (0.10, 6)] {
        let path = Path { loss, seed, ..Path::default() };
        let run = transfer(&bytes(300_000, seed), &small(AckScheme::ChunkMapUdp), &path);
        assert!(run.sender.retransmitted > 0, "{loss}: losses were repaired");
        assert!(run.receiver_stats.map_parts > 0 && run.sender_stats.end_of_segments == 0, "{loss}: by maps");
        maps_sent += run.receiver_stats.map_parts;
        maps_heard += run.sender_stats.map_parts;
    }
    assert!(maps_heard < maps_sent, "some maps were lost on the way ({maps_heard} of {maps_sent})");
}

#[test]
fn byte_exact_through_reordering_and_duplication() {
    for scheme in [AckScheme::SegmentedTcp, AckScheme::ChunkMapUdp] {
        let path = Path { reorder: 0.2, duplicate: 0.1, loss: 0.02, seed: 7, ..Path::default() };
        let run = transfer(&bytes(200_000, 8), &small(scheme), &path);
        assert!(run.receiver.duplicates > 0, "{scheme:?}: duplicates were seen and dropped");
    }
}

#[test]
fn a_long_fat_path_with_default_chunks_and_loss() {
    let path = Path { one_way: Duration::from_millis(50), loss: 0.03, seed: 9, ..Path::default() };
    let run = transfer(&bytes(2 << 20, 9), &Params::default(), &path);
    assert!(run.sender.retransmitted > 0);
}

/// Into a 20 Mb/s bottleneck with a 50-packet queue, starting at 100 Mb/s.
fn bottleneck(rate_control: bool) -> Run {
    let path = Path { rate_bps: 20_000_000, queue_packets: 50, seed: 11, ..Path::default() };
    let params = Params { rate_control, max_rate_bps: 100_000_000, ..Params::default() };
    transfer(&bytes(4 << 20, 10), &params, &path)
}

#[test]
fn rate_control_follows_a_bottleneck_and_cuts_the_loss() {
    let with = bottleneck(true);
    let without = bottleneck(false);
    let (lw, lo) = (loss_percent(&with.sender), loss_percent(&without.sender));
    eprintln!(
        "with rate control: loss {lw:.1}%, {:?}, rate now {} b/s; without: loss {lo:.1}%, {:?}",
        with.elapsed, with.sender_stats.rate_bps, without.elapsed
    );
    assert!(lw * 4.0 < lo, "rate control loses far less: {lw:.1}% against {lo:.1}%");
    let rate = with.sender_stats.rate_bps as f64;
    assert!((10e6..=30e6).contains(&rate), "the pacing rate settles near the bottleneck: {rate}");
}

#[test]
fn chunk_maps_over_udp_resend_more_than_segmented_acknowledgements_over_tcp() {
    // The paper's comparison (§5): the same lossy path, the same file, both schemes.
    let path = Path { rate_bps: 100_000_000, queue_packets: 200, loss: 0.02, seed: 12, ..Path::default() };
    let data = bytes(2 << 20, 12);
    let run = |scheme| transfer(&data, &Params { ack_scheme: scheme, ..Params::default() }, &path);
    let (tcp, udp) = (run(AckScheme::SegmentedTcp), run(AckScheme::ChunkMapUdp));
    let (lt, lu) = (loss_percent(&tcp.sender), loss_percent(&udp.sender));
    eprintln!("loss: segmented over TCP {lt:.1}%, chunk maps over UDP {lu:.1}%");
    assert!(lu > lt, "chunk maps over UDP resend more: {lu:.1}% against {lt:.1}%");
    assert_eq!(tcp.receiver.duplicates, 0, "segmented acknowledgements never ask for a packet that arrived");
    assert!(udp.receiver.duplicates > 0, "lost or late maps make the sender resend packets that arrived");
}

/// What a tampering sender does to its digest frame.
#[derive(Debug, Clone, Copy)]
enum Tamper {
    /// Leaves it alone.
    Honest,
    /// Never sends it.
    Withhold,
    /// Sends 31 of its 32 bytes (the frame's length says 31).
    Truncate,
    /// Flips a bit of the digest.
    Corrupt,
}

/// A FOBS sender whose digest frame is tampered with on its way out.
struct Tampering {
    inner: SenderSession<Memory>,
    tamper: Tamper,
}

impl Session for Tampering {
    fn handle_control(&mut self, now: Instant, channel: usize, bytes: &[u8]) {
        self.inner.handle_control(now, channel, bytes)
    }
    fn handle_control_closed(&mut self, now: Instant, channel: usize) {
        self.inner.handle_control_closed(now, channel)
    }
    fn handle_datagram(&mut self, now: Instant, datagram: &[u8]) {
        self.inner.handle_datagram(now, datagram)
    }
    fn handle_timeout(&mut self, now: Instant) {
        self.inner.handle_timeout(now)
    }
    fn poll_control(&mut self) -> Option<(usize, Vec<u8>)> {
        loop {
            let (channel, mut frame) = self.inner.poll_control()?;
            if !matches!(wire::decode_frame(&frame), Ok(Some((Message::Digest { .. }, _)))) {
                return Some((channel, frame));
            }
            match self.tamper {
                Tamper::Honest => {}
                Tamper::Withhold => continue,
                Tamper::Truncate => {
                    frame.truncate(FRAME_HEADER + 31);
                    frame[5..9].copy_from_slice(&31u32.to_be_bytes());
                }
                Tamper::Corrupt => frame[FRAME_HEADER] ^= 1,
            }
            return Some((channel, frame));
        }
    }
    fn poll_datagram(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        self.inner.poll_datagram(now, buf)
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.inner.poll_timeout()
    }
    fn poll_event(&mut self) -> Option<Event> {
        self.inner.poll_event()
    }
    fn counters(&self) -> Counters {
        self.inner.counters()
    }
    fn max_datagram(&self) -> usize {
        self.inner.max_datagram()
    }
}

/// Send `data` through a tampering sender over a lossy path: the receiver's end, its session,
/// and the virtual time the run took.
fn tampered(data: &[u8], tamper: Tamper) -> (Option<Result<(), String>>, ReceiverSession<Memory>, Duration) {
    let params = small(AckScheme::SegmentedTcp);
    let t = Transfer::from_params(data.len() as u64, &params, params.ack_scheme).unwrap();
    let inner = SenderSession::new(Memory(data.to_vec()), t, &params);
    let mut s = Tampering { inner, tamper };
    let mut r = ReceiverSession::new(Memory::default(), t);
    let path = Path { loss: 0.02, reorder: 0.1, duplicate: 0.05, seed: 21, ..Path::default() };
    let out = run_pair(&mut s, &mut r, &path, LIMIT);
    assert_eq!(out.a, Some(Ok(())), "{tamper:?}: the sender finished");
    assert!(r.sink().0 == data, "{tamper:?}: the file arrived byte for byte");
    (out.b, r, out.elapsed)
}

#[test]
fn a_receiver_whose_sender_never_sends_the_digest_is_done_without_one_after_the_wait() {
    for len in [0, 54_321] {
        let data = bytes(len, 13);
        // The same run with the digest: the data phase is the same, the digest arrives one
        // round trip after the last byte.
        let (_, honest, honest_elapsed) = tampered(&data, Tamper::Honest);
        assert_eq!(honest.peer_digest(), Some(*blake3::hash(&data).as_bytes()));
        let (end, r, elapsed) = tampered(&data, Tamper::Withhold);
        assert_eq!(end, Some(Ok(())), "{len}: Done, not Failed");
        assert_eq!(r.peer_digest(), None);
        let stats = r.stats();
        assert_eq!((stats.digests, stats.digests_missing, stats.digest_timeouts), (0, 1, 1));
        let (wait, extra) = (digest::wait(len as u64), elapsed - honest_elapsed);
        assert!(
            extra <= wait && extra + Duration::from_millis(100) >= wait,
            "{len}: waited {extra:?} more than with the digest, against a wait of {wait:?}"
        );
    }
}

#[test]
fn a_malformed_digest_leaves_the_receiver_done_without_one_and_is_counted() {
    let (end, r, elapsed) = tampered(&bytes(54_321, 14), Tamper::Truncate);
    assert_eq!(end, Some(Ok(())));
    assert_eq!(r.peer_digest(), None);
    assert_eq!((r.counters().malformed, r.stats().digests_missing, r.stats().digest_timeouts), (1, 1, 0));
    assert!(elapsed < digest::wait(0), "no wait: {elapsed:?}");
}

#[test]
fn a_corrupted_digest_is_reported_for_the_application_to_catch() {
    let data = bytes(54_321, 15);
    let (end, r, _) = tampered(&data, Tamper::Corrupt);
    assert_eq!(end, Some(Ok(())));
    let mut expected = *blake3::hash(&data).as_bytes();
    expected[0] ^= 1;
    assert_eq!(r.peer_digest(), Some(expected), "what the sender sent, not what was written");
}
