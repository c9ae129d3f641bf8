//! UDP socket setup: address reuse, large kernel buffers (forced past `rmem_max` when the
//! process may), non-blocking mode.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

use socket2::{Domain, Protocol, Socket, Type};

use crate::options::Options;
use crate::sys;

/// A non-blocking UDP socket bound at `addr` with the options' buffer sizes.
pub fn bind(addr: SocketAddr, options: &Options) -> io::Result<UdpSocket> {
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    socket.set_reuse_address(options.reuse_address)?;
    if addr.is_ipv6() {
        socket.set_only_v6(false).ok();
    }
    set_buffer(&socket, libc::SO_RCVBUFFORCE, options.udp_recv_buffer, |s, n| s.set_recv_buffer_size(n));
    set_buffer(&socket, libc::SO_SNDBUFFORCE, options.udp_send_buffer, |s, n| s.set_send_buffer_size(n));
    socket.set_nonblocking(true)?;
    socket
        .bind(&addr.into())
        .map_err(|e| io::Error::new(e.kind(), format!("cannot bind UDP {addr}: {e}")))?;
    Ok(socket.into())
}

/// Set a kernel buffer size: forced when allowed (root), else as large as `*mem_max` permits.
fn set_buffer(
    socket: &Socket,
    force: libc::c_int,
    bytes: usize,
    plain: impl Fn(&Socket, usize) -> io::Result<()>,
) {
    let value = bytes.min(i32::MAX as usize / 2) as libc::c_int;
    if sys::set_int_option(socket.as_raw_fd(), libc::SOL_SOCKET, force, value).is_err() {
        if let Err(e) = plain(socket, bytes) {
            tracing::debug!(error = %e, bytes, "could not set a UDP buffer size");
        }
    }
}
