//! # udt: UDT over real UDP sockets
//!
//! A blocking, `std::net`-style API over the sans-IO protocol core [`udt_proto`]:
//! [`UdtListener`] accepts connections, [`UdtStream`] is one connection (`Read`/`Write` for
//! stream sockets, `read_chunks` to read them without a copy ([`RecvChunk`]), `send_msg`/`recv_msg`
//! for message sockets, `send_file`/`recv_file`, `stats`). Each bound UDP port has one I/O thread (the multiplexer) serving every connection
//! on it; see `mux/` for how it paces and wakes. Outgoing connections share one port and
//! thread per address family and socket-level options (`shared.rs`); a listener, and every
//! connection it accepts or opens, share its port.
//!
//! ```no_run
//! use std::io::{Read, Write};
//! let listener = udt::UdtListener::bind("127.0.0.1:9000")?;
//! let mut client = udt::UdtStream::connect("127.0.0.1:9000")?;
//! let (mut server, _) = listener.accept()?;
//! client.write_all(b"hello")?;
//! let mut buf = [0u8; 5];
//! server.read_exact(&mut buf)?;
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! With the `tokio` feature, `AsyncUdtListener` and `AsyncUdtStream` (tokio `AsyncRead` /
//! `AsyncWrite`) serve async programs from the same I/O threads.
//!
//! Errors are `io::Error`s of the kinds a Rust user expects: `ConnectionRefused`, `TimedOut`,
//! `ConnectionReset` (peer lost), `BrokenPipe` (peer closed), `NotConnected`.

mod accept_queue;
mod acceptor;
mod addr;
#[cfg(feature = "tokio")]
mod async_io;
mod clock;
mod conn;
mod error;
mod file;
#[cfg(test)]
mod gro_tests;
mod landing;
mod listener;
#[cfg(test)]
mod module_graph_tests;
mod mux;
mod options;
mod pace;
pub mod secure;
mod shard;
#[cfg(test)]
mod shard_tests;
mod shared;
mod stream;
mod sys;
mod test_hooks;
mod timers;
mod tx_batch;
mod udp;
mod view;
#[cfg(test)]
mod wake_tests;

#[cfg(feature = "tokio")]
pub use async_io::{AsyncUdtListener, AsyncUdtStream};
pub use listener::UdtListener;
pub use options::{Config, Mode, Options, DEFAULT_MAX_ACCEPTED};
pub use stream::{Readiness, UdtStream};
pub use udt_cc as cc;
pub use udt_proto::buffer::RecvChunk;
pub use udt_proto::connection::{Counters, InstantValues, Snapshot};
pub use udt_proto::{self as proto};
