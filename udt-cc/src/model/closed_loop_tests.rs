//! Tests of the model controller in a closed loop over a one-bottleneck path: it fills the
//! path and shrugs off random loss, keeps the queue bounded, and scaling the rate and the RTT
//! by k gives the same normalised trajectory.

use std::collections::{BTreeSet, VecDeque};
use std::time::Duration;

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::*;
use crate::tcp::script::Script;
use crate::AckReport;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// ACK or NAK on its way: (arrival, ack, rtt, rate, lost range).
type Feedback = (Instant, u32, Duration, u32, Option<(u32, u32)>);

/// A closed loop over one bottleneck: capacity `rate` packets/s, a DropTail queue of
/// `queue` packets, base RTT `rtt` split evenly, random loss `p` on data packets; the receiver
/// ACKs every 10 ms with the RTT of its newest packet and its arrival rate over 16 packets, and
/// NAKs each hole at once; the sender retransmits NAKed packets first.
struct Loop {
    sc: Script,
    cc: ModelCc,
    rate: f64,
    rtt: Duration,
    queue: f64,
    loss: f64,
    link_free: Instant,
    next_send: Instant,
    next_seq: u32,
    snd_ack: u32,
    retx: VecDeque<u32>,
    /// (arrival time, seq, rtt of the packet) of packets on their way.
    wire: VecDeque<(Instant, u32, Duration)>,
    /// Feedback on its way: (arrival, ack, rtt, rate, lost range).
    feedback: VecDeque<Feedback>,
    received: BTreeSet<u32>,
    rcv_next: u32,
    rcv_max: u32,
    gaps: VecDeque<Duration>,
    last_arrival: Instant,
    last_rtt: Duration,
    next_ack: Instant,
    rng: Xoshiro256PlusPlus,
    delivered: u64,
}

impl Loop {
    fn new(rate: f64, rtt: Duration, queue: f64, loss: f64) -> Self {
        let mut sc = Script::new();
        let mut cc = ModelCc::new(ModelConfig::default());
        cc.init(&mut sc.ctx());
        Loop {
            sc,
            cc,
            rate,
            rtt,
            queue,
            loss,
            link_free: Instant::ZERO,
            next_send: Instant::ZERO,
            next_seq: 1,
            snd_ack: 1,
            retx: VecDeque::new(),
            wire: VecDeque::new(),
            feedback: VecDeque::new(),
            received: BTreeSet::new(),
            rcv_next: 1,
            rcv_max: 0,
            gaps: VecDeque::new(),
            last_arrival: Instant::ZERO,
            last_rtt: rtt,
            next_ack: Instant::ZERO + ms(10),
            rng: Xoshiro256PlusPlus::seed_from_u64(3),
            delivered: 0,
        }
    }

    fn send(&mut self, now: Instant) {
        let (seq, retx) = match self.retx.pop_front() {
            Some(s) => (s, true),
            None => {
                self.next_seq += 1;
                (self.next_seq - 1, false)
            }
        };
        self.sc.stats.total.pkts_sent += 1;
        let half = self.rtt / 2;
        let backlog = (self.link_free.max(now) - now).as_secs_f64() * self.rate;
        let random = (self.rng.next_u64() as f64 / u64::MAX as f64) < self.loss;
        if backlog <= self.queue && !random {
            let depart = self.link_free.max(now) + Duration::from_secs_f64(1.0 / self.rate);
            self.link_free = depart;
            self.wire.push_back((depart + half, seq, depart + half + half - now));
        }
        self.cc.on_packet_sent(
            &mut loop_ctx(&mut self.sc, self.snd_ack, self.next_seq),
            SeqNo::new(seq),
            retx,
        );
    }

    fn arrive(&mut self, at: Instant, seq: u32, rtt: Duration) {
        let gap = at - self.last_arrival;
        self.last_arrival = at;
        self.gaps.push_back(gap);
        if self.gaps.len() > 16 {
            self.gaps.pop_front();
        }
        self.last_rtt = rtt;
        self.delivered += 1;
        if seq > self.rcv_max + 1 {
            let lost = (self.rcv_max + 1, seq - 1);
            self.feedback.push_back((at + self.rtt / 2, 0, Duration::ZERO, 0, Some(lost)));
        }
        self.rcv_max = self.rcv_max.max(seq);
        self.received.insert(seq);
        while self.received.remove(&self.rcv_next) {
            self.rcv_next += 1;
        }
    }

    fn ack_timer(&mut self, at: Instant) {
        let mean = self.gaps.iter().sum::<Duration>().as_secs_f64() / self.gaps.len().max(1) as f64;
        let rate = if self.gaps.len() >= 16 && mean > 0.0 { (1.0 / mean) as u32 } else { 0 };
        self.feedback.push_back((at + self.rtt / 2, self.rcv_next, self.last_rtt, rate, None));
    }

