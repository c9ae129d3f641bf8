//! Datagrams on the simulated network and the pool their byte buffers come from.
//!
//! A [`Datagram`] is one UDP datagram: source and destination [`Addr`], the UDP payload (what
//! `udt-proto` reads and writes) in a pooled buffer, and a flag set when a link corrupted it. Its
//! size on the wire is the payload plus 28 bytes of IPv4 and UDP headers, the size links
//! serialise and MTUs check.
//!
//! Invariants: a datagram's buffer always has the pool's full length ([`BufPool::buf_size`]); the
//! payload is its first `len` bytes, so handing a buffer back to the pool never resizes or clears
//! it. Buffers go back to the pool when a datagram is dropped or consumed
//! ([`BufPool::recycle`]), so a steady simulation allocates no payload memory.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

/// IPv4 (20) and UDP (8) header bytes around every UDP payload.
pub const IP_UDP_OVERHEAD: usize = 28;

/// The address of a socket on a simulated host: host index and UDP port.
///
/// Host `h` has the IPv4 address 10.0.0.0 + h + 1 (so host 0 is 10.0.0.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Addr {
    /// Index of the host in the topology.
    pub host: u32,
    /// UDP port.
    pub port: u16,
}

impl Addr {
    /// The address as a `SocketAddr` (what `udt-proto` sees).
    pub fn socket_addr(self) -> SocketAddr {
        SocketAddr::V4(SocketAddrV4::new(self.ipv4(), self.port))
    }

    /// The host's IPv4 address.
    pub fn ipv4(self) -> Ipv4Addr {
        Ipv4Addr::from(0x0A00_0000u32.wrapping_add(self.host.wrapping_add(1) & 0x00FF_FFFF))
    }
}

/// One UDP datagram in flight.
#[derive(Debug, Default)]
pub struct Datagram {
    /// Sender.
    pub src: Addr,
    /// Destination.
    pub dst: Addr,
    /// A link flipped bytes in it; a receiving host checking UDP checksums drops it.
    pub corrupted: bool,
    /// Bytes of control channel N of a bulk flow, sent host to host past the links (see
    /// [`crate::bulk`]), rather than a UDP datagram.
    pub side_channel: Option<u8>,
    buf: Vec<u8>,
    len: u32,
}

impl Datagram {
    /// A datagram owning `buf` (from the pool), whose payload is `buf[..len]`.
    pub fn new(src: Addr, dst: Addr, buf: Vec<u8>, len: usize) -> Self {
        debug_assert!(len <= buf.len());
        Datagram { src, dst, corrupted: false, side_channel: None, len: len.min(buf.len()) as u32, buf }
    }

    /// The UDP payload.
    pub fn payload(&self) -> &[u8] {
        &self.buf[..self.len as usize]
    }

    /// The UDP payload, writable (corruption).
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buf[..self.len as usize]
    }

    /// UDP payload length in bytes.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether the payload is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes on the wire: payload plus IPv4 and UDP headers.
    pub fn wire_len(&self) -> usize {
        self.len as usize + IP_UDP_OVERHEAD
    }

    /// Take the buffer out (to give it back to the pool).
    pub fn into_buf(self) -> Vec<u8> {
        self.buf
    }
}

/// A free list of equally sized byte buffers.
#[derive(Debug)]
pub struct BufPool {
    free: Vec<Vec<u8>>,
    size: usize,
    allocated: u64,
}

impl BufPool {
    /// A pool of buffers of `size` bytes (the largest datagram any node produces).
    pub fn new(size: usize) -> Self {
        BufPool { free: Vec::new(), size, allocated: 0 }
    }

    /// Buffer length.
    pub fn buf_size(&self) -> usize {
        self.size
    }

    /// A buffer of [`buf_size`](Self::buf_size) bytes (contents unspecified).
    pub fn take(&mut self) -> Vec<u8> {
        match self.free.pop() {
            Some(b) => b,
            None => {
                self.allocated += 1;
                vec![0u8; self.size]
            }
        }
    }

    /// Give a buffer back.
    pub fn give(&mut self, buf: Vec<u8>) {
        if buf.len() == self.size {
            self.free.push(buf);
        }
    }

    /// Give a datagram's buffer back.
    pub fn recycle(&mut self, d: Datagram) {
        self.give(d.into_buf());
    }

    /// A datagram carrying a copy of `bytes` (at most `buf_size` of them).
    pub fn datagram(&mut self, src: Addr, dst: Addr, bytes: &[u8]) -> Datagram {
        let mut buf = self.take();
        let n = bytes.len().min(buf.len());
        buf[..n].copy_from_slice(&bytes[..n]);
        Datagram::new(src, dst, buf, n)
    }

    /// A copy of `d` in a fresh buffer (duplication).
    pub fn duplicate(&mut self, d: &Datagram) -> Datagram {
        let mut copy = self.datagram(d.src, d.dst, d.payload());
        copy.corrupted = d.corrupted;
        copy
    }

    /// Buffers allocated so far (the pool's high-water mark).
    pub fn allocated(&self) -> u64 {
        self.allocated
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_map_to_10_slash_8() {
        assert_eq!(Addr { host: 0, port: 9 }.socket_addr().to_string(), "10.0.0.1:9");
        assert_eq!(Addr { host: 256, port: 1 }.ipv4(), Ipv4Addr::new(10, 0, 1, 1));
    }

    #[test]
    fn pool_reuses_buffers() {
        let mut pool = BufPool::new(64);
        let d = pool.datagram(Addr::default(), Addr::default(), b"hello");
        assert_eq!(d.payload(), b"hello");
        assert_eq!(d.wire_len(), 33);
        pool.recycle(d);
        let d2 = pool.datagram(Addr::default(), Addr::default(), b"hi");
        assert_eq!(d2.payload(), b"hi");
        assert_eq!(pool.allocated(), 1);
    }
}
