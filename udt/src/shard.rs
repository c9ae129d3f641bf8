//! Several I/O threads behind one listening port (`Options::io_threads`): each thread (shard)
//! has a UDP socket of its own, all bound to the port with `SO_REUSEPORT`, its own endpoint and
//! its own connections. One connection stays on one thread.
//!
//! Steering by socket id: shard `k` of `n` gives its connections socket ids `id % n == k`
//! (`Endpoint::set_id_class`), and a classic BPF program attached to the port's socket group
//! (`SO_ATTACH_REUSEPORT_CBPF`) hands the kernel's datagrams to shard `dest_id % n`, where the
//! destination socket id is the UDT header's fourth word. A connection request has destination
//! 0: it goes to shard `requester_id % n` (the handshake's seventh word), so the requests of one
//! peer socket, and then its connection, land on one shard, and connections from one client
//! port spread over all of them. [`owner`] is the same rule in Rust.
//!
//! The kernel decides per socket buffer, not per datagram: a GSO send or a GRO merge of several
//! connections' datagrams between two ports reaches one shard whole. A shard therefore checks
//! every datagram's owner and forwards those of another shard to it ([`Inbox`]: the buffer the
//! kernel wrote it into, with its arrival time, and the owner woken); the owner gives the
//! buffers its connections did not keep back to the shard they came from, whose next receives
//! land in them, so forwarding neither copies nor allocates once the buffers circulate.
//! Without the BPF program (an older kernel, another architecture) the kernel hashes by
//! address and port instead, and forwarding alone keeps every datagram with its connection.

use std::io;
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::sync::Mutex;

use udt_proto::buffer::RxDatagram;
use udt_proto::Instant;

/// The shard that owns a datagram of `bytes`, of `shards`: the destination socket id's class,
/// or for a connection request (destination 0), the requester's socket id's. Too short to
/// tell: shard 0 (which drops it as any endpoint would).
pub(crate) fn owner(bytes: &[u8], shards: usize) -> usize {
    let word = |at: usize| bytes.get(at..at + 4).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    let id = match word(12) {
        Some(0) => word(40).unwrap_or(0),
        Some(id) => id,
        None => 0,
    };
    (id as usize) % shards.max(1)
}

/// Datagrams another shard received for this one, and buffers given back by the shards this
/// one forwarded datagrams to.
#[derive(Debug, Default)]
pub(crate) struct Inbox {
    datagrams: Mutex<Vec<Forwarded>>,
    returned: Mutex<Vec<RxDatagram>>,
}

/// A datagram forwarded between shards: its sender, the buffer holding it, when the kernel
/// received it, and the shard that received it (where its buffer goes back).
#[derive(Debug)]
pub(crate) struct Forwarded {
    pub from: SocketAddr,
    pub datagram: RxDatagram,
    pub at: Instant,
    pub origin: usize,
}

impl Inbox {
    /// Add a datagram; whether the inbox was empty (then the owner must be woken).
    pub fn push(&self, datagram: Forwarded) -> bool {
        let mut d = self.datagrams.lock().unwrap_or_else(|e| e.into_inner());
        d.push(datagram);
        d.len() == 1
    }

    /// Take everything forwarded so far, in arrival order, into `into` (emptied first).
    pub fn take(&self, into: &mut Vec<Forwarded>) {
        into.clear();
        std::mem::swap(into, &mut *self.datagrams.lock().unwrap_or_else(|e| e.into_inner()));
    }

    /// Give back buffers of datagrams this shard forwarded (at most [`RETURNED_MAX`] wait).
    pub fn give_back(&self, buffers: &mut Vec<RxDatagram>) {
        let mut r = self.returned.lock().unwrap_or_else(|e| e.into_inner());
        let room = RETURNED_MAX.saturating_sub(r.len());
        r.extend(buffers.drain(..).take(room));
    }

    /// Take the buffers given back so far into `into` (added to what it holds).
    pub fn take_returned(&self, into: &mut Vec<RxDatagram>) {
        into.append(&mut self.returned.lock().unwrap_or_else(|e| e.into_inner()));
    }
}

