//! Receiver-side estimates (protocol notes §6; thesis §3.4; UDT4 `CPktTimeWindow`) and the
//! history of full ACKs awaiting ACK2 (UDT4 `CACKWindow`).
//!
//! * Arrival rate: gaps between consecutive data arrivals in a 16-entry ring; median filter
//!   (keep entries within (median/8, 8 median)); rate = 1e9 / mean gap (ns) when more than 8
//!   entries survive, else 0.
//! * Link capacity: the gap between the arrivals of sequence 16n and 16n+1 (the sender's packet
//!   pair) in a 64-entry ring; same median filter; capacity = 1e9 / mean gap.
//!
//! Gaps are kept in nanoseconds (UDT4 uses microseconds, which cannot resolve 10 Gb/s).
//!
//! Batched arrivals: a receive path with GRO hands over several packets with one timestamp (the
//! `udt` runtime passes the kernel's arrival stamp of each receive; a GRO batch shares one). Zero gaps would make the median filter report an infinite rate, so packets are
//! grouped by timestamp: N packets stamped t2 after a batch stamped t1 arrived over (t1, t2],
//! and each contributes a gap of (t2 - t1) / N. With one packet per timestamp (no batching) this
//! is exactly the UDT4 estimator. A batch's samples are recorded when the next batch starts.
//! A packet pair inside one batch arrived faster than the driver's clock can tell apart: its
//! gap is recorded as 0, and a capacity made only of such pairs is reported as unlimited
//! (`u32::MAX`). (Recording the batch's average instead made the capacity equal the current
//! rate, so the native control saw no spare bandwidth and grew by its minimum step: 2-5 Gb/s
//! instead of 9.4 on loopback. See docs/deviations.md, B17.)
//! Deviation (docs/deviations.md): UDT4 starts its rings filled with made-up gaps (1 s and 1 ms)
//! and so reports a rate of 1 packet/s in its first ACKs, which a sender in slow start turns into
//! a one-second packet period on its first loss. We filter only real samples and report 0
//! ("unknown", which every sender ignores) until there are enough: more than 8 arrival gaps,
//! at least 4 packet pairs. [`ArrivalEstimator::udt4_primed`] starts as UDT4 does, for a
//! receiver that stands in for a UDT4 one (`Config::udt4_estimators`).

use crate::seq::{AckNo, SeqNo};
use crate::time::Instant;

const ARRIVAL_WINDOW: usize = 16;
const PROBE_WINDOW: usize = 64;
/// Packet pairs needed before a capacity is reported.
const MIN_PROBES: usize = 4;

/// Packet arrival and packet-pair timing.
#[derive(Clone, Debug)]
pub struct ArrivalEstimator {
    arrivals: [u64; ARRIVAL_WINDOW],
    arrival_pos: usize,
    arrival_count: usize,
    probes: [u64; PROBE_WINDOW],
    probe_pos: usize,
    probe_count: usize,
    /// Timestamp of the batch being received, and how many packets it has so far.
    batch: Option<(Instant, u32)>,
    /// Timestamp of the previous batch.
    previous_batch: Option<Instant>,
    /// The first packet of a pair (16n) and its batch timestamp.
    probe_start: Option<(SeqNo, Instant)>,
    /// Arrivals since the last counted-rate report, and when that report was taken (or the
    /// first arrival).
    counted: u64,
    counted_since: Option<Instant>,
}

impl Default for ArrivalEstimator {
    fn default() -> Self {
        ArrivalEstimator {
            arrivals: [0; ARRIVAL_WINDOW],
            arrival_pos: 0,
            arrival_count: 0,
            probes: [0; PROBE_WINDOW],
            probe_pos: 0,
            probe_count: 0,
            batch: None,
            previous_batch: None,
            probe_start: None,
            counted: 0,
            counted_since: None,
        }
    }
}

/// UDT4's made-up starting gaps, nanoseconds: between arrivals (1 s) and within a packet pair
/// (1 ms), and how many packet-pair entries its window holds (16).
const UDT4_ARRIVAL_GAP: u64 = 1_000_000_000;
const UDT4_PAIR_GAP: u64 = 1_000_000;
const UDT4_PAIR_WINDOW: usize = 16;

