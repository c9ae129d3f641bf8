//! The points where the crate's unit tests count what the I/O threads do and inject faults
//! ([`crate::options::TestHooks`]): a multiplexer's `sendmsg` calls, forwards and rounds, the
//! times it builds datagrams at (and a delay in building each), a connection's wake-ups of
//! blocked callers.
//!
//! Invariant: outside the crate's unit tests every type here is empty (zero-sized) and every
//! method a no-op or a constant, so the structs that hold them carry nothing and the I/O
//! thread does no extra work; what a test reads exists only under `cfg(test)`.

use std::io;

use crate::options::TestHooks;

#[cfg(test)]
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

// Outside the crate's unit tests the hook points take no room.
#[cfg(not(test))]
const _: () = assert!(std::mem::size_of::<MuxHooks>() == 0 && std::mem::size_of::<ConnHooks>() == 0);

/// A multiplexer's hook points.
#[derive(Default)]
pub(crate) struct MuxHooks {
    /// Faults to inject (from the binding caller's options).
    #[cfg(test)]
    faults: TestHooks,
    /// `sendmsg` calls so far (for `faults.refuse_sends`, and tests that count them).
    #[cfg(test)]
    sends: AtomicU32,
    /// Datagrams handed to another I/O thread of the port.
    #[cfg(test)]
    forwards: AtomicU64,
    /// Rounds so far, and connections served in them (one count per connection per round).
    #[cfg(test)]
    served: (AtomicU64, AtomicU64),
    /// The times handed to the core for the datagrams asked for, with the number of the
    /// `transmit` call that asked (the first 100,000).
    #[cfg(test)]
    built: std::sync::Mutex<(u64, Vec<(u64, udt_proto::Instant)>)>,
}

impl MuxHooks {
    /// The hook points of a multiplexer bound with these faults.
    pub fn new(faults: TestHooks) -> MuxHooks {
        #[cfg(test)]
        return MuxHooks { faults, ..MuxHooks::default() };
        #[cfg(not(test))]
        {
            let _ = faults;
            MuxHooks {}
        }
    }

    /// Before a `sendmsg`: the error a full kernel send buffer would give, when the faults
    /// say this call is refused (`TestHooks::refuse_sends`); `None` (always, outside tests):
    /// send.
    #[inline]
    pub fn refused_send(&self) -> Option<io::Error> {
        #[cfg(test)]
        {
            let every = self.faults.refuse_sends;
            let nth = self.sends.fetch_add(1, Ordering::Relaxed);
            if every > 0 && nth % every == every - 1 {
                return Some(io::ErrorKind::WouldBlock.into());
            }
        }
        None
    }

    /// A `transmit` call begins: the datagrams asked for since are its own.
    #[inline]
    pub fn transmit_begins(&self) {
        #[cfg(test)]
        {
            self.built.lock().unwrap().0 += 1;
        }
    }

    /// The core is about to be asked for a datagram (after `TestHooks::slow_build`, the time
    /// building the last one took) at `now`.
    #[inline]
    pub fn building(&self, now: impl FnOnce() -> udt_proto::Instant) -> udt_proto::Instant {
        #[cfg(test)]
        {
            std::thread::sleep(self.faults.slow_build);
            let now = now();
            let mut built = self.built.lock().unwrap();
            let call = built.0;
            if built.1.len() < 100_000 {
                built.1.push((call, now));
            }
            now
        }
        #[cfg(not(test))]
        now()
    }

    /// The times handed to the core for the datagrams asked for so far, each with the number
    /// of the `transmit` call that asked.
    #[cfg(test)]
    pub fn built(&self) -> Vec<(u64, udt_proto::Instant)> {
        self.built.lock().unwrap().1.clone()
    }

    /// A datagram was handed to another I/O thread of the port.
    #[inline]
    pub fn forwarded(&self) {
        #[cfg(test)]
        self.forwards.fetch_add(1, Ordering::Relaxed);
    }

    /// A round serves `connections` connections.
    #[inline]
    pub fn round(&self, connections: usize) {
        #[cfg(test)]
        {
            self.served.0.fetch_add(1, Ordering::Relaxed);
            self.served.1.fetch_add(connections as u64, Ordering::Relaxed);
        }
        #[cfg(not(test))]
        let _ = connections;
    }

    /// `sendmsg` calls so far.
    #[cfg(test)]
    pub fn sends(&self) -> u32 {
        self.sends.load(Ordering::Relaxed)
    }

    /// Datagrams handed to another I/O thread so far.
    #[cfg(test)]
    pub fn forwards(&self) -> u64 {
        self.forwards.load(Ordering::Relaxed)
    }

    /// Rounds so far, and connections served in them.
    #[cfg(test)]
    pub fn served(&self) -> (u64, u64) {
        (self.served.0.load(Ordering::Relaxed), self.served.1.load(Ordering::Relaxed))
    }
}

/// A connection's hook points.
#[derive(Debug, Default)]
pub(crate) struct ConnHooks {
    /// Signals that found a blocked thread.
    #[cfg(test)]
    signals: AtomicUsize,
}

impl ConnHooks {
    /// A signal found a blocked thread.
    #[inline]
    pub fn signalled(&self) {
        #[cfg(test)]
        self.signals.fetch_add(1, Ordering::SeqCst);
    }

    /// Signals so far that found a blocked thread.
    #[cfg(test)]
    pub fn signals(&self) -> usize {
        self.signals.load(Ordering::SeqCst)
    }
}
