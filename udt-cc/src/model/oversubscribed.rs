//! Over-subscription test: are the losses of a cruising flow its link's, or a queue's that the
//! flows sharing it keep full?
//!
//! Random loss on a link (bit errors, a noisy radio) takes the same fraction of packets whatever
//! the sender does. A DropTail queue that several flows keep just over full drops only while the
//! sum of their rates exceeds the link: a loss fraction of a few percent or less, below the loss
//! threshold that tells congestion from link errors, which no single loss window can tell apart.
//! ProbeBW's Down phase is the experiment that does: for a round the flow sends at
//! `probe_down_gain` of its rate, the link's total falls below its capacity unless the
//! over-subscription is larger than the flow's cut, and the queue stops dropping. So each
//! packet is tagged with the phase it was sent in: settled cruise (no probe's queue in the
//! path) or Down. Under random loss both lose the same fraction; under over-subscription Down
//! loses far less.
//!
//! The test: given `n` loss events in the two phases together, the number in Down is binomial
//! with the Down share `q` of the packets when the loss fraction is the same in both (the null
//! hypothesis). Once Down's expected count `n q` reaches [`MIN_EXPECTED`], a count as low as or
//! lower than the observed one with probability under [`SIGNIFICANCE`] means the queue is
//! over-subscribed; a count that is not that low with [`ENOUGH_EXPECTED`] expected means it is
//! not, and the tallies start again. At 1% random loss a lone flow's false verdicts are then
//! rarer than one in a hundred tests.
//!
//! Invariants: a loss event counts in the phase its first packet was sent in, once (the
//! controller counts each event once); packets are counted as first sent, never as
//! retransmitted; tallies hold only packets sent since the last reset.

use std::collections::VecDeque;

use udt_proto::seq::SeqNo;

/// Expected Down loss events (under the null hypothesis) before a test may conclude
/// over-subscription: with fewer, even none observed is not improbable enough.
pub const MIN_EXPECTED: f64 = 8.0;
/// Expected Down loss events after which a test that found nothing concludes "random loss"
/// and starts again (so the tallies follow the path as it changes).
pub const ENOUGH_EXPECTED: f64 = 32.0;
/// The probability, under random loss, of a Down count as low as the one observed below which
/// the queue is judged over-subscribed.
pub const SIGNIFICANCE: f64 = 0.01;
/// Phase boundaries remembered: loss reports come within a few round trips of the send.
const MARKS: usize = 256;

/// The phase a packet was sent in, as the test sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tag {
    /// Cruising with no probe's queue in the path.
    Cruise,
    /// ProbeBW Down: sending below the estimate.
    Down,
    /// Anything else (Startup, Up, the rounds after a probe, ProbeRTT): not counted.
    Other,
}

/// The test's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Not enough evidence yet.
    Undecided,
    /// Down lost as much as cruise: the losses are the link's.
    Random,
    /// Down lost significantly less: the flows sharing the queue keep it over-subscribed.
    Oversubscribed,
}

/// Packets and loss events of one unit of the test: a settled cruise and the Down phase that
/// follows it (so a loss episode that begins while cruising is in both halves of its unit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Unit {
    id: u64,
    cruise_pkts: u64,
    cruise_losses: u64,
    down_pkts: u64,
    down_losses: u64,
}

/// The units since the last verdict, oldest first.
#[derive(Clone, Debug, Default)]
pub struct PhaseLosses {
    /// (first sequence number, tag, unit) of each run of packets sent in one phase and unit,
    /// oldest first.
    marks: VecDeque<(SeqNo, Tag, u64)>,
    units: VecDeque<Unit>,
}

