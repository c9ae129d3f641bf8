//! Every use of the C caller's raw pointers: each function here turns a pointer and length the
//! caller passed into a Rust value or writes a Rust value through one, checking for null and
//! negative lengths first. The rest of the crate sees only slices, strings and addresses.
//!
//! Safety contract (the C API's, stated in udt_capi.h): a non-null pointer points at as many
//! valid bytes as its length says (for out-parameters: writable ones), for the length of the
//! call, and no other thread writes them meanwhile.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

use crate::error::{self, Result, UdtError};

fn bad() -> UdtError {
    UdtError::new(error::UDT_ERR_INVPARAM)
}

/// The `len` bytes at `p`.
///
/// # Safety
/// As the module's contract.
pub unsafe fn bytes<'a>(p: *const c_void, len: c_int) -> Result<&'a [u8]> {
    let len = usize::try_from(len).map_err(|_| bad())?;
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(bad());
    }
    // SAFETY: non-null, and the caller promises `len` readable bytes at `p` for the call.
    Ok(unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) })
}

/// The `len` writable bytes at `p`.
///
/// # Safety
/// As the module's contract.
pub unsafe fn bytes_mut<'a>(p: *mut c_void, len: c_int) -> Result<&'a mut [u8]> {
    let len = usize::try_from(len).map_err(|_| bad())?;
    if len == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(bad());
    }
    // SAFETY: non-null, and the caller promises `len` writable bytes at `p`, written by no one
    // else during the call.
    Ok(unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>(), len) })
}

/// The NUL-terminated UTF-8 string at `p`.
///
/// # Safety
/// `p` is null or points at a NUL-terminated string.
pub unsafe fn string<'a>(p: *const c_char) -> Result<&'a str> {
    if p.is_null() {
        return Err(bad());
    }
    // SAFETY: non-null and NUL-terminated, as the caller promises.
    unsafe { CStr::from_ptr(p) }.to_str().map_err(|_| bad())
}

/// Read a `T` from `p`.
///
/// # Safety
/// `p` is null or points at a valid `T`.
pub unsafe fn read<T: Copy>(p: *const T) -> Option<T> {
    // SAFETY: null or a valid, aligned `T`, as the caller promises.
    unsafe { p.as_ref() }.copied()
}

/// Write `v` to `p` (nothing if `p` is null).
///
/// # Safety
/// `p` is null or points at a writable `T`.
pub unsafe fn write<T>(p: *mut T, v: T) {
    // SAFETY: null or a valid, aligned, writable `T`, as the caller promises.
    if let Some(slot) = unsafe { p.as_mut() } {
        *slot = v;
    }
}

/// The socket address of `len` bytes at `p` (`sockaddr_in` or `sockaddr_in6`).
///
/// # Safety
/// As the module's contract.
pub unsafe fn sockaddr(p: *const libc::sockaddr, len: c_int) -> Result<SocketAddr> {
    // SAFETY: the caller's contract, passed on.
    let b = unsafe { bytes(p.cast(), len) }?;
    let family = |b: &[u8]| b.get(..2).map(|f| u16::from_ne_bytes([f[0], f[1]]));
    match family(b).map(i32::from) {
        Some(libc::AF_INET) if b.len() >= std::mem::size_of::<libc::sockaddr_in>() => {
            let port = u16::from_be_bytes([b[2], b[3]]);
            let ip = Ipv4Addr::new(b[4], b[5], b[6], b[7]);
            Ok(SocketAddr::V4(SocketAddrV4::new(ip, port)))
        }
        Some(libc::AF_INET6) if b.len() >= std::mem::size_of::<libc::sockaddr_in6>() => {
            let port = u16::from_be_bytes([b[2], b[3]]);
            let flow = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
            let ip: [u8; 16] = b[8..24].try_into().map_err(|_| bad())?;
            let scope = u32::from_ne_bytes([b[24], b[25], b[26], b[27]]);
            Ok(SocketAddr::V6(SocketAddrV6::new(Ipv6Addr::from(ip), port, flow, scope)))
        }
        _ => Err(bad()),
    }
}

