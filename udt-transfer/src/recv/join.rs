//! Striped transfers on the receiving side: the open transfers by token ([`Joins`]), each
//! one's connections and the files whose ranges are arriving ([`Striped`]).
//!
//! Invariants:
//! - A token is open only while the session that announced it runs (at most [`MAX_OPEN`] at
//!   once, a token at most once); a connection joins only an open token, under a number the
//!   transfer has (1 to its count - 1) and not taken yet, from the session's peer address and
//!   secured exactly when the session is (the only identity a shared key or code phrase
//!   gives); anything else is refused before a byte of data is read.
//! - A range is written only into a file its session opened for ranges, inside
//!   `[start, size)`, and only if it overlaps no range reserved before (duplicates included);
//!   it is reserved before its bytes are read and counted once they are written, so a file is
//!   complete exactly when every byte of `[start, size)` was written once.
//! - Once the transfer fails or ends ([`Striped::fail`]), no range is reserved any more and
//!   every wait returns.

use std::collections::HashMap;
use std::fs::File;
use std::net::IpAddr;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use udt::UdtStream;

use super::order::{InOrder, Offer};
use super::ranges::Ranges;
use crate::link::POLL;
use crate::protocol::{CHUNK, TOKEN_LEN};

/// Striped transfers open at once, at most (each holds at most 15 joined connections).
pub const MAX_OPEN: usize = 64;
/// How long a striped transfer's connections have to join once its session is accepted.
pub const JOIN_TIMEOUT: Duration = Duration::from_secs(10);

/// Who a connection's peer is, as far as this end can tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Identity {
    /// Its address (the port differs per connection).
    pub ip: Option<IpAddr>,
    /// Whether the connection ran the key agreement (with this listener's one credential).
    pub secured: bool,
}

impl Identity {
    /// The identity of `stream`'s peer.
    pub fn of(stream: &UdtStream) -> Identity {
        Identity {
            ip: stream.peer_addr().ok().map(|a| a.ip()),
            secured: stream.handshake_transcript().is_some(),
        }
    }
}

/// The open striped transfers of a receiver, by token.
#[derive(Debug, Default)]
pub struct Joins(Mutex<HashMap<[u8; TOKEN_LEN], Arc<Striped>>>);

/// A token registered for the life of its session; closed (and its transfer ended) on drop.
pub struct Registration<'j> {
    joins: &'j Joins,
    token: [u8; TOKEN_LEN],
    /// The transfer.
    pub striped: Arc<Striped>,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        self.striped.fail("the transfer ended");
        lock(&self.joins.0).remove(&self.token);
    }
}

impl Joins {
    /// Open a striped transfer of `connections` connections under `token`, for a session whose
    /// peer is `identity`; why not.
    pub fn open(
        &self,
        token: [u8; TOKEN_LEN],
        connections: u16,
        identity: Identity,
    ) -> Result<Registration<'_>, String> {
        let mut open = lock(&self.0);
        if open.len() >= MAX_OPEN {
            return Err(format!("{MAX_OPEN} striped transfers are open already; try again later"));
        }
        if open.contains_key(&token) {
            return Err("a striped transfer of this token is open already".into());
        }
        let striped = Arc::new(Striped::new(connections, identity));
        open.insert(token, Arc::clone(&striped));
        Ok(Registration { joins: self, token, striped })
    }

    /// The open transfer of `token`.
    pub fn find(&self, token: &[u8; TOKEN_LEN]) -> Option<Arc<Striped>> {
        lock(&self.0).get(token).cloned()
    }

    /// Whether a transfer whose session's peer is at `ip` still waits for a connection to join.
    pub fn expects(&self, ip: IpAddr) -> bool {
        lock(&self.0).values().any(|s| s.identity.ip == Some(ip) && s.awaits_member())
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One striped transfer: its connections and its files being received in ranges.
#[derive(Debug)]
pub struct Striped {
    /// Connections in all, the session's included.
    pub connections: u16,
    identity: Identity,
    opened: Instant,
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Debug)]
struct State {
    /// Which connection numbers joined (0, the session's, from the start).
    joined: Vec<bool>,
    /// Why the transfer is over (failed or ended); nothing more is taken.
    over: Option<String>,
    files: HashMap<u32, Slot>,
    /// The highest entry index opened for ranges.
    latest: Option<u32>,
    /// When a range was last written or a connection joined.
    activity: Instant,
    /// Bytes the joined connections received and the session's connection has not told yet.
    moved: u64,
    /// Range buffers to swap for ones held for the in-order hash.
    spare: Vec<Vec<u8>>,
}

/// What becomes of the ranges of one entry.
#[derive(Debug)]
enum Slot {
    Open(OpenFile),
    /// Read and thrown away (the file failed or its proof did not match).
    Discard,
    /// Complete: any further range is a duplicate.
    Done,
}

