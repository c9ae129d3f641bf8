//! The runtime's clock: `udt_proto::Instant` counted from the first use in this process.
//! This is the one place the runtime reads the system clock for the core.
//!
//! Kernel receive timestamps ([`arrival`]) are `CLOCK_REALTIME`; they are carried over to this
//! clock through the current offset between the two, and never put later than now.

use std::sync::OnceLock;

use udt_proto::Instant;

static EPOCH: OnceLock<std::time::Instant> = OnceLock::new();

/// Now, as the protocol core counts time.
pub fn now() -> Instant {
    let epoch = EPOCH.get_or_init(std::time::Instant::now);
    Instant::from_nanos(u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX))
}

/// The arrival time, on this clock, of a datagram the kernel stamped `stamp` (`CLOCK_REALTIME`
/// since the Unix epoch); without a stamp, now.
pub fn arrival(stamp: Option<std::time::Duration>) -> Instant {
    let now = now();
    match (stamp, std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)) {
        (Some(stamp), Ok(real_now)) => carried_over(now, real_now, stamp),
        _ => now,
    }
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
    fn no_stamp_is_now() {
        let before = now();
        let t = arrival(None);
        assert!(t >= before && t <= now());
    }
}
