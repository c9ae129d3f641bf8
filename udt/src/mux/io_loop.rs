//! The I/O thread's loop: each round receives and routes what the socket holds (`route.rs`),
//! serves the connections with work (runs their due timers, transmits what they have to send:
//! `transmit.rs`, signals their blocked callers, re-arms their deadlines), and sleeps until the
//! earliest deadline, a datagram, or a wake-up from an application call (an eventfd). Sleeps
//! end within microseconds of the deadline (1 µs timer slack, the last few microseconds spun),
//! but no sooner than `pace::MIN_GAP` after the round began: at shorter packet periods each
//! round sends the packets due since the last one as one burst, and the core's pacing keeps
//! the average rate exact (see `pace.rs`).
//!
//! A round costs O(connections with work), not O(connections): idle connections are not looked
//! at. A connection has work in a round when
//! - it received a datagram (`receive`), or was just accepted;
//! - an application call queued it ([`Mux::wake`]: a call that brought its next deadline nearer,
//!   a close, a new connection), in the ready queue that has a lock of its own;
//! - its deadline, armed in the timer heap ([`crate::timers`]) when it was last served, has come;
//! - the kernel's full send buffer kept it from transmitting last round (`MuxState::carry`).
//!
//! Invariant (no connection misses a timer or a wake-up): every connection the thread keeps is,
//! at any time, either queued or in this round's work, or armed in the heap at or before its
//! `poll_timeout()` (`None`: not armed). Serving a connection re-arms it at its new
//! `poll_timeout()`; datagrams reach a connection only in `receive`, which puts it in the work;
//! an application call that leaves the deadline where it was or later needs nothing (the armed
//! entry comes first; a round that finds nothing due re-arms it), and one that brings it nearer
//! queues the connection. The round's sleep deadline is the heap's earliest.
//!
//! Wake-ups cost more than the work of a paced packet, so there are as few as possible: the
//! thread signals a connection's blocked callers only when what they wait for changed
//! (`view.rs`), and an application call wakes the thread only when it brought the connection's
//! next deadline nearer.
//!
//! Where the thread itself is the bottleneck, connections take turns of at most
//! [`TURN_QUANTUM`] datagrams a round each, round-robin (see there).
//!
//! While the kernel's send buffer is full, connections take turns: those it kept from
//! transmitting are served first next round, in order, then the one it cut short, so that on a
//! shared port none starves; a closed connection is forgotten only once its shutdown has left.

use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use udt_proto::connection::State;
use udt_proto::Instant;

use super::state::{MuxState, Slot};
use super::transmit::Turn;
use super::{Mux, STOPPED};
use crate::clock;
use crate::landing::Landing;
use crate::pace::{self, Wait};
use crate::sys;
use crate::tx_batch::TxBatch;

/// While the kernel's send buffer is full, rounds whose deadline has passed wait at least this
/// long for it to have room (the socket becoming writable ends the wait at once).
const BLOCKED_WAIT: Duration = Duration::from_millis(1);

/// The most datagrams a connection sends in one turn while other connections have work in
/// the round. A connection with more due is served again next round, which starts at once.
/// So where this thread is the bottleneck (its CPU, not the path: no queue any controller
/// sees) the connections share it round-robin, as a fair-queueing scheduler shares a link;
/// sending each connection all it was due in every round gave more to whichever controllers'
/// rates were higher and kept them apart (one of 100 connections had 30 times the median's
/// rate). Turns must be short for the shares to be even (a connection due less than a turn
/// sends all it is due) and long enough to carry a turn's fixed cost (locking the connection,
/// its timers, the round's start), which is about two datagrams' worth: two connections from
/// one port carried 61, 81, 92 and 96% of one flow's rate at turns of 4, 8, 16 and 44
/// datagrams (loopback).
pub(super) const TURN_QUANTUM: usize = 16;

/// Largest UDP datagram we handle.
const MAX_DATAGRAM: usize = 65_536;

/// How long the I/O thread lingers with no handle and no connection before it stops.
const IDLE_LINGER: Duration = Duration::from_millis(50);

