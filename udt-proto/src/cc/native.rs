//! The UDT native congestion control (thesis §2.2.5, §3.2-3.5; UDT4 4.11 `CUDTCC`).
//!
//! The algorithm is UDT4 4.11's `CUDTCC` translated line by line, with SYN = the context's
//! `syn_interval` (10 ms), plus three thesis features switched by [`NativeConfig`]: the one-SYN
//! sending freeze after a congestion event (§2.2.5), rate correction with the measured sending
//! period (§2.3.2.4) and the noisy-link option (§3.5.2).
//!
//! * Slow start: period 1 us, window from `initial_window` (UDT4: 16), growing by the packets newly
//!   acknowledged at each rate-control ACK, until the window passes the maximum flow window or the
//!   first loss report or timeout; the period then comes from the receiver's arrival rate.
//! * Increase (at most once per SYN, on ACK, when no loss was reported since the last one):
//!   `SYN / P = SYN / P' + inc`, `inc` from the spare capacity (thesis (2-1), (2-2)).
//! * Decrease: a loss report starting a new congestion epoch multiplies the period by 1.125
//!   (thesis (2-3)); within an epoch every N-th report multiplies again, N random in
//!   [1, average reports per epoch] (thesis §3.5.1), at most 4 more times per epoch (UDT4).
//! * Window out of slow start: `W = AS * (RTT + SYN) + 16` (thesis §2.2.4 plus UDT4's 16).
//!
//! Invariants: all state is in microseconds as `f64` like UDT4 (`m_dPktSndPeriod`); the period is
//! always positive and finite; the only randomness is `ctx.rng`; outputs are pure reads except
//! [`CongestionControl::take_pause`], which hands out a pending freeze once.
//!
//! Deviations from UDT4 (marked `DEVIATION` in the code):
//! * Leaving slow start on loss or timeout with no arrival rate known yet, the period stays
//!   what it was (1 us: window-limited sending). UDT4 computes `W / (RTT + SYN)`, packets per
//!   microsecond used as a period (a units bug) whose effect is the same: a period near zero,
//!   rounded up to 1 us by the first decrease. The "corrected" `(RTT + SYN) / W` would be worse
//!   than either: with W = 16 and the unmeasured start RTT of 100 ms it is 6.9 ms per packet.
//! * The newly acknowledged count in slow start is the exact `ack - last_ack`, with `last_ack`
//!   kept in the "next expected" convention of [`CongestionControl::on_ack`]; UDT4's inclusive
//!   `seqlen(m_iLastAck, ack)` counts one packet too many per ACK (two on the first).
//! * A congestion warning multiplies the period by 1.125 without UDT4's rounding up (UDT4 rounds
//!   the interval in CPU ticks, far finer than microseconds).
//!
//! Delay-checked loss response ([`NativeConfig::delay_check`], `udt:delay=true`; ours, not in the
//! thesis or UDT4; the default of the `udt` runtime): the thesis' noisy-link idea (§3.5.2) made
//! to work at any loss rate and path length.
//! * Out of slow start, a loss report changes nothing unless [`LossCheck`] finds it a congestion
//!   signal: the lost packet was sent after the last decrease or that decrease has had 1.5
//!   RTTs to act, and either the packet after the loss saw a queue above half the longest one
//!   seen (and 0.5 ms) that is not draining, or more than 5% of the last window was lost. Link
//!   errors are retransmitted and otherwise ignored: no
//!   decrease, no epoch, and the next SYN still increases.
//! * Slow start also ends when its window holds the path: the receiver's arrival rate `AS` times
//!   (base RTT + SYN). During slow start `AS` already shows the bottleneck's capacity (the
//!   window goes out in bursts that the bottleneck spaces at its own rate), so that is the
//!   bandwidth-delay product plus an ACK interval; every further doubling would only fill the
//!   queue until it overflows (on the emulated 100 Mb/s, 100 ms path with a one-BDP queue,
//!   about 1,600 packets lost and resent after the exit on loss). The exit is the loss exit's:
//!   the period from `AS`, and losses of packets sent so far are the overshoot.
//! * Slow start that ends on a loss report with a known arrival rate also ends the epoch there:
//!   the losses of packets sent before the exit (its overshoot, reported for another RTT or two)
//!   are answered by the exit's period and are not congestion.
//! * A congestion decrease starts from no faster than the receiver's arrival rate (a
//!   window-limited sender, period 1 us after slow start on a long path, would otherwise need
//!   dozens of 1.125 steps to reach a sane period).
//! * The window holds the repair of a lost retransmission, `W = AS * (2 (RTT + SYN) + base) + 16`:
//!   a packet stays in the cumulative flight until the hole before it is repaired, two RTTs
//!   after it left, or another RTT and SYN later when the retransmission was lost too and the
//!   sender's head probe ([`CongestionControl::probe_lost_retransmissions`], on in this mode)
//!   resends it.
//! * A timeout before the first RTT sample (the 100 ms start value meeting a longer path) does
//!   not end slow start.
//! * A standing queue over 20 ms or a quarter of the base RTT holds the increase, and caps a
//!   flow that sends faster than its packets arrive (docs/deviations.md B19).
//! * A flow alone on the link (its packets arrive at the packet-pair capacity, or it sends 95%
//!   of it with nothing queued in front of its packets) is held at the capacity: a full-queue
//!   loss caps it to 99% of the capacity when it sends more and otherwise changes nothing, a
//!   queue past the loss check's threshold holds its increase, and an increase takes it
//!   straight to 99% while nothing is queued in front of its packets (docs/deviations.md
//!   B20). A flow that shares the link keeps the thesis' response.
//! * The increase and the decrease keep the pace of the overflows, not of the flow's own RTT
//!   (docs/deviations.md B21): a hole left by a loss at a queue holds the increase for at most
//!   50 ms after its report (not until it is repaired, a second on a 1 s path); a minority
//!   flow's held loss whose packet left more than 150 ms after the one whose loss began the
//!   current event is a new event; and after any decrease no loss is congestion for one SYN.
//!
//! Choices where UDT4 and the thesis differ or are silent:
//! * The new-epoch test compares the *first* lost sequence number of the report with the largest
//!   number sent at the last decrease, as UDT4 does; the thesis (§2.2.5, §3.5.1) uses the *largest*
//!   lost number of the report. With the first, a report that mixes old and new losses stays in the
//!   current epoch.
//! * Freeze: only a decrease that starts an epoch asks for it; decreases within an epoch do not.
//! * Rate correction applies before each increase and each decrease, only when the event arrives
//!   outside slow start (the ACK or report that ends slow start uses the period it just set).
//! * Noisy link: the thesis ignores "the first packet loss" and reacts to "more than one packet
//!   loss" in an event; a first report carrying two or more lost packets therefore decreases (and
//!   freezes) as without the option; a single lost packet only does the epoch bookkeeping.

use std::time::Duration;

use super::loss_check::{LossCheck, Reason};
use super::{CcContext, CongestionControl};
use crate::seq::SeqNo;
use crate::time::Instant;

/// UDT4 `CUDTCC::onACK`: the smallest increase, packets per SYN (UDT4 raised it from `1/MSS` to
/// 0.01 on 1/24/2012; the thesis' (2-1) uses `1/1500 x 1500/MSS`).
const MIN_INC: f64 = 0.01;
/// UDT4 `CUDTCC::onACK`: the constant added to the arrival-rate window.
const WINDOW_MARGIN: f64 = 16.0;
/// Thesis (2-3): the multiplicative decrease of the rate is 1/9, i.e. period x 9/8.
const DECREASE_FACTOR: f64 = 1.125;
/// UDT4 `CUDTCC::onLoss`: within an epoch only the reports while the decrease counter is below
/// this value may decrease the rate.
const MAX_DEC_COUNT: u32 = 5;
/// SYN used before `init` tells the real one (protocol notes §3).
const DEFAULT_SYN_US: f64 = 10_000.0;

/// Options of the native algorithm.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NativeConfig {
    /// Ignore the first loss of each congestion event (thesis §3.5.2). Default off.
    pub noisy_link: bool,
    /// Stop sending for one SYN after a congestion event (thesis §2.2.5). Default off, as in
    /// UDT4 4.11, which removed it: under random loss it idles the sender for a SYN per epoch
    /// (measured in docs/deviations.md).
    pub freeze_on_congestion: bool,
    /// Correct the current period with the measured sending period before updating it
    /// (thesis §2.3.2.4). Default off, as in UDT4 4.11, which does not have it: in the simulator
    /// it froze low-rate flows (the measured period never falls below the real one at 1-2
    /// packets per SYN) and took window stalls for a slow sender, and turning it off raised
    /// Jain fairness of 5-10 flows at 100 ms from 0.29-0.69 to >= 0.9968 (udt-sim README).
    pub rate_correction: bool,
    /// Initial congestion window in packets (UDT4: 16; thesis: 2). Default 16.
    pub initial_window: f64,
    /// Delay-checked loss response: out of slow start, a loss report counts only when
    /// [`LossCheck`] finds it a congestion signal (a queue near its longest, not draining after
    /// the last decrease, or heavy loss); other losses are retransmitted and otherwise ignored.
    /// Default off.
    pub delay_check: bool,
}

impl Default for NativeConfig {
    fn default() -> Self {
        NativeConfig {
            noisy_link: false,
            freeze_on_congestion: false,
            rate_correction: false,
            initial_window: 16.0,
            delay_check: false,
        }
    }
}

/// Delay-checked mode: a standing queue above this (or a quarter of the base RTT) caps the rate.
const STANDING_QUEUE_LIMIT: Duration = Duration::from_millis(20);
/// The capped rate, as a fraction of the receiver's arrival rate: the queue drains slowly.
const DRAIN_FRACTION: f64 = 0.97;
/// A flow sends faster than its packets arrive by more than this fraction: it feeds the queue
/// (the arrival rate is a median of recent gaps, a few percent noisy).
const OVERDRIVE_MARGIN: f64 = 0.02;
/// A flow alone on the link is held at this fraction of the link's capacity (the packet-pair
/// estimate, steady within a few tenths of a percent when alone): a queue it built drains at
/// 1% of the capacity, and an increase goes no further.
const ALONE_FRACTION_OF_CAPACITY: f64 = 0.99;
/// A flow whose packets arrive at this fraction of the link's capacity or more has the link to
/// itself.
const ALONE_FRACTION: f64 = 0.98;
/// A flow that sends this fraction of the link's capacity or more, its packets not queued, has
/// the link to itself.
const DOMINANT_FRACTION: f64 = 0.95;
/// A flow sending less than this fraction of the link's capacity is not what grows a standing
/// queue: it is never capped there, and not even held while the queue is shorter than its base
/// RTT (docs/deviations.md B19).
const MAJOR_SHARE: f64 = 0.5;

/// Delay-checked mode: a held loss of a minority flow whose packet left this long after the one
/// whose loss began the current congestion event was dropped by a later overflow, and is one
/// (docs/deviations.md B21). The hold of a 100 ms flow: shorter paths never meet it.
const LATER_OVERFLOW_GAP: Duration = Duration::from_millis(150);

/// Delay-checked mode: a hole left by a loss at a queue holds the increase (on repeated ACKs)
/// for at most this long after its report (docs/deviations.md B21).
const QUEUED_HOLE_HOLD: Duration = Duration::from_millis(50);
/// Packets arriving within this fraction of the period's rate are not being queued.
const UNQUEUED_MARGIN: f64 = 0.01;
/// The sender's rate over its period's: every 16th packet leaves with the next at once (the
/// packet pair, `connection/sender.rs`), so 16 packets take 15 periods.
const PAIR_FACTOR: f64 = 16.0 / 15.0;

