//! One link direction, sans-IO: output queue, serialisation at the link rate, propagation delay
//! with jitter, random loss and the other impairments.
//!
//! A packet of `len` bytes (IP bytes, headers included) arriving at `now` goes through, in
//! order:
//! 1. [`LinkModel::handle_arrival`]: the MTU check, then the queue discipline, which looks at
//!    the packets *waiting* (the one in service is not counted); if admitted, its serialisation
//!    starts when the previous one ends and lasts `len * 8 / rate` (the sub-nanosecond remainder
//!    is carried to the next packet, so the long-run rate is exact). A link without a rate is
//!    infinitely fast and never queues.
//! 2. [`LinkModel::handle_on_wire`]: random loss on the wire (a lost packet still used the
//!    capacity, like an error on the physical link), then corruption, then delay, jitter and
//!    reordering ([`crate::delay`]).
//! 3. [`LinkModel::draw_duplicate`]: whether a second copy is delivered with it.
//!
//! [`LinkModel::handle_packet`] runs the three. Users that must act between the steps (the
//! simulator routes a packet before drawing its duplicate) call them one by one.
//!
//! Invariants: time is the caller's `now`, a [`Duration`] since an epoch of its choosing, never
//! decreasing between calls; nothing reads a clock. Serialisations never overlap and start in
//! arrival order. Every random choice is drawn from the model's own [`SimRng`], in a fixed order
//! per packet (RED's drop, loss, corruption and its word, jitter, reordering, duplication), and
//! a choice with probability 0 draws nothing; so a seed and a sequence of `(now, len)` fix every
//! outcome.

use std::time::Duration;

use rand_core::RngCore;

use crate::delay::{DelayLine, Jitter};
use crate::impair::Impairments;
use crate::loss::{LossModel, LossState};
use crate::queue::{Admission, Backlog, Queue, QueueConfig};
use crate::rng::SimRng;

/// Everything that describes a one-way link.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkConfig {
    /// Bits per second of IP packets (headers included); `None` is infinitely fast.
    pub rate_bps: Option<u64>,
    /// One-way propagation delay.
    pub delay: Duration,
    /// Jitter of the delay.
    pub jitter: Jitter,
    /// Queue discipline of the output buffer (unused without a rate).
    pub queue: QueueConfig,
    /// Random loss on the wire.
    pub loss: LossModel,
    /// Reordering, duplication and corruption.
    pub impair: Impairments,
    /// Largest IP packet carried; larger ones are dropped (no fragmentation).
    pub mtu: Option<usize>,
}

impl LinkConfig {
    /// An infinitely fast link with no delay and no impairment.
    pub fn ideal() -> Self {
        LinkConfig {
            rate_bps: None,
            delay: Duration::ZERO,
            jitter: Jitter::default(),
            queue: QueueConfig::DropTailPackets(usize::MAX),
            loss: LossModel::None,
            impair: Impairments::default(),
            mtu: None,
        }
    }

    /// A pure delay: infinitely fast, `delay` long.
    pub fn delay(delay: Duration) -> Self {
        LinkConfig { delay, ..LinkConfig::ideal() }
    }

    /// A link of `rate_bps` and `delay` with a DropTail queue of `queue_pkts` waiting packets.
    pub fn new(rate_bps: u64, delay: Duration, queue_pkts: usize) -> Self {
        LinkConfig {
            rate_bps: Some(rate_bps),
            delay,
            queue: QueueConfig::DropTailPackets(queue_pkts),
            ..LinkConfig::ideal()
        }
    }

    /// Whether a packet crosses the link in zero time untouched (so the link need not exist).
    pub fn is_ideal(&self) -> bool {
        self.rate_bps.is_none()
            && self.delay.is_zero()
            && self.jitter.is_none()
            && self.loss == LossModel::None
            && self.impair.is_none()
            && self.mtu.is_none()
    }
}

/// How the link may treat a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// Subject to the MTU, the queue discipline and, on the wire, the impairments.
    Ordinary,
    /// Queues and takes its serialisation time like any packet but is never dropped; the user
    /// sends it on at [`LinkModel::propagate`] instead of calling
    /// [`LinkModel::handle_on_wire`] (the simulator's model of a TCP connection's bytes).
    Reliable,
}

/// Why a packet did not cross the link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dropped {
    /// Larger than the MTU.
    Mtu,
    /// The queue was full.
    Full,
    /// RED dropped it early.
    Early,
    /// Lost on the wire.
    Lost,
}

/// A packet admitted to the link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OnWire {
    /// When its serialisation ends (its last bit is on the wire).
    pub at: Duration,
    /// Packets waiting right after its arrival, itself included if it waits (0 without a rate).
    pub queued: usize,
}

/// A packet that crosses the link: when it arrives, and how it was impaired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delivery {
    /// Arrival time at the far end (same epoch as `now`).
    pub at: Duration,
    /// When it is corrupted, the random word that says how (see [`crate::impair`]).
    pub corrupt: Option<u64>,
    /// Picked for reordering (held back so that later packets overtake it).
    pub reordered: bool,
}

/// The whole passage of a packet through [`LinkModel::handle_packet`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Passage {
    /// Its admission and serialisation.
    pub on_wire: OnWire,
    /// Its delivery.
    pub delivery: Delivery,
    /// A copy is delivered with it (at the same time, with the same damage).
    pub duplicated: bool,
}

/// What the queue holds at an instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Occupancy {
    /// Packets waiting (not counting the one in service).
    pub waiting: usize,
    /// Their bytes.
    pub waiting_bytes: u64,
    /// Whether a packet is being serialised.
    pub in_service: bool,
}

