//! Protocol outcomes as the `io::Error` kinds a Rust user expects.

use std::io;

use udt_proto::connection::{CloseReason, ConnError};

/// The error for a connection that ended for `reason`, seen by an operation that needed it open.
pub fn closed(reason: CloseReason) -> io::Error {
    match reason {
        CloseReason::Refused => io::Error::new(
            io::ErrorKind::ConnectionRefused,
            "connection refused by the peer (version, socket type, or its connection limit)",
        ),
        CloseReason::ConnectTimedOut => io::Error::new(io::ErrorKind::TimedOut, "no answer from the peer"),
        CloseReason::ConnectionLost => {
            io::Error::new(io::ErrorKind::ConnectionReset, "peer stopped answering: connection lost")
        }
        CloseReason::PeerShutdown => {
            io::Error::new(io::ErrorKind::BrokenPipe, "the peer closed the connection")
        }
        CloseReason::LingerExpired => io::Error::new(
            io::ErrorKind::TimedOut,
            "closed before the peer acknowledged all data (linger expired)",
        ),
        CloseReason::Local => io::Error::new(io::ErrorKind::NotConnected, "the connection was closed"),
    }
}

/// A connection error as an `io::Error`.
pub fn from_conn(e: ConnError) -> io::Error {
    match e {
        ConnError::NotConnected => io::Error::new(io::ErrorKind::NotConnected, "not connected yet"),
        ConnError::Closed(r) => closed(r),
        ConnError::WouldBlock => io::Error::from(io::ErrorKind::WouldBlock),
        ConnError::WrongMode => {
            io::Error::new(io::ErrorKind::Unsupported, "stream call on a message socket, or the reverse")
        }
        ConnError::MessageTooLarge { len, max } => io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("message of {len} bytes is larger than the buffers allow ({max} bytes)"),
        ),
        ConnError::BufferTooSmall { len, cap } => io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("message of {len} bytes does not fit a {cap}-byte buffer"),
        ),
        ConnError::EmptyMessage => io::Error::new(io::ErrorKind::InvalidInput, "empty message"),
    }
}

/// A timeout of a blocking call.
pub fn timed_out(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, format!("{what} timed out"))
}
