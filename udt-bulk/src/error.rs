//! The errors of a whole transfer (connect, request, run), each one line for the user.

use std::io;

use crate::driver::DriverError;

/// Why a transfer did not complete.
#[derive(Debug, thiserror::Error)]
pub enum BulkError {
    /// A socket or file operation failed.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The peer refused the request (bad secret, no such file, outside the served directory).
    #[error("refused: {0}")]
    Refused(String),
    /// The peer broke the protocol (a malformed or out-of-range message).
    #[error("protocol error: {0}")]
    Protocol(String),
    /// The running session failed, was interrupted or heard nothing for too long.
    #[error("{0}")]
    Driver(#[from] DriverError),
}
