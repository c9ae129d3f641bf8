//! The few Linux calls std does not offer: an eventfd to wake the I/O thread, and `ppoll` to
//! sleep until a socket is readable, the eventfd fires, or a nanosecond-precision timeout passes.
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

/// What ended a `wait` besides the socket or the timeout.
#[derive(Clone, Copy, Debug, Default)]
pub struct Ready {
    /// The eventfd fired.
    pub wake: bool,
}

/// Sleep until `socket` or `wake` is readable or `timeout` passes (`None`: no timeout).
pub fn wait(socket: RawFd, wake: RawFd, timeout: Option<Duration>) -> io::Result<Ready> {
    let mut fds = [
        libc::pollfd { fd: socket, events: libc::POLLIN, revents: 0 },
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
    Ok(Ready { wake: fds[1].revents != 0 })
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