/// State of the native algorithm (the members of UDT4 `CUDTCC`, in the same units).
#[derive(Debug)]
pub struct NativeCc {
    config: NativeConfig,
    /// `m_iRCInterval`: SYN in microseconds.
    rc_interval_us: f64,
    /// `m_LastRCTime`: the last ACK that ran the rate control.
    last_rc_time: Instant,
    /// `m_bSlowStart`.
    slow_start: bool,
    /// `m_iLastAck`, in the "next expected" convention (see the module docs).
    last_ack: SeqNo,
    /// `m_bLoss`: a loss was reported since the last rate-control ACK.
    loss: bool,
    /// `m_iLastDecSeq`: the largest sequence number sent at the last decrease.
    last_dec_seq: SeqNo,
    /// `m_dLastDecPeriod`: the period just before the last new-epoch decrease, microseconds.
    last_dec_period_us: f64,
    /// `m_iNAKCount`: loss reports counted in the current epoch.
    nak_count: u32,
    /// `m_iDecRandom`: decrease every this many reports within an epoch (N of thesis §3.5.1).
    dec_random: u32,
    /// `m_iAvgNAKNum`: smoothed reports per epoch (M of thesis §3.5.1).
    avg_nak_num: u32,
    /// `m_iDecCount`: reports seen in this epoch, counted while below [`MAX_DEC_COUNT`].
    dec_count: u32,
    /// `m_dPktSndPeriod`, microseconds.
    period_us: f64,
    /// `m_dCWndSize`, packets.
    cwnd: f64,
    /// A one-SYN freeze waiting for [`CongestionControl::take_pause`].
    pause_pending: bool,
    /// The congestion test of the delay-checked loss response.
    check: LossCheck,
    /// The queue the loss report being handled measured (delay-checked mode).
    last_loss_queue: Option<std::time::Duration>,
    /// The ACK point of the last `on_ack`: an ACK that repeats it is the receiver's progress
    /// report while a hole holds the ACK point (delay-checked mode).
    last_ack_seen: Option<SeqNo>,
    /// The newest packet of any fresh loss report that came with a queue (every verdict but a
    /// short queue): while the ACK point has not passed it, a repeated ACK is ignored as in UDT4
    /// for [`QUEUED_HOLE_HOLD`] (delay-checked mode).
    queued_loss_through: Option<SeqNo>,
    /// When that report came ([`QUEUED_HOLE_HOLD`]).
    queued_loss_at: Option<Instant>,
}

impl NativeCc {
    /// A controller with `config`, in the state `init` puts it in (UDT4 `CUDTCC::CUDTCC` and
    /// `init`), with time zero and sequence zero until `init` supplies the real ones.
    pub fn new(config: NativeConfig) -> Self {
        NativeCc {
            config,
            rc_interval_us: DEFAULT_SYN_US,
            last_rc_time: Instant::ZERO,
            slow_start: true,
            last_ack: SeqNo::new(0),
            loss: false,
            last_dec_seq: SeqNo::new(0).prev(),
            last_dec_period_us: 1.0,
            nak_count: 0,
            dec_random: 1,
            avg_nak_num: 0,
            dec_count: 0,
            period_us: 1.0,
            cwnd: config.initial_window,
            pause_pending: false,
            check: LossCheck::new(),
            last_loss_queue: None,
            last_ack_seen: None,
            queued_loss_through: None,
            queued_loss_at: None,
        }
    }

    /// The configuration.
    pub fn config(&self) -> NativeConfig {
        self.config
    }

    /// Still in slow start (no loss, timeout or full window yet).
    pub fn in_slow_start(&self) -> bool {
        self.slow_start
    }

    /// The packet-sending period in (fractional) microseconds, as the algorithm keeps it.
    pub fn period_us(&self) -> f64 {
        self.period_us
    }

    /// The period recorded at the start of the current congestion epoch, microseconds.
    pub fn last_dec_period_us(&self) -> f64 {
        self.last_dec_period_us
    }

    /// The largest sequence number sent when the rate was last decreased.
    pub fn last_dec_seq(&self) -> SeqNo {
        self.last_dec_seq
    }

    /// Smoothed number of loss reports per congestion epoch (M of thesis §3.5.1).
    pub fn avg_nak_num(&self) -> u32 {
        self.avg_nak_num
    }

    /// Loss reports counted in the current epoch.
    pub fn nak_count(&self) -> u32 {
        self.nak_count
    }

    /// The random N: within an epoch, every N-th loss report decreases the rate.
    pub fn dec_random(&self) -> u32 {
        self.dec_random
    }

    /// UDT4's per-epoch report counter that caps the decreases (`m_iDecCount`).
    pub fn dec_count(&self) -> u32 {
        self.dec_count
    }

    /// A loss was reported since the last rate-control ACK (the next one will not increase).
    pub fn loss_since_last_increase(&self) -> bool {
        self.loss
    }

    /// Thesis §2.3.2.4: before an update, raise the period to the measured one when the sender
    /// could not keep up with the current period, so the update starts from the real rate.
    fn correct_period(&mut self, ctx: &CcContext<'_>) {
        if !self.config.rate_correction {
            return;
        }
        if let Some(measured) = ctx.measured_send_period {
            let measured_us = measured.as_secs_f64() * 1e6;
            if measured_us > self.period_us {
                self.period_us = measured_us;
            }
        }
    }

    /// Leaving slow start without a full window (loss report or timeout), UDT4
    /// `CUDTCC::onLoss` / `onTimeout`. Returns whether the arrival rate was known.
    fn leave_slow_start(&mut self, ctx: &CcContext<'_>) -> bool {
        self.slow_start = false;
        tracing::debug!(target: "udt::cc", recv_rate = ctx.recv_rate, "slow start ends");
        if ctx.recv_rate > 0 {
            // UDT4 CUDTCC::onLoss: m_dPktSndPeriod = 1000000.0 / m_iRcvRate
            self.period_us = 1e6 / f64::from(ctx.recv_rate);
            true
        } else {
            // DEVIATION: UDT4 CUDTCC::onLoss/onTimeout compute m_dCWndSize / (m_iRTT +
            // m_iRCInterval), packets per microsecond used as a period: effectively ~0, i.e.
            // window-limited sending until ACKs bring a rate. We keep the current period, which
            // has that effect without the units bug (module docs).
            false
        }
    }

    /// A decrease on a congestion signal. In delay-checked mode it starts from no faster than
    /// the receiver's arrival rate (a window-limited sender may run a period far below what the
    /// path delivers, and 1.125 steps from there would take dozens of decreases) and tells the
    /// loss check.
    fn decrease_checked(&mut self, ctx: &CcContext<'_>) {
        if self.config.delay_check {
            if ctx.recv_rate > 0 {
                self.period_us = self.period_us.max(1e6 / f64::from(ctx.recv_rate));
            }
            self.decrease();
            self.check.on_decrease(ctx.now, ctx.rtt, self.last_loss_queue, ctx.snd_curr_seq);
        } else {
            self.decrease();
        }
    }

    /// Delay-checked mode: a standing queue (smoothed RTT less the base) longer than
    /// [`STANDING_QUEUE_LIMIT`] or a quarter of the base RTT holds the increase, and if this flow
    /// sends faster than the receiver sees it arrive (by more than [`OVERDRIVE_MARGIN`]), it
    /// feeds that queue: the period is capped to send [`DRAIN_FRACTION`] of the arrival rate.
    /// Without it a lone flow runs on until the buffer overflows (a BDP buffer at 300 ms takes
    /// seconds, then hundreds of packets are lost and two decreases cut the rate to 78%), and a
    /// CUBIC flow sharing a BDP buffer at 100 ms kept 7%. A flow that does not overdrive only
    /// holds: the queue is someone else's, and cutting into it would hand the link to a
    /// loss-based flow (capping on every ACK regardless, CUBIC kept 83% over 30 s). Nor is a
    /// flow under [`MAJOR_SHARE`] of the capacity capped: behind a queue that others grow, its
    /// packets arrive more slowly than it sends them whatever it does, and each cap to 97% of
    /// that arrival rate was followed by another (the reconstructed parking lot, `udt sim
    /// fig4-10 --cc udt+delay`: the flow crossing four links, whose RTT adds up the queues the
    /// big flows hold on each, fell to 0.6 of its 5 Mb/s). Such a flow is not held either while
    /// the queue is shorter than its base RTT: over several links it sees the sum of what each
    /// link's big flow keeps within its own limit, and held there it never increased (2.3 of
    /// 5 Mb/s). A longer queue still holds it: the smoothed RTT's 100 ms start value against a
    /// short path reads as one, and Fig. 4-6's start-up depends on those holds. Returns whether
    /// the increase is held.
    fn cap_at_a_standing_queue(&mut self, ctx: &CcContext<'_>) -> bool {
        let Some(base) = self.check.base_rtt() else {
            return false;
        };
        // The smoothed RTT comes from ACK/ACK2 pairs, which holes in the data do not delay
        // (an ACK's own sample, of the packet before the first hole, does: at 1% loss a cap on
        // it cut Fig. 4-16 at 100 ms to 30%).
        let queue = ctx.rtt.saturating_sub(base);
        if ctx.recv_rate == 0 {
            return false;
        }
        if queue <= STANDING_QUEUE_LIMIT.max(base / 4) {
            // A shallow buffer nears its limit: a loss has shown how long the queue gets and it
            // is past half that (the loss check's threshold). A flow alone on the link holds
            // there, capped if it overdrives. (A BDP buffer at 10 ms never reaches the deep
            // limit: it overflowed every five seconds, each decrease costing 11% of the rate.)
            let shallow =
                self.check.max_queue() > Duration::ZERO && self.check.threshold().is_some_and(|t| queue > t);
            let Some(capacity) = self.alone_on_the_link(ctx).filter(|_| shallow) else {
                return false;
            };
            self.cap_to_the_capacity(capacity, queue.as_micros() as u64);
            return true;
        }
        let arrival = f64::from(ctx.recv_rate);
        let minor = self.minority(ctx);
        if minor && queue < base {
            return false;
        }
        if !minor && self.sending_rate() > arrival * (1.0 + OVERDRIVE_MARGIN) {
            let capped = period_sending(arrival * DRAIN_FRACTION);
            if capped > self.period_us {
                tracing::debug!(target: "udt::cc", queue_us = queue.as_micros() as u64, period_us = capped, "standing queue cap");
                self.period_us = capped;
            }
        }
        true
    }

    /// This flow sends under [`MAJOR_SHARE`] of the link's capacity (the packet-pair estimate):
    /// whatever queue or overflow there is, most of it is other flows' doing.
    fn minority(&self, ctx: &CcContext<'_>) -> bool {
        self.sending_rate() < MAJOR_SHARE * f64::from(ctx.bandwidth)
    }

    /// Packets/s the current period sends, the packet pair included ([`PAIR_FACTOR`]).
    fn sending_rate(&self) -> f64 {
        1e6 / self.period_us * PAIR_FACTOR
    }

