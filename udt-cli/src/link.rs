//! What the commands share about a UDT connection's life: `--peer-timeout`, the slice their
//! blocking waits poll in ([`POLL`], the transfer library's), and closing without hanging on a
//! peer that no longer answers.

use std::time::Duration;

/// How long one slice of a blocking wait lasts.
pub const POLL: Duration = udt_transfer::POLL;

/// Close `stream` in the background and wait for it at most `limit`
/// ([`udt_transfer::close_within`]).
pub use udt_transfer::close_within;

/// Parse `--peer-timeout`: a time above zero, at most a day (`30`, `500ms`, `2m`; a bare number
/// is seconds).
pub fn parse_peer_timeout(s: &str) -> Result<Duration, String> {
    crate::units::parse_positive_secs(s)
}

/// `options` with the peer declared lost after `timeout` of silence, if given (otherwise the
/// tool's default, `net::PEER_IDLE_TIMEOUT`, stays).
pub fn with_peer_timeout(mut options: udt::Options, timeout: Option<Duration>) -> udt::Options {
    if let Some(t) = timeout {
        options.set_peer_idle_timeout(Some(t));
    }
    options
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_timeouts() {
        assert_eq!(parse_peer_timeout("2.5"), Ok(Duration::from_millis(2500)));
        assert_eq!(parse_peer_timeout("500ms"), Ok(Duration::from_millis(500)));
        assert!(parse_peer_timeout("0").is_err());
        assert!(parse_peer_timeout("soon").is_err());
        let o = with_peer_timeout(udt::Options::default(), Some(Duration::from_secs(3)));
        assert_eq!(o.config.peer_idle_timeout, Some(Duration::from_secs(3)));
    }
}
