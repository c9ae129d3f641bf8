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
}

impl Default for NativeConfig {
    fn default() -> Self {
        NativeConfig {
            noisy_link: false,
            freeze_on_congestion: false,
            rate_correction: false,
            initial_window: 16.0,
        }
    }
}

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

    /// Thesis (2-3), UDT4 `CUDTCC::onLoss`: one multiplicative decrease, period rounded up to a
    /// whole microsecond.
    fn decrease(&mut self) {
        let before = self.period_us;
        // thesis (2-3) P = P' * 1.125; UDT4 CUDTCC::onLoss: ceil(m_dPktSndPeriod * 1.125)
        self.period_us = (self.period_us * DECREASE_FACTOR).ceil();
        tracing::debug!(target: "udt::cc", before_us = before, period_us = self.period_us, "decrease");
    }
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
        "daimd"
    }

    /// UDT4 `CUDTCC::init`.
    fn init(&mut self, ctx: &mut CcContext<'_>) {
        let syn_us = ctx.syn_interval.as_secs_f64() * 1e6;
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
            let horizon_us = rtt_us(ctx) + self.rc_interval_us;
            self.cwnd = f64::from(ctx.recv_rate) / 1e6 * horizon_us + WINDOW_MARGIN;
        }

        // UDT4 CUDTCC::onACK: during slow start, no rate increase
        if self.slow_start {
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
        // thesis (2-1); UDT4 CUDTCC::onACK
        let inc = increase_step(spare, ctx.mss);
        // thesis (2-2) SYN / P = SYN / P' + inc; UDT4 CUDTCC::onACK:
        // m_dPktSndPeriod = (m_dPktSndPeriod * m_iRCInterval) / (m_dPktSndPeriod * inc + m_iRCInterval)
        self.period_us =
            (self.period_us * self.rc_interval_us) / (self.period_us * inc + self.rc_interval_us);
    }

    /// UDT4 `CUDTCC::onLoss` with the thesis' freeze (§2.2.5), rate correction (§2.3.2.4) and
    /// noisy-link option (§3.5.2). An empty report changes nothing.
    fn on_loss(&mut self, ctx: &mut CcContext<'_>, lost: &[(SeqNo, SeqNo)]) {
        let Some(&(first_lost, _)) = lost.first() else {
            return;
        };
        // UDT4 CUDTCC::onLoss: slow start stops at the first loss
        let was_slow_start = self.slow_start;
        if self.slow_start {
            // UDT4 CUDTCC::onLoss: with a known arrival rate, set the period from it and return
            // (no epoch starts, no decrease, no freeze).
            if self.leave_slow_start(ctx) {
                return;
            }
        }

        // UDT4 CUDTCC::onLoss: m_bLoss = true
        self.loss = true;

        // UDT4 CUDTCC::onLoss: if (CSeqNo::seqcmp(losslist[0] & 0x7FFFFFFF, m_iLastDecSeq) > 0)
        // (thesis §3.5.1 compares the largest lost number; see the module docs)
        if first_lost.is_after(self.last_dec_seq) {
            // A congestion event: a new epoch.
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
                self.decrease();
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
                    self.decrease();
                    // thesis figure 3-6 step 2.b; UDT4: m_iLastDecSeq = m_iSndCurrSeqNo
                    self.last_dec_seq = ctx.snd_curr_seq;
                }
            }
        }
    }

    /// UDT4 `CUDTCC::onTimeout`: only ends slow start (the decrease there is commented out).
    fn on_timeout(&mut self, ctx: &mut CcContext<'_>) {
        tracing::debug!(
            target: "udt::cc",
            rtt_us = ctx.rtt.as_micros() as u64,
            var_us = ctx.rtt_var.as_micros() as u64,
            flight = ctx.flight,
            slow_start = self.slow_start,
            "timeout"
        );
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

    /// The losses slow start's overshoot left behind, reported after the exit (packets sent
    /// before it), start a new epoch and decrease again, as in UDT4 (the exit set no
    /// `m_iLastDecSeq`).
    #[test]
    fn losses_after_the_slow_start_exit_start_new_epochs() {
        let mut env = Env::new(1);
        let mut cc = NativeCc::new(NativeConfig::default());
        env.init(&mut cc);
        env.recv_rate = 8000;
        env.snd_curr = SeqNo::new(500);
        env.at_ms(100).nak(&mut cc, 300, 310);
        assert!(!cc.in_slow_start());
        assert_close(cc.period_us, 125.0);
        // More of the overshoot, reported later (packets sent before the exit): a new epoch.
        env.snd_curr = SeqNo::new(600);
        env.at_ms(110).nak(&mut cc, 400, 450);
        assert_close(cc.period_us, 141.0); // ceil(125 * 1.125)
                                           // A loss past that decrease's point: another epoch.
        env.at_ms(300).nak(&mut cc, 550, 550);
        assert_close(cc.period_us, 159.0); // ceil(141 * 1.125)
    }

    /// Out of slow start the window is UDT4's `AS * (RTT + SYN) + 16`, and the controller keeps
    /// UDT4's ACK handling: no head probe of lost retransmissions, no progress ACKs, repeated
    /// ACKs ignored.
    #[test]
    fn window_and_ack_handling_are_udt4s() {
        let mut env = Env::new(1);
        let mut cc = NativeCc::new(NativeConfig::default());
        env.init(&mut cc);
        env.at_ms(80).ack(&mut cc, 101);
        env.recv_rate = 1000;
        env.at_ms(90).nak(&mut cc, 101, 101);
        assert!(!cc.in_slow_start());
        env.at_ms(200).ack(&mut cc, 150);
        // 1000/s * (100 ms + 10 ms) + 16
        assert_close(cc.congestion_window(), 126.0);
        use crate::cc::{CcFactory, NativeFactory, Policy};
        assert_eq!(NativeFactory(NativeConfig::default()).policy(), Policy::UDT4);
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
