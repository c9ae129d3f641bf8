//! What every subcommand shares about the network: parsing `HOST:PORT` and listen addresses,
//! socket options from the command line, and connecting or listening with error messages that
//! say what went wrong and where.

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;

use anyhow::{Context, Result};
use udt::proto::cc::CcFactory;
use udt::{Options, UdtListener, UdtStream};

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

/// Parse a listen address: `ADDR:PORT`, `:PORT` or `PORT` (the last two listen on every IPv4
/// address, 0.0.0.0).
pub fn parse_listen(s: &str) -> Result<SocketAddr, String> {
    if let Ok(port) = s.trim_start_matches(':').parse::<u16>() {
        return Ok(SocketAddr::from(([0, 0, 0, 0], port)));
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
    let factory = udt::proto::cc::factory(s).map_err(|e| format!("{e} (see `udt cc list`)"))?;
    Ok(CcArg { spec: s.to_string(), factory })
}

/// Socket options for the command line's `--mss` (UDT4 default 1500 when `None`) and `--cc`
/// (UDT native when `None`).
pub fn options(mss: Option<u32>, cc: Option<&CcArg>) -> Options {
    let mut options = Options::default();
    if let Some(mss) = mss {
        options.config.mss = mss;
    }
    if let Some(cc) = cc {
        options.set_congestion_control_factory(Arc::clone(&cc.factory));
    }
    options
}

/// Connect to `target`, with an error that names the target and hints at the usual causes.
pub fn connect(target: &str, options: Options) -> Result<UdtStream> {
    let addr = target
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve {target}"))?
        .next()
        .with_context(|| format!("{target} resolved to no address"))?;
    tracing::debug!(%addr, "connecting");
    UdtStream::connect_with(addr, options).map_err(|e| {
        let hint = match e.kind() {
            io::ErrorKind::TimedOut => " (is a UDT listener running there, and is UDP open in between?)",
            _ => "",
        };
        anyhow::anyhow!("cannot connect to {target}: {e}{hint}")
    })
}

/// Close a connection: wait until everything sent is acknowledged (at most the linger time)
/// and the shutdown packet has been handed to the socket, so the process may exit right after.
pub fn close(stream: UdtStream) -> io::Result<()> {
    stream.close()
}

/// Listen on `addr`, naming it in the error.
pub fn listen(addr: SocketAddr, options: Options) -> Result<UdtListener> {
    UdtListener::bind_with(addr, options).with_context(|| format!("cannot listen on {addr}"))
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
        assert_eq!(parse_listen("9000").unwrap(), "0.0.0.0:9000".parse().unwrap());
        assert_eq!(parse_listen(":9000").unwrap(), "0.0.0.0:9000".parse().unwrap());
        assert_eq!(parse_listen("127.0.0.1:0").unwrap(), "127.0.0.1:0".parse().unwrap());
        assert_eq!(parse_listen("[::1]:7").unwrap(), "[::1]:7".parse().unwrap());
        assert!(parse_listen("nonsense").is_err());
    }
}