    /// The link's capacity (the receiver's packet-pair estimate, packets/s) when this flow has
    /// it to itself: either its packets arrive at the capacity ([`ALONE_FRACTION`]: a
    /// saturated link that carries almost nothing else), or it sends at 95% of it or more
    /// ([`DOMINANT_FRACTION`]) and its packets arrive as fast as its period sends them (the
    /// receiver's median gap filters out the pair: the period's rate, 15/16 of the sending
    /// rate), so no queue is growing in front of them.
    ///
    /// The capacity is never taken below the arrival rate: packets cannot arrive faster than
    /// the link carries them, so an estimate under it is wrong. (Early in a run, on a real path,
    /// the packet-pair estimate read 5,600 of 8,333 packets/s while 7,985 arrived, and a lone
    /// flow capped to 99% of it lost five seconds climbing back: the emulated 100 ms / 1% path
    /// gave 70.6-78.8 Mb/s in two of three runs, docs/deviations.md B20.)
    fn alone_on_the_link(&self, ctx: &CcContext<'_>) -> Option<f64> {
        if ctx.recv_rate == 0 || ctx.bandwidth == 0 {
            return None;
        }
        let arrival = f64::from(ctx.recv_rate);
        let capacity = f64::from(ctx.bandwidth).max(arrival);
        let period_rate = 1e6 / self.period_us;
        let saturated_alone = arrival >= ALONE_FRACTION * capacity;
        let unqueued_dominant = self.sending_rate() >= DOMINANT_FRACTION * capacity
            && arrival >= period_rate * (1.0 - UNQUEUED_MARGIN);
        (saturated_alone || unqueued_dominant).then_some(capacity)
    }

    /// [`NativeCc::alone_on_the_link`] with nothing queued in front of this flow's packets: the
    /// arrival rate within [`UNQUEUED_MARGIN`] of the period's either way. (Saturated, the
    /// arrival rate is the sending rate, 16/15 of the period's, which the one-sided test there
    /// lets through; jumping such a flow to 99% of the capacity starved the parking lot's small
    /// flows, docs/deviations.md B20.)
    fn alone_and_unqueued(&self, ctx: &CcContext<'_>) -> Option<f64> {
        let period_rate = 1e6 / self.period_us;
        let arrival = f64::from(ctx.recv_rate);
        self.alone_on_the_link(ctx).filter(|_| (arrival - period_rate).abs() <= period_rate * UNQUEUED_MARGIN)
    }

    /// A flow alone on the link that sends more than [`ALONE_FRACTION_OF_CAPACITY`] of its
    /// capacity is capped to it: its queue drains, and no decrease of 11% follows. A flow under
    /// it is left as it is. (Capping only past 100.5% of the capacity, a lone flow on a 1 ms
    /// path settled at 100.35% with its queue full and lost 0.35% of its packets for good:
    /// every loss was at the full queue and no increase or RTT sample came while holes stayed
    /// open.)
    fn cap_to_the_capacity(&mut self, capacity: f64, queue_us: u64) {
        let held = capacity * ALONE_FRACTION_OF_CAPACITY;
        if self.sending_rate() > held {
            let capped = period_sending(held);
            tracing::debug!(target: "udt::cc", queue_us, period_us = capped, "capacity cap");
            self.period_us = capped;
        }
    }

    /// The last loss report that came with a queue is [`QUEUED_HOLE_HOLD`] old.
    fn queued_hole_is_old(&self, now: Instant) -> bool {
        self.queued_loss_at.is_some_and(|t| now.saturating_since(t) >= QUEUED_HOLE_HOLD)
    }

    /// The ACK point has not passed the newest packet of a loss report that came with a queue.
    fn queued_hole_holds_the_ack_point(&self) -> bool {
        match (self.last_ack_seen, self.queued_loss_through) {
            (Some(ack), Some(through)) => !ack.is_after(through),
            _ => false,
        }
    }

    /// Slow start's window holds the path's bandwidth-delay product and one SYN of ACK delay:
    /// the receiver's arrival rate times (base RTT + SYN), once both are known.
    fn window_fills_the_path(&self, ctx: &CcContext<'_>) -> bool {
        let Some(base) = self.check.base_rtt() else { return false };
        if ctx.recv_rate == 0 {
            return false;
        }
        let horizon_us = duration_us(base) + self.rc_interval_us;
        self.cwnd >= f64::from(ctx.recv_rate) / 1e6 * horizon_us
    }

    /// Thesis (2-3), UDT4 `CUDTCC::onLoss`: one multiplicative decrease, period rounded up to a
    /// whole microsecond.
    fn decrease(&mut self) {
        let before = self.period_us;
        // thesis (2-3) P = P' * 1.125; UDT4 CUDTCC::onLoss: ceil(m_dPktSndPeriod * 1.125)
        self.period_us = (self.period_us * DECREASE_FACTOR).ceil();
        tracing::debug!(target: "udt::cc", before_us = before, period_us = self.period_us, "decrease");
    }
}

/// The period, in microseconds, at which this controller sends `rate` packets/s (the packet
/// pair included: [`PAIR_FACTOR`]).
fn period_sending(rate: f64) -> f64 {
    1e6 / rate * PAIR_FACTOR
}

/// A verdict's queue in whole microseconds, for the debug events (0 when it measured none).
fn queue_us(queue: Option<Duration>) -> u64 {
    queue.map_or(0, |q| q.as_micros() as u64)
}

/// `m_iRTT`: the smoothed RTT in whole microseconds, as UDT4 keeps it.
fn rtt_us(ctx: &CcContext<'_>) -> f64 {
    crate::time::duration_micros(ctx.rtt) as f64
}

