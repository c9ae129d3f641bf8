//! What the commands share about a UDT connection's life: `--peer-timeout`, the slice their
//! blocking waits poll in ([`POLL`], the transfer library's), and closing without hanging on a
//! peer that no longer answers.

use std::sync::mpsc;
use std::time::Duration;

use udt::UdtStream;

/// How long one slice of a blocking wait lasts.
pub const POLL: Duration = udt_transfer::POLL;

/// Close `stream` in the background and wait for it at most `limit`: an error path must not
/// hang on a peer that no longer answers.
pub fn close_within(stream: UdtStream, limit: Duration) {
    let (tx, rx) = mpsc::channel();
    let spawned = std::thread::Builder::new().name("close".into()).spawn(move || {
        let _ = tx.send(stream.close());
    });
    match spawned {
        Ok(_) => match rx.recv_timeout(limit) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::debug!("close: {e}"),
            Err(_) => tracing::debug!("close: still lingering after {limit:?}"),
        },
        Err(e) => tracing::debug!("cannot start the closing thread: {e}"),
    }
}

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