impl PhaseLosses {
    /// A new packet `seq` left in phase `tag`, counted in unit `unit` (units never go back).
    pub fn handle_sent(&mut self, seq: SeqNo, tag: Tag, unit: u64) {
        // A new run at a change of phase, or of unit within a counted phase.
        if self.marks.back().is_none_or(|&(_, t, u)| t != tag || (tag != Tag::Other && u != unit)) {
            self.marks.push_back((seq, tag, unit));
            if self.marks.len() > MARKS {
                self.marks.pop_front();
            }
        }
        if tag == Tag::Other {
            return;
        }
        if self.units.back().is_none_or(|u| u.id != unit) {
            self.units.push_back(Unit { id: unit, ..Unit::default() });
        }
        let u = self.units.back_mut().expect("just pushed");
        match tag {
            Tag::Cruise => u.cruise_pkts += 1,
            _ => u.down_pkts += 1,
        }
    }

    /// A loss event whose first packet is `seq` (counted once by the caller).
    pub fn handle_loss_event(&mut self, seq: SeqNo) {
        let Some(&(_, tag, id)) = self.marks.iter().rev().find(|&&(first, _, _)| !first.is_after(seq)) else {
            return;
        };
        let Some(u) = self.units.iter_mut().rev().find(|u| u.id == id) else { return };
        match tag {
            Tag::Cruise => u.cruise_losses += 1,
            Tag::Down => u.down_losses += 1,
            Tag::Other => {}
        }
    }

    /// Forget every unit (after a decrease: what was sent before it ran at another rate).
    pub fn reset(&mut self) {
        self.units.clear();
    }

    /// Judge the complete units, those up to `complete` (each Down's losses reported). Units
    /// before the first one that lost anything are dropped first: the packets of a lossless
    /// spell would otherwise weigh, unlost, against the losses of a later one in whichever
    /// phase they fell. A verdict other than [`Verdict::Undecided`] forgets the units judged.
    pub fn verdict(&mut self, complete: u64) -> Verdict {
        while self.units.front().is_some_and(|u| u.id <= complete && u.cruise_losses + u.down_losses == 0) {
            self.units.pop_front();
        }
        let judged = self.units.iter().filter(|u| u.id <= complete);
        let (cruise_pkts, cruise_losses, down_pkts, down_losses) = judged.fold((0, 0, 0, 0), |a, u| {
            (a.0 + u.cruise_pkts, a.1 + u.cruise_losses, a.2 + u.down_pkts, a.3 + u.down_losses)
        });
        if down_pkts == 0 || cruise_pkts == 0 {
            return Verdict::Undecided;
        }
        let n = cruise_losses + down_losses;
        let q = down_pkts as f64 / (cruise_pkts + down_pkts) as f64;
        let expected = n as f64 * q;
        if expected < MIN_EXPECTED {
            return Verdict::Undecided;
        }
        let verdict = if binomial_cdf(down_losses, n, q) < SIGNIFICANCE {
            Verdict::Oversubscribed
        } else if expected >= ENOUGH_EXPECTED {
            Verdict::Random
        } else {
            Verdict::Undecided
        };
        if verdict != Verdict::Undecided {
            self.units.retain(|u| u.id > complete);
        }
        verdict
    }
}