/// A file receiving ranges.
#[derive(Debug)]
pub struct OpenFile {
    file: Arc<File>,
    start: u64,
    size: u64,
    reserved: Ranges,
    written: Ranges,
    /// Ranges reserved and not yet written or given back.
    in_flight: usize,
    /// The first write error.
    pub write_error: Option<String>,
    /// The file's hash, in order.
    pub order: InOrder,
}

impl OpenFile {
    /// Where the bytes written without a hole from the file's start end.
    pub fn prefix_end(&self) -> u64 {
        self.written.prefix_end(self.start)
    }
}

/// Where a reserved range goes.
pub enum Reserved {
    /// Into this file, at the offset reserved.
    Write(Arc<File>),
    /// Nowhere: read it and throw it away.
    Discard,
}

impl Striped {
    fn new(connections: u16, identity: Identity) -> Striped {
        let mut joined = vec![false; usize::from(connections)];
        joined[0] = true;
        let now = Instant::now();
        let state = State {
            joined,
            over: None,
            files: HashMap::new(),
            latest: None,
            activity: now,
            moved: 0,
            spare: Vec::new(),
        };
        Striped { connections, identity, opened: now, state: Mutex::new(state), changed: Condvar::new() }
    }

    /// Whether a connection may still join.
    fn awaits_member(&self) -> bool {
        let state = lock(&self.state);
        state.over.is_none() && state.joined.iter().any(|j| !j) && self.opened.elapsed() < JOIN_TIMEOUT
    }

    /// Take connection `member` from a peer of `identity`; why not.
    pub fn join(&self, member: u16, identity: Identity) -> Result<(), String> {
        if identity != self.identity {
            return Err(
                "a joining connection from another peer than the transfer's (address or security)".into()
            );
        }
        let mut state = lock(&self.state);
        if let Some(why) = &state.over {
            return Err(format!("the transfer is over ({why})"));
        }
        match state.joined.get_mut(usize::from(member)) {
            None => Err(format!("the transfer has {} connections, not {}", self.connections, member + 1)),
            Some(true) => Err(format!("connection {member} of the transfer joined already")),
            Some(joined) => {
                *joined = true;
                state.activity = Instant::now();
                Ok(())
            }
        }
    }

    /// Whether the transfer is over (its connections stop reading).
    pub fn is_over(&self) -> bool {
        lock(&self.state).over.is_some()
    }

    /// Bytes received since the last call (on any connection: the session's connection tells
    /// its observer).
    pub fn take_moved(&self) -> u64 {
        std::mem::take(&mut lock(&self.state).moved)
    }

    /// Why the transfer is over, if it is.
    pub fn why_over(&self) -> Option<String> {
        lock(&self.state).over.clone()
    }

    /// End the transfer for this reason (the first one given stays); every wait returns.
    pub fn fail(&self, why: &str) {
        let mut state = lock(&self.state);
        state.over.get_or_insert_with(|| why.to_string());
        self.changed.notify_all();
    }

    /// Open entry `index` for ranges of `[start, size)` into `file`; ranges that came for it
    /// already wait for this. Entries open in increasing order.
    pub fn open_file(
        &self,
        index: u32,
        file: File,
        (start, size): (u64, u64),
        hasher: blake3::Hasher,
    ) -> Result<(), String> {
        let limit = (8 * CHUNK * usize::from(self.connections)).min(64 * CHUNK);
        self.open_slot(
            index,
            Slot::Open(OpenFile {
                file: Arc::new(file),
                start,
                size,
                reserved: Ranges::default(),
                written: Ranges::default(),
                in_flight: 0,
                write_error: None,
                order: InOrder::new(hasher, start, limit),
            }),
        )
    }

    /// Open entry `index` for ranges that are read and thrown away.
    pub fn open_discard(&self, index: u32) -> Result<(), String> {
        self.open_slot(index, Slot::Discard)
    }

    fn open_slot(&self, index: u32, slot: Slot) -> Result<(), String> {
        let mut state = lock(&self.state);
        if state.latest.is_some_and(|latest| index <= latest) {
            return Err(format!("striped data for entry {index} out of order"));
        }
        state.latest = Some(index);
        state.files.insert(index, slot);
        self.changed.notify_all();
        Ok(())
    }

