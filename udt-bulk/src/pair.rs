//! Two sessions joined by a virtual path, in virtual time: the harness that tests every protocol
//! here through loss, reordering and duplication without sockets or wall-clock time.
//!
//! The path has a one-way delay, an optional bottleneck rate with a drop-tail queue (in
//! packets), and random impairments applied to datagrams in both directions: loss, duplication
//! and reordering (a reordered datagram is held back by up to four serialization times plus a
//! tenth of the one-way delay). Control bytes are reliable and in order, delivered one one-way
//! delay after they were written, as over a TCP connection with no loss.
//!
//! Invariants: time only moves forward; a run ends when both sessions ended, when nothing is
//! left to happen (neither waits on a timer nor has anything in flight), or at the limit.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::time::Duration;

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use udt_proto::time::Instant;

use crate::session::{Event, Session};

/// The virtual path between the two sessions.
#[derive(Debug, Clone, PartialEq)]
pub struct Path {
    /// One-way propagation delay, both directions.
    pub one_way: Duration,
    /// Bottleneck rate in bits per second of UDP payload, each direction; 0 for unlimited.
    pub rate_bps: u64,
    /// Drop-tail queue ahead of the bottleneck, in datagrams (with a rate only).
    pub queue_packets: usize,
    /// Probability that a datagram is lost.
    pub loss: f64,
    /// Probability that a datagram is held back behind later ones.
    pub reorder: f64,
    /// Probability that a datagram arrives twice.
    pub duplicate: f64,
    /// Seed of the impairments' generator.
    pub seed: u64,
}

impl Default for Path {
    fn default() -> Self {
        Path {
            one_way: Duration::from_millis(10),
            rate_bps: 0,
            queue_packets: 1000,
            loss: 0.0,
            reorder: 0.0,
            duplicate: 0.0,
            seed: 1,
        }
    }
}

/// How a run of [`run_pair`] ended.
#[derive(Debug, Clone, PartialEq)]
pub struct PairOutcome {
    /// Session `a`'s end: `Ok` for [`Event::Done`], `Err` with the reason for [`Event::Failed`],
    /// `None` if it did not end.
    pub a: Option<Result<(), String>>,
    /// Session `b`'s end.
    pub b: Option<Result<(), String>>,
    /// Virtual time from the start to the last session's end (or to where the run stopped).
    pub elapsed: Duration,
    /// Datagrams the path dropped (random loss and queue overflow), both directions.
    pub dropped: u64,
}

/// What is in flight towards a session.
enum Delivery {
    Control { channel: usize, bytes: Vec<u8> },
    Datagram(Vec<u8>),
}

/// Deliveries in order of arrival (ties in order of sending).
#[derive(Default)]
struct InFlight {
    heap: BinaryHeap<Reverse<(Instant, u64, usize)>>,
    payloads: HashMap<u64, Delivery>,
    serial: u64,
}

impl InFlight {
    fn push(&mut self, at: Instant, to: usize, delivery: Delivery) {
        self.serial += 1;
        self.payloads.insert(self.serial, delivery);
        self.heap.push(Reverse((at, self.serial, to)));
    }

    fn next_at(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse((at, _, _))| *at)
    }

    fn pop_due(&mut self, now: Instant) -> Option<(usize, Delivery)> {
        let Reverse((at, id, to)) = *self.heap.peek()?;
        if at > now {
            return None;
        }
        self.heap.pop();
        self.payloads.remove(&id).map(|d| (to, d))
    }
}

/// One direction of the path.
struct Direction {
    /// When the bottleneck is next free.
    free_at: Instant,
    /// Departure times of the datagrams queued at the bottleneck.
    queued: VecDeque<Instant>,
}

/// Datagrams one session may send at one instant before the other gets a turn.
const BURST_LIMIT: usize = 100_000;

