//! How the I/O thread waits for its next deadline: sleep in `ppoll` with a precise timeout
//! (the thread's timer slack is 1 µs), spin only for the last few microseconds, and never wake
//! for a deadline sooner than a gap after the previous round started: [`MIN_GAP`], or while
//! paced data leaves, [`burst_gap`] (one GSO send's worth of packets at the fastest
//! connection's rate, within the 2 ms pacing quantum and half the pacing debt).
//!
//! Why this keeps the rate exact: the core schedules each packet one period after the previous
//! one's *target* time, not after the time it actually left, and a late sender catches up (at
//! most `Config::max_pacing_debt`, 4 ms as the runtime sets it) by sending every packet already due in the
//! same round. So a few microseconds of wake-up lateness shift packets, never the average rate,
//! and when the period is shorter than the gap each round sends the packets of the periods it
//! covers as one burst (one GSO run), so a thread wakes at most once per gap instead of once
//! per packet. The packet pairs of the core (two packets back to back every 16) are
//! unaffected: both leave in the same round. Datagrams and application wake-ups still end a
//! sleep at once. A `max_pacing_debt` below [`MIN_GAP`] would cost rate at short periods.
//!
//! The exception is a streaming receiver ([`plan_streaming`]): once data packets arrived in each
//! of the last [`STREAK`] rounds, all full ones (a shorter one ended a write: a request or a
//! message, whose answer a gathering would hold back; 10,000 connections sending a message a
//! second each were read 2.7 ms after they were written at the median, not 0.23), at a rate
//! that would gather fewer than [`GATHER_BELOW`] in [`MIN_GATHER`] (below about 3 Gb/s),
//! datagrams no longer end the sleep, which lasts until the next deadline (none, where the
//! thread has no data packet waiting for its send time: its timers then wait for the
//! gathering's end, `mux/io_loop.rs`) or the end of a gathering: as long as [`GATHER_BELOW`]
//! packets take at the rate they arrive, within [`MIN_GATHER`] and `Options::receive_gather`
//! (4 ms) ([`gather_length`]), and no longer than [`MIN_GATHER`] for data of a connection that
//! acknowledges every few packets (its peer times round trips on those ACKs). The kernel keeps
//! them,
//! each with its arrival timestamp, which is the time the core handles it at, so the arrival
//! rate and packet-pair estimates do not change; the round takes them all, and a blocked reader
//! wakes once for them. Control packets alone (a sender's ACKs) never start it, so a sender
//! answers each ACK with its ACK2 at once and the receiver's RTT samples stay exact. An ACK or
//! NAK leaves up to a gathering late: the delay a controller reads in it is at most one gathering.
//! Gathering goes on through losses, which at 1% loss took the receiver from about 140k to 68k
//! context switches and from 1.1 to 0.75 CPU seconds per 8 s run, goodput level
//! (docs/deviations.md R7).

use std::time::Duration;

use udt_proto::Instant;

/// Shortest interval between the starts of two rounds woken by a deadline. At rates whose
/// packet period is shorter, packets leave in bursts covering this long.
pub(crate) const MIN_GAP: Duration = Duration::from_micros(250);

/// How far a late sender may catch up, as the runtime configures its connections
/// (`Config::max_pacing_debt`; the core's default is 1 ms): twice [`MAX_BURST_GAP`], so a round
/// that wakes up to a whole gap late still sends everything due.
pub(crate) const PACING_DEBT: Duration = Duration::from_millis(4);

/// Longest gap between paced bursts: the pacing quantum, 2 ms. Below about 250 Mb/s a GSO
/// send's worth of packets takes longer than this, so slower senders wake once per quantum, and
/// a wake-up is most of what a slow sender costs (about 30 us of CPU on a virtual machine, most
/// of it the return from `ppoll`'s sleep): at 2 ms that is 1.5% of a core whatever the rate.
/// Linux paces TCP in bursts of 1 ms of data (`sk_pacing_shift` 10) and WiFi drivers in bursts of
/// 4 ms (shift 8). A burst adds at most the quantum's worth of queue at a bottleneck of the
/// paced rate, gone before the next one; the receiver's queueing-delay report, the least delay
/// of an ACK period (10 ms), does not see it. Paced at 100 Mb/s over a veth pair, the sending
/// process took 3.1-3.2 CPU s per GB with 2 ms bursts against 5.0-5.5 with 1 ms ones (UDT4's
/// sender 4.3-4.7), and on emulated 50 and 100 Mb/s, 10 ms paths goodput was level.
pub(crate) const MAX_BURST_GAP: Duration = Duration::from_millis(2);

/// Data packets a paced burst may hold: one GSO send of full-size datagrams (64 KB).
pub(crate) const BURST_PACKETS: u32 = 44;