    /// Reserve `len` bytes at `offset` of entry `index`, waiting (at most `idle`) for its
    /// session to open it; why not (a range outside the file, over another, for an entry that
    /// takes none, or the transfer is over).
    pub fn reserve(
        &self,
        index: u32,
        offset: u64,
        len: u32,
        idle: Option<Duration>,
    ) -> Result<Reserved, String> {
        let since = Instant::now();
        let mut state = lock(&self.state);
        loop {
            if let Some(why) = &state.over {
                return Err(format!("the transfer is over ({why})"));
            }
            if state.files.contains_key(&index) {
                break;
            }
            if state.latest.is_some_and(|latest| index < latest) {
                return Err(format!("a range of entry {index}, whose data is not striped"));
            }
            if idle.is_some_and(|idle| since.elapsed() >= idle) {
                return Err(format!("a range of entry {index}, whose data never began"));
            }
            state = self.changed.wait_timeout(state, POLL).unwrap_or_else(|e| e.into_inner()).0;
        }
        let slot = state.files.get_mut(&index);
        let open = match slot {
            Some(Slot::Open(open)) => open,
            Some(Slot::Discard) => return Ok(Reserved::Discard),
            _ => return Err(format!("a range of entry {index}, which is complete")),
        };
        let end = offset.checked_add(u64::from(len)).filter(|&end| offset >= open.start && end <= open.size);
        let Some(end) = end else {
            return Err(format!(
                "a range of {len} bytes at {offset} outside bytes {} to {} of entry {index}",
                open.start, open.size
            ));
        };
        if !open.reserved.insert(offset, end) {
            return Err(format!(
                "a range of {len} bytes at {offset} of entry {index} over one received already"
            ));
        }
        open.in_flight += 1;
        Ok(Reserved::Write(Arc::clone(&open.file)))
    }

    /// The first `len` bytes of `buf` were written at `offset` of entry `index` (a range still
    /// reserved): hash them if they continue the hashed prefix (and what was held after them),
    /// else hold them (`buf` becomes a spare buffer) or leave them to be read back.
    pub fn hash_in_order(&self, index: u32, offset: u64, buf: &mut Vec<u8>, len: usize) {
        let mut state = lock(&self.state);
        let State { files, spare, .. } = &mut *state;
        let Some(Slot::Open(open)) = files.get_mut(&index) else { return };
        let Offer::Hash(mut hasher) =
            open.order.offer(offset, buf, len, || spare.pop().unwrap_or_else(|| vec![0u8; CHUNK]))
        else {
            return;
        };
        drop(state);
        hasher.update(&buf[..len]);
        let mut at = offset + len as u64;
        loop {
            let mut state = lock(&self.state);
            let State { files, spare, .. } = &mut *state;
            let Some(Slot::Open(open)) = files.get_mut(&index) else { return };
            match open.order.next(hasher, at) {
                Ok((h, held, n)) => {
                    drop(state);
                    hasher = h;
                    hasher.update(&held[..n]);
                    at += n as u64;
                    lock(&self.state).spare.push(held);
                }
                Err(()) => {
                    spare.truncate(usize::from(self.connections) * 2);
                    return;
                }
            }
        }
    }

    /// A reserved range is done: written, or failed to write with `error`, or (`read` false)
    /// its bytes never came, and it is given back.
    pub fn settle(&self, index: u32, offset: u64, len: u32, read: bool, error: Option<String>) {
        let mut state = lock(&self.state);
        state.activity = Instant::now();
        if read {
            state.moved += u64::from(len);
        }
        if let Some(Slot::Open(open)) = state.files.get_mut(&index) {
            let end = offset + u64::from(len);
            open.in_flight = open.in_flight.saturating_sub(1);
            if read {
                open.written.insert(offset, end);
                if open.write_error.is_none() {
                    open.write_error = error;
                }
            } else {
                open.reserved.remove(offset, end);
            }
        }
        self.changed.notify_all();
    }

    /// Wait until every byte of entry `index` was written, then close it for ranges; the
    /// file's state, or why it will not be complete (the transfer failed, a connection never
    /// joined, nothing came for `idle`, `cancelled`).
    pub fn wait_complete(
        &self,
        index: u32,
        idle: Option<Duration>,
        cancelled: &dyn Fn() -> bool,
        moved: &mut dyn FnMut(u64),
    ) -> Result<OpenFile, String> {
        let mut state = lock(&self.state);
        loop {
            let bytes = std::mem::take(&mut state.moved);
            if bytes > 0 {
                drop(state);
                moved(bytes);
                state = lock(&self.state);
            }
            if let Some(why) = &state.over {
                return Err(why.clone());
            }
            match state.files.get(&index) {
                Some(Slot::Open(open)) if open.prefix_end() >= open.size && open.in_flight == 0 => break,
                Some(Slot::Open(_)) => {}
                _ => return Err(format!("entry {index} is not receiving ranges")),
            }
            if cancelled() {
                return Err("interrupted".into());
            }
            let missing: Vec<String> = (0..self.connections)
                .filter(|&k| !state.joined[usize::from(k)])
                .map(|k| k.to_string())
                .collect();
            if !missing.is_empty() && self.opened.elapsed() >= JOIN_TIMEOUT {
                return Err(format!(
                    "connection {} of the striped transfer never joined within {} s ({} in all)",
                    missing.join(", "),
                    JOIN_TIMEOUT.as_secs(),
                    self.connections
                ));
            }
            if let Some(idle) = idle.filter(|&idle| state.activity.elapsed() >= idle) {
                return Err(format!(
                    "no range came on any connection of the striped transfer for {} s (--idle-timeout)",
                    idle.as_secs_f64()
                ));
            }
            state = self.changed.wait_timeout(state, POLL).unwrap_or_else(|e| e.into_inner()).0;
        }
        match state.files.insert(index, Slot::Done) {
            Some(Slot::Open(open)) => Ok(open),
            _ => Err(format!("entry {index} is not receiving ranges")),
        }
    }

