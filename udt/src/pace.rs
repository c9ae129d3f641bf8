//! How the I/O thread waits for its next deadline: sleep in `ppoll` with a precise timeout
//! (the thread's timer slack is 1 µs), spin only for the last few microseconds, and never wake
//! for a deadline sooner than [`MIN_GAP`] after the previous round started.
//!
//! Why this keeps the rate exact: the core schedules each packet one period after the previous
//! one's *target* time, not after the time it actually left, and a late sender catches up (at
//! most `Config::max_pacing_debt`, 1 ms by default) by sending every packet already due in the
//! same round. So a few microseconds of wake-up lateness shift packets, never the average rate,
//! and when the period is shorter than [`MIN_GAP`] each round sends the packets of the periods
//! it covers as one burst (one GSO run), so a thread wakes at most once per [`MIN_GAP`] instead
//! of once per packet. The packet pairs of the core (two packets back to back every 16) are
//! unaffected: both leave in the same round. Datagrams and application wake-ups still end a
//! sleep at once. A `max_pacing_debt` below [`MIN_GAP`] would cost rate at short periods.

use std::time::Duration;

use udt_proto::Instant;

/// Shortest interval between the starts of two rounds woken by a deadline. At rates whose
/// packet period is shorter, packets leave in bursts covering this long.
pub(crate) const MIN_GAP: Duration = Duration::from_micros(250);
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
}

/// The wait before the next round: `deadline` is the earliest thing due (if any), `round_start`
/// when the round just finished began, `now` the time after it.
pub(crate) fn plan(deadline: Option<Instant>, round_start: Instant, now: Instant) -> Wait {
    let Some(deadline) = deadline else { return Wait::Sleep(None) };
    let target = deadline.max(round_start + MIN_GAP);
    let left = target.saturating_since(now);
    if left.is_zero() {
        Wait::Now
    } else if left < SPIN {
        Wait::Spin(target)
    } else {
        Wait::Sleep(Some(left))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(plan(None, t, t + us(10)), Wait::Sleep(None));
    }

    #[test]
    fn a_far_deadline_is_slept_for_exactly() {
        let t = origin();
        assert_eq!(plan(Some(t + us(500)), t, t + us(20)), Wait::Sleep(Some(us(480))));
    }

    #[test]
    fn a_near_deadline_waits_for_the_minimum_gap() {
        let t = origin();
        // Due in 5 µs, but the round began 10 µs ago: sleep until MIN_GAP after its start.
        assert_eq!(plan(Some(t + us(15)), t, t + us(10)), Wait::Sleep(Some(MIN_GAP - us(10))));
    }

    #[test]
    fn the_last_microseconds_are_spun() {
        let t = origin();
        let deadline = t + MIN_GAP + us(2);
        assert_eq!(plan(Some(deadline), t, t + MIN_GAP), Wait::Spin(deadline));
    }

    #[test]
    fn a_passed_deadline_after_a_long_round_runs_at_once() {
        let t = origin();
        assert_eq!(plan(Some(t + us(10)), t, t + MIN_GAP + us(30)), Wait::Now);
    }
}