/// The gap between rounds woken by deadlines, for a thread whose fastest sending connection
/// has packet period `period` and may catch up at most `max_debt`: a burst of
/// [`BURST_PACKETS`] (one GSO send), as Linux sizes TCP's paced bursts to what one segmentation
/// offload carries, but at least [`MIN_GAP`] (the timer's useful resolution) and at most the
/// pacing quantum [`MAX_BURST_GAP`] and half `max_debt`, so that a round that wakes late still
/// finds every packet due since the last one within what the core lets it catch up: the
/// average rate stays exact. At 100 Mb/s (period 117 us) with the runtime's 4 ms debt
/// ([`PACING_DEBT`]) that is 2 ms and 17 packets a burst, not 250 us and 2: an eighth of
/// the wake-ups, each one GSO send.
pub(crate) fn burst_gap(period: Duration, max_debt: Duration) -> Duration {
    (period * BURST_PACKETS).min(MAX_BURST_GAP).min(max_debt / 2).max(MIN_GAP)
}
/// Waits shorter than this are spun: a `ppoll` round trip costs about as much.
pub(crate) const SPIN: Duration = Duration::from_micros(4);

/// What to do until the next round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Start the next round at once.
    Now,
    /// Spin until this moment.
    Spin(Instant),
    /// Sleep for at most this long (`None`: until a datagram or a wake-up).
    Sleep(Option<Duration>),
    /// Sleep this long whatever arrives meanwhile (an application wake-up still ends it).
    Gather(Duration),
}

/// Consecutive rounds that received data packets, slowly ([`few_per_gathering`]), before the
/// thread gathers them instead of waking for each.
pub(crate) const STREAK: u32 = 2;

/// Shortest gathering; data arriving too fast to gather fewer than [`GATHER_BELOW`] packets in
/// it is not gathered at all.
pub(crate) const MIN_GATHER: Duration = Duration::from_micros(250);

/// When the I/O thread gathers: after [`STREAK`] rounds of slowly arriving data packets.
#[derive(Debug)]
pub(crate) struct Gathering {
    gather: Duration,
    streak: u32,
    last_round_start: Instant,
}

impl Gathering {
    /// Gatherings of at most `gather` (zero: never), starting at `now`.
    pub(crate) fn new(gather: Duration, now: Instant) -> Self {
        Gathering { gather, streak: 0, last_round_start: now }
    }

    /// A round that began at `round_start` took `data` data packets: how long the next sleep
    /// may gather, if at all. With `count_acked` (some of them were for a connection that
    /// acknowledges every few packets, whose peer times its round trips on those ACKs) no
    /// longer than [`MIN_GATHER`]; with `write_ended` (one of them was shorter than a full packet:
    /// it ended a write, a request or a message someone may be waiting for, whose answer or ACK
    /// a gathering would hold back) not at all, and the streak starts again.
    pub(crate) fn after_round(
        &mut self,
        round_start: Instant,
        data: usize,
        count_acked: bool,
        write_ended: bool,
    ) -> Option<Duration> {
        let since = round_start.saturating_since(self.last_round_start);
        self.last_round_start = round_start;
        let shortest = self.gather.min(MIN_GATHER);
        let longest = if count_acked { shortest } else { self.gather };
        let slow = data > 0 && !write_ended && few_per_gathering(data, since, shortest);
        self.streak = if slow { self.streak.saturating_add(1) } else { 0 };
        (self.streak >= STREAK && !self.gather.is_zero())
            .then(|| gather_length(data, since, shortest, longest))
    }
}

/// How long to gather after a round that took `data` (at least one) data packets `since` the
/// previous round began: as long as [`GATHER_BELOW`] packets take at that rate (a gathering
/// then holds about one light ACK's worth), within `shortest` and `longest`.
pub(crate) fn gather_length(data: usize, since: Duration, shortest: Duration, longest: Duration) -> Duration {
    let per_packet = since.as_secs_f64() / data.max(1) as f64;
    Duration::from_secs_f64((per_packet * GATHER_BELOW).min(longest.as_secs_f64())).max(shortest)
}
/// Gather only while a gathering would collect fewer data packets than this (one light ACK's
/// worth): at higher rates each wake-up already serves many packets, and holding the light
/// ACKs back for a gathering cost 15-20% of the loopback throughput (flow window 8,192
/// packets, about 2.6 ms at 36 Gb/s).
pub(crate) const GATHER_BELOW: f64 = 64.0;

/// Whether `data` packets taken by a round that began `since` after the previous one come
/// slowly enough to gather: fewer than [`GATHER_BELOW`] expected in `gather`.
pub(crate) fn few_per_gathering(data: usize, since: Duration, gather: Duration) -> bool {
    let since = since.max(Duration::from_micros(1));
    (data as f64) * gather.as_secs_f64() / since.as_secs_f64() < GATHER_BELOW
}