/// A uniform draw in (0, 1] from the injected RNG (UDT4 uses `rand() / RAND_MAX`, in [0, 1]).
fn uniform_0_1(ctx: &mut CcContext<'_>) -> f64 {
    // 53 random bits, shifted by one so that 0 is excluded and 1 included.
    ((ctx.rng.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
}

/// Thesis (2-1) with UDT4's constants (`CUDTCC::onACK`): the increase in packets per SYN for a
/// spare capacity of `spare_pkts` packets/s of `mss`-byte packets.
///
/// `10^ceil(log10(B * MSS * 8)) * 1.5e-6 / MSS`, at least 0.01; equal to the thesis'
/// `10^(ceil(log10 B) - 9) * 1500 / MSS` with B in bits/s, except for the larger floor.
pub fn increase_step(spare_pkts: i64, mss: u32) -> f64 {
    if spare_pkts <= 0 {
        // UDT4 CUDTCC::onACK: if (B <= 0) inc = min_inc
        return MIN_INC;
    }
    let mss = f64::from(mss.max(1));
    // UDT4 CUDTCC::onACK: inc = pow(10.0, ceil(log10(B * m_iMSS * 8.0))) * 0.0000015 / m_iMSS
    let inc = 10f64.powf((spare_pkts as f64 * mss * 8.0).log10().ceil()) * 0.000_001_5 / mss;
    // UDT4 CUDTCC::onACK: if (inc < min_inc) inc = min_inc
    inc.max(MIN_INC)
}

impl CongestionControl for NativeCc {
    fn name(&self) -> &'static str {
        if self.config.delay_check {
            "udt"
        } else {
            "daimd"
        }
    }

    /// UDT4 `CUDTCC::init`.
    fn init(&mut self, ctx: &mut CcContext<'_>) {
        let syn_us = ctx.syn_interval.as_secs_f64() * 1e6;
        if self.config.delay_check {
            self.check.init(ctx.now, ctx.max_window);
        }
        // UDT4 CUDTCC::init: m_iRCInterval = m_iSYNInterval
        self.rc_interval_us = if syn_us > 0.0 { syn_us } else { DEFAULT_SYN_US };
        // UDT4 CUDTCC::init: m_LastRCTime = CTimer::getTime()
        self.last_rc_time = ctx.now;
        // UDT4 CUDTCC::init: m_bSlowStart = true
        self.slow_start = true;
        // UDT4 CUDTCC::init: m_iLastAck = m_iSndCurrSeqNo. DEVIATION: kept as the next expected
        // number (one past the largest sent) so that `ack - last_ack` counts exactly the newly
        // acknowledged packets (module docs).
        self.last_ack = ctx.snd_curr_seq.next();
        // UDT4 CUDTCC::init: m_bLoss = false
        self.loss = false;
        // UDT4 CUDTCC::init: m_iLastDecSeq = CSeqNo::decseq(m_iLastAck)
        self.last_dec_seq = ctx.snd_curr_seq.prev();
        // UDT4 CUDTCC::init: m_dLastDecPeriod = 1
        self.last_dec_period_us = 1.0;
        // UDT4 CUDTCC::init: m_iAvgNAKNum = 0; m_iNAKCount = 0; m_iDecRandom = 1
        self.avg_nak_num = 0;
        self.nak_count = 0;
        self.dec_random = 1;
        self.dec_count = 0;
        // UDT4 CUDTCC::init: m_dCWndSize = 16 (thesis §2.2.5: 2); configurable
        self.cwnd = self.config.initial_window;
        // UDT4 CUDTCC::init: m_dPktSndPeriod = 1
        self.period_us = 1.0;
        self.pause_pending = false;
    }

    /// UDT4 `CUDTCC::onACK`: slow-start growth, window update and the increase of thesis
    /// (2-1)/(2-2), at most once per SYN.
    fn on_ack(&mut self, ctx: &mut CcContext<'_>, ack: SeqNo) {
        self.check.on_ack(ctx.now, ack, ctx.rtt);
        // Delay-checked mode learns from repeated ACKs (`learn_from_repeated_acks`), except
        // for [`QUEUED_HOLE_HOLD`] after a loss report that came with a queue: that hole holds
        // the increase as in UDT4 (which never sees a repeated ACK) while the overflow behind
        // it passes. Held until the hole was repaired, a 1 s flow sharing a 10 ms buffer
        // (Fig. 4-6) got a loss every few hundred ms and a hole open a second each, and all but
        // never increased (docs/deviations.md B21).
        let repeated = self.last_ack_seen == Some(ack);
        self.last_ack_seen = Some(ack);
        if repeated && self.queued_hole_holds_the_ack_point() && !self.queued_hole_is_old(ctx.now) {
            return;
        }
        // UDT4 CUDTCC::onACK: if (currtime - m_LastRCTime < m_iRCInterval) return;
        let since_us = duration_us(ctx.now - self.last_rc_time);
        if since_us < self.rc_interval_us {
            return;
        }
        // UDT4 CUDTCC::onACK: m_LastRCTime = currtime
        self.last_rc_time = ctx.now;
        let was_slow_start = self.slow_start;

        if self.slow_start {
            // UDT4 CUDTCC::onACK: m_dCWndSize += CSeqNo::seqlen(m_iLastAck, ack) (DEVIATION:
            // exact count, module docs); thesis §2.2.5 doubles the window per ACK instead.
            let newly_acked = ack.diff(self.last_ack).max(0);
            self.cwnd += f64::from(newly_acked);
            // UDT4 CUDTCC::onACK: m_iLastAck = ack
            if newly_acked > 0 {
                self.last_ack = ack;
            }
            // Delay-checked mode: the window fills the path; further doublings would only fill
            // the queue (module docs). Left as on a loss report.
            if self.config.delay_check && self.window_fills_the_path(ctx) {
                tracing::debug!(target: "udt::cc", cwnd = self.cwnd, "slow start fills the path");
                self.leave_slow_start(ctx);
                self.check.on_slow_start_exit(ctx.snd_curr_seq);
                self.last_dec_seq = ctx.snd_curr_seq;
                return;
            }
            // UDT4 CUDTCC::onACK: if (m_dCWndSize > m_dMaxCWndSize)
            if self.cwnd > f64::from(ctx.max_window) {
                self.slow_start = false;
                if ctx.recv_rate > 0 {
                    // UDT4 CUDTCC::onACK: m_dPktSndPeriod = 1000000.0 / m_iRcvRate
                    self.period_us = 1e6 / f64::from(ctx.recv_rate);
                } else {
                    // UDT4 CUDTCC::onACK: m_dPktSndPeriod = (m_iRTT + m_iRCInterval) / m_dCWndSize
                    self.period_us = (rtt_us(ctx) + self.rc_interval_us) / self.cwnd;
                }
            }
        } else {
            // thesis §2.2.4 W = AS * (SYN + RTT); UDT4 CUDTCC::onACK:
            // m_dCWndSize = m_iRcvRate / 1000000.0 * (m_iRTT + m_iRCInterval) + 16
            let horizon_us = match self.check.base_rtt().filter(|_| self.config.delay_check) {
                // Delay-checked mode: link errors are expected, and a packet stays in the
                // cumulative flight until the hole before it is repaired: NAK back,
                // retransmission out, ACK back (one base RTT more than a clean packet), and when
                // the retransmission is lost too, the sender's head probe one RTT and a SYN
                // later. At 1% loss on a 100 ms path that happens about once a second; with a
                // window one RTT shorter every time was a stall (sim 100 Mb/s, 300 ms, 1%: 56%
                // utilization against 96% with this window).
                Some(base) => 2.0 * (rtt_us(ctx) + self.rc_interval_us) + duration_us(base),
                None => rtt_us(ctx) + self.rc_interval_us,
            };
            self.cwnd = f64::from(ctx.recv_rate) / 1e6 * horizon_us + WINDOW_MARGIN;
        }

        // UDT4 CUDTCC::onACK: during slow start, no rate increase
        if self.slow_start {
            return;
        }
        if self.config.delay_check && self.cap_at_a_standing_queue(ctx) {
            return;
        }
        // UDT4 CUDTCC::onACK: if (m_bLoss) { m_bLoss = false; return; }
        // (thesis §2.2.5: increase only in a SYN without NAK)
        if self.loss {
            self.loss = false;
            return;
        }

        // thesis §2.3.2.4: correct P' with the real sending period first. Not on the ACK that
        // just left slow start: its period was just set from the receiver's arrival rate.
        if !was_slow_start {
            self.correct_period(ctx);
        }

        let bandwidth = i64::from(ctx.bandwidth);
        // UDT4 CUDTCC::onACK: B = (int64_t)(m_iBandwidth - 1000000.0 / m_dPktSndPeriod)
        // (thesis (3-8): L - C(x), the spare capacity, here in packets/s)
        let mut spare = (bandwidth as f64 - 1e6 / self.period_us) as i64;
        // UDT4 CUDTCC::onACK: if ((m_dPktSndPeriod > m_dLastDecPeriod) && ((m_iBandwidth / 9) < B))
        //    B = m_iBandwidth / 9
        if self.period_us > self.last_dec_period_us && bandwidth / 9 < spare {
            spare = bandwidth / 9;
        }
        // Delay-checked mode: a flow alone on the link, its packets not queued, goes straight to
        // 99% of its capacity.
        let alone_at = self.config.delay_check.then(|| self.alone_and_unqueued(ctx)).flatten();
        // thesis (2-1); UDT4 CUDTCC::onACK
        let inc = increase_step(spare, ctx.mss);
        // thesis (2-2) SYN / P = SYN / P' + inc; UDT4 CUDTCC::onACK:
        // m_dPktSndPeriod = (m_dPktSndPeriod * m_iRCInterval) / (m_dPktSndPeriod * inc + m_iRCInterval)
        self.period_us =
            (self.period_us * self.rc_interval_us) / (self.period_us * inc + self.rc_interval_us);
        if let Some(capacity) = alone_at {
            self.period_us = self.period_us.min(period_sending(capacity * ALONE_FRACTION_OF_CAPACITY));
        }
    }

    /// UDT4 `CUDTCC::onLoss` with the thesis' freeze (§2.2.5), rate correction (§2.3.2.4) and
    /// noisy-link option (§3.5.2). An empty report changes nothing.
    fn on_loss(&mut self, ctx: &mut CcContext<'_>, lost: &[(SeqNo, SeqNo)]) {
        let Some(&(first_lost, _)) = lost.first() else {
            return;
        };
        let newest_lost =
            lost.iter().map(|&(_, b)| b).fold(first_lost, |x, y| if y.is_after(x) { y } else { x });
        let mut later_overflow = false;
        let verdict = if self.config.delay_check {
            let v = self.check.classify(ctx.now, ctx.rtt, lost);
            tracing::debug!(
                target: "udt::cc",
                reason = ?v.reason,
                queue_us = v.queue.map(|q| q.as_micros() as u64),
                rtt_us = ctx.rtt.as_micros() as u64,
                first = first_lost.value(),
                slow_start = self.slow_start,
                "loss report"
            );
            // A re-report adds no hole; a short queue's is a link error's.
            if !matches!(v.reason, Reason::ShortQueue | Reason::Repeated)
                && self.queued_loss_through.is_none_or(|t| newest_lost.is_after(t))
            {
                self.queued_loss_through = Some(newest_lost);
                self.queued_loss_at = Some(ctx.now);
            }
            if v.reason == Reason::FullQueue && !self.slow_start {
                if let Some(capacity) = self.alone_on_the_link(ctx) {
                    // Alone on the link, no other flow to make room for: the queue is this
                    // flow's, and sending under the capacity drains it.
                    self.cap_to_the_capacity(capacity, queue_us(v.queue));
                    return;
                }
            }
            // A minority flow's hold can outlast several overflows (a 1 s flow's, 1.5 s, against
            // one every few hundred ms on Fig. 4-6's 10 ms buffer): a packet it sent well after
            // the one whose loss began the event was dropped by a later overflow, which the
            // short flows each answer (docs/deviations.md B21).
            later_overflow = v.reason == Reason::Held
                && !self.slow_start
                && self.minority(ctx)
                && self.check.sent_after_event(newest_lost, LATER_OVERFLOW_GAP);
            if later_overflow {
                tracing::debug!(target: "udt::cc", "later overflow");
            }
            if !v.congestion && !self.slow_start && !later_overflow {
                // A link error, not congestion. Retransmission repairs it; the rate, the window
                // and the epoch bookkeeping stay as they are.
                return;
            }
            Some(v)
        } else {
            None
        };
        self.last_loss_queue = verdict.and_then(|v| v.queue);

        // UDT4 CUDTCC::onLoss: slow start stops at the first loss
        let was_slow_start = self.slow_start;
        if self.slow_start {
            // UDT4 CUDTCC::onLoss: with a known arrival rate, set the period from it and return
            // (no epoch starts, no decrease, no freeze).
            if self.leave_slow_start(ctx) {
                if self.config.delay_check {
                    // The period now matches what the path delivered; the rest of slow start's
                    // overshoot is still being reported for an RTT or two. Those losses are
                    // news of the queue slow start built, not of the new rate.
                    self.check.on_slow_start_exit(ctx.snd_curr_seq);
                    self.last_dec_seq = ctx.snd_curr_seq;
                }
                return;
            }
        }

        // UDT4 CUDTCC::onLoss: m_bLoss = true
        self.loss = true;

        // UDT4 CUDTCC::onLoss: if (CSeqNo::seqcmp(losslist[0] & 0x7FFFFFFF, m_iLastDecSeq) > 0)
        // (thesis §3.5.1 compares the largest lost number; see the module docs)
        if first_lost.is_after(self.last_dec_seq) || later_overflow {
            // A congestion event: a new epoch.
            if self.config.delay_check {
                self.check.on_congestion_event(newest_lost);
            }
            // Thesis §3.5.2 noisy link: skip step 1.a, the decrease on the first loss of the
            // event. Choice: the thesis' rule is "decrease if more than one packet is lost in the
            // event"; a first report that already carries two or more lost packets satisfies it,
            // so it decreases (and freezes) as without the option. Only a single lost packet,
            // the signature of a link error, is ignored.
            let lost_packets: u64 = lost.iter().map(|&(a, b)| u64::from(a.len_to(b))).sum();
            let react = !self.config.noisy_link || lost_packets > 1;

            // thesis §2.3.2.4 before the decrease (not when the report ended slow start: the
            // period was just set), so that m_dLastDecPeriod and the cap in onACK refer to the real
            // rate. UDT4 CUDTCC::onLoss: m_dLastDecPeriod = m_dPktSndPeriod
            if react && !was_slow_start {
                self.correct_period(ctx);
            }
            self.last_dec_period_us = self.period_us;
            if react {
                // thesis (2-3), figure 3-6 step 1.a; UDT4 CUDTCC::onLoss:
                // m_dPktSndPeriod = ceil(m_dPktSndPeriod * 1.125)
                self.decrease_checked(ctx);
                // thesis §2.2.5: stop sending for the next SYN
                if self.config.freeze_on_congestion {
                    self.pause_pending = true;
                }
            }
            // thesis figure 3-6 step 1.b AvgNAK = (AvgNAK * 7 + NumNAK) / 8; UDT4 CUDTCC::onLoss:
            // m_iAvgNAKNum = (int)ceil(m_iAvgNAKNum * 0.875 + m_iNAKCount * 0.125)
            self.avg_nak_num =
                (f64::from(self.avg_nak_num) * 0.875 + f64::from(self.nak_count) * 0.125).ceil() as u32;
            // thesis figure 3-6 step 1.d (UDT4 counts this report: m_iNAKCount = 1; m_iDecCount = 1)
            self.nak_count = 1;
            self.dec_count = 1;
            // thesis figure 3-6 step 1.e; UDT4 CUDTCC::onLoss: m_iLastDecSeq = m_iSndCurrSeqNo
            self.last_dec_seq = ctx.snd_curr_seq;
            // thesis figure 3-6 step 1.c DR = rand(AvgNAK); UDT4 CUDTCC::onLoss:
            // m_iDecRandom = (int)ceil(m_iAvgNAKNum * (double(rand()) / RAND_MAX)), at least 1
            let draw = (f64::from(self.avg_nak_num) * uniform_0_1(ctx)).ceil() as u32;
            self.dec_random = draw.max(1);
        } else {
            // UDT4 CUDTCC::onLoss: else if ((m_iDecCount ++ < 5) && (0 == (++ m_iNAKCount % m_iDecRandom)))
            // Note the short circuit: once the counter reaches 5, reports are no longer counted
            // in m_iNAKCount, so the average number of reports per epoch stays at most 5.
            let below_cap = self.dec_count < MAX_DEC_COUNT;
            self.dec_count += 1;
            if below_cap {
                self.nak_count += 1;
                // thesis figure 3-6 step 2: NumNAK % DR == 0
                if self.nak_count % self.dec_random.max(1) == 0 {
                    // thesis figure 3-6 step 2.a; UDT4 CUDTCC::onLoss:
                    // m_dPktSndPeriod = ceil(m_dPktSndPeriod * 1.125), after thesis §2.3.2.4
                    self.correct_period(ctx);
                    self.decrease_checked(ctx);
                    // thesis figure 3-6 step 2.b; UDT4: m_iLastDecSeq = m_iSndCurrSeqNo
                    self.last_dec_seq = ctx.snd_curr_seq;
                }
            }
        }
    }

    fn on_packet_sent(&mut self, ctx: &mut CcContext<'_>, seq: SeqNo, retransmission: bool) {
        self.check.on_sent(ctx.now, seq, retransmission);
    }

    /// UDT4 `CUDTCC::onTimeout`: only ends slow start (the decrease there is commented out).
    fn on_timeout(&mut self, ctx: &mut CcContext<'_>) {
        tracing::debug!(
            target: "udt::cc",
            rtt_us = ctx.rtt.as_micros() as u64,
            var_us = ctx.rtt_var.as_micros() as u64,
            base_us = self.check.base_rtt().map_or(0, |b| b.as_micros() as u64),
            flight = ctx.flight,
            slow_start = self.slow_start,
            "timeout"
        );
        // Delay-checked mode: a timeout before the first RTT sample is the start value of the
        // RTT (100 ms) meeting a longer path, not a loss; slow start goes on (the connection
        // still resends).
        if self.config.delay_check && self.check.base_rtt().is_none() {
            return;
        }
        if self.slow_start {
            // UDT4 CUDTCC::onTimeout (DEVIATION for the unknown-rate fallback, see
            // leave_slow_start)
            self.leave_slow_start(ctx);
        }
    }

    /// UDT4 `CUDT::processCtrl`, control type 4: period x 1.125.
    fn on_congestion_warning(&mut self, _ctx: &mut CcContext<'_>) {
        // UDT4 CUDT::processCtrl case 4: m_ullInterval = ceil(m_ullInterval * 1.125), on the
        // interval in CPU ticks; we multiply the microsecond period without rounding (ticks are
        // far finer than microseconds).
        self.period_us *= DECREASE_FACTOR;
    }

    fn send_period(&self) -> Duration {
        // f64 -> u64 casts saturate (and map NaN to 0); the period is always finite and positive.
        Duration::from_nanos((self.period_us * 1000.0).round() as u64)
    }

    fn congestion_window(&self) -> f64 {
        self.cwnd
    }

    /// Delay-checked mode: link errors are expected, and with them lost retransmissions.
    fn probe_lost_retransmissions(&self) -> bool {
        self.config.delay_check
    }

    /// Delay-checked mode: link errors keep holes open, and the increase must not wait for
    /// them to close (the trait's docs). A hole left by a loss at a queue still holds them for
    /// 50 ms after its report (docs/deviations.md B21). UDT4's algorithm ignores repeated ACKs.
    fn learn_from_repeated_acks(&self, now: Instant) -> bool {
        self.config.delay_check && (!self.queued_hole_holds_the_ack_point() || self.queued_hole_is_old(now))
    }

    fn send_progress_acks(&self) -> bool {
        self.config.delay_check
    }

    fn take_pause(&mut self) -> Option<Duration> {
        if std::mem::take(&mut self.pause_pending) {
            Some(Duration::from_nanos((self.rc_interval_us * 1000.0).round() as u64))
        } else {
            None
        }
    }
}

/// A duration in (fractional) microseconds.
fn duration_us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connection::Stats;
    use rand_xoshiro::rand_core::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    const MS: u64 = 1_000;

    /// The connection facts a test scripts, and the owned parts of a `CcContext`.
    struct Env {
        now: Instant,
        mss: u32,
        rtt: Duration,
        recv_rate: u32,
        bandwidth: u32,
        snd_curr: SeqNo,
        max_window: u32,
        measured: Option<Duration>,
        stats: Stats,
        rng: Xoshiro256PlusPlus,
    }

    impl Env {
        fn new(seed: u64) -> Self {
            Env {
                now: Instant::ZERO,
                mss: 1500,
                rtt: Duration::from_millis(100),
                recv_rate: 0,
                bandwidth: 0,
                snd_curr: SeqNo::new(99),
                max_window: 25_600,
                measured: None,
                stats: Stats::new(Instant::ZERO),
                rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            }
        }

        fn ctx(&mut self) -> CcContext<'_> {
            CcContext {
                now: self.now,
                mss: self.mss,
                payload_size: self.mss - 44,
                syn_interval: Duration::from_millis(10),
                rtt: self.rtt,
                rtt_var: self.rtt / 2,
                recv_rate: self.recv_rate,
                bandwidth: self.bandwidth,
                snd_curr_seq: self.snd_curr,
                last_ack: SeqNo::new(100),
                max_window: self.max_window,
                flight: 0,
                measured_send_period: self.measured,
                stats: &self.stats,
                ack: None,
                rng: &mut self.rng,
            }
        }

        fn at_ms(&mut self, ms: u64) -> &mut Self {
            self.now = Instant::from_micros(ms * MS);
            self
        }

        fn init(&mut self, cc: &mut NativeCc) {
            cc.init(&mut self.ctx());
        }

        fn ack(&mut self, cc: &mut NativeCc, ack: u32) {
            cc.on_ack(&mut self.ctx(), SeqNo::new(ack));
        }

        fn nak(&mut self, cc: &mut NativeCc, from: u32, to: u32) {
            cc.on_loss(&mut self.ctx(), &[(SeqNo::new(from), SeqNo::new(to))]);
        }

        fn timeout(&mut self, cc: &mut NativeCc) {
            cc.on_timeout(&mut self.ctx());
        }
    }

    fn assert_close(actual: f64, expected: f64) {
        assert!((actual - expected).abs() < 1e-9, "{actual} != {expected}");
    }

    /// A controller out of slow start through a timeout with `recv_rate`, so period = 1e6 /
    /// recv_rate; the clock is at 0 and the next ACK may run from 10 ms.
    fn congestion_avoidance(env: &mut Env, config: NativeConfig, recv_rate: u32) -> NativeCc {
        let mut cc = NativeCc::new(config);
        env.init(&mut cc);
        env.recv_rate = recv_rate;
        env.timeout(&mut cc);
        assert!(!cc.in_slow_start());
        cc
    }

    #[test]
    fn initial_state_is_udt4s() {
        let mut env = Env::new(1);
        let mut cc = NativeCc::new(NativeConfig::default());
        env.init(&mut cc);
        assert!(cc.in_slow_start());
        assert_eq!(cc.send_period(), Duration::from_micros(1));
        assert_close(cc.congestion_window(), 16.0);
        assert_eq!(cc.take_pause(), None);
        // decseq(m_iLastAck): one before the largest number sent.
        assert_eq!(cc.last_dec_seq(), SeqNo::new(98));
        assert_eq!(cc.name(), "daimd");

        let mut cc = NativeCc::new(NativeConfig { initial_window: 2.0, ..NativeConfig::default() });
        env.init(&mut cc);
        assert_close(cc.congestion_window(), 2.0);
    }

    #[test]
    fn slow_start_grows_by_newly_acknowledged_packets() {
        let mut env = Env::new(1);
        let mut cc = NativeCc::new(NativeConfig::default());
        env.init(&mut cc); // largest sent 99: next expected 100
        env.at_ms(10).ack(&mut cc, 110); // 100..=109 acknowledged
        assert_close(cc.congestion_window(), 26.0);
        env.at_ms(20).ack(&mut cc, 150); // 110..=149
        assert_close(cc.congestion_window(), 66.0);
        env.at_ms(30).ack(&mut cc, 150); // nothing new
        assert_close(cc.congestion_window(), 66.0);
        assert!(cc.in_slow_start());
        assert_eq!(cc.send_period(), Duration::from_micros(1));
    }

    #[test]
    fn ack_rate_limiter_runs_once_per_syn() {
        let mut env = Env::new(1);
        let mut cc = NativeCc::new(NativeConfig::default());
        env.init(&mut cc); // m_LastRCTime = 0
        env.at_ms(5).ack(&mut cc, 110); // 5 ms after init: ignored
        assert_close(cc.congestion_window(), 16.0);
        env.at_ms(10).ack(&mut cc, 120); // exactly one SYN later: runs, counts 100..=119
        assert_close(cc.congestion_window(), 36.0);
        env.now = Instant::from_micros(19_999);
        env.ack(&mut cc, 130); // 9.999 ms after the last run: ignored, m_iLastAck unchanged
        assert_close(cc.congestion_window(), 36.0);
        env.at_ms(20).ack(&mut cc, 140); // counts 120..=139, including the ignored ACK's
        assert_close(cc.congestion_window(), 56.0);
    }

    #[test]
    fn leaves_slow_start_past_max_window_with_period_from_arrival_rate() {
        let mut env = Env::new(1);
        env.max_window = 100;
        env.recv_rate = 50_000;
        env.bandwidth = 0;
        let mut cc = NativeCc::new(NativeConfig::default());
        env.init(&mut cc);
        env.at_ms(10).ack(&mut cc, 184); // window 16 + 84 = 100: not above the maximum
        assert!(cc.in_slow_start());
        env.at_ms(20).ack(&mut cc, 185); // 101 > 100
        assert!(!cc.in_slow_start());
        // Slow start only sets the window; it stays at 101 on this ACK.
        assert_close(cc.congestion_window(), 101.0);
        // Period 1e6 / 50000 = 20 us, then the same ACK already increases (UDT4 falls through):
        // B = 0 - 50000 < 0, inc = 0.01, P = 20 * 10000 / (20 * 0.01 + 10000) = 200000 / 10000.2
        //   = 19.99960000799984 us -> 19999.6 ns -> 20000 ns.
        assert_close(cc.period_us(), 200_000.0 / 10_000.2);
        assert_eq!(cc.send_period(), Duration::from_nanos(20_000));
        // The next ACK sets the window from the arrival rate: 50000/1e6 * (100000 + 10000) + 16.
        env.at_ms(30).ack(&mut cc, 185);
        assert_close(cc.congestion_window(), 5_516.0);
    }

    #[test]
    fn leaves_slow_start_past_max_window_without_arrival_rate() {
        let mut env = Env::new(1);
        env.max_window = 100;
        let mut cc = NativeCc::new(NativeConfig::default());
        env.init(&mut cc);
        env.at_ms(10).ack(&mut cc, 200); // 16 + 100 = 116 > 100
        assert!(!cc.in_slow_start());
        // P = (RTT + SYN) / W = 110000 / 116 = 948.2758... us, then one increase with inc 0.01:
        // P = 948.2758 * 10000 / (948.2758 * 0.01 + 10000) = 947.37749 us.
        let p0 = 110_000.0 / 116.0;
        assert_close(cc.period_us(), p0 * 10_000.0 / (p0 * 0.01 + 10_000.0));
        assert_eq!(cc.send_period(), Duration::from_nanos(947_377));
    }

    #[test]
    fn increase_step_follows_table_2_1() {
        // Thesis table 2-1 (MSS 1500) against UDT4's 10^ceil(log10(B*MSS*8)) * 1.5e-6 / MSS with
        // B in packets/s, so B * 12000 is bit/s:
        // B = 5 pkt/s = 60 kb/s (<= 0.1 Mb/s): 10^5 * 1.5e-6 / 1500 = 1e-4; thesis 0.00067, UDT4
        // floors both at 0.01.
        assert_close(increase_step(5, 1500), 0.01);
        // B = 50 pkt/s = 0.6 Mb/s: 10^6 * 1.5e-6 / 1500 = 0.001 (thesis 0.001) -> floor 0.01.
        assert_close(increase_step(50, 1500), 0.01);
        // B = 500 pkt/s = 6 Mb/s: 10^7 * 1.5e-6 / 1500 = 0.01 (thesis 0.01).
        assert_close(increase_step(500, 1500), 0.01);
        // B = 5000 pkt/s = 60 Mb/s: 10^8 * 1.5e-6 / 1500 = 0.1 (thesis 0.1).
        assert_close(increase_step(5_000, 1500), 0.1);
        // B = 50000 pkt/s = 600 Mb/s: 10^9 * 1.5e-6 / 1500 = 1 (thesis 1).
        assert_close(increase_step(50_000, 1500), 1.0);
        // B = 500000 pkt/s = 6 Gb/s: 10^10 * 1.5e-6 / 1500 = 10 (the table's "...").
        assert_close(increase_step(500_000, 1500), 10.0);
        // No spare capacity: the floor.
        assert_close(increase_step(0, 1500), 0.01);
        assert_close(increase_step(-7, 1500), 0.01);
        // Decade boundary, MSS 1000: B = 12500 pkt/s = exactly 1e8 b/s stays in its decade:
        // 10^8 * 1.5e-6 / 1000 = 0.15 (= 0.1 x 1500/1000); one more packet/s: 10^9 -> 1.5.
        assert_close(increase_step(12_500, 1000), 0.15);
        assert_close(increase_step(12_501, 1000), 1.5);
        // MSS 9000: B = 5000 pkt/s = 360 Mb/s: 10^9 * 1.5e-6 / 9000 = 1/6 (= 1 x 1500/9000).
        assert_close(increase_step(5_000, 9000), 1.0 / 6.0);
    }

    #[test]
    fn increase_on_ack_per_formula_and_window_from_arrival_rate() {
        let mut env = Env::new(1);
        let mut cc = congestion_avoidance(&mut env, NativeConfig::default(), 80_000);
        // Timeout with arrival rate 80000 pkt/s: P = 12.5 us.
        assert_close(cc.period_us(), 12.5);
        env.bandwidth = 85_000;
        env.at_ms(10).ack(&mut cc, 200);
        // W = 80000/1e6 * (100000 + 10000) + 16 = 8816.
        assert_close(cc.congestion_window(), 8_816.0);
        // B = (int)(85000 - 1e6/12.5) = 5000 pkt/s; 12.5 > m_dLastDecPeriod = 1 but 85000/9 =
        // 9444 > 5000, so no cap. 5000 * 12000 = 6e7 b/s -> inc = 0.1.
        // P = 12.5 * 10000 / (12.5 * 0.1 + 10000) = 125000 / 10001.25 = 12.498437695... us.
        assert_close(cc.period_us(), 125_000.0 / 10_001.25);
        assert_eq!(cc.send_period(), Duration::from_nanos(12_498));
        // A second ACK within the same SYN does nothing.
        env.at_ms(15).ack(&mut cc, 300);
        assert_close(cc.period_us(), 125_000.0 / 10_001.25);
    }

    #[test]
    fn spare_capacity_capped_at_a_ninth_above_the_last_decrease_period() {
        let mut env = Env::new(1);
        // P = 1e6 / 1000 = 1000 us (1000 pkt/s), capacity 100000 pkt/s.
        let mut cc = congestion_avoidance(&mut env, NativeConfig::default(), 1_000);
        env.bandwidth = 100_000;
        env.at_ms(10).ack(&mut cc, 200);
        // B = 100000 - 1000 = 99000; P = 1000 > m_dLastDecPeriod = 1 and 100000/9 = 11111 < B:
        // B = 11111 pkt/s = 133.3 Mb/s -> inc = 10^9 * 1.5e-6 / 1500 = 1 (uncapped 1188 Mb/s
        // would give 10). P = 1000 * 10000 / (1000 * 1 + 10000) = 909.0909... us.
        assert_close(cc.period_us(), 10_000_000.0 / 11_000.0);
    }

    #[test]
    fn new_epoch_decreases_by_an_eighth_rounded_up_and_freezes_once() {
        let mut env = Env::new(1);
        let thesis = NativeConfig { freeze_on_congestion: true, ..NativeConfig::default() };
        let mut cc = congestion_avoidance(&mut env, thesis, 80_000);
        env.snd_curr = SeqNo::new(500);
        env.at_ms(1).nak(&mut cc, 300, 300);
        // ceil(12.5 * 1.125) = ceil(14.0625) = 15.
        assert_close(cc.period_us(), 15.0);
        assert_close(cc.last_dec_period_us(), 12.5);
        assert_eq!(cc.last_dec_seq(), SeqNo::new(500));
        assert_eq!((cc.nak_count(), cc.dec_count(), cc.avg_nak_num(), cc.dec_random()), (1, 1, 0, 1));
        assert!(cc.loss_since_last_increase());
        assert_eq!(cc.take_pause(), Some(Duration::from_millis(10)));
        assert_eq!(cc.take_pause(), None);
        // The next rate-control ACK clears the loss flag instead of increasing.
        env.bandwidth = 85_000;
        env.at_ms(10).ack(&mut cc, 400);
        assert_close(cc.period_us(), 15.0);
        assert!(!cc.loss_since_last_increase());
        // The one after increases: B = 85000 - 66666 = 18333 > 85000/9 = 9444 with 15 > 12.5:
        // B = 9444 = 113 Mb/s -> inc 1; P = 15 * 10000 / (15 + 10000) = 14.977533...
        env.at_ms(20).ack(&mut cc, 450);
        assert_close(cc.period_us(), 150_000.0 / 10_015.0);
    }

    #[test]
    fn freeze_is_off_by_default_as_in_udt4() {
        let mut env = Env::new(1);
        let config = NativeConfig::default();
        let mut cc = congestion_avoidance(&mut env, config, 80_000);
        env.nak(&mut cc, 300, 300);
        assert_close(cc.period_us(), 15.0);
        assert_eq!(cc.take_pause(), None);
    }

    #[test]
    fn decreases_within_an_epoch_stop_after_five() {
        let mut env = Env::new(1);
        let mut cc = congestion_avoidance(&mut env, NativeConfig::default(), 100_000);
        // P = 10 us. First epoch: M = 0, so N = 1: the first four reports after the congestion
        // event decrease each, then m_iDecCount reaches 5 and stops it.
        env.snd_curr = SeqNo::new(1_000);
        env.nak(&mut cc, 500, 500);
        assert_eq!(cc.dec_random(), 1);
        let mut periods = vec![cc.period_us()];
        for i in 0..8 {
            env.snd_curr = SeqNo::new(1_010 + i);
            env.nak(&mut cc, 600 + i, 600 + i); // before the last decrease: same epoch
            periods.push(cc.period_us());
        }
        // 10 -> ceil(11.25) = 12 -> ceil(13.5) = 14 -> ceil(15.75) = 16 -> 18 -> ceil(20.25) = 21
        assert_eq!(periods, [12.0, 14.0, 16.0, 18.0, 21.0, 21.0, 21.0, 21.0, 21.0]);
        // m_iNAKCount stops counting with the decreases (UDT4's short circuit).
        assert_eq!(cc.nak_count(), 5);
        assert_eq!(cc.dec_count(), 9);
        assert_eq!(cc.last_dec_seq(), SeqNo::new(1_013));
        // A report past the last decrease starts a new epoch: M = ceil(0 * 0.875 + 5 * 0.125) = 1.
        env.nak(&mut cc, 1_014, 1_014);
        assert_close(cc.period_us(), (21.0f64 * 1.125).ceil());
        assert_eq!(cc.avg_nak_num(), 1);
        assert_eq!(cc.nak_count(), 1);
    }

    /// Runs `epochs` congestion epochs of `naks` reports each, logging (period, N, M, count).
    fn random_decrease_script(seed: u64, epochs: u32, naks: u32) -> Vec<(u64, u32, u32, u32)> {
        let mut env = Env::new(seed);
        let mut cc = congestion_avoidance(&mut env, NativeConfig::default(), 100_000);
        let mut log = Vec::new();
        let mut seq = 1_000;
        for _ in 0..epochs {
            // Reset the rate so the periods stay small and comparable.
            cc.period_us = 10.0;
            // The congestion event loses `seq`; later reports in the epoch repeat older numbers.
            let event = seq;
            for k in 0..naks {
                let lost = event;
                env.snd_curr = SeqNo::new(seq);
                let before = cc.period_us();
                env.nak(&mut cc, lost, lost);
                let decreased = cc.period_us() > before;
                if k > 0 {
                    // Thesis figure 3-6 step 2: decrease iff NumNAK % N == 0 (while counted).
                    let counted = cc.dec_count() <= MAX_DEC_COUNT;
                    assert_eq!(decreased, counted && cc.nak_count() % cc.dec_random() == 0);
                } else {
                    assert!(decreased);
                    assert!((1..=cc.avg_nak_num().max(1)).contains(&cc.dec_random()));
                }
                log.push((
                    (cc.period_us() * 1000.0) as u64,
                    cc.dec_random(),
                    cc.avg_nak_num(),
                    cc.nak_count(),
                ));
                seq += 1;
            }
            seq += 100;
        }
        log
    }

    #[test]
    fn random_decrease_draws_n_from_the_average_and_is_deterministic() {
        let a = random_decrease_script(7, 12, 8);
        let b = random_decrease_script(7, 12, 8);
        assert_eq!(a, b);
        // M climbs 0, 1, 2, 3, 4, 5 and stays at 5 (at most 5 counted reports per epoch).
        let firsts: Vec<u32> = a.iter().step_by(8).map(|e| e.2).collect();
        assert_eq!(firsts, [0, 1, 2, 3, 4, 5, 5, 5, 5, 5, 5, 5]);
        // Over 12 epochs the draws are not all the same once M > 1.
        let draws: Vec<u32> = a.iter().step_by(8).skip(3).map(|e| e.1).collect();
        assert!(draws.iter().any(|&n| n != draws[0]), "{draws:?}");
    }

    #[test]
    fn noisy_link_ignores_a_single_first_loss() {
        let mut env = Env::new(1);
        let config = NativeConfig { noisy_link: true, ..NativeConfig::default() };
        let mut cc = congestion_avoidance(&mut env, config, 80_000);
        env.snd_curr = SeqNo::new(500);
        env.nak(&mut cc, 300, 300);
        // No decrease, no freeze, but the epoch bookkeeping happened.
        assert_close(cc.period_us(), 12.5);
        assert_eq!(cc.take_pause(), None);
        assert_eq!(cc.last_dec_seq(), SeqNo::new(500));
        assert_close(cc.last_dec_period_us(), 12.5);
        assert_eq!((cc.nak_count(), cc.dec_count(), cc.dec_random()), (1, 1, 1));
        assert!(cc.loss_since_last_increase());
        // A second loss in the same event decreases by the random rule (N = 1 here).
        env.nak(&mut cc, 310, 310);
        assert_close(cc.period_us(), 15.0);
        assert_eq!(cc.take_pause(), None);
    }

    #[test]
    fn noisy_link_reacts_to_a_first_report_of_several_packets() {
        let mut env = Env::new(1);
        let config = NativeConfig { noisy_link: true, freeze_on_congestion: true, ..NativeConfig::default() };
        let mut cc = congestion_avoidance(&mut env, config, 80_000);
        env.snd_curr = SeqNo::new(500);
        env.nak(&mut cc, 300, 301); // two packets: more than one loss in the event
        assert_close(cc.period_us(), 15.0);
        assert_eq!(cc.take_pause(), Some(Duration::from_millis(10)));

        // Two single-packet ranges in one report count as two losses too.
        let mut cc = congestion_avoidance(&mut env, config, 80_000);
        env.snd_curr = SeqNo::new(700);
        cc.on_loss(&mut env.ctx(), &[(SeqNo::new(600), SeqNo::new(600)), (SeqNo::new(605), SeqNo::new(605))]);
        assert_close(cc.period_us(), 15.0);
        assert_eq!(cc.last_dec_seq(), SeqNo::new(700));
    }

    #[test]
    fn rate_correction_starts_updates_from_the_measured_period() {
        let mut env = Env::new(1);
        let thesis = NativeConfig { rate_correction: true, ..NativeConfig::default() };
        let mut cc = congestion_avoidance(&mut env, thesis, 80_000);
        env.bandwidth = 85_000;
        // The sender managed only one packet per 20 us while the period says 12.5 us.
        env.measured = Some(Duration::from_micros(20));
        env.at_ms(10).ack(&mut cc, 200);
        // From P' = 20: B = 85000 - 50000 = 35000 > 9444 with 20 > 1: B = 9444 -> inc 1.
        // P = 20 * 10000 / (20 + 10000) = 19.96007...
        assert_close(cc.period_us(), 200_000.0 / 10_020.0);
        // Decrease from the measured 25 us: ceil(25 * 1.125) = ceil(28.125) = 29; the epoch
        // records the corrected period.
        env.measured = Some(Duration::from_micros(25));
        env.snd_curr = SeqNo::new(500);
        env.at_ms(11).nak(&mut cc, 300, 300);
        assert_close(cc.period_us(), 29.0);
        assert_close(cc.last_dec_period_us(), 25.0);
        // A measured period below the current one changes nothing: ceil(29 * 1.125) = 33.
        env.measured = Some(Duration::from_micros(5));
        env.nak(&mut cc, 301, 301);
        assert_close(cc.period_us(), 33.0);
    }

    #[test]
    fn rate_correction_off_or_in_slow_start_does_nothing() {
        let mut env = Env::new(1);
        let config = NativeConfig { rate_correction: false, ..NativeConfig::default() };
        let mut cc = congestion_avoidance(&mut env, config, 80_000);
        env.measured = Some(Duration::from_micros(20));
        env.nak(&mut cc, 300, 300);
        assert_close(cc.period_us(), 15.0); // ceil(12.5 * 1.125), not from 20

        // In slow start the period stays 1 us, and the ACK leaving slow start uses the
        // arrival-rate period.
        let mut env = Env::new(1);
        env.max_window = 20;
        env.recv_rate = 50_000;
        env.measured = Some(Duration::from_micros(300));
        let mut cc = NativeCc::new(NativeConfig::default());
        env.init(&mut cc);
        env.at_ms(10).ack(&mut cc, 102);
        assert_eq!(cc.send_period(), Duration::from_micros(1));
        env.at_ms(20).ack(&mut cc, 110);
        assert!(!cc.in_slow_start());
        assert_close(cc.period_us(), 200_000.0 / 10_000.2); // as without correction
    }

    #[test]
    fn loss_in_slow_start() {
        // Known arrival rate: period from it, and UDT4 returns before starting an epoch.
        let mut env = Env::new(1);
        let mut cc = NativeCc::new(NativeConfig::default());
        env.init(&mut cc);
        env.recv_rate = 40_000;
        env.nak(&mut cc, 100, 100);
        assert!(!cc.in_slow_start());
        assert_close(cc.period_us(), 25.0);
        assert!(!cc.loss_since_last_increase());
        assert_eq!(cc.take_pause(), None);
        assert_eq!(cc.last_dec_seq(), SeqNo::new(98));

        // Unknown arrival rate: the period stays 1 us (DEVIATION: UDT4 computes 16 / 110000,
        // which the decrease rounds up to the same), then the new epoch: ceil(1 * 1.125) = 2.
        let mut env = Env::new(1);
        let mut cc = NativeCc::new(NativeConfig { freeze_on_congestion: true, ..NativeConfig::default() });
        env.init(&mut cc);
        env.nak(&mut cc, 100, 100);
        assert!(!cc.in_slow_start());
        assert_close(cc.last_dec_period_us(), 1.0);
        assert_close(cc.period_us(), 2.0);
        assert_eq!(cc.take_pause(), Some(Duration::from_millis(10)));
    }

    #[test]
    fn timeout_only_ends_slow_start() {
        let mut env = Env::new(1);
        let mut cc = NativeCc::new(NativeConfig::default());
        env.init(&mut cc);
        env.timeout(&mut cc);
        assert!(!cc.in_slow_start());
        assert_close(cc.period_us(), 1.0); // unknown rate: unchanged (module docs)
        env.recv_rate = 10_000;
        env.timeout(&mut cc);
        assert_close(cc.period_us(), 1.0);
        assert_eq!(cc.take_pause(), None);

        let mut cc = NativeCc::new(NativeConfig::default());
        env.init(&mut cc);
        env.timeout(&mut cc);
        assert_close(cc.period_us(), 100.0);
        assert_close(cc.congestion_window(), 16.0);
    }

    #[test]
    fn congestion_warning_multiplies_the_period() {
        let mut env = Env::new(1);
        let mut cc = congestion_avoidance(&mut env, NativeConfig::default(), 80_000);
        cc.on_congestion_warning(&mut env.ctx());
        assert_close(cc.period_us(), 14.0625);
        assert_eq!(cc.send_period(), Duration::from_nanos(14_063));
        assert_eq!(cc.take_pause(), None);
    }

    #[test]
    fn epoch_test_wraps_and_uses_the_first_lost_number() {
        let mut env = Env::new(1);
        env.snd_curr = SeqNo::new(crate::seq::SEQ_MAX - 1);
        let mut cc = congestion_avoidance(&mut env, NativeConfig::default(), 80_000);
        env.snd_curr = SeqNo::new(crate::seq::SEQ_MAX);
        env.nak(&mut cc, crate::seq::SEQ_MAX, crate::seq::SEQ_MAX);
        assert_close(cc.period_us(), 15.0);
        assert_eq!(cc.last_dec_seq(), SeqNo::new(crate::seq::SEQ_MAX));
        // 3 is after 0x7FFFFFFF across the wrap: a new epoch.
        env.snd_curr = SeqNo::new(10);
        env.nak(&mut cc, 3, 3);
        assert_close(cc.period_us(), 17.0); // ceil(16.875)
        assert_eq!(cc.nak_count(), 1);
        // A report whose first number is old stays in the epoch even if it extends past the last
        // decrease (UDT4; the thesis would compare 20): N = 1 here, so it decreases as step 2.
        env.nak(&mut cc, 5, 20);
        assert_eq!(cc.nak_count(), 2);
        assert_close(cc.period_us(), 20.0); // ceil(17 * 1.125) = ceil(19.125)
        assert_eq!(cc.avg_nak_num(), 1);
    }

    #[test]
    fn empty_loss_report_changes_nothing() {
        let mut env = Env::new(1);
        let mut cc = NativeCc::new(NativeConfig::default());
        env.init(&mut cc);
        cc.on_loss(&mut env.ctx(), &[]);
        assert!(cc.in_slow_start());
        assert!(!cc.loss_since_last_increase());
    }

    /// Delay-checked mode: the losses slow start's overshoot left behind are answered by the
    /// exit (period from the arrival rate); only a loss past the exit point is news. The plain
    /// algorithm (UDT4) decreases again on the first of them.
    #[test]
    fn slow_start_overshoot_is_answered_by_the_exit_in_delay_checked_mode() {
        for delay_check in [true, false] {
            let mut env = Env::new(1);
            let mut cc = NativeCc::new(NativeConfig { delay_check, ..NativeConfig::default() });
            env.init(&mut cc);
            env.recv_rate = 8000;
            env.snd_curr = SeqNo::new(500);
            env.at_ms(100).nak(&mut cc, 300, 310);
            assert!(!cc.in_slow_start());
            assert_close(cc.period_us, 125.0);
            // More of the overshoot, reported later (packets sent before the exit).
            env.snd_curr = SeqNo::new(600);
            env.at_ms(110).nak(&mut cc, 400, 450);
            if delay_check {
                assert_close(cc.period_us, 125.0);
            } else {
                assert_close(cc.period_us, 141.0); // ceil(125 * 1.125), a new epoch
            }
            // A loss past the exit point, with no RTT sample yet: congestion in both modes.
            env.at_ms(300).nak(&mut cc, 550, 550);
            let expected = if delay_check { 141.0 } else { 159.0 }; // ceil(141 * 1.125) = 159
            assert_close(cc.period_us, expected);
        }
    }

    /// A fresh controller (delay-checked or not) whose first packet, 100, left at time 0: the
    /// packet the loss check times.
    fn timing_packet_100_sent(delay_check: bool) -> (Env, NativeCc) {
        let mut env = Env::new(1);
        let mut cc = NativeCc::new(NativeConfig { delay_check, ..NativeConfig::default() });
        env.init(&mut cc);
        cc.on_packet_sent(&mut env.ctx(), SeqNo::new(100), false);
        (env, cc)
    }

    #[test]
    fn delay_checked_window_holds_the_repair_of_a_lost_retransmission() {
        for delay_check in [true, false] {
            let (mut env, mut cc) = timing_packet_100_sent(delay_check);
            env.at_ms(80).ack(&mut cc, 101); // base RTT 80 ms
            env.recv_rate = 1000;
            env.at_ms(90).nak(&mut cc, 101, 101);
            assert!(!cc.in_slow_start());
            env.at_ms(200).ack(&mut cc, 150);
            // W = AS * (2 (RTT + SYN) + base) + 16 = 1000/s * 300 ms + 16, against UDT4's
            // AS * (RTT + SYN) + 16 = 1000/s * 110 ms + 16
            assert_close(cc.congestion_window(), if delay_check { 316.0 } else { 126.0 });
            assert_eq!(cc.probe_lost_retransmissions(), delay_check);
        }
    }

    #[test]
    fn delay_checked_slow_start_ends_when_the_window_holds_the_path() {
        for delay_check in [true, false] {
            let (mut env, mut cc) = timing_packet_100_sent(delay_check);
            env.recv_rate = 1000;
            env.at_ms(80).ack(&mut cc, 110); // base RTT 80 ms; window 16 + 10
            assert!(cc.in_slow_start());
            // AS * (base + SYN) = 1000/s * 90 ms = 90 packets
            env.at_ms(100).ack(&mut cc, 173); // window 89
            assert!(cc.in_slow_start());
            env.snd_curr = SeqNo::new(300);
            env.at_ms(120).ack(&mut cc, 174); // window 90
            assert_eq!(cc.in_slow_start(), !delay_check);
            if delay_check {
                assert_close(cc.period_us, 1000.0);
                // a loss among the packets sent before the exit is its overshoot
                env.at_ms(150).nak(&mut cc, 250, 260);
                assert_close(cc.period_us, 1000.0);
            }
        }
    }

    /// Base RTT 80 ms from packet 100, arrival rate 1000 packets/s, and slow start ended by a
    /// loss report at 90 ms with packets up to 300 sent: period 1000 us.
    fn past_slow_start(delay_check: bool) -> (Env, NativeCc) {
        let (mut env, mut cc) = timing_packet_100_sent(delay_check);
        env.at_ms(80).ack(&mut cc, 101);
        env.recv_rate = 1000;
        env.snd_curr = SeqNo::new(300);
        env.at_ms(90).nak(&mut cc, 101, 101);
        assert!(!cc.in_slow_start());
        (env, cc)
    }

    #[test]
    fn delay_checked_learns_from_repeated_acks_unless_a_recent_queued_hole_holds_them() {
        let (mut env, mut cc) = past_slow_start(true);
        env.bandwidth = 2000;
        assert!(cc.send_progress_acks());
        // 1000 packets at a time, so one loss is far below the tolerated loss rate.
        let send = |env: &mut Env, cc: &mut NativeCc, ms: u64, from: u32| {
            for s in from..from + 1000 {
                cc.on_packet_sent(&mut env.at_ms(ms).ctx(), SeqNo::new(s), false);
            }
        };
        // A link error: packet 400 lost, 401 reports it at the base RTT (no queue).
        send(&mut env, &mut cc, 200, 400);
        env.at_ms(280).nak(&mut cc, 400, 400);
        env.at_ms(300).ack(&mut cc, 400);
        let before = cc.period_us;
        assert!(cc.learn_from_repeated_acks(env.now));
        env.at_ms(320).ack(&mut cc, 400); // the receiver's progress report
        assert!(cc.period_us < before, "the increase goes on behind a link error's hole");

        // A loss at a queue: 1501 reports 1500 20 ms above the base, a full queue.
        send(&mut env, &mut cc, 400, 1500);
        env.at_ms(500).nak(&mut cc, 1500, 1500);
        env.at_ms(520).ack(&mut cc, 1500); // clears the loss flag
        let before = cc.period_us;
        assert!(!cc.learn_from_repeated_acks(Instant::from_micros(540_000)));
        assert!(cc.learn_from_repeated_acks(Instant::from_micros(550_000)));
        env.at_ms(540).ack(&mut cc, 1500);
        assert_close(cc.period_us, before); // 40 ms after the report: held
        env.at_ms(550).ack(&mut cc, 1500);
        assert!(cc.period_us < before, "50 ms after the report the hole no longer holds");
        // Past the queued loss, progress reports count as ever.
        let before = cc.period_us;
        env.at_ms(600).ack(&mut cc, 1502);
        assert!(cc.period_us < before);

        let (_, plain) = timing_packet_100_sent(false);
        assert!(!plain.send_progress_acks() && !plain.learn_from_repeated_acks(Instant::ZERO));
    }

    /// A long flow (smoothed RTT 1 s, so a 1.5 s hold) loses packet 500 at a full queue, then
    /// packet 1500, sent 200 ms later but before the decrease, at a full queue again.
    fn long_flow_meets_a_later_overflow(bandwidth: u32) -> (f64, f64, f64) {
        let (mut env, mut cc) = past_slow_start(true);
        env.bandwidth = bandwidth;
        env.rtt = Duration::from_secs(1);
        env.snd_curr = SeqNo::new(5000);
        for (ms, from) in [(200, 400), (400, 1400)] {
            for s in from..from + 1000 {
                cc.on_packet_sent(&mut env.at_ms(ms).ctx(), SeqNo::new(s), false);
            }
        }
        // 501 reports 500 100 ms after both left: a 20 ms queue, the longest: an overflow.
        env.at_ms(300).nak(&mut cc, 500, 500);
        let first = cc.period_us;
        // 1001 left with 500: the same overflow, held.
        env.at_ms(310).nak(&mut cc, 1000, 1000);
        let same = cc.period_us;
        env.at_ms(500).nak(&mut cc, 1500, 1500);
        (first, same, cc.period_us)
    }

    #[test]
    fn delay_checked_minority_flow_answers_a_later_overflow_within_its_hold() {
        // Sending 948 of 10,000 packets/s: the later overflow is news (docs/deviations.md B21).
        let (first, same, later) = long_flow_meets_a_later_overflow(10_000);
        assert_close(first, 1125.0);
        assert_close(same, first);
        assert_close(later, (first * 1.125).ceil());
        // Sending 948 of 1500: most of the overflow is this flow's own, still arriving.
        let (first, same, later) = long_flow_meets_a_later_overflow(1500);
        assert_close(first, 1125.0);
        assert_close(later, same);
    }

    #[test]
    fn delay_checked_caps_an_overdriving_flow_at_a_standing_queue() {
        let (mut env, mut cc) = past_slow_start(true);
        // A link of 1800 packets/s: the flow sends more than half of it before and after the
        // cap (a smaller share is spared: the next test).
        env.bandwidth = 1800;
        // Sending 2133 packets/s (period 500 us, 16/15 for the pairs) into a 30 ms queue while
        // 1000 arrive: capped to 97% of the arrival rate.
        cc.period_us = 500.0;
        env.rtt = Duration::from_millis(110);
        env.at_ms(200).ack(&mut cc, 150);
        assert_close(cc.period_us, 1e6 / 970.0 * 16.0 / 15.0);
        // Sending what arrives, the queue someone else's: no cap, and no increase either.
        let before = cc.period_us;
        env.recv_rate = (1e6 / before * 16.0 / 15.0).round() as u32;
        env.at_ms(220).ack(&mut cc, 160);
        assert_close(cc.period_us, before);
        // The queue under the limit (20 ms, or a quarter of the base): the increase resumes.
        env.rtt = Duration::from_millis(95);
        env.at_ms(240).ack(&mut cc, 170);
        assert!(cc.period_us < before);
        // UDT4's algorithm has no cap.
        let (mut env, mut plain) = past_slow_start(false);
        plain.period_us = 500.0;
        env.rtt = Duration::from_millis(110);
        env.at_ms(200).ack(&mut plain, 150);
        assert!(plain.period_us <= 500.0);
    }

    #[test]
    fn delay_checked_spares_a_flow_under_half_the_capacity() {
        let (mut env, mut cc) = past_slow_start(true);
        let base = cc.check.base_rtt().expect("a base RTT");
        // Sending 2133 packets/s (period 500 us) on a 10,000 packets/s link while 1000 arrive,
        // behind a standing queue longer than the base RTT: held (no increase), not capped.
        env.bandwidth = 10_000;
        cc.period_us = 500.0;
        env.rtt = base * 2 + Duration::from_millis(30);
        env.at_ms(200).ack(&mut cc, 150);
        assert_close(cc.period_us, 500.0);
        // Behind a standing queue (over 20 ms) shorter than the base RTT: the increase runs.
        env.rtt = base + Duration::from_millis(30).min(base.mul_f64(0.9));
        assert!(env.rtt - base > Duration::from_millis(20).max(base / 4), "a standing queue");
        env.at_ms(220).ack(&mut cc, 160);
        assert!(cc.period_us < 500.0);
        // The same flow at more than half the capacity is capped to 97% of what arrives.
        env.bandwidth = 4000;
        env.at_ms(240).ack(&mut cc, 170);
        assert_close(cc.period_us, 1e6 / 970.0 * 16.0 / 15.0);
    }

    /// Sends packets `from..from + 1000` at `ms` (1000 at a time, so that one loss is far
    /// below the tolerated loss rate).
    fn send_thousand(env: &mut Env, cc: &mut NativeCc, ms: u64, from: u32) {
        for s in from..from + 1000 {
            cc.on_packet_sent(&mut env.at_ms(ms).ctx(), SeqNo::new(s), false);
        }
    }

    #[test]
    fn delay_checked_alone_on_the_link_caps_to_the_capacity_instead_of_decreasing() {
        // Alone: its packets arrive at the link's capacity, 1000 packets/s.
        let (mut env, mut cc) = past_slow_start(true);
        env.bandwidth = 1000;
        // Period 900 us sends 1185 packets/s; 1501 reports 1500 lost 20 ms above the base, a
        // full queue: capped to 99% of the capacity, not decreased by 1/8.
        cc.period_us = 900.0;
        send_thousand(&mut env, &mut cc, 400, 1500);
        env.at_ms(500).nak(&mut cc, 1500, 1500);
        assert_close(cc.period_us, 1e6 / 990.0 * 16.0 / 15.0);
        assert!(!cc.loss_since_last_increase(), "no congestion epoch");
        // Barely over the capacity (100.3%, a full queue that never drains, every packet past
        // it lost): capped all the same.
        let (mut env, mut cc) = past_slow_start(true);
        env.bandwidth = 1000;
        cc.period_us = 1e6 / 1003.0 * 16.0 / 15.0;
        send_thousand(&mut env, &mut cc, 400, 1500);
        env.at_ms(500).nak(&mut cc, 1500, 1500);
        assert_close(cc.period_us, 1e6 / 990.0 * 16.0 / 15.0);
        // Sending under the capacity (and its packets not queued), a loss at a full queue is
        // not its overflow: nothing changes.
        let (mut env, mut cc) = past_slow_start(true);
        env.bandwidth = 1000;
        cc.period_us = 1100.0;
        env.recv_rate = 909;
        send_thousand(&mut env, &mut cc, 400, 1500);
        env.at_ms(500).nak(&mut cc, 1500, 1500);
        assert_close(cc.period_us, 1100.0);
        // A packet-pair estimate below the arrival rate is wrong (packets cannot arrive faster
        // than the link carries them): capped to 99% of the arrival rate, not of the estimate.
        let (mut env, mut cc) = past_slow_start(true);
        env.bandwidth = 700;
        cc.period_us = 900.0;
        send_thousand(&mut env, &mut cc, 400, 1500);
        env.at_ms(500).nak(&mut cc, 1500, 1500);
        assert_close(cc.period_us, 1e6 / 990.0 * 16.0 / 15.0);
        // With the link shared (capacity 2000, 1000 of it ours), the same loss decreases (from
        // no faster than the arrival rate, 1000 us).
        let (mut env, mut cc) = past_slow_start(true);
        env.bandwidth = 2000;
        cc.period_us = 900.0;
        send_thousand(&mut env, &mut cc, 400, 1500);
        env.at_ms(500).nak(&mut cc, 1500, 1500);
        assert_close(cc.period_us, 1125.0);
    }

    /// The period after one ACK at 200 ms, out of slow start on a link of 1000 packets/s, from
    /// a period of 1111 us with `recv_rate` packets/s arriving.
    fn period_after_an_ack(delay_check: bool, recv_rate: u32) -> f64 {
        let (mut env, mut cc) = past_slow_start(delay_check);
        env.bandwidth = 1000;
        cc.period_us = 1111.0;
        env.recv_rate = recv_rate;
        env.at_ms(200).ack(&mut cc, 150);
        cc.period_us
    }

    #[test]
    fn delay_checked_alone_on_the_link_goes_straight_to_its_capacity() {
        // Sending 96% of the link (period 1111 us, 16/15 for the pairs), its packets arriving
        // at the period's rate, not queued: alone, so the increase goes to 99% of the capacity.
        assert_close(period_after_an_ack(true, 900), 1e6 / 990.0 * 16.0 / 15.0);
        // Its packets queued behind someone else's (arriving at 85% of the period's rate):
        // only the thesis' increase, about a microsecond.
        let queued = period_after_an_ack(true, 765);
        assert!(queued < 1111.0 && queued > 1109.0, "{queued}");
        // UDT4's algorithm has only the thesis' increase.
        let plain = period_after_an_ack(false, 900);
        assert!(plain > 1109.0, "{plain}");
    }

    #[test]
    fn delay_checked_alone_holds_past_half_a_shallow_buffer() {
        // A loss 20 ms above the base shows the buffer (max queue 20 ms, threshold 10 ms), on a
        // link of 2000 packets/s shared with others: a decrease.
        let (mut env, mut cc) = past_slow_start(true);
        env.bandwidth = 2000;
        send_thousand(&mut env, &mut cc, 400, 1500);
        env.at_ms(500).nak(&mut cc, 1500, 1500);
        // An ACK clears the loss flag.
        env.at_ms(600).ack(&mut cc, 2300);
        // Now alone (its packets arrive at the capacity), overdriving (period 900 us: 1185
        // packets/s) at a 15 ms queue, under the deep limit (20 ms) but past the threshold:
        // capped to 99% of the capacity.
        env.bandwidth = 1000;
        cc.period_us = 900.0;
        env.rtt = Duration::from_millis(95);
        env.at_ms(700).ack(&mut cc, 2400);
        assert_close(cc.period_us, 1e6 / 990.0 * 16.0 / 15.0);
        // At the capacity, the increase is held.
        let before = cc.period_us;
        env.at_ms(720).ack(&mut cc, 2410);
        assert_close(cc.period_us, before);
        // The queue under the threshold: the increase resumes.
        env.rtt = Duration::from_millis(88);
        env.at_ms(740).ack(&mut cc, 2420);
        assert!(cc.period_us < before);
        // Not alone (a second flow takes half the link), a 15 ms queue does not hold it.
        env.bandwidth = 2000;
        env.rtt = Duration::from_millis(95);
        let before = cc.period_us;
        env.at_ms(760).ack(&mut cc, 2430);
        assert!(cc.period_us < before);
    }

    #[test]
    fn send_period_rounds_to_nanoseconds() {
        let mut cc = NativeCc::new(NativeConfig::default());
        cc.period_us = 12.498_437_695;
        assert_eq!(cc.send_period(), Duration::from_nanos(12_498));
        cc.period_us = 12.4995;
        assert_eq!(cc.send_period(), Duration::from_nanos(12_500));
        // Outputs are pure reads.
        assert_eq!(cc.send_period(), cc.send_period());
    }
}
