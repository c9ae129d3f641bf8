//! UDT4's `epoll` (sets of UDT sockets and system sockets watched for readiness) and
//! `select`/`selectEx`, over the runtime's readiness ([`udt::UdtStream::readiness`],
//! [`udt::UdtListener::pending`]) and `poll(2)` for system sockets.
//!
//! Waiting checks the watched sockets, then sleeps a short, growing step (50 us doubling up to
//! 2 ms) until something is ready or the timeout passes: a ready socket is seen within about
//! 2 ms, and an idle wait costs some 500 wake-ups a second.
//!
//! As in UDT4: a socket whose connection ended, or that is gone, is reported in both the read
//! and the write sets of the epoll sets it is watched by (`UDT_EPOLL_ERR`), and `epoll_wait`
//! fails with `ETIMEOUT` when nothing became ready in time.

use std::collections::{BTreeMap, HashMap};
use std::sync::{LazyLock, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::error::{self, Result, UdtError};
use crate::socket::{self, event};

/// One epoll set: watched sockets and the events each is watched for.
#[derive(Debug, Default)]
struct Set {
    usocks: BTreeMap<i32, i32>,
    ssocks: BTreeMap<i32, i32>,
}

struct Sets {
    next: i32,
    sets: HashMap<i32, Set>,
}

static SETS: LazyLock<Mutex<Sets>> = LazyLock::new(|| Mutex::new(Sets { next: 1, sets: HashMap::new() }));

fn sets() -> MutexGuard<'static, Sets> {
    SETS.lock().unwrap_or_else(|e| e.into_inner())
}

fn with_set<T>(eid: i32, f: impl FnOnce(&mut Set) -> T) -> Result<T> {
    sets().sets.get_mut(&eid).map(f).ok_or(UdtError::new(error::UDT_ERR_INVPOLLID))
}

/// The events to watch: `None` (a null pointer) means all of them.
fn watched(events: Option<i32>) -> i32 {
    events.unwrap_or(event::IN | event::OUT | event::ERR)
}

/// `epoll_create`.
pub fn create() -> Result<i32> {
    let mut s = sets();
    let eid = s.next;
    s.next = s.next.checked_add(1).ok_or(UdtError::new(error::UDT_ERR_RESOURCE))?;
    s.sets.insert(eid, Set::default());
    Ok(eid)
}

/// `epoll_add_usock`.
pub fn add_usock(eid: i32, u: i32, events: Option<i32>) -> Result<()> {
    socket::get(u)?;
    with_set(eid, |s| s.usocks.insert(u, watched(events))).map(drop)
}

/// `epoll_add_ssock`.
pub fn add_ssock(eid: i32, fd: i32, events: Option<i32>) -> Result<()> {
    with_set(eid, |s| s.ssocks.insert(fd, watched(events))).map(drop)
}

/// `epoll_remove_usock`.
pub fn remove_usock(eid: i32, u: i32) -> Result<()> {
    with_set(eid, |s| s.usocks.remove(&u)).map(drop)
}

/// `epoll_remove_ssock`.
pub fn remove_ssock(eid: i32, fd: i32) -> Result<()> {
    with_set(eid, |s| s.ssocks.remove(&fd)).map(drop)
}

/// `epoll_release`.
pub fn release(eid: i32) -> Result<()> {
    sets().sets.remove(&eid).map(drop).ok_or(UdtError::new(error::UDT_ERR_INVPOLLID))
}

/// Sockets watched by epoll set `eid` (for sizing the result arrays).
pub fn count(eid: i32) -> Result<i32> {
    with_set(eid, |s| (s.usocks.len() + s.ssocks.len()) as i32)
}

/// What one look found ready: UDT sockets to read and write, system sockets to read and write.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Ready {
    /// UDT sockets ready to read (or ended).
    pub read: Vec<i32>,
    /// UDT sockets ready to write (or ended).
    pub write: Vec<i32>,
    /// System sockets ready to read.
    pub sys_read: Vec<i32>,
    /// System sockets ready to write.
    pub sys_write: Vec<i32>,
}

