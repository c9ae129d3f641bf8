//! The queue of accepted connections a listener has not taken yet, shared by the I/O threads
//! of the listener's port ([`crate::shard`]): each pushes the connections its endpoint
//! accepted, `accept` and `poll_accept` pop them in arrival order.
//!
//! It has a lock of its own, taken alone (after the multiplexer's state, when an I/O thread
//! pushes), so `accept` never waits for an I/O thread's round. Invariant: the queue exists
//! (`Some`) exactly while the listener listens; the listener closes it only after every I/O
//! thread's endpoint has stopped accepting, so no connection is pushed into a closed queue.

use std::collections::VecDeque;
use std::io;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use crate::conn::{register_waker, ConnShared};

/// An accepted connection and the index of the I/O thread (shard) that owns it.
pub(crate) struct Accepted {
    pub shard: usize,
    pub conn: Arc<ConnShared>,
}

/// Accepted connections waiting for `accept`.
#[derive(Default)]
pub(crate) struct AcceptQueue {
    queue: Mutex<Option<VecDeque<Accepted>>>,
    ready: Condvar,
    wakers: Mutex<Vec<Waker>>,
}

impl std::fmt::Debug for AcceptQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcceptQueue").finish_non_exhaustive()
    }
}

impl AcceptQueue {
    fn lock(&self) -> MutexGuard<'_, Option<VecDeque<Accepted>>> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Start taking connections.
    pub fn open(&self) {
        self.lock().get_or_insert_with(VecDeque::new);
    }

    /// Stop taking connections; returns those not taken (the caller closes them) and wakes
    /// every waiter, which then finds the listener closed.
    pub fn close(&self) -> VecDeque<Accepted> {
        let left = self.lock().take().unwrap_or_default();
        self.ready.notify_all();
        for w in std::mem::take(&mut *self.wakers.lock().unwrap_or_else(|e| e.into_inner())) {
            w.wake();
        }
        left
    }

    /// Queue a connection an I/O thread accepted; false if the listener has closed.
    pub fn push(&self, accepted: Accepted) -> bool {
        {
            let mut queue = self.lock();
            let Some(queue) = queue.as_mut() else { return false };
            queue.push_back(accepted);
        }
        self.ready.notify_one();
        for w in std::mem::take(&mut *self.wakers.lock().unwrap_or_else(|e| e.into_inner())) {
            w.wake();
        }
        true
    }

    /// Wait for an accepted connection (at most `timeout`).
    pub fn pop(&self, timeout: Option<Duration>) -> io::Result<Accepted> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut queue = self.lock();
        loop {
            let Some(q) = queue.as_mut() else { return Err(not_listening()) };
            if let Some(a) = q.pop_front() {
                return Ok(a);
            }
            queue = match deadline {
                None => self.ready.wait(queue).unwrap_or_else(|e| e.into_inner()),
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(crate::error::timed_out("accept"));
                    }
                    self.ready.wait_timeout(queue, left).unwrap_or_else(|e| e.into_inner()).0
                }
            };
        }
    }

    /// Connections waiting for `accept` (0 once the listener has closed).
    pub fn pending(&self) -> usize {
        self.lock().as_ref().map_or(0, VecDeque::len)
    }

    /// Take an accepted connection if one is waiting; otherwise register `waker` for the next
    /// (once per task, however often it polls).
    #[cfg_attr(not(feature = "tokio"), allow(dead_code))]
    pub fn poll(&self, waker: &Waker) -> Poll<io::Result<Accepted>> {
        let mut queue = self.lock();
        let Some(q) = queue.as_mut() else { return Poll::Ready(Err(not_listening())) };
        if let Some(a) = q.pop_front() {
            return Poll::Ready(Ok(a));
        }
        register_waker(&mut self.wakers.lock().unwrap_or_else(|e| e.into_inner()), waker);
        Poll::Pending
    }

    /// Tasks waiting in [`poll`](Self::poll).
    #[cfg(test)]
    pub fn waker_count(&self) -> usize {
        self.wakers.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

fn not_listening() -> io::Error {
    io::Error::new(io::ErrorKind::NotConnected, "not listening")
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::task::{Poll, Wake, Waker};

    struct Task;
    impl Wake for Task {
        fn wake(self: Arc<Self>) {}
    }

    #[test]
    fn a_task_polling_accept_again_and_again_is_one_waker() {
        let listener = crate::listener::UdtListener::bind("127.0.0.1:0").unwrap();
        let queue = listener.accept_queue();
        let task = Waker::from(Arc::new(Task));
        for _ in 0..1000 {
            // Each poll gets the task's waker anew, as an executor hands it (a clone).
            assert!(matches!(queue.poll(&task.clone()), Poll::Pending));
        }
        assert_eq!(queue.waker_count(), 1);
        // Another task waits too: one more.
        let other = Waker::from(Arc::new(Task));
        assert!(matches!(queue.poll(&other), Poll::Pending));
        assert!(matches!(queue.poll(&other), Poll::Pending));
        assert_eq!(queue.waker_count(), 2);
    }
}
