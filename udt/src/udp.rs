//! UDP socket setup: exclusive binding (sharing a port only when asked, and then only with
//! sockets of the same user), dual-stack IPv6, large kernel buffers (forced past `rmem_max`
//! when the process may), non-blocking mode.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

use socket2::{Domain, Protocol, Socket, Type};

use crate::options::Options;
use crate::sys;

/// A non-blocking UDP socket bound at `addr` with the options' buffer sizes.
///
/// The port is the socket's alone: neither `SO_REUSEADDR` nor `SO_REUSEPORT` is set, so a
/// second bind of the same address (or of the wildcard and a specific address of the same
/// port), by this process or any other, fails with `AddrInUse`. (With `SO_REUSEADDR` on both,
/// Linux lets any user bind the port again and hands the second socket the port's next
/// datagrams: a local user could take over a listener's transfers.) With
/// `Options::reuse_address` the socket sets `SO_REUSEPORT`, which Linux honours only between
/// sockets of the same effective user.
///
/// An IPv6 address is bound dual-stack (`IPV6_V6ONLY` off, where the system allows it): IPv4
/// peers then appear as IPv4-mapped addresses (`::ffff:a.b.c.d`).
pub fn bind(addr: SocketAddr, options: &Options) -> io::Result<UdpSocket> {
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    if options.reuse_address {
        socket.set_reuse_port(true)?;
    }
    if addr.is_ipv6() {
        if let Err(e) = socket.set_only_v6(false) {
            tracing::debug!(error = %e, %addr, "IPv6 socket stays IPv6-only");
        }
    }
    set_buffer(&socket, libc::SO_RCVBUFFORCE, options.udp_recv_buffer, |s, n| s.set_recv_buffer_size(n));
    set_buffer(&socket, libc::SO_SNDBUFFORCE, options.udp_send_buffer, |s, n| s.set_send_buffer_size(n));
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into()).map_err(|e| {
        let why = match e.kind() {
            io::ErrorKind::AddrInUse => "address in use".to_string(),
            _ => e.to_string(),
        };
        io::Error::new(e.kind(), format!("cannot bind UDP {addr}: {why}"))
    })?;
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
