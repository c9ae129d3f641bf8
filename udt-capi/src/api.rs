//! The C functions for sockets and errors: `udt_startup` ... `udt_close`, names, state and
//! the last error. Each returns `UDT_ERROR` (-1) or `UDT_INVALID_SOCK` (-1) on failure, after
//! recording UDT4's error code for `udt_getlasterror_code`.

use std::ffi::{c_char, c_int};
use std::panic::AssertUnwindSafe;

use crate::error::{self, Result, UdtError};
use crate::raw;
use crate::socket;

/// A UDT socket: an integer handle, as in UDT4.
#[allow(clippy::upper_case_acronyms)]
pub type UDTSOCKET = c_int;
/// A system (UDP or other) socket descriptor.
#[allow(clippy::upper_case_acronyms)]
pub type SYSSOCKET = c_int;

/// What a failed call returns (UDT4's `UDT::ERROR`).
pub const UDT_ERROR: c_int = -1;
/// What a failed call that makes a socket returns (UDT4's `UDT::INVALID_SOCK`).
pub const UDT_INVALID_SOCK: UDTSOCKET = -1;

/// Run `f`, turning an error (or a panic) into `fail` and the thread's last error.
pub(crate) fn call<T>(fail: T, f: impl FnOnce() -> Result<T>) -> T {
    match std::panic::catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            error::set_last(e);
            fail
        }
        Err(_) => {
            error::set_last(UdtError::new(error::UDT_ERR_UNKNOWN));
            fail
        }
    }
}

/// Start the library (nothing to do; kept for UDT4 programs). Returns 0.
#[no_mangle]
pub extern "C" fn udt_startup() -> c_int {
    0
}

/// Close every socket without lingering (UDT4's `cleanup`). Returns 0.
#[no_mangle]
pub extern "C" fn udt_cleanup() -> c_int {
    call(UDT_ERROR, || {
        socket::close_all();
        Ok(0)
    })
}

/// A new socket: `type` is `SOCK_STREAM` (byte stream) or `SOCK_DGRAM` (messages); `af`
/// (`AF_INET`/`AF_INET6`) and `protocol` are not used, as in UDT4.
#[no_mangle]
pub extern "C" fn udt_socket(af: c_int, r#type: c_int, protocol: c_int) -> UDTSOCKET {
    let _ = (af, protocol);
    call(UDT_INVALID_SOCK, || socket::create(r#type))
}

/// Bind to a local address (`sockaddr_in` or `sockaddr_in6` of `namelen` bytes).
///
/// # Safety
/// `name` points at `namelen` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn udt_bind(u: UDTSOCKET, name: *const libc::sockaddr, namelen: c_int) -> c_int {
    call(UDT_ERROR, || {
        // SAFETY: the caller's promise about `name`, passed on.
        let addr = unsafe { raw::sockaddr(name, namelen) }?;
        socket::bind(u, addr).map(|()| 0)
    })
}

/// Bind to an existing UDP socket: not supported (fails with `EINVOP`, 5000).
#[no_mangle]
pub extern "C" fn udt_bind2(u: UDTSOCKET, udpsock: SYSSOCKET) -> c_int {
    let _ = (u, udpsock);
    call(UDT_ERROR, || Err(UdtError::new(error::UDT_ERR_INVOP)))
}

/// Listen on the bound address (`backlog` is not used: see docs/capi.md).
#[no_mangle]
pub extern "C" fn udt_listen(u: UDTSOCKET, backlog: c_int) -> c_int {
    let _ = backlog;
    call(UDT_ERROR, || socket::listen(u).map(|()| 0))
}

/// Wait for a connection; its peer's address goes to `addr` (room: `*addrlen` bytes) if not
/// null.
///
/// # Safety
/// `addr` is null or has `*addrlen` writable bytes; `addrlen` is null or a valid `int`.
#[no_mangle]
pub unsafe extern "C" fn udt_accept(
    u: UDTSOCKET,
    addr: *mut libc::sockaddr,
    addrlen: *mut c_int,
) -> UDTSOCKET {
    call(UDT_INVALID_SOCK, || {
        let (id, peer) = socket::accept(u)?;
        if !addr.is_null() {
            // SAFETY: the caller's promise about `addr` and `addrlen`, passed on.
            unsafe { raw::write_sockaddr(peer, addr, addrlen) }?;
        }
        Ok(id)
    })
}

/// Connect to `name` (or rendezvous with it, with `UDT_RENDEZVOUS` set and the socket bound).
///
/// # Safety
/// `name` points at `namelen` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn udt_connect(u: UDTSOCKET, name: *const libc::sockaddr, namelen: c_int) -> c_int {
    call(UDT_ERROR, || {
        // SAFETY: the caller's promise about `name`, passed on.
        let addr = unsafe { raw::sockaddr(name, namelen) }?;
        socket::connect(u, addr).map(|()| 0)
    })
}

/// Close: a connection first sends what is buffered, for at most `UDT_LINGER`.
#[no_mangle]
pub extern "C" fn udt_close(u: UDTSOCKET) -> c_int {
    call(UDT_ERROR, || socket::close(u).map(|()| 0))
}

