//! The C functions for data, options and readiness: `udt_send` ... `udt_recvfile2`,
//! `udt_getsockopt`/`udt_setsockopt`, `udt_perfmon`, the `udt_epoll_*` family and
//! `udt_selectex`. Failures return `UDT_ERROR` (-1) with the thread's last error set.

use std::ffi::{c_char, c_int, c_void};

use crate::api::{call, SYSSOCKET, UDTSOCKET, UDT_ERROR};
use crate::error::{self, UdtError};
use crate::perf::CPerfMon;
use crate::{io, opts, poll, raw};

fn count(n: usize) -> c_int {
    c_int::try_from(n).unwrap_or(c_int::MAX)
}

/// Send up to `len` bytes of a stream socket; returns the bytes taken (at least 1, waiting for
/// room unless `UDT_SNDSYN` is off). `flags` is not used.
///
/// # Safety
/// `buf` points at `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn udt_send(u: UDTSOCKET, buf: *const c_char, len: c_int, flags: c_int) -> c_int {
    let _ = flags;
    call(UDT_ERROR, || {
        // SAFETY: the caller's promise about `buf`, passed on.
        let data = unsafe { raw::bytes(buf.cast(), len) }?;
        io::send(u, data).map(count)
    })
}

/// Receive up to `len` bytes of a stream socket; returns the bytes read (at least 1). After the
/// peer closed and everything was read: `ECONNLOST` (2001), as UDT4. `flags` is not used.
///
/// # Safety
/// `buf` points at `len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn udt_recv(u: UDTSOCKET, buf: *mut c_char, len: c_int, flags: c_int) -> c_int {
    let _ = flags;
    call(UDT_ERROR, || {
        // SAFETY: the caller's promise about `buf`, passed on.
        let out = unsafe { raw::bytes_mut(buf.cast(), len) }?;
        io::recv(u, out).map(count)
    })
}

/// Send one message of a message socket: dropped if not delivered within `ttl` ms (negative:
/// never), delivered after every earlier message if `inorder` is non-zero. Returns `len`.
///
/// # Safety
/// `buf` points at `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn udt_sendmsg(
    u: UDTSOCKET,
    buf: *const c_char,
    len: c_int,
    ttl: c_int,
    inorder: c_int,
) -> c_int {
    call(UDT_ERROR, || {
        // SAFETY: the caller's promise about `buf`, passed on.
        let data = unsafe { raw::bytes(buf.cast(), len) }?;
        io::sendmsg(u, data, ttl, inorder != 0).map(count)
    })
}

/// Receive one message of a message socket (cut to `len` bytes if longer).
///
/// # Safety
/// `buf` points at `len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn udt_recvmsg(u: UDTSOCKET, buf: *mut c_char, len: c_int) -> c_int {
    call(UDT_ERROR, || {
        // SAFETY: the caller's promise about `buf`, passed on.
        let out = unsafe { raw::bytes_mut(buf.cast(), len) }?;
        io::recvmsg(u, out).map(count)
    })
}

/// Send `size` bytes of the file at `path` from `*offset` (advanced by what was sent); returns
/// the bytes sent. `block` is not used.
///
/// # Safety
/// `path` is a NUL-terminated string; `offset` is null (offset 0) or a valid `int64_t`.
#[no_mangle]
pub unsafe extern "C" fn udt_sendfile2(
    u: UDTSOCKET,
    path: *const c_char,
    offset: *mut i64,
    size: i64,
    block: c_int,
) -> i64 {
    let _ = block;
    call(-1, || {
        // SAFETY: the caller's promises about `path` and `offset`, passed on.
        let (path, mut at) = unsafe { (raw::string(path)?, raw::read(offset).unwrap_or(0)) };
        let sent = io::sendfile(u, path, &mut at, size);
        // SAFETY: as above.
        unsafe { raw::write(offset, at) };
        sent
    })
}

