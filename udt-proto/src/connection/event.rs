//! What a connection tells its driver and application: events and errors.

use crate::buffer::WriteMsgError;

/// Why a connection ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloseReason {
    /// The application closed it (after lingering, if configured).
    Local,
    /// The peer sent a shutdown.
    PeerShutdown,
    /// The peer fell silent past the UDT4 limit (EXP count > 16 and over 5 s silent).
    ConnectionLost,
    /// No answer to the handshake within the connect timeout.
    ConnectTimedOut,
    /// The peer rejected the handshake (request type 1002: version or socket type mismatch).
    Refused,
    /// Linger expired with data still unacknowledged.
    LingerExpired,
}

/// Something the driver or the application should know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The handshake completed; data can flow.
    Connected,
    /// The connection ended; no more datagrams will be produced after the queued ones.
    Closed(CloseReason),
}

/// Application misuse or a connection that cannot carry data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConnError {
    /// Still handshaking.
    #[error("not connected yet")]
    NotConnected,
    /// Closed (by us, by the peer, or lost); see [`CloseReason`].
    #[error("connection closed: {0:?}")]
    Closed(CloseReason),
    /// No room in the send buffer / nothing to read now.
    #[error("operation would block")]
    WouldBlock,
    /// Stream call on a message socket or the reverse.
    #[error("wrong socket mode for this call")]
    WrongMode,
    /// A message longer than the send buffer.
    #[error("message of {len} bytes exceeds the send buffer ({max} bytes)")]
    MessageTooLarge {
        /// Message length.
        len: usize,
        /// Largest possible message.
        max: usize,
    },
    /// A message longer than the caller's receive buffer (nothing consumed).
    #[error("message of {len} bytes does not fit a {cap}-byte buffer")]
    BufferTooSmall {
        /// Message length.
        len: usize,
        /// Caller's buffer.
        cap: usize,
    },
    /// Empty message.
    #[error("empty message")]
    EmptyMessage,
}

impl From<WriteMsgError> for ConnError {
    fn from(e: WriteMsgError) -> Self {
        match e {
            WriteMsgError::TooLarge { len, max } => ConnError::MessageTooLarge { len, max },
            WriteMsgError::Full => ConnError::WouldBlock,
            WriteMsgError::Empty => ConnError::EmptyMessage,
        }
    }
}
