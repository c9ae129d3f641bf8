//! The emulator's configuration: one [`LinkConfig`] per direction and the topology around
//! them ([`EmulatorConfig`]).
//!
//! Invariant: a configuration that passed [`EmulatorConfig::validate`] (which
//! [`crate::Emulator::start`] calls) has every probability in [0, 1], addresses in private
//! ranges and namespace names that are safe to pass to `ip netns`.

use crate::schedule::RateStep;
use std::fmt;
use std::net::Ipv4Addr;
use std::time::Duration;

use anyhow::{bail, Context};
use serde::Serialize;

/// How many packets or bytes the bottleneck's DropTail queue holds besides the packet being
/// serialized: the limit counts waiting packets, as the simulator's does (`Packets(100)` holds
/// 100 waiting and one on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueLimit {
    /// At most this many packets.
    Packets(u32),
    /// At most this many bytes of IP packets.
    Bytes(u64),
}

/// Gilbert-Elliott two-state loss chain parameters (per packet).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct GeParams {
    /// Probability of moving from the good to the bad state.
    pub p: f64,
    /// Probability of moving from the bad to the good state.
    pub r: f64,
    /// Loss probability in the bad state (netem's `1-h`).
    pub loss_bad: f64,
    /// Loss probability in the good state (netem's `1-k`).
    pub loss_good: f64,
}

impl GeParams {
    /// The link model's Gilbert-Elliott chain of these netem-style parameters.
    pub fn model(&self) -> udt_link::GilbertElliott {
        udt_link::GilbertElliott {
            good_to_bad: self.p,
            bad_to_good: self.r,
            loss_good: self.loss_good,
            loss_bad: self.loss_bad,
        }
    }

    /// The long-run loss rate: the chain's stationary mix of the two states' loss rates.
    pub fn mean_loss(&self) -> f64 {
        self.model().mean_loss()
    }
}

/// Random loss model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Loss {
    /// No random loss.
    #[default]
    None,
    /// Each packet is lost independently with probability `p`.
    Bernoulli {
        /// Loss probability.
        p: f64,
    },
    /// Bursty loss from a two-state Markov chain.
    GilbertElliott(GeParams),
}

/// The distribution of the jitter added to the one-way delay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum JitterDist {
    /// Uniform in [-jitter, +jitter].
    #[default]
    Uniform,
    /// Normal with standard deviation `jitter`, truncated to +-3 standard deviations.
    Normal,
}

/// Serializes a duration as microseconds, for JSON output.
fn micros<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1e6)
}

/// The impairments of one direction of the link, applied in this order (`udt-link`'s model):
/// the rate-limited DropTail bottleneck, random loss on the wire, corruption (one bit of a
/// delivered packet flipped), delay with jitter, reordering, duplication (a copy delivered with
/// the original).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkConfig {
    /// Bottleneck rate in bits per second of IP packets; 0 means unlimited (and no queue).
    pub rate_bps: u64,
    /// The bottleneck queue's limit.
    pub queue: QueueLimit,
    /// One-way propagation delay added after the bottleneck.
    #[serde(rename = "delay_us", serialize_with = "micros")]
    pub delay: Duration,
    /// Jitter amplitude (uniform) or standard deviation (normal).
    #[serde(rename = "jitter_us", serialize_with = "micros")]
    pub jitter: Duration,
    /// Jitter distribution.
    pub jitter_dist: JitterDist,
    /// Random loss.
    pub loss: Loss,
    /// Probability that a packet is held back by `reorder_delay`, letting later ones pass it.
    pub reorder: f64,
    /// Extra delay of a reordered packet.
    #[serde(rename = "reorder_delay_us", serialize_with = "micros")]
    pub reorder_delay: Duration,
    /// Probability that a packet is duplicated.
    pub duplicate: f64,
    /// Probability that one bit of a delivered packet is flipped.
    pub corrupt: f64,
    /// Changes of the bottleneck's rate during a run, by time since the schedule's origin
    /// (the emulator's start, or its last [`crate::EmulatorHandle::restart_schedule`]), sorted.
    pub rate_steps: Vec<RateStep>,
}

impl Default for LinkConfig {
    /// A perfect link: unlimited rate, no delay, no impairment (queue limit 1000 packets,
    /// reorder delay 1 ms, for when a rate or reordering is set).
    fn default() -> Self {
        Self {
            rate_bps: 0,
            queue: QueueLimit::Packets(1000),
            delay: Duration::ZERO,
            jitter: Duration::ZERO,
            jitter_dist: JitterDist::Uniform,
            loss: Loss::None,
            reorder: 0.0,
            reorder_delay: Duration::from_millis(1),
            duplicate: 0.0,
            corrupt: 0.0,
            rate_steps: Vec::new(),
        }
    }
}

