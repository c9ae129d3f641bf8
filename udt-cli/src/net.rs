//! What every subcommand shares about the network: parsing `HOST:PORT` and listen addresses,
//! socket options from the command line, and connecting or listening with error messages that
//! say what went wrong and where.
//!
//! Connecting tries every address a name resolves to, happy-eyeballs style (RFC 8305): in the
//! resolver's order with the families interleaved, a new attempt starting every
//! [`ATTEMPT_DELAY`] (or as soon as the previous one failed) while the earlier ones go on; the
//! first handshake to complete wins and the others are abandoned (closed, if they complete
//! later). So `localhost` reaches an IPv4-only listener even when it resolves to `::1` first,
//! 250 ms later instead of failing after the 3 s connect timeout.
//!
//! Listening on a bare port (`PORT`, `:PORT`) binds the dual-stack `[::]`, which takes IPv4
//! and IPv6 peers alike, and falls back to `0.0.0.0` where IPv6 is unavailable. A port already
//! bound elsewhere is an error ("address in use"): ports are never shared (see `udt::Options::
//! reuse_address`).

use std::io;
use std::net::{Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use udt::proto::cc::CcFactory;
use udt::secure::HandshakeError;
use udt::{Options, UdtListener, UdtStream};

/// How long a connection attempt to one address runs alone before the next address is tried
/// too (RFC 8305's recommended connection attempt delay).
pub const ATTEMPT_DELAY: Duration = Duration::from_millis(250);

/// How often a wait for a connection attempt looks whether Ctrl-C was pressed.
const STOP_SLICE: Duration = Duration::from_millis(5);

/// How long the `udt` tool waits without hearing anything from its peer before it declares the
/// connection lost (`udt::Options::set_peer_idle_timeout`). The library's default is UDT4's
/// rule, about 46 s; an interactive tool should say much sooner that the peer is gone. A live
/// idle peer is heard from every 300 ms to about two round trips.
pub const PEER_IDLE_TIMEOUT: Duration = Duration::from_secs(10);

/// Parse a connect target `HOST:PORT` (`[v6]:PORT` for IPv6 literals). Only the shape is checked
/// here, so that a typo is a usage error (exit 2); names are resolved when connecting.
pub fn parse_target(s: &str) -> Result<String, String> {
    let (host, port) =
        s.rsplit_once(':').ok_or_else(|| format!("`{s}` is not HOST:PORT (the port is missing)"))?;
    if host.is_empty() {
        return Err(format!("`{s}` is not HOST:PORT (the host is missing)"));
    }
    port.parse::<u16>().map_err(|_| format!("`{port}` is not a port number (0-65535)"))?;
    Ok(s.to_string())
}

/// Parse a listen address: `ADDR:PORT`, `:PORT` or `PORT` (the last two listen on every
/// address of both families: the dual-stack `[::]`, see [`listen`]).
pub fn parse_listen(s: &str) -> Result<SocketAddr, String> {
    if let Ok(port) = s.trim_start_matches(':').parse::<u16>() {
        return Ok(SocketAddr::from((Ipv6Addr::UNSPECIFIED, port)));
    }
    if let Ok(addr) = s.parse::<SocketAddr>() {
        return Ok(addr);
    }
    parse_target(s)?;
    s.to_socket_addrs()
        .map_err(|e| format!("cannot resolve `{s}`: {e}"))?
        .next()
        .ok_or_else(|| format!("`{s}` resolved to no address"))
}

/// A `--cc NAME[:key=value,...]` argument: the text as given and the factory it names.
#[derive(Clone, Debug)]
pub struct CcArg {
    /// The specification as typed.
    pub spec: String,
    /// Builds one controller per connection.
    pub factory: Arc<dyn CcFactory>,
}

/// Parse `--cc`: the name and parameters are checked against the catalog here, so that a typo
/// is a usage error (exit 2) that lists what exists.
pub fn parse_cc(s: &str) -> Result<CcArg, String> {
    let factory = udt::cc::factory(s).map_err(|e| format!("{e} (see `udt cc list`)"))?;
    Ok(CcArg { spec: s.to_string(), factory })
}

/// Socket options for the command line's `--mss` (UDT4 default 1500 when `None`) and `--cc`
/// (UDT native when `None`), with the tool's [`PEER_IDLE_TIMEOUT`].
pub fn options(mss: Option<u32>, cc: Option<&CcArg>) -> Options {
    let mut options = Options::default();
    options.set_peer_idle_timeout(Some(PEER_IDLE_TIMEOUT));
    if let Some(mss) = mss {
        options.config.mss = mss;
    }
    if let Some(cc) = cc {
        options.set_congestion_control_factory(Arc::clone(&cc.factory));
    }
    options
}

/// Connect to `target` (trying every address it resolves to, see the module's doc), with an
/// error that names the target and hints at the usual causes.
pub fn connect(target: &str, options: Options) -> Result<UdtStream> {
    let addrs: Vec<SocketAddr> =
        target.to_socket_addrs().with_context(|| format!("cannot resolve {target}"))?.collect();
    if addrs.is_empty() {
        anyhow::bail!("{target} resolved to no address");
    }
    tracing::debug!(?addrs, "connecting");
    connect_any(&addrs, options, ATTEMPT_DELAY).map_err(|e| {
        let hint = match (e.kind(), handshake_error(&e)) {
            (io::ErrorKind::TimedOut, _) => " (is a UDT listener running there, and is UDP open in between?)",
            (_, Some(HandshakeError::WrongCredential("code phrase"))) => {
                ": that was the listening end's one guess, and its code phrase is spent; start it \
                 again (`udt recv`, `udt cat --listen`, `udt perf server`) and use the new code it shows"
            }
            (_, Some(HandshakeError::WrongCredential(_))) => ": give both ends the same --key-file",
            (_, Some(HandshakeError::NotSecure)) => {
                "; drop --code/--key-file and give --insecure to talk to it in clear, on a trusted \
                 network"
            }
            (_, Some(HandshakeError::OtherMode { .. })) => {
                ": give both ends a code phrase (--code) or both the same --key-file"
            }
            _ => "",
        };
        anyhow::anyhow!("cannot connect to {target}: {e}{hint}")
    })
}

/// The key agreement's failure inside a connect error, if that is what it is.
pub fn handshake_error(e: &io::Error) -> Option<&HandshakeError> {
    e.get_ref().and_then(|inner| inner.downcast_ref::<HandshakeError>())
}

/// Connect to the first of `addrs` that answers: attempts start in [`interleave`]d order, one
/// every `delay` (or at once when every running attempt failed), and run concurrently; the
/// first to complete its handshake is returned. Attempts still running go on in the background
/// and close at once if they complete. When all fail, the error names each address's failure
/// and has the kind of the last.
pub fn connect_any(addrs: &[SocketAddr], options: Options, delay: Duration) -> io::Result<UdtStream> {
    let order = interleave(addrs);
    let (tx, rx) = mpsc::channel::<(SocketAddr, io::Result<UdtStream>)>();
    let mut started = 0;
    let mut running = 0;
    let mut next_start = Instant::now();
    let mut failures: Vec<(SocketAddr, io::Error)> = Vec::new();
    loop {
        if started < order.len() && (running == 0 || Instant::now() >= next_start) {
            let addr = order[started];
            let (tx, options) = (tx.clone(), options.clone());
            std::thread::Builder::new()
                .name(format!("udt-connect {addr}"))
                .spawn(move || {
                    tracing::debug!(%addr, "connection attempt");
                    // If another attempt won meanwhile, the receiver is gone and the stream
                    // comes back here: dropping it closes the connection.
                    let _ = tx.send((addr, UdtStream::connect_with(addr, options)));
                })
                .map_err(|e| io::Error::other(format!("cannot start a connection attempt: {e}")))?;
            started += 1;
            running += 1;
            next_start = Instant::now() + delay;
        }
        // Wait in slices, so that Ctrl-C ends the wait at once.
        let mut slice = STOP_SLICE;
        if started < order.len() {
            slice = slice.min(next_start.saturating_duration_since(Instant::now()));
        }
        let result = match rx.recv_timeout(slice) {
            Ok(r) => r,
            Err(mpsc::RecvTimeoutError::Timeout) if crate::interrupt::requested() => {
                return Err(crate::interrupt::error())
            }
            // Time for the next attempt, or a look at Ctrl-C.
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(io::Error::other("every connection attempt vanished"))
            }
        };
        running -= 1;
        match result {
            (addr, Ok(stream)) => {
                tracing::debug!(%addr, "connected");
                return Ok(stream);
            }
            (addr, Err(e)) => {
                tracing::debug!(%addr, error = %e, "connection attempt failed");
                failures.push((addr, e));
                if running == 0 && started == order.len() {
                    return Err(combined(failures));
                }
            }
        }
    }
}

