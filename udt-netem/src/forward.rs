//! The forwarder of one direction: reads packets from the source TUN device, passes them
//! through the direction's [`Link`] model, holds them until their release time and writes them
//! to the destination device.
//!
//! The loop, run on its own thread until the stop flag is set:
//! 1. `poll_release`: write every held packet whose release time has come, earliest first;
//! 2. `handle_reads`: read up to [`READ_BATCH`] waiting packets, each stamped with its read
//!    time, and give each its [`Verdict`];
//! 3. `wait`: sleep in `ppoll` on the source device until a packet arrives or until `spin`
//!    before the next release, then spin to the release time (the kernel's wake-up is not
//!    precise enough to sleep all the way: the timer slack is set to 1 ns, and the spin
//!    absorbs the scheduling latency).
//!
//! Invariants: no allocation per packet (buffers come from a [`Pool`], the release heap keeps
//! its capacity); every slot taken is returned once the packet is written or dropped; a packet
//! is never written before its release time.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::link::{Fate, Link, Verdict};
use crate::pool::{Pool, Slot};
use crate::schedule::Timeline;
use crate::stats::DirectionCounters;
use crate::sys;
use crate::tun::Tun;

/// Packets read per wake-up at most, so releases are not held up behind a burst of reads.
pub const READ_BATCH: usize = 64;
/// Longest sleep with nothing to release, which bounds how late the stop flag is seen.
const IDLE_WAIT: Duration = Duration::from_millis(20);

/// A packet held until its release time; ordered by time, then arrival.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Held {
    at: Duration,
    seq: u64,
    slot: Slot,
    len: u32,
}

/// One direction's forwarding loop and its state.
#[derive(Debug)]
pub struct Forwarder {
    link: Link,
    src: Arc<Tun>,
    dst: Arc<Tun>,
    pool: Pool,
    held: BinaryHeap<Reverse<Held>>,
    seq: u64,
    scratch: Vec<u8>,
    counters: Arc<DirectionCounters>,
    timeline: Arc<Timeline>,
    stop: Arc<AtomicBool>,
    epoch: Instant,
    spin: Duration,
    realtime: Option<u8>,
}

/// What a [`Forwarder`] is built from.
#[derive(Debug)]
pub struct ForwarderParts {
    /// The direction's impairment model.
    pub link: Link,
    /// Device to read from.
    pub src: Arc<Tun>,
    /// Device to write to.
    pub dst: Arc<Tun>,
    /// Counters to update.
    pub counters: Arc<DirectionCounters>,
    /// The rate schedule's origin, and the queueing delay over time to record.
    pub timeline: Arc<Timeline>,
    /// Set to end the loop.
    pub stop: Arc<AtomicBool>,
    /// Time zero of the model's clock.
    pub epoch: Instant,
    /// Spin (instead of sleeping) for this long before a release.
    pub spin: Duration,
    /// Size of each packet buffer (at least the MTU).
    pub buf_size: usize,
    /// Packets held at most; more are dropped.
    pub max_held: usize,
    /// `SCHED_FIFO` priority for the thread, if any.
    pub realtime: Option<u8>,
}

impl Forwarder {
    /// A forwarder ready to [`run`](Forwarder::run).
    pub fn new(p: ForwarderParts) -> Self {
        Self {
            link: p.link,
            src: p.src,
            dst: p.dst,
            pool: Pool::new(p.buf_size, p.max_held),
            held: BinaryHeap::with_capacity(4096),
            seq: 0,
            scratch: vec![0; p.buf_size],
            counters: p.counters,
            timeline: p.timeline,
            stop: p.stop,
            epoch: p.epoch,
            spin: p.spin,
            realtime: p.realtime,
        }
    }

    /// Forwards until the stop flag is set; fails only if reading the source device fails.
    pub fn run(mut self) -> io::Result<()> {
        if let Err(e) = sys::set_timer_slack(1) {
            tracing::debug!("cannot set the timer slack: {e}");
        }
        if let Some(priority) = self.realtime {
            if let Err(e) = sys::set_realtime(i32::from(priority)) {
                tracing::warn!("cannot use SCHED_FIFO priority {priority}: {e}");
            }
        }
        while !self.stop.load(Relaxed) {
            self.poll_release();
            self.handle_reads()?;
            self.wait()?;
        }
        Ok(())
    }

    fn now(&self) -> Duration {
        self.epoch.elapsed()
    }