/// Receive `size` bytes into the file at `path` (created, or emptied) from `*offset` (advanced
/// by what was received); returns the bytes received. `block` is not used.
///
/// # Safety
/// `path` is a NUL-terminated string; `offset` is null (offset 0) or a valid `int64_t`.
#[no_mangle]
pub unsafe extern "C" fn udt_recvfile2(
    u: UDTSOCKET,
    path: *const c_char,
    offset: *mut i64,
    size: i64,
    block: c_int,
) -> i64 {
    let _ = block;
    call(-1, || {
        // SAFETY: the caller's promises about `path` and `offset`, passed on.
        let (path, mut at) = unsafe { (raw::string(path)?, raw::read(offset).unwrap_or(0)) };
        let got = io::recvfile(u, path, &mut at, size);
        // SAFETY: as above.
        unsafe { raw::write(offset, at) };
        got
    })
}

/// Read option `optname` (a `UDTOpt`) into `optval` (room: `*optlen` bytes; set to the length
/// written). `level` is not used.
///
/// # Safety
/// `optval` has `*optlen` writable bytes; `optlen` is a valid `int`.
#[no_mangle]
pub unsafe extern "C" fn udt_getsockopt(
    u: UDTSOCKET,
    level: c_int,
    optname: c_int,
    optval: *mut c_void,
    optlen: *mut c_int,
) -> c_int {
    let _ = level;
    call(UDT_ERROR, || {
        let value = opts::get(u, optname)?;
        // SAFETY: the caller's promise about `optval` and `optlen`, passed on.
        unsafe { raw::write_option(&value, optval, optlen) }.map(|()| 0)
    })
}

/// Set option `optname` (a `UDTOpt`) from the `optlen` bytes at `optval`. `level` is not used.
/// `UDT_CC` takes a congestion-control specification string (`"cubic"`).
///
/// # Safety
/// `optval` points at `optlen` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn udt_setsockopt(
    u: UDTSOCKET,
    level: c_int,
    optname: c_int,
    optval: *const c_void,
    optlen: c_int,
) -> c_int {
    let _ = level;
    call(UDT_ERROR, || {
        // SAFETY: the caller's promise about `optval`, passed on.
        let value = unsafe { raw::bytes(optval, optlen) }?;
        opts::set(u, optname, value).map(|()| 0)
    })
}

/// The connection's performance counters (UDT4's `TRACEINFO`); non-zero `clear` starts a new
/// interval.
///
/// # Safety
/// `perf` points at a writable `CPerfMon`.
#[no_mangle]
pub unsafe extern "C" fn udt_perfmon(u: UDTSOCKET, perf: *mut CPerfMon, clear: c_int) -> c_int {
    call(UDT_ERROR, || {
        if perf.is_null() {
            return Err(UdtError::new(error::UDT_ERR_INVPARAM));
        }
        let reading = io::perfmon(u, clear != 0)?;
        // SAFETY: non-null, and the caller promises a writable `CPerfMon`.
        unsafe { raw::write(perf, reading) };
        Ok(0)
    })
}

/// A new epoll set; returns its id.
#[no_mangle]
pub extern "C" fn udt_epoll_create() -> c_int {
    call(UDT_ERROR, poll::create)
}

/// Watch UDT socket `u` in set `eid` for `*events` (`UDT_EPOLL_*`; null: all).
///
/// # Safety
/// `events` is null or a valid `int`.
#[no_mangle]
pub unsafe extern "C" fn udt_epoll_add_usock(eid: c_int, u: UDTSOCKET, events: *const c_int) -> c_int {
    // SAFETY: the caller's promise about `events`.
    let events = unsafe { raw::read(events) };
    call(UDT_ERROR, || poll::add_usock(eid, u, events).map(|()| 0))
}

/// Watch system socket `s` in set `eid` for `*events` (`UDT_EPOLL_IN`/`OUT`; null: both).
///
/// # Safety
/// `events` is null or a valid `int`.
#[no_mangle]
pub unsafe extern "C" fn udt_epoll_add_ssock(eid: c_int, s: SYSSOCKET, events: *const c_int) -> c_int {
    // SAFETY: the caller's promise about `events`.
    let events = unsafe { raw::read(events) };
    call(UDT_ERROR, || poll::add_ssock(eid, s, events).map(|()| 0))
}

/// Stop watching UDT socket `u` in set `eid`.
#[no_mangle]
pub extern "C" fn udt_epoll_remove_usock(eid: c_int, u: UDTSOCKET) -> c_int {
    call(UDT_ERROR, || poll::remove_usock(eid, u).map(|()| 0))
}