/// One error for every attempt's failure: the only one as it is, several as
/// "ADDR: error; ADDR: error" with the last one's kind.
fn combined(mut failures: Vec<(SocketAddr, io::Error)>) -> io::Error {
    if failures.len() == 1 {
        return failures.pop().map(|(_, e)| e).unwrap_or_else(|| io::Error::other("no address"));
    }
    let kind = failures.last().map_or(io::ErrorKind::Other, |(_, e)| e.kind());
    let text: Vec<String> = failures.iter().map(|(a, e)| format!("{a}: {e}")).collect();
    io::Error::new(kind, text.join("; "))
}

/// The order to try addresses in (RFC 8305 section 4): the resolver's, but alternating between
/// the families, starting with the family of the first; duplicates dropped.
pub fn interleave(addrs: &[SocketAddr]) -> Vec<SocketAddr> {
    let mut unique: Vec<SocketAddr> = Vec::with_capacity(addrs.len());
    for a in addrs {
        if !unique.contains(a) {
            unique.push(*a);
        }
    }
    let Some(first) = unique.first() else { return unique };
    let first_v6 = first.is_ipv6();
    let (mut same, mut other): (Vec<_>, Vec<_>) = unique.into_iter().partition(|a| a.is_ipv6() == first_v6);
    let mut order = Vec::with_capacity(same.len() + other.len());
    same.reverse();
    other.reverse();
    while !same.is_empty() || !other.is_empty() {
        order.extend(same.pop());
        order.extend(other.pop());
    }
    order
}

