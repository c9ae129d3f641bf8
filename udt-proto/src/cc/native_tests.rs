//! Unit tests of `native`.

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
            peer_udt4: false,
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
            log.push(((cc.period_us() * 1000.0) as u64, cc.dec_random(), cc.avg_nak_num(), cc.nak_count()));
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
