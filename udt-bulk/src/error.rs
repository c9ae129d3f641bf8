//! The errors of a whole transfer (connect, request, run), each one line for the user.

use std::io;

use crate::driver::DriverError;

/// Why a transfer did not complete.
#[derive(Debug, thiserror::Error)]
pub enum BulkError {
    /// A socket or file operation failed (shown as the I/O error itself, once).
    #[error(transparent)]
    Io(#[from] io::Error),
    /// The peer refused the request (bad secret, no such file, outside the served directory).
    #[error("refused: {0}")]
    Refused(String),
    /// The peer broke the protocol (a malformed or out-of-range message).
    #[error("protocol error: {0}")]
    Protocol(String),
    /// The running session failed, was interrupted or heard nothing for too long.
    #[error(transparent)]
    Driver(#[from] DriverError),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The error and its sources, as `anyhow`'s `{:#}` prints them.
    fn chain(e: &dyn std::error::Error) -> String {
        let mut text = e.to_string();
        let mut next = e.source();
        while let Some(source) = next {
            text.push_str(&format!(": {source}"));
            next = source.source();
        }
        text
    }

    #[test]
    fn an_io_error_is_said_once() {
        let refused = || io::Error::new(io::ErrorKind::ConnectionRefused, "Connection refused");
        assert_eq!(chain(&BulkError::from(refused())), "Connection refused");
        assert_eq!(chain(&BulkError::from(DriverError::from(refused()))), "Connection refused");
        assert_eq!(chain(&BulkError::Refused("no such file".into())), "refused: no such file");
    }
}