/// Most buffers waiting to go back to a shard: a few receives' worth (the rest are freed).
pub(crate) const RETURNED_MAX: usize = 4 * crate::landing::SEGMENTS;

/// `SO_ATTACH_REUSEPORT_CBPF` (Linux's generic value; mips and sparc number it otherwise).
#[cfg(not(any(
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "sparc",
    target_arch = "sparc64"
)))]
const SO_ATTACH_REUSEPORT_CBPF: libc::c_int = 51;

/// Attach the steering program for `shards` sockets to the reuse-port group of socket `fd`.
/// The kernel runs it with the UDP payload at offset 0; an index out of range, or a load past
/// the end (which ends the program with 0), picks as said in the module doc.
#[cfg(not(any(
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "sparc",
    target_arch = "sparc64"
)))]
pub(crate) fn attach_steering(fd: RawFd, shards: usize) -> io::Result<()> {
    const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS: A = big-endian word at k
    const JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
    const MOD_K: u16 = 0x94; // BPF_ALU | BPF_MOD | BPF_K
    const RET_A: u16 = 0x16; // BPF_RET | BPF_A
    let n = shards as u32;
    let op = |code, jt, jf, k| libc::sock_filter { code, jt, jf, k };
    let program = [
        op(LD_W_ABS, 0, 0, 12), // 0: A = destination socket id
        op(JEQ_K, 2, 0, 0),     // 1: a connection request? to 4
        op(MOD_K, 0, 0, n),     // 2: A %= n
        op(RET_A, 0, 0, 0),     // 3: that socket
        op(LD_W_ABS, 0, 0, 40), // 4: A = the requester's socket id
        op(MOD_K, 0, 0, n),     // 5: A %= n
        op(RET_A, 0, 0, 0),     // 6: that socket
    ];
    crate::sys::attach_cbpf(fd, SO_ATTACH_REUSEPORT_CBPF, &program)
}

/// No steering program on this architecture: forwarding alone.
#[cfg(any(target_arch = "mips", target_arch = "mips64", target_arch = "sparc", target_arch = "sparc64"))]
pub(crate) fn attach_steering(_fd: RawFd, _shards: usize) -> io::Result<()> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(dest: u32) -> Vec<u8> {
        let mut b = vec![0u8; 16];
        b[12..16].copy_from_slice(&dest.to_be_bytes());
        b
    }

    #[test]
    fn a_datagram_belongs_to_its_destination_ids_class() {
        assert_eq!(owner(&header(7), 2), 1);
        assert_eq!(owner(&header(8), 2), 0);
        assert_eq!(owner(&header(8), 3), 2);
        assert_eq!(owner(&header(8), 1), 0);
    }

    #[test]
    fn a_connection_request_belongs_to_its_requesters_class() {
        let mut b = header(0);
        b.resize(64, 0);
        b[40..44].copy_from_slice(&13u32.to_be_bytes());
        assert_eq!(owner(&b, 4), 1);
        // Too short to carry the requester: shard 0.
        assert_eq!(owner(&header(0), 4), 0);
        assert_eq!(owner(&[1, 2, 3], 4), 0);
    }

    #[test]
    fn buffers_given_back_wait_for_the_next_receive_up_to_a_bound() {
        let inbox = Inbox::default();
        let mut back: Vec<RxDatagram> = (0..RETURNED_MAX + 5).map(|_| RxDatagram::with_capacity(8)).collect();
        inbox.give_back(&mut back);
        assert!(back.is_empty());
        let mut spares = vec![RxDatagram::with_capacity(8)];
        inbox.take_returned(&mut spares);
        assert_eq!(spares.len(), 1 + RETURNED_MAX, "kept what was there, the rest freed");
        inbox.take_returned(&mut spares);
        assert_eq!(spares.len(), 1 + RETURNED_MAX, "nothing twice");
    }
}
