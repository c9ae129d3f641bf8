//! Socket options: the protocol configuration plus what only the runtime knows (UDP buffer
//! sizes, timeouts). UDT4 names in brackets.

use std::time::Duration;

pub use udt_proto::connection::{Config, Mode};

/// Options of a UDT socket.
#[derive(Clone, Debug)]
pub struct Options {
    /// Protocol options: MSS, flow window, buffers, linger, congestion control, ... (`UDT_MSS`,
    /// `UDT_FC`, `UDT_SNDBUF`, `UDT_RCVBUF`, `UDT_LINGER`, `UDT_CC`, `UDT_MAXBW`).
    pub config: Config,
    /// UDP receive buffer in bytes (`UDP_RCVBUF`, default 12,288,000 as UDT4); raised with
    /// `SO_RCVBUFFORCE` when running as root.
    pub udp_recv_buffer: usize,
    /// UDP send buffer in bytes (`UDP_SNDBUF`; UDT4 uses 64 KiB, we default to 4 MiB).
    pub udp_send_buffer: usize,
    /// Blocking reads give up after this long (`UDT_RCVTIMEO`); `None` waits forever.
    pub read_timeout: Option<Duration>,
    /// Blocking writes give up after this long (`UDT_SNDTIMEO`); `None` waits forever.
    pub write_timeout: Option<Duration>,
    /// Allow binding a port in use by another socket (`UDT_REUSEADDR`, default true).
    pub reuse_address: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            config: Config::default(),
            udp_recv_buffer: 12_288_000,
            udp_send_buffer: 4 << 20,
            read_timeout: None,
            write_timeout: None,
            reuse_address: true,
        }
    }
}

impl Options {
    /// Options for message (datagram) sockets.
    pub fn message() -> Self {
        let mut o = Options::default();
        o.config.mode = Mode::Message;
        o
    }
}