    /// Writes every held packet that is due.
    fn poll_release(&mut self) {
        while let Some(&Reverse(h)) = self.held.peek() {
            let now = self.now();
            if h.at > now {
                break;
            }
            self.held.pop();
            let result = self.dst.send(&self.pool.buf(h.slot)[..h.len as usize]);
            self.pool.release(h.slot);
            let c = &*self.counters;
            match result {
                Ok(()) => {
                    DirectionCounters::add(&c.delivered, 1);
                    DirectionCounters::add(&c.bytes_delivered, u64::from(h.len));
                    c.release_error.record(u64::try_from((now - h.at).as_nanos()).unwrap_or(u64::MAX));
                }
                Err(e) => {
                    if c.write_errors.load(Relaxed) == 0 {
                        tracing::warn!(
                            "writing to {} failed: {e} (counted in write_errors)",
                            self.dst.name()
                        );
                    }
                    DirectionCounters::add(&c.write_errors, 1);
                }
            }
        }
    }

    /// Reads up to [`READ_BATCH`] packets and schedules them.
    fn handle_reads(&mut self) -> io::Result<()> {
        for _ in 0..READ_BATCH {
            let Some(slot) = self.pool.alloc() else {
                // Out of buffers: drain the device anyway so it does not stay readable.
                match self.src.recv(&mut self.scratch)? {
                    Some(n) => {
                        self.count_in(n);
                        DirectionCounters::add(&self.counters.buffer_drops, 1);
                        continue;
                    }
                    None => return Ok(()),
                }
            };
            let len = match self.src.recv(self.pool.buf_mut(slot)) {
                Ok(Some(n)) => n,
                Ok(None) => {
                    self.pool.release(slot);
                    return Ok(());
                }
                Err(e) => {
                    self.pool.release(slot);
                    return Err(e);
                }
            };
            self.count_in(len);
            let now = self.now();
            let since = self.timeline.since(now);
            self.link.follow_schedule(since);
            let verdict = self.link.handle_packet(now, len);
            if let Some(waited) = verdict.waited {
                self.timeline.record(since, waited);
            }
            self.handle_verdict(verdict, slot, len);
        }
        Ok(())
    }

    fn count_in(&self, len: usize) {
        DirectionCounters::add(&self.counters.packets_in, 1);
        DirectionCounters::add(&self.counters.bytes_in, len as u64);
    }

    fn handle_verdict(&mut self, verdict: Verdict, slot: Slot, len: usize) {
        if let Some(dup) = verdict.duplicate {
            DirectionCounters::add(&self.counters.duplicated, 1);
            // Copy before the original is (maybe) corrupted.
            let copy = match dup {
                Fate::Deliver(_) => match self.pool.alloc() {
                    Some(s) => {
                        self.pool.copy(slot, s, len);
                        Some(s)
                    }
                    None => {
                        DirectionCounters::add(&self.counters.buffer_drops, 1);
                        None
                    }
                },
                _ => None,
            };
            if let Some(s) = copy {
                self.handle_fate(dup, s, len);
            } else if !matches!(dup, Fate::Deliver(_)) {
                self.count_drop(dup);
            }
        }
        self.handle_fate(verdict.original, slot, len);
    }

    fn count_drop(&self, fate: Fate) {
        let c = &self.counters;
        match fate {
            Fate::Lost => DirectionCounters::add(&c.lost, 1),
            Fate::QueueDrop => DirectionCounters::add(&c.queue_drops, 1),
            Fate::Deliver(_) => {}
        }
    }

    fn handle_fate(&mut self, fate: Fate, slot: Slot, len: usize) {
        let Fate::Deliver(d) = fate else {
            self.count_drop(fate);
            self.pool.release(slot);
            return;
        };
        if let Some(word) = d.corrupt {
            crate::link::corrupt_packet(&mut self.pool.buf_mut(slot)[..len], word);
            DirectionCounters::add(&self.counters.corrupted, 1);
        }
        if d.reordered {
            DirectionCounters::add(&self.counters.reordered, 1);
        }
        self.seq += 1;
        self.held.push(Reverse(Held { at: d.at, seq: self.seq, slot, len: len as u32 }));
    }

    /// Sleeps until a packet arrives or the next release is `spin` away, then spins to it.
    fn wait(&mut self) -> io::Result<()> {
        let Some(&Reverse(next)) = self.held.peek() else {
            self.src.wait_readable(IDLE_WAIT)?;
            return Ok(());
        };
        let now = self.now();
        if next.at <= now {
            return Ok(());
        }
        let until = next.at - now;
        if until > self.spin {
            self.src.wait_readable((until - self.spin).min(IDLE_WAIT))?;
            return Ok(());
        }
        while self.now() < next.at {
            std::hint::spin_loop();
        }
        Ok(())
    }
}