impl LinkConfig {
    /// Checks probabilities and that a byte queue holds at least one `mtu`-sized packet.
    pub fn validate(&self, mtu: u32) -> anyhow::Result<()> {
        let probs = [("reorder", self.reorder), ("duplicate", self.duplicate), ("corrupt", self.corrupt)];
        for (name, p) in probs {
            check_probability(name, p)?;
        }
        match self.loss {
            Loss::None => {}
            Loss::Bernoulli { p } => check_probability("loss", p)?,
            Loss::GilbertElliott(ge) => {
                for (name, p) in [
                    ("ge p", ge.p),
                    ("ge r", ge.r),
                    ("ge loss_bad", ge.loss_bad),
                    ("ge loss_good", ge.loss_good),
                ] {
                    check_probability(name, p)?;
                }
            }
        }
        match self.queue {
            QueueLimit::Packets(0) => bail!("the queue limit must be at least one packet"),
            QueueLimit::Bytes(b) if b < u64::from(mtu) => {
                bail!("a queue of {b} bytes cannot hold one {mtu}-byte packet")
            }
            _ => {}
        }
        if !self.rate_steps.is_empty() && self.rate_bps == 0 {
            bail!("rate steps need a rate to start from");
        }
        if self.rate_steps.iter().any(|s| s.rate_bps == 0) {
            bail!("a rate step must set a rate above 0");
        }
        if self.rate_steps.windows(2).any(|w| w[0].at >= w[1].at) {
            bail!("rate steps must come in increasing time");
        }
        if self.delay + self.jitter * 3 + self.reorder_delay > Duration::from_secs(600) {
            bail!("delays above 10 minutes are not supported");
        }
        Ok(())
    }
}

fn check_probability(name: &str, p: f64) -> anyhow::Result<()> {
    if !(0.0..=1.0).contains(&p) {
        bail!("{name} probability {p} is outside [0, 1]");
    }
    Ok(())
}

impl fmt::Display for LinkConfig {
    /// One line: `rate 100 Mb/s, queue 1000 packets, delay 50 ms +- 1 ms uniform, loss 0.1%`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.rate_bps == 0 {
            write!(f, "rate unlimited")?;
        } else {
            write!(f, "rate {}", crate::stats::format_bits(self.rate_bps as f64))?;
            match self.queue {
                QueueLimit::Packets(n) => write!(f, ", queue {n} packets")?,
                QueueLimit::Bytes(b) => write!(f, ", queue {b} bytes")?,
            }
        }
        write!(f, ", delay {:?}", self.delay)?;
        if !self.jitter.is_zero() {
            let dist = match self.jitter_dist {
                JitterDist::Uniform => "uniform",
                JitterDist::Normal => "normal",
            };
            write!(f, " +- {:?} {dist}", self.jitter)?;
        }
        match self.loss {
            Loss::None => {}
            Loss::Bernoulli { p } => write!(f, ", loss {}%", p * 100.0)?,
            Loss::GilbertElliott(ge) => write!(
                f,
                ", GE loss p {}% r {}% bad {}% good {}% (mean {:.4}%)",
                ge.p * 100.0,
                ge.r * 100.0,
                ge.loss_bad * 100.0,
                ge.loss_good * 100.0,
                ge.mean_loss() * 100.0
            )?,
        }
        if self.reorder > 0.0 {
            write!(f, ", reorder {}% by {:?}", self.reorder * 100.0, self.reorder_delay)?;
        }
        if self.duplicate > 0.0 {
            write!(f, ", duplicate {}%", self.duplicate * 100.0)?;
        }
        if self.corrupt > 0.0 {
            write!(f, ", corrupt {}%", self.corrupt * 100.0)?;
        }
        Ok(())
    }
}

/// Everything [`crate::Emulator::start`] needs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EmulatorConfig {
    /// Network namespace of side A: created if missing (and then deleted at the end),
    /// otherwise used as it is.
    pub ns_a: String,
    /// Network namespace of side B, likewise.
    pub ns_b: String,
    /// Name of the TUN device inside namespace A.
    pub dev_a: String,
    /// Name of the TUN device inside namespace B.
    pub dev_b: String,
    /// Address of side A (point-to-point peer of `addr_b`).
    pub addr_a: Ipv4Addr,
    /// Address of side B.
    pub addr_b: Ipv4Addr,
    /// MTU of both TUN devices.
    pub mtu: u32,
    /// Impairments from A to B.
    pub a_to_b: LinkConfig,
    /// Impairments from B to A.
    pub b_to_a: LinkConfig,
    /// Seed of the impairment models' random numbers (B to A uses `seed + 1`).
    pub seed: u64,
    /// The forwarder spins (instead of sleeping) for the last this-much before a release.
    #[serde(rename = "spin_us", serialize_with = "micros")]
    pub spin: Duration,
    /// Run the forwarder threads with the real-time `SCHED_FIFO` policy at this priority
    /// (1 to 99) so that other busy processes do not delay releases; `None`: normal policy.
    pub realtime: Option<u8>,
    /// Transmit queue length of the TUN devices: packets the kernel holds for the emulator to
    /// read. Only fills when the emulator falls behind; beyond it the kernel drops (counted
    /// as `tun_drops`). The kernel's default for TUN is 500.
    pub tun_txqueuelen: u32,
    /// Upper bound on packets held per direction (queued or in flight); beyond it arriving
    /// packets are dropped and counted as `buffer_drops`. 2 KiB (or an MTU) each.
    pub max_packets_in_flight: usize,
}