impl Mux {
    /// The I/O thread.
    pub(super) fn run(self: Arc<Self>) {
        sys::set_timer_slack(Duration::from_micros(1));
        let mut landing = Landing::new(self.rx_segment);
        let mut outbuf = vec![0u8; MAX_DATAGRAM];
        let mut batch = TxBatch::default();
        let mut control = TxBatch::default();
        let mut idle_since_empty: Option<std::time::Instant> = None;
        let mut gathering = pace::Gathering::new(self.gather, clock::now());
        // Whether the socket may hold datagrams: false only after a wait in which `poll`
        // watched it and saw none, so that a round woken by a deadline does not spend a read on
        // an empty socket (about one failed `recvmsg` per round otherwise: 3,400 a second when
        // sending at 100 Mb/s). A datagram arriving after that wait ends the next one at once.
        let mut readable = true;
        loop {
            let round_start = clock::now();
            let gather;
            let gap;
            let blocked;
            let receive_only;
            let next = {
                let mut st = self.lock_state();
                st.begin_round();
                let mut data = 0;
                if self.shards > 1 {
                    data += self.receive_forwarded(&mut st, &mut outbuf);
                    let spares = landing.spares_mut();
                    self.inbox.take_returned(spares);
                    spares.truncate(crate::shard::RETURNED_MAX);
                }
                if readable {
                    data += self.receive(&mut st, &mut landing, &mut outbuf);
                }
                let now = clock::now();
                let next = self.service(&mut st, now, &mut outbuf, &mut batch, &mut control);
                gap = st.gap;
                gather = gathering.after_round(round_start, data, st.count_acked, st.write_ended);
                receive_only = st.senders == 0;
                blocked = !st.out.backlog.is_empty();
                let alone = self.handles.load(Ordering::SeqCst) == 0;
                if alone && st.conns.is_empty() && !blocked {
                    // Nothing refers to us and nothing is closing: linger briefly for stray
                    // handshakes, then stop.
                    let since = *idle_since_empty.get_or_insert_with(std::time::Instant::now);
                    // Stop only if no handle came meanwhile: from now on none can be added.
                    if since.elapsed() > IDLE_LINGER
                        && self
                            .handles
                            .compare_exchange(0, STOPPED, Ordering::SeqCst, Ordering::SeqCst)
                            .is_ok()
                    {
                        return;
                    }
                    Some(now + Duration::from_millis(10))
                } else {
                    idle_since_empty = None;
                    next
                }
            };
            readable = if blocked {
                self.sleep_until_writable(next)
            } else if gather.is_some() && receive_only {
                // Data streams in slowly and no connection has a packet waiting for its send
                // time: its timers (an ACK every 10 ms, NAKs, expiry) wait for the gathering's
                // end, at most `gather` late, and are served in its wake-up instead of one of
                // their own (pace.rs: wake-ups are what a slow transfer costs).
                self.sleep_until(None, round_start, gap, gather)
            } else {
                self.sleep_until(next, round_start, gap, gather)
            };
        }
    }

    /// Serve the connections with work: run their due timers, transmit, signal the
    /// application, re-arm their deadlines. Returns the earliest deadline of all.
    ///
    /// A connection has work this round when it is in `st.work` already (carried over from the
    /// last round, or it received a datagram), an application call queued it ([`Mux::wake`]),
    /// or its deadline has come. The others are not touched: their deadline is armed in
    /// `st.timers`, at or before what `poll_timeout` says (only application calls change an
    /// unserved connection, and one that brings its deadline nearer queues it).
    fn service(
        &self,
        st: &mut MuxState,
        now: Instant,
        outbuf: &mut [u8],
        batch: &mut TxBatch,
        control: &mut TxBatch,
    ) -> Option<Instant> {
        // The connections application calls queued; each unmarked before it is locked below.
        let mut ready = std::mem::take(&mut st.ready_spare);
        std::mem::swap(&mut ready, &mut *self.ready.lock().unwrap_or_else(|e| e.into_inner()));
        for id in ready.drain(..) {
            if let Some(slot) = st.conns.get(&id) {
                slot.shared.queued.store(false, Ordering::SeqCst);
            }
            st.enlist(id);
        }
        st.ready_spare = ready;
        while let Some(id) = st.timers.pop_due(now) {
            st.enlist(id);
        }
        self.hooks.round(st.work.len());
        let mut finished = Vec::new();
        let MuxState { conns, out, timers, work, carry, senders, .. } = st;
        // What the kernel refused before leaves first; until it has, nothing new is sent (the
        // connections keep it: their packets are due, not lost).
        let mut writable = self.flush_backlog(out);
        // While the kernel's buffer is full, connections take turns: those it kept from
        // transmitting are served first next round, in order, and the one it cut short after
        // them. (Always in the same order, the connections served first would fill the buffer
        // round after round, and those after them would starve.)
        let mut cut = None;
        let mut gap = Duration::MAX;
        let quantum = if work.len() > 1 { TURN_QUANTUM } else { usize::MAX };
        let mut turns_left = false;
        batch.clear();
        control.clear();
        for (i, &id) in work.iter().enumerate() {
            let Some(Slot { shared, sends, .. }) = conns.get_mut(&id) else { continue };
            let mut conn = shared.lock();
            // An application call may have given the connection a later time since `now` was read.
            let now = clock::at(&conn, now);
            if conn.poll_timeout().is_some_and(|t| t <= now) {
                conn.handle_timeout(now);
            }
            if writable {
                // A run left unfilled may take the next connections' datagrams (same peer).
                let more = i + 1 < work.len();
                let sent = conn.counters().pkts_sent;
                let mut seal = shared.sealer();
                let sealer = seal.as_mut().and_then(|s| s.as_mut()).filter(|s| s.is_active());
                let turn = self.transmit(&mut conn, sealer, now, outbuf, batch, control, out, more, quantum);
                writable = turn != Turn::Blocked;
                turns_left |= turn == Turn::Quantum;
                drop(seal);
                if conn.counters().pkts_sent != sent {
                    gap = gap.min(pace::burst_gap(conn.send_period(), conn.config().max_pacing_debt));
                }
                if !writable {
                    cut = Some(id);
                }
            } else {
                carry.push(id);
            }
            let waiting = conn.has_data_waiting();
            if waiting != *sends {
                *sends = waiting;
                if waiting {
                    *senders += 1;
                } else {
                    *senders -= 1;
                }
            }
            let mut deadline = conn.poll_timeout();
            if matches!(conn.state(), State::Closed(_)) && deadline.is_none() {
                if conn.is_drained() {
                    finished.push(id);
                } else {
                    // Its shutdown has yet to leave (the kernel's buffer was full this round):
                    // kept, and served again as soon as there is room.
                    deadline = Some(now);
                }
            }
            let (signal, wake_at) = shared.needs_signal(&conn, now);
            timers.arm(id, udt_proto::time::earliest(deadline, wake_at));
            drop(conn);
            if signal {
                shared.notify();
            }
        }
        // What the last connections left in an unfilled run (staged: no connection is locked).
        // Refused for a full buffer, they are in the backlog: no connection was cut short.
        if writable && self.flush_run(&[], outbuf, batch, batch.entries.len(), out) {
            self.flush_run(&[], outbuf, control, control.entries.len(), out);
        }
        batch.clear();
        control.clear();
        carry.extend(cut);
        st.gap = if turns_left {
            // Connections had more due than their turn: the next round starts at once.
            Duration::ZERO
        } else if gap == Duration::MAX {
            pace::MIN_GAP
        } else {
            gap
        };
        for id in finished {
            if conns.remove(&id).is_some_and(|slot| slot.sends) {
                st.senders -= 1;
            }
            timers.disarm(id);
            st.endpoint.forget(id);
        }
        let next = st.timers.next();
        if st.carry.is_empty() {
            next
        } else {
            // Connections wait for room in the kernel's buffer: serve them as soon as it has.
            Some(next.map_or(now, |n| n.min(now)))
        }
    }