impl Ready {
    fn total(&self) -> usize {
        self.read.len() + self.write.len() + self.sys_read.len() + self.sys_write.len()
    }
}

/// Look once at set `eid`, for the lists `want` names (read, write, system read, system write).
fn look(eid: i32, want: [bool; 4]) -> Result<Ready> {
    let want_lists = want;
    let (usocks, ssocks) = with_set(eid, |s| (s.usocks.clone(), s.ssocks.clone()))?;
    let mut ready = Ready::default();
    for (u, want) in usocks {
        let have = socket::events(u);
        let err = have & want & event::ERR != 0;
        if want_lists[0] && (have & want & event::IN != 0 || err) {
            ready.read.push(u);
        }
        if want_lists[1] && (have & want & event::OUT != 0 || err) {
            ready.write.push(u);
        }
    }
    let mut fds: Vec<libc::pollfd> = ssocks
        .iter()
        .map(|(fd, want)| {
            let mut events = 0;
            if want & event::IN != 0 {
                events |= libc::POLLIN;
            }
            if want & event::OUT != 0 {
                events |= libc::POLLOUT;
            }
            libc::pollfd { fd: *fd, events, revents: 0 }
        })
        .collect();
    crate::raw::poll_now(&mut fds)
        .map_err(|e| UdtError { code: error::UDT_ERR_UNKNOWN, errno: e.raw_os_error().unwrap_or(0) })?;
    for p in fds {
        let readable = p.revents & (libc::POLLIN | libc::POLLERR | libc::POLLHUP) != 0;
        if want_lists[2] && readable && p.events & libc::POLLIN != 0 {
            ready.sys_read.push(p.fd);
        }
        let writable = p.revents & (libc::POLLOUT | libc::POLLERR) != 0;
        if want_lists[3] && writable && p.events & libc::POLLOUT != 0 {
            ready.sys_write.push(p.fd);
        }
    }
    Ok(ready)
}

/// Look with `check` until it finds something or `timeout_ms` passes (negative: forever);
/// `None` when the time passed with nothing found.
fn wait_for<T>(timeout_ms: i64, mut check: impl FnMut() -> Result<Option<T>>) -> Result<Option<T>> {
    let deadline = u64::try_from(timeout_ms).ok().map(|ms| Instant::now() + Duration::from_millis(ms));
    let mut step = Duration::from_micros(50);
    loop {
        if let Some(found) = check()? {
            return Ok(Some(found));
        }
        let mut nap = step;
        if let Some(d) = deadline {
            let left = d.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            nap = nap.min(left);
        }
        std::thread::sleep(nap);
        step = (step * 2).min(Duration::from_millis(2));
    }
}

/// `epoll_wait`: what is ready in set `eid` for the lists `want` names (read, write, system
/// read, system write), waiting at most `timeout_ms` (negative: forever).
pub fn wait(eid: i32, want: [bool; 4], timeout_ms: i64) -> Result<Ready> {
    let found = wait_for(timeout_ms, || look(eid, want).map(|r| (r.total() > 0).then_some(r)))?;
    found.ok_or(UdtError::new(error::UDT_ERR_TIMEOUT))
}

/// `select`: which sockets of `lists` (to read, to write, ended) are so, waiting at most
/// `timeout_ms` (negative: forever). Empty lists after a timeout.
pub fn select(lists: &[&[i32]; 3], timeout_ms: i64) -> Result<[Vec<i32>; 3]> {
    let found = wait_for(timeout_ms, || {
        let mut out: [Vec<i32>; 3] = Default::default();
        for (i, list) in lists.iter().enumerate() {
            for &u in list.iter() {
                let have = socket::events(u);
                let ended = have & event::ERR != 0;
                let flag = [event::IN, event::OUT, 0][i];
                if have & flag != 0 || ended {
                    out[i].push(u);
                }
            }
        }
        Ok(out.iter().any(|v| !v.is_empty()).then_some(out))
    })?;
    Ok(found.unwrap_or_default())
}