impl Default for EmulatorConfig {
    /// Namespaces `udtA` and `udtB`, devices `tunA` and `tunB`, 10.213.0.1 and 10.213.0.2,
    /// MTU 1500, a perfect link, seed 1, 50 us spin, normal scheduling, TUN queues of 1000
    /// packets, up to 65536 packets in flight.
    fn default() -> Self {
        Self {
            ns_a: "udtA".into(),
            ns_b: "udtB".into(),
            dev_a: "tunA".into(),
            dev_b: "tunB".into(),
            addr_a: Ipv4Addr::new(10, 213, 0, 1),
            addr_b: Ipv4Addr::new(10, 213, 0, 2),
            mtu: 1500,
            a_to_b: LinkConfig::default(),
            b_to_a: LinkConfig::default(),
            seed: 1,
            spin: Duration::from_micros(50),
            realtime: None,
            tun_txqueuelen: 1000,
            max_packets_in_flight: 65536,
        }
    }
}

impl EmulatorConfig {
    /// Checks names, addresses, MTU and both directions' impairments.
    pub fn validate(&self) -> anyhow::Result<()> {
        check_name("namespace", &self.ns_a, 64)?;
        check_name("namespace", &self.ns_b, 64)?;
        if self.ns_a == self.ns_b {
            bail!("the two namespaces must differ (both are '{}')", self.ns_a);
        }
        check_name("device", &self.dev_a, 15)?;
        check_name("device", &self.dev_b, 15)?;
        for addr in [self.addr_a, self.addr_b] {
            if !addr.is_private() {
                bail!("address {addr} is not in a private range (10/8, 172.16/12, 192.168/16)");
            }
        }
        if self.addr_a == self.addr_b {
            bail!("the two addresses must differ (both are {})", self.addr_a);
        }
        if !(576..=9000).contains(&self.mtu) {
            bail!("MTU {} is outside 576..=9000", self.mtu);
        }
        if let Some(p) = self.realtime.filter(|p| !(1..=99).contains(p)) {
            bail!("real-time priority {p} is outside 1..=99");
        }
        if !(1..=1_000_000).contains(&self.tun_txqueuelen) {
            bail!("TUN queue length {} is outside 1..=1000000", self.tun_txqueuelen);
        }
        if self.max_packets_in_flight == 0 {
            bail!("max_packets_in_flight must be positive");
        }
        self.a_to_b.validate(self.mtu).context("A to B")?;
        self.b_to_a.validate(self.mtu).context("B to A")?;
        Ok(())
    }
}

/// Names passed to `ip`: letters, digits, `_`, `-`, `.`; not `.`/`..`; not starting with `-`.
fn check_name(what: &str, name: &str, max: usize) -> anyhow::Result<()> {
    let ok_chars = name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if name.is_empty() || name.len() > max || !ok_chars || name.starts_with(['-', '.']) {
        bail!(
            "bad {what} name '{name}': use 1 to {max} letters, digits, '_', '-' or '.', not first '-' or '.'"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_valid_and_checks_catch_mistakes() {
        let ok = EmulatorConfig::default();
        ok.validate().unwrap();
        let bad = |f: fn(&mut EmulatorConfig)| {
            let mut c = EmulatorConfig::default();
            f(&mut c);
            c.validate().is_err()
        };
        assert!(bad(|c| c.ns_b = c.ns_a.clone()));
        assert!(bad(|c| c.ns_a = "a/b".into()));
        assert!(bad(|c| c.ns_a = "-x".into()));
        assert!(bad(|c| c.dev_a = "a-very-long-device-name".into()));
        assert!(bad(|c| c.addr_b = Ipv4Addr::new(8, 8, 8, 8)));
        assert!(bad(|c| c.mtu = 100));
        assert!(bad(|c| c.a_to_b.duplicate = 1.5));
        assert!(bad(|c| c.b_to_a.loss = Loss::Bernoulli { p: -0.1 }));
        assert!(bad(|c| c.a_to_b.queue = QueueLimit::Bytes(1000)));
    }

    #[test]
    fn describes_itself() {
        let c = LinkConfig {
            rate_bps: 100_000_000,
            delay: Duration::from_millis(50),
            jitter: Duration::from_millis(1),
            loss: Loss::Bernoulli { p: 0.001 },
            ..LinkConfig::default()
        };
        assert_eq!(c.to_string(), "rate 100 Mb/s, queue 1000 packets, delay 50ms +- 1ms uniform, loss 0.1%");
        let json = serde_json::to_value(&c).unwrap();
        assert_eq!(json["delay_us"], 50_000.0);
        assert_eq!(json["loss"]["bernoulli"]["p"], 0.001);
    }
}