/// Listen on `addr`, naming it in the error. The dual-stack `[::]` falls back to `0.0.0.0`
/// (same port) where IPv6 is unavailable; a port in use is never a reason to fall back.
pub fn listen(addr: SocketAddr, options: Options) -> Result<UdtListener> {
    match UdtListener::bind_with(addr, options.clone()) {
        Ok(l) => Ok(l),
        Err(e) if e.kind() == io::ErrorKind::AddrInUse => Err(in_use(addr)),
        Err(e) if addr.ip() == Ipv6Addr::UNSPECIFIED && e.kind() != io::ErrorKind::PermissionDenied => {
            let v4 = SocketAddr::from(([0, 0, 0, 0], addr.port()));
            tracing::info!(error = %e, "no IPv6 here: listening on {v4}");
            UdtListener::bind_with(v4, options).map_err(|e| match e.kind() {
                io::ErrorKind::AddrInUse => in_use(v4),
                _ => anyhow::Error::new(e).context(format!("cannot listen on {v4}")),
            })
        }
        Err(e) => Err(anyhow::Error::new(e).context(format!("cannot listen on {addr}"))),
    }
}

/// The error for a listen address whose port is taken.
fn in_use(addr: SocketAddr) -> anyhow::Error {
    anyhow::anyhow!(
        "cannot listen on {addr}: address in use (another `udt` or another program is listening there)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets() {
        assert!(parse_target("example.com:9000").is_ok());
        assert!(parse_target("[::1]:9000").is_ok());
        assert!(parse_target("example.com").is_err());
        assert!(parse_target(":9000").is_err());
        assert!(parse_target("host:99999").is_err());
    }

    #[test]
    fn listen_addresses() {
        assert_eq!(parse_listen("9000").unwrap(), "[::]:9000".parse().unwrap());
        assert_eq!(parse_listen(":9000").unwrap(), "[::]:9000".parse().unwrap());
        assert_eq!(parse_listen("0.0.0.0:9000").unwrap(), "0.0.0.0:9000".parse().unwrap());
        assert_eq!(parse_listen("127.0.0.1:0").unwrap(), "127.0.0.1:0".parse().unwrap());
        assert_eq!(parse_listen("[::1]:7").unwrap(), "[::1]:7".parse().unwrap());
        assert!(parse_listen("nonsense").is_err());
    }

    fn addrs(list: &[&str]) -> Vec<SocketAddr> {
        list.iter().map(|a| a.parse().unwrap()).collect()
    }

    #[test]
    fn families_alternate_from_the_first_and_duplicates_go() {
        let got = interleave(&addrs(&["[::1]:9", "[::2]:9", "[::1]:9", "127.0.0.1:9", "10.0.0.1:9"]));
        assert_eq!(got, addrs(&["[::1]:9", "127.0.0.1:9", "[::2]:9", "10.0.0.1:9"]));
        let got = interleave(&addrs(&["127.0.0.1:9", "[::1]:9"]));
        assert_eq!(got, addrs(&["127.0.0.1:9", "[::1]:9"]));
        assert!(interleave(&[]).is_empty());
    }

    /// `localhost` resolving to `::1` first, and an IPv4-only listener: the IPv6 attempt gets
    /// no answer (nothing listens there), the IPv4 one starts after the attempt delay and wins,
    /// long before the IPv6 attempt's 3 s connect timeout.
    #[test]
    fn an_unanswered_ipv6_address_falls_back_to_ipv4() {
        let listener = UdtListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let started = Instant::now();
        let list = addrs(&[&format!("[::1]:{port}"), &format!("127.0.0.1:{port}")]);
        let stream = connect_any(&list, Options::default(), ATTEMPT_DELAY).unwrap();
        let took = started.elapsed();
        assert_eq!(stream.peer_addr().unwrap(), list[1]);
        assert!(took < Duration::from_millis(2500), "connected after {took:?}: waited for the IPv6 timeout");
        let (_, peer) = listener.accept().unwrap();
        assert!(peer.is_ipv4());
    }

    #[test]
    fn every_failure_is_named() {
        let mut options = Options::default();
        options.config.connect_timeout = Duration::from_millis(300);
        // Ports nothing listens on: bound for a moment to find them.
        let free = |a: &str| std::net::UdpSocket::bind(a).unwrap().local_addr().unwrap();
        let list = [free("[::1]:0"), free("127.0.0.1:0")];
        let e = connect_any(&list, options, Duration::from_millis(50)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut, "{e}");
        let text = e.to_string();
        assert!(text.contains(&list[0].to_string()) && text.contains(&list[1].to_string()), "{text}");
    }

    #[test]
    fn a_taken_port_is_address_in_use_and_never_a_fallback() {
        let first = listen(SocketAddr::from((Ipv6Addr::UNSPECIFIED, 0)), Options::default()).unwrap();
        let port = first.local_addr().unwrap().port();
        for addr in [SocketAddr::from((Ipv6Addr::UNSPECIFIED, port)), SocketAddr::from(([0, 0, 0, 0], port))]
        {
            let e = listen(addr, Options::default()).expect_err("a second listener on the same port");
            let text = format!("{e:#}");
            assert!(text.contains("address in use"), "{text}");
            assert!(text.contains(&format!("cannot listen on {addr}")), "{text}");
        }
    }
}