    /// Close entry `index` to ranges (later ones are thrown away), waiting at most `limit` for
    /// the ranges being written; its state, if it was open.
    pub fn close_file(&self, index: u32, limit: Duration) -> Option<OpenFile> {
        let deadline = Instant::now() + limit;
        let mut state = lock(&self.state);
        while matches!(state.files.get(&index), Some(Slot::Open(open)) if open.in_flight > 0)
            && Instant::now() < deadline
        {
            state = self.changed.wait_timeout(state, POLL).unwrap_or_else(|e| e.into_inner()).0;
        }
        match state.files.insert(index, Slot::Discard) {
            Some(Slot::Open(open)) => Some(open),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity() -> Identity {
        Identity { ip: Some(IpAddr::from([127, 0, 0, 1])), secured: false }
    }

    #[test]
    fn tokens_open_once_and_connections_join_once_from_the_same_peer() {
        let joins = Joins::default();
        let token = [7u8; TOKEN_LEN];
        let reg = joins.open(token, 3, identity()).unwrap();
        assert!(joins.open(token, 3, identity()).is_err(), "the same token twice");
        assert!(joins.find(&[8u8; TOKEN_LEN]).is_none(), "an unknown token");
        let striped = joins.find(&token).unwrap();
        assert!(joins.expects(IpAddr::from([127, 0, 0, 1])));
        let other = Identity { ip: Some(IpAddr::from([10, 0, 0, 1])), secured: false };
        assert!(striped.join(1, other).is_err(), "another address");
        assert!(striped.join(1, Identity { secured: true, ..identity() }).is_err(), "secured differently");
        striped.join(1, identity()).unwrap();
        assert!(striped.join(1, identity()).is_err(), "twice");
        assert!(striped.join(3, identity()).is_err(), "beyond the count");
        striped.join(2, identity()).unwrap();
        assert!(!joins.expects(IpAddr::from([127, 0, 0, 1])), "all joined");
        drop(reg);
        assert!(joins.find(&token).is_none(), "closed with its session");
        assert!(striped.is_over());
    }

    #[test]
    fn ranges_go_only_inside_the_file_once() {
        let joins = Joins::default();
        let reg = joins.open([1u8; TOKEN_LEN], 2, identity()).unwrap();
        let s = &reg.striped;
        let file = tempfile::tempfile().unwrap();
        s.open_file(4, file, (100, 300), blake3::Hasher::new()).unwrap();
        assert!(
            s.open_file(3, tempfile::tempfile().unwrap(), (0, 1), blake3::Hasher::new()).is_err(),
            "out of order"
        );
        let idle = Some(Duration::from_millis(1));
        assert!(s.reserve(4, 50, 60, idle).is_err(), "before the start");
        assert!(s.reserve(4, 250, 60, idle).is_err(), "past the end");
        assert!(s.reserve(4, u64::MAX - 1, 10, idle).is_err(), "wrapping");
        assert!(s.reserve(2, 0, 1, idle).is_err(), "an entry not striped");
        assert!(s.reserve(9, 0, 1, idle).is_err(), "an entry that never opens");
        assert!(matches!(s.reserve(4, 100, 100, idle), Ok(Reserved::Write(_))));
        assert!(s.reserve(4, 150, 100, idle).is_err(), "overlapping");
        assert!(s.reserve(4, 100, 100, idle).is_err(), "a duplicate");
        s.settle(4, 100, 100, true, None);
        assert!(matches!(s.reserve(4, 200, 100, idle), Ok(Reserved::Write(_))));
        s.settle(4, 200, 100, false, None);
        assert!(matches!(s.reserve(4, 200, 100, idle), Ok(Reserved::Write(_))), "given back, taken again");
        s.settle(4, 200, 100, true, None);
        let mut moved = 0;
        let open = s.wait_complete(4, idle, &|| false, &mut |n| moved += n).unwrap();
        assert_eq!(moved, 200, "the bytes received, told");
        assert_eq!(open.prefix_end(), 300);
        assert!(s.reserve(4, 100, 1, idle).is_err(), "after completion");
        s.open_discard(5).unwrap();
        assert!(matches!(s.reserve(5, 0, 1, idle), Ok(Reserved::Discard)));
    }
}