impl ArrivalEstimator {
    /// An estimator that starts as UDT4's does (`Config::udt4_estimators`): the arrival ring
    /// full of 1 s gaps and 16 packet-pair entries of 1 ms, so the first reports say 1 packet/s
    /// and 1000 packets/s until real gaps are the median.
    pub fn udt4_primed() -> Self {
        let mut e = ArrivalEstimator {
            arrivals: [UDT4_ARRIVAL_GAP; ARRIVAL_WINDOW],
            arrival_count: ARRIVAL_WINDOW,
            ..ArrivalEstimator::default()
        };
        for _ in 0..UDT4_PAIR_WINDOW {
            e.push_probe(UDT4_PAIR_GAP);
        }
        e
    }

    /// A data packet with sequence `seq` arrived at `now`.
    pub fn on_arrival(&mut self, seq: SeqNo, now: Instant) {
        self.counted += 1;
        self.counted_since.get_or_insert(now);
        match self.batch {
            Some((t, ref mut n)) if t == now => *n += 1,
            _ => {
                self.close_batch();
                self.previous_batch = self.batch.map(|(t, _)| t);
                self.batch = Some((now, 1));
            }
        }
        // protocol notes §4: the packet after one with seq & 0xF == 0 follows it back to back.
        match seq.value() & 0xF {
            0 => self.probe_start = Some((seq, now)),
            1 => {
                if let Some((first, t)) = self.probe_start.take() {
                    if first.next() == seq {
                        self.push_probe((now - t).as_nanos() as u64);
                    }
                }
            }
            _ => {}
        }
    }

    /// The current batch is complete: record its packets' average gaps.
    fn close_batch(&mut self) {
        let (Some((t, n)), Some(previous)) = (self.batch, self.previous_batch) else { return };
        let gap = (t - previous).as_nanos() as u64 / u64::from(n.max(1));
        for _ in 0..n.min(ARRIVAL_WINDOW as u32) {
            self.arrivals[self.arrival_pos] = gap;
            self.arrival_pos = (self.arrival_pos + 1) % ARRIVAL_WINDOW;
            self.arrival_count = (self.arrival_count + 1).min(ARRIVAL_WINDOW);
        }
    }

    fn push_probe(&mut self, gap: u64) {
        self.probes[self.probe_pos] = gap;
        self.probe_pos = (self.probe_pos + 1) % PROBE_WINDOW;
        self.probe_count = (self.probe_count + 1).min(PROBE_WINDOW);
    }

    /// Packet arrival rate, packets per second (0 when too few consistent samples).
    pub fn arrival_rate(&self) -> u32 {
        match median_filtered_mean(&self.arrivals[..self.arrival_count]) {
            Some((mean, count)) if count > ARRIVAL_WINDOW / 2 => rate_from_gap(mean),
            _ => 0,
        }
    }

    /// Counted arrival rate (ours, for controllers that ask for it): the packets that arrived
    /// since the previous call over the time since then, packets per second (0 when none
    /// arrived or no time passed). Unlike [`ArrivalEstimator::arrival_rate`] it has no median
    /// filter that drops long gaps, so a flow sharing a link reads its share, not the link's rate
    /// in the bursts where its packets crossed back to back.
    pub fn counted_rate(&mut self, now: Instant) -> u32 {
        let Some(since) = self.counted_since else { return 0 };
        let elapsed = (now - since).as_secs_f64();
        let n = std::mem::take(&mut self.counted);
        self.counted_since = Some(now);
        if n == 0 || elapsed <= 0.0 {
            return 0;
        }
        (n as f64 / elapsed).min(f64::from(u32::MAX)) as u32
    }

    /// Estimated link capacity, packets per second (0 = not enough packet pairs yet).
    pub fn capacity(&self) -> u32 {
        if self.probe_count < MIN_PROBES {
            return 0;
        }
        match median_filtered_mean(&self.probes[..self.probe_count]) {
            Some((mean, _)) => rate_from_gap(mean),
            None => 0,
        }
    }
}

fn rate_from_gap(mean_ns: f64) -> u32 {
    if mean_ns <= 0.0 {
        return u32::MAX;
    }
    (1e9 / mean_ns).ceil().min(u32::MAX as f64) as u32
}

/// Mean of the entries within (median/8, 8 x median) and how many there were; `None` for an
/// empty window.
fn median_filtered_mean(window: &[u64]) -> Option<(f64, usize)> {
    let n = window.len();
    if n == 0 {
        return None;
    }
    let mut scratch = [0u64; PROBE_WINDOW];
    let sorted = &mut scratch[..n];
    sorted.copy_from_slice(window);
    sorted.sort_unstable();
    let median = sorted[n / 2];
    let (upper, lower) = (median.saturating_mul(8), median / 8);
    let (mut sum, mut count) = (0u64, 0usize);
    for &g in window.iter() {
        if g < upper && g > lower {
            sum += g;
            count += 1;
        }
    }
    if count == 0 {
        // All gaps equal (e.g. all zero): the median itself is the best estimate.
        return Some((median as f64, n));
    }
    Some((sum as f64 / count as f64, count))
}

