//! The process-wide registry of shared client multiplexers: outgoing connections that do not
//! ask for a local address ([`UdtStream::connect_with`](crate::UdtStream::connect_with) and the
//! async `connect_with`) share one UDP socket and one I/O thread per address family and per
//! set of socket-level options, instead of a socket and a thread each.
//!
//! UDT routes by socket id, not by address: many connections from one UDP port to one peer are
//! legal (UDT4's listener tells them apart by the requester's socket id, as
//! `udt_proto::endpoint::Endpoint` does), so sharing changes nothing on the wire but the source
//! port.
//!
//! What must match for connections to share a socket is what is set on the socket or on the
//! multiplexer rather than on a connection ([`Key`]): the address family, the UDP buffer sizes,
//! `SO_REUSEPORT`, the receive gathering, and the MSS the receive buffers are laid out for.
//! Connections whose options differ there get a multiplexer of their own (shared in turn by
//! the connections with their options). Rendezvous connections and listeners bind their own.
//!
//! Invariants: the registry holds only [`Weak`] references, so it keeps no multiplexer alive;
//! a multiplexer's I/O thread stops as any other does, once it has no handle and no closing
//! connection. A handle is taken with [`Mux::try_add_handle`] under the registry's lock: it is
//! either counted before the thread could find itself alone, or refused because the thread has
//! stopped, and then a new multiplexer replaces the entry. Entries of stopped multiplexers are
//! pruned whenever one is added, so the registry holds at most one entry per key in use.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use crate::addr::any_for;
use crate::mux::Mux;
use crate::options::{Options, TestHooks};

/// What connections sharing one multiplexer must agree on.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    /// The wildcard address bound: IPv4 (`0.0.0.0:0`) or dual-stack IPv6 (`[::]:0`).
    local: SocketAddr,
    /// MSS: sizes the multiplexer's receive buffers.
    mss: u32,
    udp_recv_buffer: usize,
    udp_send_buffer: usize,
    reuse_address: bool,
    receive_gather: Duration,
    /// The faults the crate's unit tests inject are the socket's too (empty in every other
    /// build).
    hooks: TestHooks,
}

impl Key {
    fn new(peer: SocketAddr, options: &Options) -> Key {
        Key {
            local: any_for(peer),
            mss: options.config.mss,
            udp_recv_buffer: options.udp_recv_buffer,
            udp_send_buffer: options.udp_send_buffer,
            reuse_address: options.reuse_address,
            receive_gather: options.receive_gather,
            hooks: options.hooks(),
        }
    }
}

type Registry = Mutex<HashMap<Key, Weak<Mux>>>;

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(Registry::default)
}

/// The shared multiplexer for connecting to `peer` with `options`, with one handle counted for
/// the caller (who passes it on to its stream, or gives it back with `drop_handle`). Binds a
/// new one when none with these options is running.
pub(crate) fn client_mux(peer: SocketAddr, options: &Options) -> io::Result<Arc<Mux>> {
    let key = Key::new(peer, options);
    if options.own_client_port {
        // Its own: never shared, so never registered.
        return Mux::bind(key.local, options);
    }
    let mut registry = registry().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(mux) = registry.get(&key).and_then(Weak::upgrade) {
        if mux.try_add_handle() {
            return Ok(mux);
        }
    }
    // Bound under the registry's lock, so two callers with the same options do not both bind.
    let mux = Mux::bind(key.local, options)?;
    registry.retain(|_, mux| mux.strong_count() > 0);
    registry.insert(key, Arc::downgrade(&mux));
    Ok(mux)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer() -> SocketAddr {
        "127.0.0.1:9".parse().unwrap()
    }

    /// Options no other test uses, so their shared multiplexer is this test's alone.
    fn private(gather_us: u64) -> Options {
        Options { receive_gather: Duration::from_micros(gather_us), ..Options::default() }
    }

    #[test]
    fn same_options_share_a_multiplexer_and_different_ones_do_not() {
        let options = private(1_001);
        let a = client_mux(peer(), &options).unwrap();
        let b = client_mux(peer(), &options).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(a.local_addr(), b.local_addr());
        let mut bigger = options.clone();
        bigger.udp_send_buffer *= 2;
        let c = client_mux(peer(), &bigger).unwrap();
        assert!(!Arc::ptr_eq(&a, &c));
        let v6 = client_mux("[::1]:9".parse().unwrap(), &options).unwrap();
        assert!(!Arc::ptr_eq(&a, &v6));
        let own = Options { own_client_port: true, ..options.clone() };
        let d = client_mux(peer(), &own).unwrap();
        let e = client_mux(peer(), &own).unwrap();
        assert!(!Arc::ptr_eq(&d, &e) && !Arc::ptr_eq(&a, &d), "a port of its own is never shared");
        assert_ne!(d.local_addr(), e.local_addr());
        for mux in [a, b, c, v6, d, e] {
            mux.drop_handle();
        }
    }

    #[test]
    fn a_stopped_multiplexer_takes_no_handle_and_is_replaced() {
        let options = private(1_002);
        let first = client_mux(peer(), &options).unwrap();
        first.drop_handle();
        // Still referenced here (so the registry's entry upgrades), but with no handle the I/O
        // thread stops after its idle linger and lets go of its reference.
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while Arc::strong_count(&first) > 1 {
            assert!(std::time::Instant::now() < deadline, "the idle I/O thread did not stop");
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(!first.try_add_handle(), "a stopped multiplexer took a handle");
        let second = client_mux(peer(), &options).unwrap();
        assert!(!Arc::ptr_eq(&first, &second), "the stopped multiplexer was handed out");
        second.drop_handle();
    }
}