/// Run `a` and `b` against each other over `path` until both ended or `limit` of virtual time.
pub fn run_pair(a: &mut dyn Session, b: &mut dyn Session, path: &Path, limit: Duration) -> PairOutcome {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(path.seed);
    let sessions: [&mut dyn Session; 2] = [a, b];
    let mut ends: [Option<Result<(), String>>; 2] = [None, None];
    let mut in_flight = InFlight::default();
    let mut directions = [0, 1].map(|_| Direction { free_at: Instant::ZERO, queued: VecDeque::new() });
    let mut dropped = 0u64;
    let mut buf = vec![0u8; sessions.iter().map(|s| s.max_datagram()).max().unwrap_or(0).max(1)];
    let end_at = Instant::ZERO + limit;
    let mut now = Instant::ZERO;
    let mut last_end = Instant::ZERO;

    loop {
        // Deliver what is due.
        let mut acted = false;
        while let Some((to, delivery)) = in_flight.pop_due(now) {
            acted = true;
            match delivery {
                Delivery::Control { channel, bytes } => sessions[to].handle_control(now, channel, &bytes),
                Delivery::Datagram(bytes) if ends[to].is_none() => sessions[to].handle_datagram(now, &bytes),
                Delivery::Datagram(_) => {}
            }
        }
        // Let each session act.
        for me in 0..2 {
            let other = 1 - me;
            if sessions[me].poll_timeout().is_some_and(|t| t <= now) {
                sessions[me].handle_timeout(now);
            }
            while let Some((channel, bytes)) = sessions[me].poll_control() {
                acted = true;
                in_flight.push(now + path.one_way, other, Delivery::Control { channel, bytes });
            }
            for _ in 0..BURST_LIMIT {
                let Some(len) = sessions[me].poll_datagram(now, &mut buf) else { break };
                acted = true;
                let bytes = buf[..len].to_vec();
                let dir = &mut directions[me];
                while dir.queued.front().is_some_and(|&t| t <= now) {
                    dir.queued.pop_front();
                }
                // Serialization time at the bottleneck; none without a rate.
                let slot =
                    (len as u64 * 8 * 1_000_000_000).checked_div(path.rate_bps).map(Duration::from_nanos);
                let departs = if let Some(serialize) = slot {
                    if dir.queued.len() >= path.queue_packets {
                        dropped += 1;
                        continue;
                    }
                    let departs = dir.free_at.max(now) + serialize;
                    dir.free_at = departs;
                    dir.queued.push_back(departs);
                    departs
                } else {
                    now
                };
                if chance(&mut rng, path.loss) {
                    dropped += 1;
                    continue;
                }
                let mut arrives = departs + path.one_way;
                if chance(&mut rng, path.reorder) {
                    let hold = slot.unwrap_or(Duration::from_micros(10)) * 4 + path.one_way / 10;
                    arrives += Duration::from_nanos(rng.next_u64() % (hold.as_nanos() as u64).max(1));
                }
                if chance(&mut rng, path.duplicate) {
                    in_flight.push(
                        arrives + Duration::from_micros(1),
                        other,
                        Delivery::Datagram(bytes.clone()),
                    );
                }
                in_flight.push(arrives, other, Delivery::Datagram(bytes));
            }
            while let Some(event) = sessions[me].poll_event() {
                let end = match event {
                    Event::Done => Ok(()),
                    Event::Failed(why) => Err(why),
                    Event::DataPeerPort(_) | Event::Size(_) | Event::QuietFor(_) => continue,
                };
                if ends[me].is_none() {
                    ends[me] = Some(end);
                    last_end = now;
                }
            }
        }
        if ends.iter().all(Option::is_some) {
            break;
        }
        // The next thing to happen.
        let next = [in_flight.next_at(), sessions[0].poll_timeout(), sessions[1].poll_timeout()]
            .into_iter()
            .flatten()
            .min();
        match next {
            Some(t) if t < end_at && t > now => now = t,
            // A session asked to be woken at `now` again and did nothing: move time on by the
            // smallest step so a timer that is never cleared cannot loop forever.
            Some(t) if t < end_at && !acted => now += Duration::from_nanos(1),
            Some(t) if t < end_at => {}
            _ => {
                last_end = now;
                break;
            }
        }
    }
    let [a, b] = ends;
    PairOutcome { a, b, elapsed: last_end.saturating_since(Instant::ZERO), dropped }
}

