//! Where received datagrams land, so that each payload byte is copied once between the kernel
//! and the application: the kernel writes each datagram into an [`RxDatagram`] of its own, which
//! the connection's receive buffer takes by swapping instead of copying.
//!
//! A receive scatters over [`SEGMENTS`] buffers of `segment` bytes each, then one overflow area.
//! With UDP GRO the kernel hands over up to 64 datagrams of one size back to back (the last may
//! be shorter); when that size is `segment`, datagram k lies exactly in buffer k (*aligned*). A
//! single datagram that fits buffer 0 is aligned too. Anything else (another size, or more bytes
//! than the buffers hold) is gathered into one contiguous area and handled by copying, and
//! `segment` follows the size seen, so that the next receives land aligned.
//!
//! Invariants: when a receive starts every buffer has at least `segment` bytes of storage
//! (buffers a connection swapped in, or another shard took, may have none: they are replaced by
//! a spare another shard gave back, or allocated, which happens only while the connections'
//! receive buffers are first filled and the shards' buffers first circulate); nothing else
//! allocates per receive.

use std::io::{self, IoSliceMut};
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::time::Duration;

use udt_proto::buffer::RxDatagram;

use crate::sys;

/// Buffers per receive: UDP GRO coalesces at most 64 datagrams (kernel `UDP_GRO_CNT_MAX`).
pub(crate) const SEGMENTS: usize = 64;
/// Largest UDP datagram.
const MAX_DATAGRAM: usize = 65_536;
/// Coalesced datagrams smaller than this (control packets, tiny messages) do not change the
/// buffer size: full data packets are the ones worth landing aligned.
const MIN_SEGMENT: usize = 256;

/// How the datagrams of the last receive are laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Layout {
    /// Datagram k of `0..count` is [`Landing::datagram_mut`]`(k)`.
    Aligned(usize),
    /// `len` bytes in [`Landing::gathered`]: datagrams of `segment` bytes back to back, the last
    /// possibly shorter.
    Gathered {
        /// Bytes received.
        len: usize,
        /// Size of each datagram.
        segment: usize,
    },
}

/// The landing buffers of one I/O thread.
#[derive(Debug)]
pub(crate) struct Landing {
    bufs: Vec<RxDatagram>,
    /// Buffers to refill `bufs` with before allocating (given back by other shards).
    spares: Vec<RxDatagram>,
    overflow: Vec<u8>,
    gathered: Vec<u8>,
    /// Bytes of each buffer handed to the kernel.
    segment: usize,
    /// The kernel's timestamp of the last receive.
    stamp: Option<Duration>,
}

impl Landing {
    /// Landing buffers for datagrams of `segment` bytes (the expected full data packet).
    pub fn new(segment: usize) -> Self {
        let segment = segment.clamp(1, MAX_DATAGRAM);
        Landing {
            bufs: (0..SEGMENTS).map(|_| RxDatagram::with_capacity(segment)).collect(),
            spares: Vec::new(),
            overflow: vec![0; MAX_DATAGRAM],
            gathered: Vec::with_capacity(MAX_DATAGRAM),
            segment,
            stamp: None,
        }
    }

    /// Receive once from `fd` (non-blocking): the sender and where its datagrams are.
    pub fn receive(&mut self, fd: RawFd) -> io::Result<(SocketAddr, Layout)> {
        let size = self.segment;
        for b in &mut self.bufs {
            if b.capacity() < size {
                *b = loop {
                    match self.spares.pop() {
                        Some(spare) if spare.capacity() >= size => break spare,
                        Some(_) => {}
                        None => break RxDatagram::with_capacity(size),
                    }
                };
            }
        }
        let got = self.scatter(fd)?;
        self.stamp = got.stamp;
        Ok((got.from, self.lay_out(got.len, got.segment)))
    }

    /// When the kernel received the last receive's datagrams (`CLOCK_REALTIME`), if the socket
    /// has timestamps on ([`sys::enable_rx_timestamps`]).
    pub fn stamp(&self) -> Option<Duration> {
        self.stamp
    }