/// P(X <= k) for X binomial with `n` trials of probability `q` (0 < q < 1), summed term by term
/// from P(X = 0), each term from the previous one; exact enough for the few thousand trials a
/// test sees.
pub fn binomial_cdf(k: u64, n: u64, q: f64) -> f64 {
    if k >= n {
        return 1.0;
    }
    let ratio = q / (1.0 - q);
    // log P(X = 0), then each P(X = i + 1) = P(X = i) (n - i) / (i + 1) q / (1 - q).
    let mut log_term = n as f64 * (1.0 - q).ln();
    let mut sum = 0.0;
    for i in 0..=k {
        sum += log_term.exp();
        log_term += ((n - i) as f64 / (i + 1) as f64 * ratio).ln();
    }
    sum.min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Send `pkts` packets in phase `tag` of `unit` from `seq`, losing `losses` of them, spread.
    fn phase(p: &mut PhaseLosses, seq: &mut SeqNo, tag: Tag, unit: u64, pkts: u64, losses: u64) {
        let every = pkts.checked_div(losses).map_or(u64::MAX, |e| e.max(1));
        for i in 0..pkts {
            p.handle_sent(*seq, tag, unit);
            if i % every == 0 && i / every < losses {
                p.handle_loss_event(*seq);
            }
            *seq = seq.next();
        }
    }

    /// `units` units of (cruise packets, losses, Down packets, losses), judged after the last.
    fn run(units: &[(u64, u64, u64, u64)]) -> Verdict {
        let mut p = PhaseLosses::default();
        let mut seq = SeqNo::new(0);
        for (id, &(cp, cl, dp, dl)) in units.iter().enumerate() {
            phase(&mut p, &mut seq, Tag::Cruise, id as u64, cp, cl);
            phase(&mut p, &mut seq, Tag::Other, id as u64, 300, 30);
            phase(&mut p, &mut seq, Tag::Down, id as u64, dp, dl);
        }
        p.verdict(units.len() as u64 - 1)
    }

    #[test]
    fn binomial_cdf_matches_closed_forms() {
        assert!((binomial_cdf(0, 10, 0.5) - 0.5f64.powi(10)).abs() < 1e-12);
        assert!((binomial_cdf(1, 3, 0.5) - 0.5).abs() < 1e-12);
        assert_eq!(binomial_cdf(5, 5, 0.3), 1.0);
        // Large n stays finite and sums to about 1 at the top.
        assert!((binomial_cdf(9_999, 10_000, 0.01) - 1.0).abs() < 1e-9);
    }

    #[test]
    fn equal_loss_fractions_are_random_loss() {
        // 1% in both phases: 40 Down losses expected, 40 seen.
        assert_eq!(run(&[(5_000, 50, 1_000, 10); 4]), Verdict::Random);
    }

    #[test]
    fn a_down_phase_that_stops_losing_means_over_subscription() {
        // 0.5% while cruising, none in Down (the two-flow dead zone of docs/results.md).
        assert_eq!(run(&[(5_000, 25, 1_000, 0); 2]), Verdict::Oversubscribed);
    }

    #[test]
    fn too_few_events_decide_nothing() {
        assert_eq!(run(&[(2_000, 10, 400, 0)]), Verdict::Undecided);
    }

    #[test]
    fn a_lossless_spell_before_random_loss_does_not_count() {
        // Two lossless units, then random loss at 2% in both phases.
        let units =
            [(5_000, 0, 1_000, 0), (5_000, 0, 1_000, 0), (5_000, 100, 1_000, 20), (5_000, 100, 1_000, 20)];
        assert_eq!(run(&units), Verdict::Random);
    }

    #[test]
    fn an_incomplete_unit_is_not_judged() {
        let mut p = PhaseLosses::default();
        let mut seq = SeqNo::new(0);
        phase(&mut p, &mut seq, Tag::Cruise, 1, 5_000, 50);
        phase(&mut p, &mut seq, Tag::Down, 1, 1_000, 0);
        // Unit 1's Down losses are not all reported yet while only unit 0 is complete.
        assert_eq!(p.verdict(0), Verdict::Undecided);
        assert_eq!(p.verdict(1), Verdict::Oversubscribed);
    }

    #[test]
    fn losses_outside_the_two_phases_do_not_count() {
        let mut p = PhaseLosses::default();
        let mut seq = SeqNo::new(0);
        phase(&mut p, &mut seq, Tag::Other, 0, 10, 10);
        assert!(p.units.is_empty());
        phase(&mut p, &mut seq, Tag::Cruise, 0, 10, 0);
        phase(&mut p, &mut seq, Tag::Down, 0, 10, 1);
        let u = p.units[0];
        assert_eq!((u.cruise_pkts, u.cruise_losses, u.down_pkts, u.down_losses), (10, 0, 10, 1));
    }
}