/// The peer's address.
///
/// # Safety
/// `name` has `*namelen` writable bytes; `namelen` is a valid `int`.
#[no_mangle]
pub unsafe extern "C" fn udt_getpeername(
    u: UDTSOCKET,
    name: *mut libc::sockaddr,
    namelen: *mut c_int,
) -> c_int {
    call(UDT_ERROR, || {
        let addr = socket::peer_addr(u)?;
        // SAFETY: the caller's promise about `name` and `namelen`, passed on.
        unsafe { raw::write_sockaddr(addr, name, namelen) }.map(|()| 0)
    })
}

/// The local address.
///
/// # Safety
/// `name` has `*namelen` writable bytes; `namelen` is a valid `int`.
#[no_mangle]
pub unsafe extern "C" fn udt_getsockname(
    u: UDTSOCKET,
    name: *mut libc::sockaddr,
    namelen: *mut c_int,
) -> c_int {
    call(UDT_ERROR, || {
        let addr = socket::local_addr(u)?;
        // SAFETY: the caller's promise about `name` and `namelen`, passed on.
        unsafe { raw::write_sockaddr(addr, name, namelen) }.map(|()| 0)
    })
}

/// The socket's `UDTSTATUS` (`UDT_STATUS_*`; `UDT_STATUS_NONEXIST` for an unknown id).
#[no_mangle]
pub extern "C" fn udt_getsockstate(u: UDTSOCKET) -> c_int {
    call(socket::status::NONEXIST, || Ok(socket::state(u)))
}

/// The calling thread's last error: UDT4's code (major * 1000 + minor; 0: none).
#[no_mangle]
pub extern "C" fn udt_getlasterror_code() -> c_int {
    error::last().code
}

/// The system `errno` behind the calling thread's last error (0: none).
#[no_mangle]
pub extern "C" fn udt_getlasterror_errno() -> c_int {
    error::last().errno
}

/// The calling thread's last error as UDT4's text; valid until the thread's next call of this
/// function.
#[no_mangle]
pub extern "C" fn udt_getlasterror_desc() -> *const c_char {
    error::with_last_text(|t| t.as_ptr())
}

/// Record `code` (and the system errno `sys_errno`, 0 for none) as the calling thread's last error: for
/// layers over this API that fail on their own (the C++ header's `sendfile` on a stream).
#[no_mangle]
pub extern "C" fn udt_setlasterror(code: c_int, sys_errno: c_int) {
    error::set_last(UdtError { code, errno: sys_errno });
}

/// Write UDT4's message for error `code` (with the system errno `sys_errno`, 0 for none) to `buf` (room:
/// `len` bytes, NUL included, cut if longer); returns the message's full length.
///
/// # Safety
/// `buf` is null or has `len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn udt_strerror(code: c_int, sys_errno: c_int, buf: *mut c_char, len: c_int) -> c_int {
    let text = error::message(UdtError { code, errno: sys_errno });
    // SAFETY: the caller's promise about `buf`, passed on (null: nothing written).
    if let Ok(out) = unsafe { raw::bytes_mut(buf.cast(), if buf.is_null() { 0 } else { len }) } {
        if let Some(room) = out.len().checked_sub(1) {
            let n = room.min(text.len());
            out[..n].copy_from_slice(&text.as_bytes()[..n]);
            out[n] = 0;
        }
    }
    c_int::try_from(text.len()).unwrap_or(c_int::MAX)
}

/// Clear the calling thread's last error.
#[no_mangle]
pub extern "C" fn udt_clearlasterror() {
    error::set_last(UdtError::new(error::UDT_ERR_SUCCESS));
}

/// Secure the socket's connections with a 32-byte key both ends hold (off by default, as in
/// UDT4, whose peers cannot speak it): set before `udt_connect` or `udt_listen`; the peer
/// must be a `udt` end with the same key.
///
/// # Safety
/// `key` points at `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn udt_set_key(u: UDTSOCKET, key: *const u8, len: c_int) -> c_int {
    call(UDT_ERROR, || {
        // SAFETY: the caller's promise about `key`, passed on.
        let bytes = unsafe { raw::bytes(key.cast(), len) }?;
        let key: [u8; 32] = bytes.try_into().map_err(|_| UdtError::new(error::UDT_ERR_INVPARAM))?;
        crate::opts::set_credential(u, udt::secure::Credential::Key(key)).map(|()| 0)
    })
}

/// Secure the socket's connections with a code phrase (a listener checks it is hard enough to
/// guess); as [`udt_set_key`] otherwise.
///
/// # Safety
/// `phrase` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn udt_set_code(u: UDTSOCKET, phrase: *const c_char) -> c_int {
    call(UDT_ERROR, || {
        // SAFETY: the caller's promise about `phrase`, passed on.
        let phrase = unsafe { raw::string(phrase) }?;
        crate::opts::set_credential(u, udt::secure::Credential::CodePhrase(phrase.to_string())).map(|()| 0)
    })
}