    fn scatter(&mut self, fd: RawFd) -> io::Result<sys::Received> {
        let size = self.segment;
        let mut bufs = self.bufs.iter_mut();
        let mut overflow = Some(&mut self.overflow[..]);
        let mut iov: [IoSliceMut<'_>; SEGMENTS + 1] = std::array::from_fn(|_| match bufs.next() {
            Some(b) => IoSliceMut::new(&mut b.storage_mut()[..size]),
            None => IoSliceMut::new(overflow.take().unwrap_or_default()),
        });
        sys::recv_scatter(fd, &mut iov)
    }

    /// Mark the datagrams of an `n`-byte receive (GRO segment size `gro`), or gather them.
    fn lay_out(&mut self, n: usize, gro: Option<usize>) -> Layout {
        let size = self.segment;
        let seg = gro.unwrap_or(n).max(1);
        let count = n.div_ceil(seg);
        let aligned = (count <= 1 && n <= size) || (seg == size && count <= SEGMENTS);
        if aligned {
            for (k, b) in self.bufs[..count].iter_mut().enumerate() {
                b.set_len(seg.min(n - k * seg));
            }
            return Layout::Aligned(count);
        }
        self.gathered.clear();
        let mut left = n;
        for b in &self.bufs {
            let take = left.min(size);
            self.gathered.extend_from_slice(&b.storage()[..take]);
            left -= take;
        }
        let take = left.min(self.overflow.len());
        self.gathered.extend_from_slice(&self.overflow[..take]);
        if (count > 1 && seg >= MIN_SEGMENT) || seg > size {
            self.segment = seg.min(MAX_DATAGRAM);
        }
        Layout::Gathered { len: self.gathered.len(), segment: seg }
    }

    /// The spare buffers' list, to add buffers to (refills come from its end).
    pub fn spares_mut(&mut self) -> &mut Vec<RxDatagram> {
        &mut self.spares
    }

    /// Datagram `k` of an aligned receive; the connection may swap it for another buffer, or
    /// another shard take it (left empty: refilled at the next receive).
    pub fn datagram_mut(&mut self, k: usize) -> &mut RxDatagram {
        &mut self.bufs[k]
    }

    /// The bytes of a gathered receive.
    pub fn gathered(&self) -> &[u8] {
        &self.gathered
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    /// Write `bytes` over the buffers as the kernel's scatter would.
    fn scatter(l: &mut Landing, bytes: &[u8]) {
        let size = l.segment;
        let mut chunks = bytes.chunks(size);
        for b in &mut l.bufs {
            match chunks.next() {
                Some(c) => b.storage_mut()[..c.len()].copy_from_slice(c),
                None => return,
            }
        }
        let rest: Vec<u8> = chunks.flatten().copied().collect();
        l.overflow[..rest.len()].copy_from_slice(&rest);
    }

    /// `count` datagrams of `seg` bytes (the last `last` bytes), each byte naming its datagram
    /// and position.
    fn datagrams(seg: usize, count: usize, last: usize) -> Vec<Vec<u8>> {
        (0..count)
            .map(|k| {
                let len = if k + 1 == count { last } else { seg };
                (0..len).map(|i| (k * 7 + i) as u8).collect()
            })
            .collect()
    }

    #[test]
    fn a_single_datagram_that_fits_lands_aligned() {
        let mut l = Landing::new(100);
        scatter(&mut l, &[9; 60]);
        assert_eq!(l.lay_out(60, None), Layout::Aligned(1));
        assert_eq!(l.datagram_mut(0).bytes(), &[9; 60]);
        // With GRO on, a lone datagram may come with its own size as the segment.
        assert_eq!(l.lay_out(100, Some(100)), Layout::Aligned(1));
        assert_eq!(l.datagram_mut(0).len(), 100);
        assert_eq!(l.lay_out(0, None), Layout::Aligned(0));
    }

    #[test]
    fn coalesced_datagrams_of_the_buffer_size_land_one_per_buffer() {
        let mut l = Landing::new(300);
        let sent = datagrams(300, SEGMENTS, 120);
        scatter(&mut l, &sent.concat());
        let n = 300 * (SEGMENTS - 1) + 120;
        assert_eq!(l.lay_out(n, Some(300)), Layout::Aligned(SEGMENTS));
        for (k, want) in sent.iter().enumerate() {
            assert_eq!(l.datagram_mut(k).bytes(), &want[..], "datagram {k}");
        }
        assert_eq!(l.segment, 300);
    }

    #[test]
    fn other_sizes_are_gathered_and_the_layout_follows_them() {
        let mut l = Landing::new(300);
        // Smaller data packets: gathered contiguous, and the next receive is laid out for them.
        let sent = datagrams(280, 5, 280);
        scatter(&mut l, &sent.concat());
        assert_eq!(l.lay_out(280 * 5, Some(280)), Layout::Gathered { len: 1400, segment: 280 });
        assert_eq!(l.gathered(), &sent.concat()[..]);
        assert_eq!(l.segment, 280);
        // Tiny coalesced control packets do not shrink it.
        let acks = datagrams(40, 3, 40);
        scatter(&mut l, &acks.concat());
        assert_eq!(l.lay_out(120, Some(40)), Layout::Gathered { len: 120, segment: 40 });
        assert_eq!(l.gathered(), &acks.concat()[..]);
        assert_eq!(l.segment, 280);
        // One datagram larger than a buffer spills into the next ones; the layout grows.
        let big = datagrams(1000, 1, 1000).concat();
        scatter(&mut l, &big);
        assert_eq!(l.lay_out(1000, None), Layout::Gathered { len: 1000, segment: 1000 });
        assert_eq!(l.gathered(), &big[..]);
        assert_eq!(l.segment, 1000);
    }

    #[test]
    fn bytes_beyond_the_buffers_reach_the_overflow_area() {
        let mut l = Landing::new(100);
        let sent = datagrams(200, 40, 200).concat(); // 8000 bytes > 64 x 100
        scatter(&mut l, &sent);
        assert_eq!(l.lay_out(sent.len(), Some(200)), Layout::Gathered { len: 8000, segment: 200 });
        assert_eq!(l.gathered(), &sent[..]);
    }

    #[test]
    fn buffers_taken_by_a_connection_are_replaced_before_the_next_receive() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_nonblocking(true).unwrap();
        let mut l = Landing::new(64);
        *l.datagram_mut(0) = RxDatagram::empty(); // as after a swap with a fresh slot
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.send_to(b"hello", rx.local_addr().unwrap()).unwrap();
        let (from, layout) = loop {
            match l.receive(rx.as_raw_fd()) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::yield_now(),
                r => break r.unwrap(),
            }
        };
        assert_eq!(from, tx.local_addr().unwrap());
        assert_eq!(layout, Layout::Aligned(1));
        assert_eq!(l.datagram_mut(0).bytes(), b"hello");
        assert_eq!(l.datagram_mut(0).capacity(), 64);
    }

    #[test]
    fn a_buffer_another_shard_took_is_replaced_by_a_spare_it_gave_back() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_nonblocking(true).unwrap();
        let mut l = Landing::new(64);
        let _forwarded = std::mem::take(l.datagram_mut(0));
        // Given back: one too small for the landing's size (dropped), one that fits.
        let fits = RxDatagram::with_capacity(100);
        let at = fits.storage().as_ptr();
        l.spares_mut().extend([fits, RxDatagram::with_capacity(10)]);
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.send_to(b"hello", rx.local_addr().unwrap()).unwrap();
        let layout = loop {
            match l.receive(rx.as_raw_fd()) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::yield_now(),
                r => break r.unwrap().1,
            }
        };
        assert_eq!(layout, Layout::Aligned(1));
        assert_eq!(l.datagram_mut(0).bytes(), b"hello");
        assert_eq!(l.datagram_mut(0).storage().as_ptr(), at, "the spare that fits, not a new buffer");
        assert!(l.spares_mut().is_empty());
    }

    #[test]
    fn receives_carry_the_kernel_arrival_stamp_when_asked() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_nonblocking(true).unwrap();
        assert!(sys::enable_rx_timestamps(rx.as_raw_fd()));
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut l = Landing::new(64);
        let before = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
        tx.send_to(b"stamped", rx.local_addr().unwrap()).unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            match l.receive(rx.as_raw_fd()) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && std::time::Instant::now() < deadline => {
                    std::thread::yield_now()
                }
                r => {
                    r.unwrap();
                    break;
                }
            }
        }
        let after = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
        let stamp = l.stamp().expect("SO_TIMESTAMPNS gives every datagram a stamp");
        // The real-time clock may be stepped, but not within this test in practice.
        assert!(before <= stamp && stamp <= after, "{before:?} <= {stamp:?} <= {after:?}");
    }

    #[test]
    fn gso_sends_over_loopback_land_byte_exact() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_nonblocking(true).unwrap();
        sys::enable_gro(rx.as_raw_fd()); // best effort: without GRO each datagram comes alone
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let seg = 1200;
        let sent = datagrams(seg, 10, 700);
        let iov: Vec<io::IoSlice<'_>> = sent.iter().map(|d| io::IoSlice::new(d)).collect();
        let dest = socket2::SockAddr::from(rx.local_addr().unwrap());
        if sys::send_iov(tx.as_raw_fd(), &iov, Some(seg as u16), &dest).is_err() {
            for d in &sent {
                tx.send_to(d, rx.local_addr().unwrap()).unwrap();
            }
        }
        let mut l = Landing::new(seg);
        let mut got: Vec<Vec<u8>> = Vec::new();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while got.len() < sent.len() && std::time::Instant::now() < deadline {
            match l.receive(rx.as_raw_fd()) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::yield_now(),
                Err(e) => panic!("{e}"),
                Ok((_, Layout::Aligned(count))) => {
                    got.extend((0..count).map(|k| l.datagram_mut(k).bytes().to_vec()));
                }
                Ok((_, layout)) => panic!("equal-size datagrams must land aligned: {layout:?}"),
            }
        }
        assert_eq!(got, sent);
    }
}