/// True with probability `p`.
fn chance(rng: &mut Xoshiro256PlusPlus, p: f64) -> bool {
    p > 0.0 && (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::Counters;

    /// A toy protocol: `a` sends `count` numbered datagrams paced `gap` apart and then says on
    /// control channel 0 how many; `b` answers the numbers it misses, `a` resends them and asks
    /// again, until `b` has all.
    struct Toy {
        sender: bool,
        count: u32,
        gap: Duration,
        next: u32,
        next_at: Instant,
        have: Vec<bool>,
        resend: VecDeque<u32>,
        control_in: Vec<u8>,
        control_out: Vec<(usize, Vec<u8>)>,
        events: Vec<Event>,
        counters: Counters,
    }

    impl Toy {
        fn new(sender: bool, count: u32) -> Self {
            Toy {
                sender,
                count,
                gap: Duration::from_micros(100),
                next: 0,
                next_at: Instant::ZERO,
                have: vec![false; count as usize],
                resend: VecDeque::new(),
                control_in: vec![],
                control_out: vec![],
                events: vec![],
                counters: Counters::default(),
            }
        }
    }

    impl Session for Toy {
        fn handle_control(&mut self, _now: Instant, _channel: usize, bytes: &[u8]) {
            self.control_in.extend_from_slice(bytes);
            while self.control_in.len() >= 4 {
                let n = u32::from_be_bytes(self.control_in[..4].try_into().unwrap());
                self.control_in.drain(..4);
                if self.sender {
                    if n == u32::MAX {
                        self.events.push(Event::Done);
                    } else {
                        self.resend.push_back(n);
                    }
                } else {
                    let missing: Vec<u32> = (0..n).filter(|&i| !self.have[i as usize]).collect();
                    for i in missing {
                        self.control_out.push((0, i.to_be_bytes().to_vec()));
                    }
                }
            }
        }
        fn handle_control_closed(&mut self, _now: Instant, _channel: usize) {}
        fn handle_datagram(&mut self, _now: Instant, d: &[u8]) {
            let i = u32::from_be_bytes(d[..4].try_into().unwrap()) as usize;
            self.counters.duplicates += u64::from(self.have[i]);
            self.have[i] = true;
            if self.have.iter().all(|&h| h) && !self.events.contains(&Event::Done) {
                self.control_out.push((0, u32::MAX.to_be_bytes().to_vec()));
                self.events.push(Event::Done);
            }
        }
        fn handle_timeout(&mut self, _now: Instant) {}
        fn poll_control(&mut self) -> Option<(usize, Vec<u8>)> {
            (!self.control_out.is_empty()).then(|| self.control_out.remove(0))
        }
        fn poll_datagram(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
            if !self.sender || now < self.next_at {
                return None;
            }
            let n = if let Some(n) = self.resend.pop_front() {
                if self.resend.is_empty() {
                    // Resent all it was asked for: ask again what is missing.
                    self.control_out.push((0, self.count.to_be_bytes().to_vec()));
                }
                n
            } else if self.next < self.count {
                self.next += 1;
                if self.next == self.count {
                    self.control_out.push((0, self.count.to_be_bytes().to_vec()));
                }
                self.next - 1
            } else {
                return None;
            };
            self.next_at = now + self.gap;
            buf[..4].copy_from_slice(&n.to_be_bytes());
            Some(4)
        }
        fn poll_timeout(&self) -> Option<Instant> {
            (self.sender && (self.next < self.count || !self.resend.is_empty())).then_some(self.next_at)
        }
        fn poll_event(&mut self) -> Option<Event> {
            (!self.events.is_empty()).then(|| self.events.remove(0))
        }
        fn counters(&self) -> Counters {
            self.counters
        }
        fn max_datagram(&self) -> usize {
            4
        }
    }

    #[test]
    fn a_clean_path_takes_the_sending_time_plus_a_round_trip() {
        let (mut a, mut b) = (Toy::new(true, 100), Toy::new(false, 100));
        let out = run_pair(&mut a, &mut b, &Path::default(), Duration::from_secs(10));
        assert_eq!((out.a, out.b), (Some(Ok(())), Some(Ok(()))));
        // The last datagram leaves at 99 gaps, arrives 10 ms later; its "all here" 10 ms after.
        assert_eq!(out.elapsed, Duration::from_micros(9_900) + Duration::from_millis(20));
    }

    #[test]
    fn impairments_lose_duplicate_and_reorder_reproducibly() {
        let path = Path { loss: 0.1, duplicate: 0.1, reorder: 0.2, seed: 5, ..Path::default() };
        let run = || {
            let (mut a, mut b) = (Toy::new(true, 1000), Toy::new(false, 1000));
            let out = run_pair(&mut a, &mut b, &path, Duration::from_secs(10));
            (out, b.counters.duplicates)
        };
        let (out, duplicates) = run();
        assert_eq!((out.a.clone(), out.b.clone()), (Some(Ok(())), Some(Ok(()))));
        assert!(out.dropped > 50, "about 10% of 1000 lost: {}", out.dropped);
        assert!(duplicates > 50, "about 10% duplicated: {duplicates}");
        assert_eq!(run(), (out, duplicates), "the same seed gives the same run");
    }

    #[test]
    fn a_bottleneck_paces_and_its_queue_overflows() {
        // 4-byte datagrams every 100 us = 320 kb/s into a 160 kb/s link with a 10-packet queue.
        let path = Path { rate_bps: 160_000, queue_packets: 10, ..Path::default() };
        let (mut a, mut b) = (Toy::new(true, 200), Toy::new(false, 200));
        let out = run_pair(&mut a, &mut b, &path, Duration::from_secs(10));
        assert_eq!((out.a, out.b), (Some(Ok(())), Some(Ok(()))));
        assert!(out.dropped >= 80, "half the offered load overflows: {}", out.dropped);
    }

    #[test]
    fn a_run_with_nothing_left_to_happen_stops_and_says_who_did_not_end() {
        let (mut a, mut b) = (Toy::new(true, 10), Toy::new(false, 10));
        let path = Path { loss: 1.0, ..Path::default() };
        let out = run_pair(&mut a, &mut b, &path, Duration::from_secs(10));
        assert_eq!((out.a, out.b), (None, None));
    }
}
