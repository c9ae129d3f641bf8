//! The least sample over a sliding window of time, kept as the least of each of
//! [`SUB_WINDOWS`] sub-windows (LEDBAT's base-delay history, RFC 6817 §3.4.2): when the oldest
//! sub-window leaves the window, the minimum becomes the newer sub-windows' least, never a single
//! fresh sample. A minimum reset to the sample of the moment its window ran out would take
//! whatever queue stood then for none, and a flow pacing over it would fall below the path
//! until a lower sample came: on a long lossy path, seconds of every window.
//!
//! Invariants: [`WindowMin::get`] is the least sample of the sub-windows kept, `None` only before
//! the first sample; the newest sub-window is never dropped, so a flow that stops sampling keeps
//! its last minimum; sub-windows are dropped only by [`WindowMin::expire`], so a caller can hold
//! the minimum past its window (Copa's competitive mode). Samples are any ordered values: a
//! windowed maximum is the minimum of [`Reverse`] samples ([`WindowMax`]).

use std::cmp::Reverse;
use std::collections::VecDeque;
use std::time::Duration;

use udt_proto::time::Instant;

/// Sub-windows of a window: the minimum follows a rise of the path's base within a window and a
/// fifth of it.
pub const SUB_WINDOWS: u32 = 5;

/// The windowed minimum (see the module documentation).
#[derive(Clone, Debug)]
pub struct WindowMin<T = Duration> {
    /// (start, least sample) of each sub-window, oldest first.
    subs: VecDeque<(Instant, T)>,
}

impl<T> Default for WindowMin<T> {
    fn default() -> Self {
        WindowMin { subs: VecDeque::new() }
    }
}

/// The windowed maximum: the minimum of reversed samples.
pub type WindowMax = WindowMin<Reverse<Duration>>;

impl<T: Ord + Copy> WindowMin<T> {
    /// Record `sample` at `now` in the sub-window of a `window` it falls in.
    pub fn update(&mut self, now: Instant, sample: T, window: Duration) {
        let span = window / SUB_WINDOWS;
        match self.subs.back_mut() {
            Some((start, least)) if now.saturating_since(*start) < span => *least = (*least).min(sample),
            _ => self.subs.push_back((now, sample)),
        }
    }

    /// Drop the sub-windows that began more than `window` before `now`, the newest excepted.
    pub fn expire(&mut self, now: Instant, window: Duration) {
        while self.subs.len() > 1 && self.subs.front().is_some_and(|&(t, _)| now.saturating_since(t) > window)
        {
            self.subs.pop_front();
        }
    }

    /// The least sample kept, if any came.
    pub fn get(&self) -> Option<T> {
        self.subs.iter().map(|&(_, s)| s).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn an_expired_minimum_gives_way_to_the_least_of_the_newer_sub_windows() {
        let window = ms(10_000);
        let mut f = WindowMin::default();
        let t0 = Instant::ZERO;
        f.update(t0, ms(100), window);
        // A sample every 100 ms, 120-129 ms, then one of 180 ms (a queue) just as the first
        // sub-window leaves the window.
        for k in 1..100u64 {
            f.expire(t0 + ms(100 * k), window);
            f.update(t0 + ms(100 * k), ms(120 + k % 10), window);
        }
        assert_eq!(f.get(), Some(ms(100)));
        f.expire(t0 + ms(10_100), window);
        f.update(t0 + ms(10_100), ms(180), window);
        assert_eq!(f.get(), Some(ms(120)), "the newer sub-windows' least, not the 180 ms of now");
    }

    #[test]
    fn a_held_minimum_outlasts_its_window_and_the_newest_sub_window_stays() {
        let window = ms(1_000);
        let mut f = WindowMin::default();
        assert_eq!(f.get(), None);
        f.update(Instant::ZERO, ms(50), window);
        // Not expired (held): kept whatever came since.
        f.update(Instant::ZERO + ms(5_000), ms(90), window);
        assert_eq!(f.get(), Some(ms(50)));
        // Expired: the older sub-window goes, the newest stays even once it is old itself.
        f.expire(Instant::ZERO + ms(60_000), window);
        assert_eq!(f.get(), Some(ms(90)));
    }

    #[test]
    fn a_window_max_keeps_the_largest_sample() {
        let window = ms(1_000);
        let mut f = WindowMax::default();
        f.update(Instant::ZERO, Reverse(ms(5)), window);
        f.update(Instant::ZERO + ms(300), Reverse(ms(9)), window);
        f.update(Instant::ZERO + ms(600), Reverse(ms(7)), window);
        assert_eq!(f.get(), Some(Reverse(ms(9))));
        f.expire(Instant::ZERO + ms(1_500), window);
        assert_eq!(f.get(), Some(Reverse(ms(7))));
    }

    #[test]
    fn a_lower_sample_is_the_minimum_at_once() {
        let window = ms(1_000);
        let mut f = WindowMin::default();
        f.update(Instant::ZERO, ms(50), window);
        f.update(Instant::ZERO + ms(10), ms(20), window);
        f.update(Instant::ZERO + ms(700), ms(30), window);
        assert_eq!(f.get(), Some(ms(20)));
    }
}