/// Full ACKs sent and not yet confirmed by ACK2: (ACK number, acknowledged sequence, send time),
/// oldest first, in a ring. Slot `(head + i) % size` holds the i-th oldest of `len` entries,
/// `size` being the entries committed so far.
///
/// The ring must hold every ACK sent during one RTT, or the ACK2 that comes back names an
/// entry already forgotten and the RTT is never sampled again. UDT4's 1024 is enough at one full
/// ACK per SYN; a congestion control that asks for an ACK every N packets needs up to
/// (flow window / N) entries, see [`AckHistory::capacity_for`].
///
/// The ring is committed as ACKs are recorded: it starts empty and doubles (from
/// [`FIRST_RING`] entries) while it is full and below its capacity, so an idle or half-open
/// connection holds none of it (a TCP-like controller's capacity of 32,832 entries was 525 kB
/// per connection, allocated at establishment: 1,024 connections that never sent a byte took
/// a listener to 548 MB).
#[derive(Clone, Debug)]
pub struct AckHistory {
    /// The ring as committed so far: `entries.len()` is its size, at most `cap`.
    entries: Vec<(AckNo, SeqNo, Instant)>,
    /// The most entries the ring grows to.
    cap: usize,
    head: usize,
    len: usize,
}

/// UDT4's ACK window size (`CACKWindow` 1024).
const ACK_HISTORY: usize = 1024;
/// The largest ring we allocate (16 Mi ACKs in flight would be absurd).
const MAX_ACK_HISTORY: usize = 1 << 20;
/// Entries of the ring when the first ACK is recorded.
const FIRST_RING: usize = 16;

impl Default for AckHistory {
    fn default() -> Self {
        AckHistory::with_capacity(ACK_HISTORY)
    }
}

impl AckHistory {
    /// A ring of at most `capacity` entries (at least 1); nothing is allocated yet.
    pub fn with_capacity(capacity: usize) -> Self {
        AckHistory { entries: Vec::new(), cap: capacity.max(1), head: 0, len: 0 }
    }

    /// Entries committed so far (the ring's current size).
    #[cfg(test)]
    pub fn committed(&self) -> usize {
        self.entries.len()
    }

    /// The ring size for a receiver with `window` packets of flow window that sends a full ACK
    /// every `ack_interval` packets (`None`: on the SYN timer only): enough for one RTT of
    /// ACKs, since at most a window of packets arrives per RTT; at least UDT4's 1024.
    pub fn capacity_for(window: u32, ack_interval: Option<u32>) -> usize {
        match ack_interval {
            Some(n) if n > 0 => (window as usize / n as usize + 64).clamp(ACK_HISTORY, MAX_ACK_HISTORY),
            _ => ACK_HISTORY,
        }
    }

    /// Let the ring grow to `cap` entries (a smaller value changes nothing).
    pub fn raise_capacity(&mut self, cap: usize) {
        self.cap = self.cap.max(cap);
    }

    /// Record a full ACK; the oldest entry is forgotten when the ring is full.
    pub fn push(&mut self, ack_no: AckNo, seq: SeqNo, now: Instant) {
        if self.len == self.entries.len() && self.entries.len() < self.cap {
            // Full but below capacity: lay the ring out in order and double it.
            self.entries.rotate_left(self.head);
            self.head = 0;
            let size = (2 * self.entries.len()).clamp(FIRST_RING.min(self.cap), self.cap);
            self.entries.resize(size, (AckNo::new(0), SeqNo::new(0), Instant::ZERO));
        }
        let cap = self.entries.len();
        self.entries[(self.head + self.len) % cap] = (ack_no, seq, now);
        if self.len == cap {
            self.head = (self.head + 1) % cap;
        } else {
            self.len += 1;
        }
    }

