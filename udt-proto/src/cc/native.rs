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
#[path = "native_tests.rs"]
mod tests;