/// The model of one link direction with its state.
#[derive(Clone, Debug)]
pub struct LinkModel {
    config: LinkConfig,
    /// End of the last serialisation, ns.
    busy_until: u64,
    /// Sub-nanosecond remainder of serialisation times, in units of 1/rate ns.
    carry: u64,
    backlog: Backlog,
    queue: Queue,
    loss: LossState,
    delay: DelayLine,
    rng: SimRng,
}

fn nanos(t: Duration) -> u64 {
    u64::try_from(t.as_nanos()).unwrap_or(u64::MAX)
}

impl LinkModel {
    /// The model of `config`, drawing from `rng`.
    pub fn new(config: LinkConfig, rng: SimRng) -> Self {
        let imp = config.impair;
        LinkModel {
            config,
            busy_until: 0,
            carry: 0,
            backlog: Backlog::default(),
            queue: Queue::new(config.queue),
            loss: LossState::new(config.loss),
            delay: DelayLine::new(config.delay, config.jitter, imp.reorder, imp.reorder_delay),
            rng,
        }
    }

    /// Its configuration.
    pub fn config(&self) -> &LinkConfig {
        &self.config
    }

    /// Change the bottleneck's rate from now on (`None`: infinitely fast): a packet already
    /// queued keeps the time its serialisation was given, the next ones serialise at `rate_bps`.
    pub fn set_rate(&mut self, rate_bps: Option<u64>) {
        self.config.rate_bps = rate_bps.filter(|&r| r > 0);
        self.carry = 0;
    }

    /// RED's average queue in packets (0 for DropTail).
    pub fn red_average(&self) -> f64 {
        self.queue.average()
    }

    /// What the queue holds at `now` (not before the last arrival).
    pub fn occupancy(&self, now: Duration) -> Occupancy {
        let (waiting, waiting_bytes, in_service) = self.backlog.occupancy(nanos(now));
        Occupancy { waiting, waiting_bytes, in_service }
    }

    /// A packet of `len` bytes arrives at `now`: when its serialisation ends, or why it was
    /// dropped ([`Dropped::Mtu`], [`Dropped::Full`] or [`Dropped::Early`]).
    pub fn handle_arrival(&mut self, now: Duration, len: usize, class: Class) -> Result<OnWire, Dropped> {
        let ordinary = class == Class::Ordinary;
        if ordinary && self.config.mtu.is_some_and(|mtu| len > mtu) {
            return Err(Dropped::Mtu);
        }
        let Some(rate) = self.config.rate_bps else {
            return Ok(OnWire { at: now, queued: 0 });
        };
        let now_ns = nanos(now);
        self.backlog.drain(now_ns);
        let (waiting, waiting_bytes) = self.backlog.waiting(now_ns);
        let idle =
            self.backlog.is_empty().then(|| Duration::from_nanos(now_ns.saturating_sub(self.busy_until)));
        let admission = if ordinary {
            self.queue.admit(waiting, waiting_bytes, len, idle, &mut self.rng)
        } else {
            Admission::Accept
        };
        match admission {
            Admission::Accept => {}
            Admission::Full => return Err(Dropped::Full),
            Admission::Early => return Err(Dropped::Early),
        }
        let start = now_ns.max(self.busy_until);
        let end = start + self.serialisation_ns(rate.max(1), len);
        self.busy_until = end;
        self.backlog.push(start, end, u32::try_from(len).unwrap_or(u32::MAX));
        let queued = waiting + usize::from(start > now_ns);
        Ok(OnWire { at: Duration::from_nanos(end), queued })
    }

    /// An ordinary packet's serialisation ended at `on_wire`: whether it is lost, and if not
    /// when it arrives and how it is impaired.
    pub fn handle_on_wire(&mut self, on_wire: Duration) -> Result<Delivery, Dropped> {
        if self.loss.lose(&mut self.rng) {
            return Err(Dropped::Lost);
        }
        let corrupt = self.rng.chance(self.config.impair.corrupt).then(|| self.rng.next_u64());
        let release = self.delay.handle_on_wire(on_wire, &mut self.rng);
        Ok(Delivery { at: release.at, corrupt, reordered: release.reordered })
    }

    /// Whether the packet just delivered is duplicated.
    pub fn draw_duplicate(&mut self) -> bool {
        self.rng.chance(self.config.impair.duplicate)
    }

    /// When a [`Class::Reliable`] packet whose serialisation ended at `on_wire` arrives: one
    /// delay later, without jitter or impairment.
    pub fn propagate(&self, on_wire: Duration) -> Duration {
        on_wire + self.config.delay
    }

    /// An ordinary packet of `len` bytes arrives at `now`: its passage, or why it was dropped.
    pub fn handle_packet(&mut self, now: Duration, len: usize) -> Result<Passage, Dropped> {
        let on_wire = self.handle_arrival(now, len, Class::Ordinary)?;
        let delivery = self.handle_on_wire(on_wire.at)?;
        let duplicated = self.draw_duplicate();
        Ok(Passage { on_wire, delivery, duplicated })
    }

    /// Serialisation time of `bytes` at `rate` in ns, carrying the remainder.
    fn serialisation_ns(&mut self, rate: u64, bytes: usize) -> u64 {
        let num = bytes as u64 * 8 * 1_000_000_000 + self.carry;
        self.carry = num % rate;
        num / rate
    }
}

#[cfg(test)]
mod tests;
