//! The few system calls std lacks, the crate's only `unsafe` code: the TUN device ioctl,
//! `ppoll` with a nanosecond timeout, the timer slack, the real-time scheduling policy,
//! entering a network namespace and the effective user id.
//!
//! Invariants: every function is safe to call with any argument; each `unsafe` block passes
//! the kernel only pointers to live, correctly sized values and says why in a `SAFETY:` note.
#![allow(unsafe_code)]

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::time::Duration;

/// Whether the process runs with effective user id 0.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Attaches the freshly opened `/dev/net/tun` file to a new TUN device (`IFF_TUN |
/// IFF_NO_PI`: raw IP packets, no packet-information header) named after `pattern` (which may
/// contain `%d` for the kernel to pick a free number). Returns the device's actual name.
pub fn tun_set_iff(file: &File, pattern: &str) -> io::Result<String> {
    let bytes = pattern.as_bytes();
    if bytes.is_empty() || bytes.len() >= libc::IFNAMSIZ || bytes.contains(&0) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("bad device name '{pattern}'")));
    }
    // SAFETY: ifreq is plain old data (a name array and a union of integers and arrays), for
    // which all-zero bytes are a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, &src) in req.ifr_name.iter_mut().zip(bytes) {
        *dst = src as libc::c_char;
    }
    req.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
    // SAFETY: the fd is open for as long as `file` is borrowed; TUNSETIFF reads and writes one
    // `struct ifreq`, and `req` is a live, exclusively borrowed ifreq.
    let rc = unsafe { libc::ioctl(file.as_raw_fd(), libc::TUNSETIFF as _, &mut req as *mut libc::ifreq) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    let name: Vec<u8> = req.ifr_name.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8(name)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "device name is not UTF-8"))
}

/// Waits until `fd` is readable or `timeout` passes (nanosecond resolution, unlike `poll`).
/// Returns whether it is readable; an interrupted wait returns `Ok(false)`.
pub fn wait_readable(fd: BorrowedFd<'_>, timeout: Duration) -> io::Result<bool> {
    let mut pfd = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    let ts = libc::timespec {
        tv_sec: timeout.as_secs().min(i32::MAX as u64) as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: `pfd` is one live pollfd (nfds = 1) and `ts` a live timespec, both outliving the
    // call; a null signal mask means "keep the current one".
    let rc = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
    if rc < 0 {
        let err = io::Error::last_os_error();
        return if err.kind() == io::ErrorKind::Interrupted { Ok(false) } else { Err(err) };
    }
    Ok(rc > 0 && pfd.revents != 0)
}

/// Sets the calling thread's timer slack (how late the kernel may fire its timers to batch
/// wake-ups; 50 us by default) to `nanos`.
pub fn set_timer_slack(nanos: u64) -> io::Result<()> {
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument by value; the rest are ignored.
    let rc = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, nanos.max(1) as libc::c_ulong, 0, 0, 0) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Gives the calling thread the real-time `SCHED_FIFO` policy at `priority` (1 to 99), so
/// that it preempts ordinary processes as soon as it wakes up.
pub fn set_realtime(priority: i32) -> io::Result<()> {
    let param = libc::sched_param { sched_priority: priority };
    // SAFETY: `param` is a live sched_param for the duration of the call; pid 0 is the calling
    // thread.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Moves the calling thread into the network namespace `ns` (an open `/run/netns/NAME` or
/// `/proc/PID/ns/net` file). Sockets it creates afterwards live in that namespace.
pub fn enter_netns(ns: &File) -> io::Result<()> {
    // SAFETY: setns takes an fd, valid while `ns` is borrowed, and a flag; it changes only the
    // calling thread's network namespace.
    let rc = unsafe { libc::setns(ns.as_fd().as_raw_fd(), libc::CLONE_NEWNET) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_readable_times_out_on_an_idle_pipe() {
        let (reader, _writer) = std::os::unix::net::UnixStream::pair().unwrap();
        let t = std::time::Instant::now();
        assert!(!wait_readable(reader.as_fd(), Duration::from_millis(5)).unwrap());
        assert!(t.elapsed() >= Duration::from_millis(5));
        set_timer_slack(1).unwrap();
    }

    #[test]
    fn rejects_bad_device_names() {
        let f = File::open("/dev/null").unwrap();
        assert!(tun_set_iff(&f, "").is_err());
        assert!(tun_set_iff(&f, "a-name-that-is-far-too-long").is_err());
        assert!(tun_set_iff(&f, "tun0").is_err(), "/dev/null is not a TUN device");
    }
}