    fn feedback(&mut self, ack: u32, rtt: Duration, rate: u32, lost: Option<(u32, u32)>) {
        if let Some((a, b)) = lost {
            self.sc.stats.total.snd_loss += u64::from(b - a + 1);
            self.retx.extend(a..=b);
            let range = [(SeqNo::new(a), SeqNo::new(b))];
            self.cc.on_loss(&mut loop_ctx(&mut self.sc, self.snd_ack, self.next_seq), &range);
            return;
        }
        self.snd_ack = self.snd_ack.max(ack);
        let snd_ack = self.snd_ack;
        let mut ctx = loop_ctx(&mut self.sc, snd_ack, self.next_seq);
        ctx.ack = Some(AckReport { rtt, recv_rate: rate, capacity: 0, queue: None });
        self.cc.on_ack(&mut ctx, SeqNo::new(snd_ack));
    }

    /// Run to `until`, returning the packets delivered meanwhile.
    fn run(&mut self, until: Instant) -> u64 {
        let start = self.delivered;
        loop {
            let window = self.cc.congestion_window().floor() as u32;
            let can_send = !self.retx.is_empty() || self.next_seq - self.snd_ack < window;
            let send_at = can_send.then_some(self.next_send.max(self.sc.now));
            let wire_at = self.wire.front().map(|w| w.0);
            let fb_at = self.feedback.front().map(|f| f.0);
            let at =
                [send_at, wire_at, fb_at, Some(self.next_ack)].into_iter().flatten().min().unwrap_or(until);
            if at >= until {
                self.sc.now = until;
                return self.delivered - start;
            }
            self.sc.now = at;
            if wire_at == Some(at) {
                let (t, seq, rtt) = self.wire.pop_front().expect("front");
                self.arrive(t, seq, rtt);
            } else if fb_at == Some(at) {
                let (_, ack, rtt, rate, lost) = self.feedback.pop_front().expect("front");
                self.feedback(ack, rtt, rate, lost);
            } else if self.next_ack == at {
                self.ack_timer(at);
                self.next_ack = at + ms(10);
            } else {
                // UDT's pacing: the packet after one numbered 16n leaves at once (the pair).
                let paired = (self.next_seq - 1) % 16 == 0 && self.retx.is_empty();
                self.send(at);
                self.next_send = if paired { at } else { at + self.cc.send_period() };
            }
        }
    }
}

fn loop_ctx(sc: &mut Script, snd_ack: u32, next_seq: u32) -> CcContext<'_> {
    sc.sent = next_seq - 1;
    let mut c = sc.ctx();
    c.last_ack = SeqNo::new(snd_ack);
    c.flight = next_seq - snd_ack;
    c
}

/// Utilization of each `step` of `span` (delivered over capacity).
fn trajectory(l: &mut Loop, step: Duration, span: Duration) -> Vec<f64> {
    let n = (span.as_secs_f64() / step.as_secs_f64()) as usize;
    (1..=n).map(|i| l.run(Instant::ZERO + step * i as u32) as f64 / (l.rate * step.as_secs_f64())).collect()
}

#[test]
fn closed_loop_fills_the_path_and_shrugs_off_random_loss() {
    for loss in [0.0, 0.01] {
        let mut l = Loop::new(8_000.0, ms(100), 800.0, loss);
        l.run(Instant::ZERO + Duration::from_secs(5));
        let got = l.run(Instant::ZERO + Duration::from_secs(25)) as f64 / (8_000.0 * 20.0);
        assert!(got > 0.9 * (1.0 - loss), "loss {loss}: utilization {got}");
    }
}

#[test]
fn closed_loop_queue_stays_bounded() {
    // A deep buffer (4 BDP) must not fill: the model paces at the bottleneck rate.
    let mut l = Loop::new(8_000.0, ms(100), 3_200.0, 0.0);
    l.run(Instant::ZERO + Duration::from_secs(3));
    let mut worst: f64 = 0.0;
    for i in 0..200 {
        l.run(Instant::ZERO + Duration::from_secs(3) + ms(100) * i);
        worst = worst.max((l.link_free.max(l.sc.now) - l.sc.now).as_secs_f64() * l.rate);
    }
    assert!(worst < 2.0 * 800.0, "queue reached {worst} packets (BDP 800)");
}

#[test]
fn scaling_rate_and_rtt_by_k_keeps_the_normalised_trajectory() {
    // Rate x k and RTT x k: the same curve of utilization against time in RTTs. RTTs well
    // above the 10 ms ACK period, which does not scale.
    let k: u32 = 3;
    let mut a = Loop::new(2_000.0, ms(100), 200.0, 0.0);
    let mut b = Loop::new(2_000.0 * f64::from(k), ms(100 * u64::from(k)), 200.0 * f64::from(k * k), 0.0);
    let ta = trajectory(&mut a, ms(200), Duration::from_secs(12));
    let tb = trajectory(&mut b, ms(200 * u64::from(k)), Duration::from_secs(12 * u64::from(k)));
    let diff: f64 = ta.iter().zip(&tb).map(|(x, y)| (x - y).abs()).sum::<f64>() / ta.len() as f64;
    assert!(diff < 0.05, "mean |difference| {diff}\n{ta:?}\n{tb:?}");
    let late = &ta[ta.len() / 2..];
    let mean = late.iter().sum::<f64>() / late.len() as f64;
    assert!(mean > 0.9, "second half {mean}: {ta:?}");
}
