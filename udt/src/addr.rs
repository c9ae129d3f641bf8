//! Socket addresses as the runtime handles them: resolving what the application passes, the
//! wildcard address of a peer's family, and the two forms of an IPv4 peer of a dual-stack IPv6
//! socket (IPv4-mapped IPv6 on the socket, IPv4 to the application).
//!
//! Invariant: a connection keeps its peer's address in the form its socket sends to and
//! receives from ([`in_family_of`]); only what the application is shown is [`canonical`].

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};

/// The first address `addr` resolves to.
pub(crate) fn resolve(addr: impl ToSocketAddrs) -> io::Result<SocketAddr> {
    addr.to_socket_addrs()?
        .next()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "address resolved to nothing"))
}

/// The unspecified address of `peer`'s family, port 0.
pub(crate) fn any_for(peer: SocketAddr) -> SocketAddr {
    if peer.is_ipv4() {
        SocketAddr::from(([0, 0, 0, 0], 0))
    } else {
        SocketAddr::from(([0u16; 8], 0))
    }
}

/// `addr` with an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) shown as the IPv4 address.
pub(crate) fn canonical(addr: SocketAddr) -> SocketAddr {
    SocketAddr::new(addr.ip().to_canonical(), addr.port())
}

/// `peer` in the form a socket bound at `local` sends to and receives from: an IPv4 peer of an
/// IPv6 (dual-stack) socket as IPv4-mapped IPv6, so that the endpoint's routes and cookies
/// match the source addresses the socket reports; an IPv4-mapped peer of an IPv4 socket as
/// IPv4. An IPv4 socket cannot reach an IPv6 peer: `InvalidInput` at once rather than a
/// connect that times out.
pub(crate) fn in_family_of(local: SocketAddr, peer: SocketAddr) -> io::Result<SocketAddr> {
    match (local, peer) {
        (SocketAddr::V6(_), SocketAddr::V4(p)) => {
            Ok(SocketAddr::new(p.ip().to_ipv6_mapped().into(), p.port()))
        }
        (SocketAddr::V4(_), SocketAddr::V6(p)) => match p.ip().to_ipv4_mapped() {
            Some(v4) => Ok(SocketAddr::new(v4.into(), p.port())),
            None => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("cannot reach the IPv6 address {peer} from the IPv4 socket {local}"),
            )),
        },
        _ => Ok(peer),
    }
}