/// The wait before the next round: `deadline` is the earliest thing due (if any), `round_start`
/// when the round just finished began, `now` the time after it.
/// Rounds begin at least `gap` apart ([`MIN_GAP`], or [`burst_gap`] while paced data leaves).
pub(crate) fn plan(deadline: Option<Instant>, round_start: Instant, now: Instant, gap: Duration) -> Wait {
    let Some(deadline) = deadline else { return Wait::Sleep(None) };
    wait_until(deadline.max(round_start + gap), now, |left| Wait::Sleep(Some(left)))
}

/// Go at once if `target` has passed, spin if it is nearly there, else `sleep` for what is left.
fn wait_until(target: Instant, now: Instant, sleep: impl FnOnce(Duration) -> Wait) -> Wait {
    let left = target.saturating_since(now);
    if left.is_zero() {
        Wait::Now
    } else if left < SPIN {
        Wait::Spin(target)
    } else {
        sleep(left)
    }
}

/// [`plan`] for a thread that received data packets in each of its last [`STREAK`] rounds:
/// the next round starts at the deadline (no sooner than `gap` after this one began) or
/// `gather` after this one began, whichever is sooner, and datagrams arriving meanwhile do not
/// end the sleep.
pub(crate) fn plan_streaming(
    deadline: Option<Instant>,
    round_start: Instant,
    now: Instant,
    gap: Duration,
    gather: Duration,
) -> Wait {
    let gathered = round_start + gather;
    let target = deadline.map_or(gathered, |d| d.max(round_start + gap).min(gathered));
    wait_until(target, now, Wait::Gather)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gathers_after_two_slow_rounds_of_data() {
        let t = origin();
        let longest = us(1000);
        let mut g = Gathering::new(longest, t);
        // 100 Mb/s: a packet every 120 us; 64 of them take longer than the longest gathering.
        assert_eq!(g.after_round(t + us(120), 1, false, false), None);
        assert_eq!(g.after_round(t + us(240), 1, false, false), Some(longest));
        assert_eq!(g.after_round(t + us(1240), 8, false, false), Some(longest));
        // A round without data ends it.
        assert_eq!(g.after_round(t + us(1340), 0, false, false), None);
        assert_eq!(g.after_round(t + us(1460), 1, false, false), None);
        assert_eq!(g.after_round(t + us(1580), 1, false, false), Some(longest));
        // 1 Gb/s: 21 packets per 250 us; 64 of them take 762 us.
        let fast = g.after_round(t + us(1830), 21, false, false).unwrap();
        assert!(fast.abs_diff(us(762)) < us(1), "{fast:?}");
        // 3.6 Gb/s: 75 packets per 250 us, too many to gather.
        assert_eq!(g.after_round(t + us(2080), 75, false, false), None);
        // Data for a connection that acknowledges every few packets: the shortest gathering.
        assert_eq!(g.after_round(t + us(2200), 1, true, false), None);
        assert_eq!(g.after_round(t + us(2320), 1, true, false), Some(MIN_GATHER));
        // Off.
        let mut off = Gathering::new(Duration::ZERO, t);
        assert_eq!(off.after_round(t + us(120), 1, false, false), None);
        assert_eq!(off.after_round(t + us(240), 1, false, false), None);
        // A longest gathering shorter than the shortest: that, at every rate that gathers.
        let mut short = Gathering::new(us(100), t);
        assert_eq!(short.after_round(t + us(120), 1, false, false), None);
        assert_eq!(short.after_round(t + us(240), 1, false, false), Some(us(100)));
    }

    #[test]
    fn a_packet_that_ended_a_write_is_not_gathered_after() {
        let t = origin();
        let longest = us(4000);
        let mut g = Gathering::new(longest, t);
        assert_eq!(g.after_round(t + us(120), 1, false, false), None);
        assert_eq!(g.after_round(t + us(240), 1, false, false), Some(longest));
        // A message (or a request) arrived: handled at once, and the streak starts again.
        assert_eq!(g.after_round(t + us(4240), 3, false, true), None);
        assert_eq!(g.after_round(t + us(4360), 1, false, false), None);
        assert_eq!(g.after_round(t + us(4480), 1, false, false), Some(longest));
    }

    #[test]
    fn a_gathering_lasts_as_long_as_64_packets_take_within_its_bounds() {
        let (lo, hi) = (us(250), us(1000));
        assert_eq!(gather_length(1, us(120), lo, hi), hi);
        assert_eq!(gather_length(64, us(500), lo, hi), us(500));
        assert_eq!(gather_length(64, us(100), lo, hi), lo);
        // No division by zero.
        assert_eq!(gather_length(0, us(100), lo, hi), hi);
    }

    #[test]
    fn only_slow_streams_gather() {
        let ms = Duration::from_millis(1);
        // 100 Mb/s: a packet per 120 us, woken for each; or 8 in a gathering.
        assert!(few_per_gathering(1, us(120), ms));
        assert!(few_per_gathering(8, ms, ms));
        // Loopback rates: 100 packets in 50 us would be 2,000 in a gathering.
        assert!(!few_per_gathering(100, us(50), ms));
        // Nothing measured since the last round: counts as fast, never as a division by zero.
        assert!(!few_per_gathering(64, Duration::ZERO, ms));
    }

    #[test]
    fn a_streaming_receiver_gathers_until_its_deadline_or_the_gather_time() {
        let t = origin();
        let ms = Duration::from_millis(1);
        // No deadline: the whole gather time from the round's start.
        assert_eq!(plan_streaming(None, t, t + us(100), MIN_GAP, ms), Wait::Gather(us(900)));
        // A deadline sooner than that ends it (an ACK timer, a packet to send)...
        assert_eq!(plan_streaming(Some(t + us(400)), t, t + us(100), MIN_GAP, ms), Wait::Gather(us(300)));
        // ... but not before the minimum gap, as for any deadline.
        assert_eq!(
            plan_streaming(Some(t + us(10)), t, t + us(100), MIN_GAP, ms),
            Wait::Gather(MIN_GAP - us(100))
        );
        // A later deadline waits for the next gathering.
        assert_eq!(plan_streaming(Some(t + us(5000)), t, t + us(100), MIN_GAP, ms), Wait::Gather(us(900)));
        // Already past: go at once; almost there: spin.
        assert_eq!(plan_streaming(None, t, t + us(1200), MIN_GAP, ms), Wait::Now);
        assert_eq!(plan_streaming(None, t, t + us(998), MIN_GAP, ms), Wait::Spin(t + ms));
    }

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    /// An arbitrary origin.
    fn origin() -> Instant {
        Instant::from_nanos(1_000_000_000)
    }

    #[test]
    fn no_deadline_sleeps_until_woken() {
        let t = origin();
        assert_eq!(plan(None, t, t + us(10), MIN_GAP), Wait::Sleep(None));
    }

    #[test]
    fn a_far_deadline_is_slept_for_exactly() {
        let t = origin();
        assert_eq!(plan(Some(t + us(500)), t, t + us(20), MIN_GAP), Wait::Sleep(Some(us(480))));
    }

    #[test]
    fn a_near_deadline_waits_for_the_minimum_gap() {
        let t = origin();
        // Due in 5 µs, but the round began 10 µs ago: sleep until MIN_GAP after its start.
        assert_eq!(plan(Some(t + us(15)), t, t + us(10), MIN_GAP), Wait::Sleep(Some(MIN_GAP - us(10))));
    }

    #[test]
    fn paced_bursts_are_one_gso_send_within_the_quantum_and_half_the_debt() {
        let debt = Duration::from_millis(1);
        // 10 Gb/s (1.2 us a packet): the timer's resolution bounds it.
        assert_eq!(burst_gap(Duration::from_nanos(1_200), debt), MIN_GAP);
        // 1 Gb/s (11.7 us): 44 packets, one GSO send.
        assert_eq!(burst_gap(us(11), debt), us(11 * 44));
        // 100 Mb/s (117 us): half the debt, 4 packets.
        assert_eq!(burst_gap(us(117), debt), us(500));
        // A debt below twice the minimum gap leaves the minimum gap.
        assert_eq!(burst_gap(us(117), us(100)), MIN_GAP);
        // The runtime's debt: at 100 Mb/s the pacing quantum, 2 ms (17 packets); at
        // 10 Mb/s (1.17 ms a packet) no longer either.
        assert_eq!(burst_gap(us(117), PACING_DEBT), MAX_BURST_GAP);
        assert_eq!(burst_gap(us(1_170), PACING_DEBT), MAX_BURST_GAP);
        assert_eq!(burst_gap(us(11), PACING_DEBT), us(11 * 44));
        // A longer gap means fewer rounds.
        let t = origin();
        assert_eq!(plan(Some(t + us(15)), t, t + us(10), us(500)), Wait::Sleep(Some(us(490))));
    }

    #[test]
    fn the_last_microseconds_are_spun() {
        let t = origin();
        let deadline = t + MIN_GAP + us(2);
        assert_eq!(plan(Some(deadline), t, t + MIN_GAP, MIN_GAP), Wait::Spin(deadline));
    }

    #[test]
    fn a_passed_deadline_after_a_long_round_runs_at_once() {
        let t = origin();
        assert_eq!(plan(Some(t + us(10)), t, t + MIN_GAP + us(30), MIN_GAP), Wait::Now);
    }
}