/// Write `addr` to `p` (room: `*len` bytes) and its length to `len`; `EINVPARAM` if it does
/// not fit.
///
/// # Safety
/// `len` is null or a valid `int`; `p` has `*len` writable bytes.
pub unsafe fn write_sockaddr(addr: SocketAddr, p: *mut libc::sockaddr, len: *mut c_int) -> Result<()> {
    let mut out = Vec::with_capacity(28);
    match addr {
        SocketAddr::V4(a) => {
            out.extend_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
            out.extend_from_slice(&a.port().to_be_bytes());
            out.extend_from_slice(&a.ip().octets());
            out.resize(std::mem::size_of::<libc::sockaddr_in>(), 0);
        }
        SocketAddr::V6(a) => {
            out.extend_from_slice(&(libc::AF_INET6 as u16).to_ne_bytes());
            out.extend_from_slice(&a.port().to_be_bytes());
            out.extend_from_slice(&a.flowinfo().to_be_bytes());
            out.extend_from_slice(&a.ip().octets());
            out.extend_from_slice(&a.scope_id().to_ne_bytes());
        }
    }
    // SAFETY: null or a valid `int`, as the caller promises.
    let room = unsafe { read(len) }.ok_or_else(bad)?;
    // SAFETY: the caller promises `*len` writable bytes at `p`.
    let dst = unsafe { bytes_mut(p.cast(), room) }?;
    let dst = dst.get_mut(..out.len()).ok_or_else(bad)?;
    dst.copy_from_slice(&out);
    // SAFETY: checked non-null above (read returned a value).
    unsafe { write(len, out.len() as c_int) };
    Ok(())
}

/// Write up to `*len` bytes of `value` to `p` and the length written to `len` (getsockopt).
///
/// # Safety
/// `len` is null or a valid `int`; `p` has `*len` writable bytes.
pub unsafe fn write_option(value: &[u8], p: *mut c_void, len: *mut c_int) -> Result<()> {
    // SAFETY: null or a valid `int`, as the caller promises.
    let room = unsafe { read(len) }.ok_or_else(bad)?;
    // SAFETY: the caller promises `*len` writable bytes at `p`.
    let dst = unsafe { bytes_mut(p, room) }?;
    let n = value.len().min(dst.len());
    if n < value.len() && value.len() <= 8 {
        return Err(bad());
    }
    dst[..n].copy_from_slice(&value[..n]);
    // SAFETY: checked non-null above.
    unsafe { write(len, n as c_int) };
    Ok(())
}

/// Fill `out` (room: `*num` entries) with `ids` and set `*num` to the count written.
///
/// # Safety
/// `num` is null or a valid `int`; `out` has `*num` writable entries.
pub unsafe fn write_ids(ids: &[c_int], out: *mut c_int, num: *mut c_int) {
    // SAFETY: null or a valid `int`, as the caller promises.
    let Some(room) = (unsafe { read(num) }) else { return };
    let room = usize::try_from(room).unwrap_or(0).min(ids.len());
    if room > 0 && !out.is_null() {
        // SAFETY: non-null with at least `*num` >= `room` writable entries, as promised.
        unsafe { std::slice::from_raw_parts_mut(out, room) }.copy_from_slice(&ids[..room]);
    }
    // SAFETY: checked non-null above.
    unsafe { write(num, if out.is_null() { 0 } else { room as c_int }) };
}

/// The entries of `ids` (`n` of them).
///
/// # Safety
/// As the module's contract.
pub unsafe fn ids<'a>(p: *const c_int, n: c_int) -> Result<&'a [c_int]> {
    let n = usize::try_from(n).map_err(|_| bad())?;
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(bad());
    }
    // SAFETY: non-null with `n` readable entries, as promised.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// Which of the system sockets `fds` are readable and writable now (`poll(2)` without waiting).
pub fn poll_now(fds: &mut [libc::pollfd]) -> std::io::Result<()> {
    if fds.is_empty() {
        return Ok(());
    }
    // SAFETY: `fds` is a valid, writable array of `fds.len()` pollfd structures.
    let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 0) };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
