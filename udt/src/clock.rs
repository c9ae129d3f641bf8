//! The runtime's clock: `udt_proto::Instant` counted from the first use in this process.
//! This is the one place the runtime reads the system clock for the core, and the one place it
//! makes the times it hands a connection monotonic ([`at`]).
//!
//! Kernel receive timestamps ([`arrival`]) are `CLOCK_REALTIME`; they are carried over to this
//! clock through the current offset between the two, and never put later than now. They can be
//! earlier than a time the connection was already given (a datagram received during the last
//! round, handled after it; an application call in between): the core requires monotonic time,
//! so every time passed to a connection goes through [`at`] (or [`now_for`]), which clamps it
//! to the connection's latest one, under the connection's lock.

use std::sync::OnceLock;

use udt_proto::connection::Connection;
use udt_proto::Instant;

static EPOCH: OnceLock<std::time::Instant> = OnceLock::new();

/// Now, as the protocol core counts time.
pub fn now() -> Instant {
    let epoch = EPOCH.get_or_init(std::time::Instant::now);
    Instant::from_nanos(u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX))
}

/// `t` as a time to give `conn`: no earlier than the latest time it was given (the core's rule
/// of monotonic time). Call with the connection locked, right before handing it the result.
pub fn at(conn: &Connection, t: Instant) -> Instant {
    t.max(conn.latest_now())
}

/// Now, as a time to give `conn` ([`at`]).
pub fn now_for(conn: &Connection) -> Instant {
    at(conn, now())
}

/// The arrival time, on this clock, of a datagram the kernel stamped `stamp` (`CLOCK_REALTIME`
/// since the Unix epoch); without a stamp, now.
pub fn arrival(stamp: Option<std::time::Duration>) -> Instant {
    match (stamp, clock_pair()) {
        (Some(stamp), Some((now, real_now))) => carried_over(now, real_now, stamp),
        _ => now(),
    }
}

/// The reads of a pair span at most this long when no pause came between them (a clock read
/// takes tens of nanoseconds).
const PAIR_SPAN: std::time::Duration = std::time::Duration::from_micros(2);
/// Attempts at a pair that spans at most [`PAIR_SPAN`].
const PAIR_TRIES: usize = 4;

/// This clock and the real-time clock read together: the real-time read between two of this
/// clock's, against their midpoint; of up to [`PAIR_TRIES`] attempts, the first within
/// [`PAIR_SPAN`], else the tightest. A thread preempted between two lone reads would carry
/// every stamp over by the pause, and a datagram that seems to arrive a pause early lowers the
/// receiver's one-way delay base: every later packet then reads as queued by the pause.
fn clock_pair() -> Option<(Instant, std::time::Duration)> {
    let mut best: Option<(std::time::Duration, Instant, std::time::Duration)> = None;
    for _ in 0..PAIR_TRIES {
        let before = now();
        let real = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).ok()?;
        let after = now();
        let span = after.saturating_since(before);
        if best.is_none_or(|(tightest, _, _)| span < tightest) {
            best = Some((span, before + span / 2, real));
        }
        if span <= PAIR_SPAN {
            break;
        }
    }
    best.map(|(_, now, real)| (now, real))
}

/// `stamp` on the clock that reads `now` while the real-time clock reads `real_now`: as long
/// before `now` as it is before `real_now`, and never later than `now` (a stamp from the future
/// means the real-time clock was stepped back).
fn carried_over(now: Instant, real_now: std::time::Duration, stamp: std::time::Duration) -> Instant {
    now - real_now.saturating_sub(stamp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn kernel_stamps_carry_over_by_their_age() {
        let now = Instant::from_micros(5_000_000);
        let real = Duration::from_secs(1_700_000_000);
        let stamped = carried_over(now, real, real - Duration::from_micros(1_250));
        assert_eq!(stamped, Instant::from_micros(5_000_000 - 1_250));
        // A stamp ahead of the real-time clock (stepped back) is now, never the future.
        assert_eq!(carried_over(now, real, real + Duration::from_millis(3)), now);
        // An age beyond the process's clock saturates at its start.
        assert_eq!(carried_over(now, real, real - Duration::from_secs(60)), Instant::ZERO);
    }

    #[test]
    fn times_given_to_a_connection_never_go_back() {
        use udt_proto::connection::Config;
        use udt_proto::rng::SplitMix64;
        let peer = "127.0.0.1:9".parse().unwrap();
        let start = Instant::from_micros(10_000);
        let mut conn = Connection::connect(
            Config::default(),
            udt_proto::SocketId(3),
            peer,
            start,
            Box::new(SplitMix64::new(1)),
        )
        .unwrap();
        // A round at 20 ms, then a datagram the kernel stamped at 15 ms (received during the
        // round): it is handed over at 20 ms, and the core (debug build) does not object.
        conn.handle_timeout(at(&conn, Instant::from_micros(20_000)));
        let stamped = Instant::from_micros(15_000);
        assert_eq!(at(&conn, stamped), Instant::from_micros(20_000));
        conn.handle_datagram(at(&conn, stamped), &[0u8; 4]);
        assert_eq!(conn.latest_now(), Instant::from_micros(20_000));
        // Later times pass unchanged.
        assert_eq!(at(&conn, Instant::from_micros(20_001)), Instant::from_micros(20_001));
        // Now for a connection given a time ahead of this clock is that time.
        conn.handle_timeout(Instant::from_micros(u64::MAX / 2));
        assert_eq!(now_for(&conn), Instant::from_micros(u64::MAX / 2));
    }

    #[test]
    fn a_clock_pair_reads_both_clocks_together() {
        let before = now();
        let real_before = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
        let (mid, real) = clock_pair().unwrap();
        let after = now();
        assert!(before <= mid && mid <= after);
        assert!(real >= real_before);
        // A stamp of the pair's own real time carries over to the pair's time on this clock.
        assert_eq!(carried_over(mid, real, real), mid);
    }

    #[test]
    fn no_stamp_is_now() {
        let before = now();
        let t = arrival(None);
        assert!(t >= before && t <= now());
    }
}