/// Stop watching system socket `s` in set `eid`.
#[no_mangle]
pub extern "C" fn udt_epoll_remove_ssock(eid: c_int, s: SYSSOCKET) -> c_int {
    call(UDT_ERROR, || poll::remove_ssock(eid, s).map(|()| 0))
}

/// Sockets watched by set `eid` (the room the result arrays of `udt_epoll_wait2` need).
#[no_mangle]
pub extern "C" fn udt_epoll_count(eid: c_int) -> c_int {
    call(UDT_ERROR, || poll::count(eid))
}

/// Wait at most `msTimeOut` ms (negative: forever) until sockets of set `eid` are ready; fills
/// each non-null array (room: `*num` entries; `*num` set to the count written) and returns the
/// number of ready entries. Nothing ready in time: `ETIMEOUT` (6003), as UDT4.
///
/// # Safety
/// Each array is null or has `*num` writable entries; each `num` is null or a valid `int`.
#[no_mangle]
#[allow(non_snake_case, clippy::too_many_arguments)]
pub unsafe extern "C" fn udt_epoll_wait2(
    eid: c_int,
    readfds: *mut UDTSOCKET,
    rnum: *mut c_int,
    writefds: *mut UDTSOCKET,
    wnum: *mut c_int,
    msTimeOut: i64,
    lrfds: *mut SYSSOCKET,
    lrnum: *mut c_int,
    lwfds: *mut SYSSOCKET,
    lwnum: *mut c_int,
) -> c_int {
    call(UDT_ERROR, || {
        let want = [!readfds.is_null(), !writefds.is_null(), !lrfds.is_null(), !lwfds.is_null()];
        let ready = poll::wait(eid, want, msTimeOut)?;
        // SAFETY: the caller's promises about each array and count, passed on.
        unsafe {
            raw::write_ids(&ready.read, readfds, rnum);
            raw::write_ids(&ready.write, writefds, wnum);
            raw::write_ids(&ready.sys_read, lrfds, lrnum);
            raw::write_ids(&ready.sys_write, lwfds, lwnum);
        }
        Ok(count(ready.read.len() + ready.write.len() + ready.sys_read.len() + ready.sys_write.len()))
    })
}

/// Forget epoll set `eid`.
#[no_mangle]
pub extern "C" fn udt_epoll_release(eid: c_int) -> c_int {
    call(UDT_ERROR, || poll::release(eid).map(|()| 0))
}

/// Which sockets are readable, writable, ended: each non-null array holds `*num` sockets to
/// check and is overwritten with those that are so (`*num`: their count). Waits at most
/// `msTimeOut` ms (negative: forever); returns the number of entries found (0 after a
/// timeout, with every count 0). A socket that ended, or is gone, counts as readable and
/// writable too, as in UDT4.
///
/// # Safety
/// Each array is null or has `*num` readable and writable entries; each `num` is null or a
/// valid `int`.
#[no_mangle]
#[allow(non_snake_case)]
pub unsafe extern "C" fn udt_select(
    readfds: *mut UDTSOCKET,
    rnum: *mut c_int,
    writefds: *mut UDTSOCKET,
    wnum: *mut c_int,
    exceptfds: *mut UDTSOCKET,
    enum_: *mut c_int,
    msTimeOut: i64,
) -> c_int {
    call(UDT_ERROR, || {
        // A null array is not checked, whatever its count says.
        // SAFETY: the caller's promises about each array and count, passed on.
        let list = |fds: *mut UDTSOCKET, num: *mut c_int| unsafe {
            match fds.is_null() {
                true => Ok(Vec::new()),
                false => raw::ids(fds, raw::read(num).unwrap_or(0)).map(<[c_int]>::to_vec),
            }
        };
        let (r, w, e) = (list(readfds, rnum)?, list(writefds, wnum)?, list(exceptfds, enum_)?);
        let [r, w, e] = poll::select(&[&r, &w, &e], msTimeOut)?;
        // SAFETY: as above.
        unsafe {
            raw::write_ids(&r, readfds, rnum);
            raw::write_ids(&w, writefds, wnum);
            raw::write_ids(&e, exceptfds, enum_);
        }
        Ok(count(r.len() + w.len() + e.len()))
    })
}