    /// The ACK2 for `ack_no` arrived: return the ACK's sequence and send time, and forget it and
    /// every older entry. `None` for an unknown, forgotten or already confirmed number.
    pub fn acknowledge(&mut self, ack_no: AckNo) -> Option<(SeqNo, Instant)> {
        let cap = self.entries.len();
        if self.len == 0 {
            return None;
        }
        // ACK numbers are consecutive: try the slot the number should be in first.
        let first = self.entries[self.head].0;
        let guess = ack_no.value().wrapping_sub(first.value()) as usize & 0x7FFF_FFFF;
        let found = if guess < self.len && self.entries[(self.head + guess) % cap].0 == ack_no {
            Some(guess)
        } else {
            (0..self.len).find(|&i| self.entries[(self.head + i) % cap].0 == ack_no)
        };
        let i = found?;
        let idx = (self.head + i) % cap;
        let (_, seq, t) = self.entries[idx];
        self.head = (idx + 1) % cap;
        self.len -= i + 1;
        Some((seq, t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udt4_primed_estimators_report_udt4s_first_values_until_real_gaps_dominate() {
        let mut e = ArrivalEstimator::udt4_primed();
        assert_eq!((e.arrival_rate(), e.capacity()), (1, 1000));
        let mut t = Instant::ZERO;
        // 1 ms apart: 8 real gaps are not the median of 16 yet; the 10th packet's is.
        for i in 0..9u32 {
            t += std::time::Duration::from_millis(1);
            e.on_arrival(SeqNo::new(100 + i), t);
        }
        assert_eq!(e.arrival_rate(), 1);
        for i in 9..12u32 {
            t += std::time::Duration::from_millis(1);
            e.on_arrival(SeqNo::new(100 + i), t);
        }
        assert_eq!(e.arrival_rate(), 1000);
    }

    #[test]
    fn counted_rate_is_arrivals_over_time_since_the_last_report() {
        let mut e = ArrivalEstimator::default();
        let t = Instant::from_micros(1_000);
        assert_eq!(e.counted_rate(t), 0);
        // 3 arrivals in bursts, then a long gap (which the median filter would drop), then 2.
        for (i, us) in [0u64, 1, 2, 10_000, 10_001].into_iter().enumerate() {
            e.on_arrival(SeqNo::new(i as u32 + 2), t + std::time::Duration::from_micros(us));
        }
        // 5 packets over 20 ms.
        assert_eq!(e.counted_rate(t + std::time::Duration::from_millis(20)), 250);
        assert_eq!(e.counted_rate(t + std::time::Duration::from_millis(30)), 0);
    }

    #[test]
    fn fresh_estimator_reports_unknown() {
        let mut e = ArrivalEstimator::default();
        assert_eq!((e.arrival_rate(), e.capacity()), (0, 0));
        let mut t = Instant::from_micros(1);
        for s in 0..9u32 {
            t += std::time::Duration::from_micros(100);
            e.on_arrival(SeqNo::new(s), t);
        }
        // 8 gaps recorded so far (the 9th arrival's batch is still open): not enough.
        assert_eq!(e.arrival_rate(), 0, "8 gaps are not enough");
        e.on_arrival(SeqNo::new(9), t + std::time::Duration::from_micros(100));
        e.on_arrival(SeqNo::new(10), t + std::time::Duration::from_micros(200));
        assert_eq!(e.arrival_rate(), 10_000);
    }

    #[test]
    fn steady_arrivals_give_their_rate_and_pairs_the_capacity() {
        let mut e = ArrivalEstimator::default();
        let mut t = Instant::from_micros(1);
        for s in 0..200u32 {
            // 100 us apart, except that 16n+1 follows 16n after 10 us
            t += std::time::Duration::from_micros(if s % 16 == 1 { 10 } else { 100 });
            e.on_arrival(SeqNo::new(s), t);
        }
        let rate = e.arrival_rate();
        assert!((9_000..=11_000).contains(&rate), "rate {rate}");
        // 12 pairs 10 us apart: capacity 100,000 packets/s.
        assert_eq!(e.capacity(), 100_000);
        for s in 200..1200u32 {
            t += std::time::Duration::from_micros(if s % 16 == 1 { 10 } else { 100 });
            e.on_arrival(SeqNo::new(s), t);
        }
        assert_eq!(e.capacity(), 100_000);
    }

    #[test]
    fn batched_arrivals_give_the_average_rate_not_infinity() {
        // 44 packets per GRO batch, one batch every 50 us: 880,000 packets/s.
        let mut e = ArrivalEstimator::default();
        let mut seq = 0u32;
        for b in 1..=200u64 {
            let t = Instant::from_micros(b * 50);
            for _ in 0..44 {
                e.on_arrival(SeqNo::new(seq), t);
                seq += 1;
            }
        }
        let rate = e.arrival_rate();
        assert!((870_000..=890_000).contains(&rate), "rate {rate}");
        // Pairs inside a batch cannot be measured: capacity unlimited, never a made-up figure.
        assert_eq!(e.capacity(), u32::MAX);
    }

    #[test]
    fn ack_history_interleaved_with_ack2s_matches_every_one_once() {
        // The common case on any LAN: each ACK2 arrives before the next ACK.
        let mut h = AckHistory::default();
        for i in 1..=3000u32 {
            h.push(AckNo::new(i), SeqNo::new(i), Instant::from_micros(i as u64));
            assert_eq!(h.acknowledge(AckNo::new(i)), Some((SeqNo::new(i), Instant::from_micros(i as u64))));
            assert_eq!(h.acknowledge(AckNo::new(i)), None, "a repeated ACK2 must not match again");
        }
        // Two outstanding, confirmed out of order: the older is forgotten with the newer.
        h.push(AckNo::new(5000), SeqNo::new(1), Instant::ZERO);
        h.push(AckNo::new(5001), SeqNo::new(2), Instant::ZERO);
        assert!(h.acknowledge(AckNo::new(5001)).is_some());
        assert_eq!(h.acknowledge(AckNo::new(5000)), None);
    }

    #[test]
    fn ack_history_matches_and_forgets_older() {
        let mut h = AckHistory::default();
        for i in 1..=2000u32 {
            h.push(AckNo::new(i), SeqNo::new(i * 10), Instant::from_micros(i as u64));
        }
        assert_eq!(h.acknowledge(AckNo::new(500)), None, "forgotten after 1024");
        assert_eq!(h.acknowledge(AckNo::new(1500)), Some((SeqNo::new(15000), Instant::from_micros(1500))));
        assert_eq!(h.acknowledge(AckNo::new(1400)), None, "older than a confirmed one");
        assert!(h.acknowledge(AckNo::new(2000)).is_some());
    }

    #[test]
    fn ack_history_is_committed_as_acks_are_recorded() {
        let mut h = AckHistory::with_capacity(AckHistory::capacity_for(65_536, Some(1)));
        assert_eq!(h.committed(), 0, "nothing before the first ACK");
        let t = |us| Instant::from_micros(us);
        for i in 0..40u32 {
            h.push(AckNo::new(i + 1), SeqNo::new(i), t(u64::from(i)));
        }
        assert_eq!(h.committed(), 64, "doubled from 16 while full: 16, 32, 64");
        // Confirming frees entries; the ring wraps instead of growing.
        assert_eq!(h.acknowledge(AckNo::new(30)), Some((SeqNo::new(29), t(29))));
        for i in 40..80u32 {
            h.push(AckNo::new(i + 1), SeqNo::new(i), t(u64::from(i)));
        }
        assert_eq!(h.committed(), 64);
        // Growing a wrapped ring keeps every entry findable.
        for i in 80..200u32 {
            h.push(AckNo::new(i + 1), SeqNo::new(i), t(u64::from(i)));
        }
        assert_eq!(h.committed(), 256);
        assert_eq!(h.acknowledge(AckNo::new(31)), Some((SeqNo::new(30), t(30))));
        assert_eq!(h.acknowledge(AckNo::new(150)), Some((SeqNo::new(149), t(149))));
        assert_eq!(h.acknowledge(AckNo::new(200)), Some((SeqNo::new(199), t(199))));
        assert_eq!(h.acknowledge(AckNo::new(200)), None);
    }

    #[test]
    fn ack_history_sized_for_frequent_acks_and_found_directly() {
        assert_eq!(AckHistory::capacity_for(25_600, None), 1024);
        assert_eq!(AckHistory::capacity_for(25_600, Some(2)), 12_864);
        assert_eq!(AckHistory::capacity_for(100, Some(1)), 1024);
        let mut h = AckHistory::with_capacity(4);
        let t = |us| Instant::from_micros(us);
        for i in 0..6u32 {
            h.push(AckNo::new(i + 10), SeqNo::new(100 + i), t(u64::from(i)));
        }
        // 10 and 11 were forgotten (capacity 4).
        assert_eq!(h.acknowledge(AckNo::new(11)), None);
        assert_eq!(h.acknowledge(AckNo::new(13)), Some((SeqNo::new(103), t(3))));
        assert_eq!(h.acknowledge(AckNo::new(12)), None, "older than one confirmed");
        assert_eq!(h.acknowledge(AckNo::new(15)), Some((SeqNo::new(105), t(5))));
        assert_eq!(h.acknowledge(AckNo::new(15)), None);
    }
}
