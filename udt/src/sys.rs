//! The few Linux calls std does not offer: an eventfd to wake the I/O thread, `ppoll` to sleep
//! until a socket is readable, the eventfd fires, or a nanosecond-precision timeout passes, and
//! `sendmsg` / `recvmsg` with iovecs and UDP GSO / GRO control messages.
//!
//! This is the only module with `unsafe` code. Each block is a single libc call on file
//! descriptors this module owns or borrows for the duration of the call, with buffers whose
//! lengths are passed alongside them.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// A non-blocking eventfd: `notify` from any thread wakes a `wait` on the I/O thread.
#[derive(Debug)]
pub struct EventFd(OwnedFd);

impl EventFd {
    /// A new eventfd.
    pub fn new() -> io::Result<Self> {
        // SAFETY: eventfd has no pointer arguments; a negative return is an error.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor we own from here on.
        Ok(EventFd(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Wake the waiter (counts accumulate; one `drain` clears them).
    pub fn notify(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to our descriptor. A full counter (EAGAIN)
        // means a wake-up is already pending, which is all we need.
        unsafe {
            libc::write(self.0.as_raw_fd(), (&one as *const u64).cast(), 8);
        }
    }

    /// Clear pending wake-ups.
    pub fn drain(&self) {
        let mut value: u64 = 0;
        // SAFETY: reads at most 8 bytes into a live u64 from our non-blocking descriptor.
        unsafe {
            libc::read(self.0.as_raw_fd(), (&mut value as *mut u64).cast(), 8);
        }
    }

    /// The descriptor, for `wait`.
    pub fn raw(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

/// What ended a `wait`.
#[derive(Clone, Copy, Debug)]
pub struct Ready {
    /// The eventfd fired.
    pub wake: bool,
    /// The socket may have datagrams: it was not watched, the wait was interrupted, or `poll`
    /// reported it readable (or in error: the read reports that). `false` only when `poll`
    /// watched it and saw nothing.
    pub socket: bool,
}

impl Default for Ready {
    fn default() -> Self {
        Ready { wake: false, socket: true }
    }
}

/// Sleep until `socket` or `wake` is readable, `socket` is writable (when `writable`), or
/// `timeout` passes (`None`: no timeout). A negative `socket` is not watched (`poll` ignores
/// negative descriptors): only `wake` or the timeout end the sleep.
pub fn wait(socket: RawFd, wake: RawFd, timeout: Option<Duration>, writable: bool) -> io::Result<Ready> {
    let events = if writable { libc::POLLIN | libc::POLLOUT } else { libc::POLLIN };
    let mut fds = [
        libc::pollfd { fd: socket, events, revents: 0 },
        libc::pollfd { fd: wake, events: libc::POLLIN, revents: 0 },
    ];
    let ts = timeout.map(|d| libc::timespec {
        tv_sec: d.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    });
    let ts_ptr = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `fds` is a live array of 2 pollfd and its length is passed; `ts_ptr` is null or
    // points to a live timespec; no signal mask is changed (null sigmask).
    let n = unsafe { libc::ppoll(fds.as_mut_ptr(), 2, ts_ptr, std::ptr::null()) };
    if n < 0 {
        let err = io::Error::last_os_error();
        if err.kind() == io::ErrorKind::Interrupted {
            return Ok(Ready::default());
        }
        return Err(err);
    }
    let readable = fds[0].revents & !libc::POLLOUT != 0;
    Ok(Ready { wake: fds[1].revents != 0, socket: socket < 0 || readable })
}

/// Ask the kernel to wake this thread within `slack` of its timers (default is 50 us), so
/// `ppoll` timeouts keep pacing precise. Best effort.
pub fn set_timer_slack(slack: Duration) {
    let ns = slack.as_nanos().clamp(1, u32::MAX as u128) as libc::c_ulong;
    // SAFETY: prctl(PR_SET_TIMERSLACK) takes integer arguments only and affects this thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, ns, 0 as libc::c_ulong, 0 as libc::c_ulong, 0 as libc::c_ulong);
    }
}

/// Attach a classic BPF program (`program`) with socket option `name` (such as
/// `SO_ATTACH_REUSEPORT_CBPF`) at level `SOL_SOCKET`.
pub fn attach_cbpf(fd: RawFd, name: libc::c_int, program: &[libc::sock_filter]) -> io::Result<()> {
    let len = u16::try_from(program.len()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let prog = libc::sock_fprog { len, filter: program.as_ptr().cast_mut() };
    // SAFETY: `prog` points at `program`, alive for the call; the kernel copies it and does not
    // write through the pointer.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            name,
            std::ptr::addr_of!(prog).cast(),
            std::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Set an integer socket option (used for `SO_RCVBUFFORCE` / `SO_SNDBUFFORCE`, which socket2
/// does not wrap). Fails without CAP_NET_ADMIN.
pub fn set_int_option(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: passes a pointer to a live c_int and its exact size.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `UDP_SEGMENT` (linux/udp.h): generic segmentation offload for UDP sends.
const UDP_SEGMENT: libc::c_int = 103;
/// `UDP_GRO` (linux/udp.h): generic receive offload for UDP.
const UDP_GRO: libc::c_int = 104;

/// Send the concatenation of `iov` to `dest` in one `sendmsg`: as one datagram, or with
/// `segment` as datagrams of that many bytes each (the last may be shorter), with UDP GSO.
/// Errors such as `EINVAL` or `EIO` on a segmented send mean the kernel or device cannot do GSO.
/// The buffers are borrowed for the call only (`IoSlice`), so none can be freed while the
/// kernel reads it.
pub fn send_iov(
    fd: RawFd,
    iov: &[io::IoSlice<'_>],
    segment: Option<u16>,
    dest: &socket2::SockAddr,
) -> io::Result<usize> {
    // Room for one cmsg carrying a u16, aligned as the kernel expects.
    let mut control = [0u64; 4];
    // SAFETY: msghdr is a plain C struct; all-zero is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = dest.as_ptr() as *mut libc::c_void;
    msg.msg_namelen = dest.len();
    // `IoSlice` is guaranteed ABI-compatible with `iovec` on Unix (std documentation); the
    // kernel only reads through it.
    msg.msg_iov = iov.as_ptr().cast_mut().cast::<libc::iovec>();
    msg.msg_iovlen = iov.len();
    if let Some(segment) = segment {
        // SAFETY: CMSG_SPACE is a pure size computation.
        let space = unsafe { libc::CMSG_SPACE(std::mem::size_of::<u16>() as u32) } as usize;
        debug_assert!(space <= std::mem::size_of_val(&control));
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = space;
        // SAFETY: `msg` points at `control`, which has room for one header of `space` bytes;
        // CMSG_FIRSTHDR returns a pointer inside it, and CMSG_DATA room for the u16 written.
        unsafe {
            let cmsg = libc::CMSG_FIRSTHDR(&msg);
            (*cmsg).cmsg_level = libc::SOL_UDP;
            (*cmsg).cmsg_type = UDP_SEGMENT;
            (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<u16>() as u32) as usize;
            std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<u16>(), segment);
        }
    }
    // SAFETY: every pointer in `msg` refers to live memory of the stated length: `dest` and
    // `control` are borrowed or owned here, and each `IoSlice` borrows its buffer for at least
    // this call.
    let n = unsafe { libc::sendmsg(fd, &msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// Ask the kernel to coalesce received datagrams (UDP GRO). Returns whether it accepted.
pub fn enable_gro(fd: RawFd) -> bool {
    set_int_option(fd, libc::SOL_UDP, UDP_GRO, 1).is_ok()
}

/// Ask the kernel to stamp each received datagram with its arrival time (`SO_TIMESTAMPNS`).
/// Returns whether it accepted.
pub fn enable_rx_timestamps(fd: RawFd) -> bool {
    set_int_option(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1).is_ok()
}

/// What one [`recv_scatter`] got.
#[derive(Clone, Copy, Debug)]
pub struct Received {
    /// Bytes received.
    pub len: usize,
    /// The sender.
    pub from: std::net::SocketAddr,
    /// The segment size when the kernel coalesced several datagrams of that size (GRO; the
    /// last may be shorter).
    pub segment: Option<usize>,
    /// When the kernel received it (`CLOCK_REALTIME`, since the Unix epoch), when timestamps
    /// are on.
    pub stamp: Option<Duration>,
}

/// One receive, scattered over `bufs` in order.
pub fn recv_scatter(fd: RawFd, bufs: &mut [io::IoSliceMut<'_>]) -> io::Result<Received> {
    // SAFETY: sockaddr_storage is plain data; zero is a valid value.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut control = [0u64; 16];
    // SAFETY: msghdr is a plain C struct; all-zero is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = (&mut storage as *mut libc::sockaddr_storage).cast();
    msg.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // `IoSliceMut` is guaranteed ABI-compatible with `iovec` on Unix (std documentation).
    msg.msg_iov = bufs.as_mut_ptr().cast::<libc::iovec>();
    msg.msg_iovlen = bufs.len();
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control);
    // SAFETY: every pointer in `msg` refers to live memory of the stated length: the iovecs are
    // the caller's `IoSliceMut`s, which borrow their buffers mutably for this call.
    let n = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_DONTWAIT) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut segment = None;
    let mut stamp = None;
    // SAFETY: the kernel filled `msg_controllen` bytes of `control`; the CMSG macros walk only
    // within them, a UDP_GRO message carries an int and an SCM_TIMESTAMPNS one a timespec.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            let (level, kind) = ((*cmsg).cmsg_level, (*cmsg).cmsg_type);
            if level == libc::SOL_UDP && kind == UDP_GRO {
                let size = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>());
                if size > 0 {
                    segment = Some(size as usize);
                }
            } else if level == libc::SOL_SOCKET && kind == libc::SCM_TIMESTAMPNS {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::timespec>());
                if ts.tv_sec >= 0 && (0..1_000_000_000).contains(&ts.tv_nsec) {
                    stamp = Some(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32));
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    // SAFETY: the kernel wrote a socket address of `msg_namelen` bytes into `storage`.
    let addr = unsafe { socket2::SockAddr::new(storage, msg.msg_namelen) };
    let from = addr
        .as_socket()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "datagram from a non-IP address"))?;
    Ok(Received { len: n as usize, from, segment, stamp })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_tells_whether_the_socket_has_datagrams() {
        let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let wake = EventFd::new().unwrap();
        let short = Some(Duration::from_millis(1));
        // Nothing arrived: the timeout ends the wait and the socket is known empty.
        let ready = wait(socket.as_raw_fd(), wake.raw(), short, false).unwrap();
        assert!(!ready.wake && !ready.socket);
        // A wake-up alone says nothing of the socket.
        wake.notify();
        let ready = wait(socket.as_raw_fd(), wake.raw(), short, false).unwrap();
        assert!(ready.wake && !ready.socket);
        wake.drain();
        // A datagram makes it readable.
        let peer = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        peer.send_to(b"x", socket.local_addr().unwrap()).unwrap();
        let ready = wait(socket.as_raw_fd(), wake.raw(), Some(Duration::from_secs(5)), false).unwrap();
        assert!(ready.socket);
        // An unwatched socket may always hold datagrams.
        let ready = wait(-1, wake.raw(), short, false).unwrap();
        assert!(ready.socket);
        // Waiting for room to send: an idle socket has it at once, which is no datagram.
        let _ = socket.recv_from(&mut [0u8; 16]);
        let ready = wait(socket.as_raw_fd(), wake.raw(), Some(Duration::from_secs(5)), true).unwrap();
        assert!(!ready.wake && !ready.socket);
    }

    #[test]
    fn send_iov_sends_borrowed_slices_as_one_datagram_or_as_segments() {
        use std::io::IoSlice;
        let rx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let dest = socket2::SockAddr::from(rx.local_addr().unwrap());
        let (header, payload) = (vec![1u8, 2, 3, 4], vec![9u8; 96]);
        // A header and a payload from two buffers: one datagram, their concatenation.
        let n =
            send_iov(tx.as_raw_fd(), &[IoSlice::new(&header), IoSlice::new(&payload)], None, &dest).unwrap();
        assert_eq!(n, 100);
        let mut buf = [0u8; 2048];
        let (got, _) = rx.recv_from(&mut buf).unwrap();
        assert_eq!(&buf[..4], &header[..]);
        assert_eq!(&buf[4..got], &payload[..]);
        assert_eq!(got, 100);
        // Two datagrams of 50 bytes with GSO (where the kernel offers it).
        match send_iov(tx.as_raw_fd(), &[IoSlice::new(&header), IoSlice::new(&payload)], Some(50), &dest) {
            Ok(n) => {
                assert_eq!(n, 100);
                let (a, _) = rx.recv_from(&mut buf).unwrap();
                assert_eq!((a, &buf[..4]), (50, &header[..]));
                let (b, _) = rx.recv_from(&mut buf).unwrap();
                assert_eq!((b, &buf[..b]), (50, &payload[46..]));
            }
            Err(e) => eprintln!("no UDP GSO here ({e}): segmented send not checked"),
        }
    }
}
