//! Why a Tsunami session ended badly, kept typed so the socket functions return the right
//! [`BulkError`] while the [`crate::Event::Failed`] line reads the same everywhere.

use std::fmt;

use crate::driver::DriverError;
use crate::error::BulkError;

/// A session's failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// One end refused the other: a wrong secret, a file it cannot or will not send.
    Refused(String),
    /// The peer broke the protocol: a malformed or out-of-range message.
    Protocol(String),
    /// Anything else: a local file error, a closed connection, a silent peer, bad settings.
    Local(String),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Refused(why) => write!(f, "refused: {why}"),
            Failure::Protocol(why) => write!(f, "protocol error: {why}"),
            Failure::Local(why) => f.write_str(why),
        }
    }
}

impl From<Failure> for BulkError {
    fn from(failure: Failure) -> Self {
        match failure {
            Failure::Refused(why) => BulkError::Refused(why),
            Failure::Protocol(why) => BulkError::Protocol(why),
            Failure::Local(why) => BulkError::Driver(DriverError::Failed(why)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_and_the_error_read_the_same() {
        for failure in [
            Failure::Refused("the server did not accept the shared secret".into()),
            Failure::Protocol("control record of unknown type 9".into()),
            Failure::Local("the server closed the connection during the transfer".into()),
        ] {
            let line = failure.to_string();
            assert_eq!(BulkError::from(failure).to_string(), line);
        }
    }
}