    /// Wait for the next round (see `pace.rs`): until `deadline` but no sooner than `gap` after
    /// `round_start`, or a datagram, or a wake-up; with `gather` (data is streaming
    /// in), datagrams do not end the wait, which lasts at most `gather` from `round_start`.
    /// Returns whether the socket may hold datagrams now ([`sys::Ready::socket`]).
    fn sleep_until(
        &self,
        deadline: Option<Instant>,
        round_start: Instant,
        gap: Duration,
        gather: Option<Duration>,
    ) -> bool {
        let plan = match gather {
            Some(gather) => pace::plan_streaming(deadline, round_start, clock::now(), gap, gather),
            None => pace::plan(deadline, round_start, clock::now(), gap),
        };
        // While data streams in, datagrams gather in the socket's buffer (each keeps its kernel
        // timestamp) and only the application or the timeout end the sleep.
        let (socket, timeout) = match plan {
            Wait::Now => return true,
            Wait::Spin(until) => {
                while clock::now() < until {
                    std::hint::spin_loop();
                }
                return true;
            }
            Wait::Sleep(timeout) => (self.socket.as_raw_fd(), timeout),
            Wait::Gather(timeout) => (-1, Some(timeout)),
        };
        self.wait(socket, timeout, false)
    }

    /// Wait while the kernel's send buffer is full (the backlog is not empty): until the socket
    /// is writable or readable, a wake-up, or `deadline`, but at least [`BLOCKED_WAIT`] when the
    /// deadline has passed (packets are due, but cannot leave before the buffer has room).
    /// Returns whether the socket may hold datagrams.
    fn sleep_until_writable(&self, deadline: Option<Instant>) -> bool {
        let timeout = deadline.map(|d| d.saturating_since(clock::now()).max(BLOCKED_WAIT));
        self.wait(self.socket.as_raw_fd(), timeout, true)
    }

    /// [`sys::wait`] on `socket` (negative: not watched) and the wake-up eventfd, for
    /// writability too when `writable`; drains the eventfd. Returns whether the socket may
    /// hold datagrams.
    fn wait(&self, socket: std::os::fd::RawFd, timeout: Option<Duration>, writable: bool) -> bool {
        match sys::wait(socket, self.wake.raw(), timeout, writable) {
            Ok(ready) => {
                if ready.wake {
                    self.wake.drain();
                }
                ready.socket
            }
            Err(e) => {
                tracing::warn!(error = %e, "ppoll failed");
                std::thread::sleep(Duration::from_millis(1));
                true
            }
        }
    }
}
