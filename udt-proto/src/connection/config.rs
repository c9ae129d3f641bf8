//! Per-connection configuration (UDT4 socket options, protocol notes §9) and its validation.

use std::sync::Arc;
use std::time::Duration;

use crate::cc::CcFactory;
use crate::packet::{HEADER_LEN, IP_UDP_OVERHEAD, MAX_MSS, MIN_MSS};

/// Stream (byte stream) or datagram (messages) socket, as negotiated in the handshake.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `SOCK_STREAM`: handshake socket type 1.
    Stream,
    /// `SOCK_DGRAM`: handshake socket type 2.
    Message,
}

/// Default cap of the send and receive buffers and the flow window, packets: 2^18 (262,144),
/// about three times the bandwidth-delay product of a 10 Gb/s, 100 ms path (83,000 packets of
/// 1500 bytes) and ten times that of 1 Gb/s, 300 ms, so one flow can fill such paths while a lost
/// packet waits a round trip for its repair and the receiver holds what arrived behind it. At
/// most 382 MB of 1456-byte payloads each way, committed only as the path needs it (an idle
/// connection holds a few kilobytes). UDT4's 8192 cap one flow at about 320 Mb/s on a 300 ms
/// path, whatever the link.
pub const DEFAULT_BUFFER_PKTS: u32 = 1 << 18;

/// Options of one connection.
#[derive(Clone, Debug)]
pub struct Config {
    /// Stream or message mode; both sides must agree.
    pub mode: Mode,
    /// Maximum segment size in bytes, IP and UDP headers included (UDT4 default 1500).
    pub mss: u32,
    /// Flow-control limit in packets (UDT4 `UDT_FC`, default 25600; ours 262,144, see
    /// [`DEFAULT_BUFFER_PKTS`]).
    pub flow_window: u32,
    /// Send buffer in packets, at most (UDT4 default 8192; ours [`DEFAULT_BUFFER_PKTS`]).
    /// Memory is committed as data needs it, so this is a cap, not an allocation.
    pub send_buffer_pkts: u32,
    /// Stream writes stop at this many packets written and not yet sent, and once a write has
    /// reached it, wait until half of them have been sent (a low-water mark, like Linux's
    /// `TCP_NOTSENT_LOWAT`; not in UDT4); 0 for no limit. Message mode has none. The send
    /// buffer still holds every packet until it is acknowledged, but a blocked writer no longer
    /// wakes for every few packets of freed space (docs/deviations.md R6). Default 2048 packets.
    /// The limit in force is at most twice the packets in flight (and at least 64), so a slow
    /// flow queues little and commits little memory.
    pub unsent_limit_pkts: u32,
    /// Receive buffer in packets, at most (UDT4 default 8192; ours [`DEFAULT_BUFFER_PKTS`]):
    /// the window of sequence numbers the receiver accepts and advertises. Memory is committed
    /// as packets arrive.
    pub recv_buffer_pkts: u32,
    /// On close, keep sending buffered data for at most this long (UDT4: 180 s; ours: 30 s,
    /// see docs/deviations.md). `None` closes at once, dropping unsent data.
    pub linger: Option<Duration>,
    /// Give up a regular connect after this long (UDT4: 3 s).
    pub connect_timeout: Duration,
    /// Give up a rendezvous connect after this long (UDT4: 30 s).
    pub rendezvous_timeout: Duration,
    /// Interval between handshake resends (UDT4: 250 ms).
    pub handshake_resend: Duration,
    /// Congestion control factory (default: the thesis' algorithm, UDT4's `CUDTCC`,
    /// [`NativeFactory`](crate::cc::NativeFactory); the runtime's default is `udt-cc`'s model
    /// controller).
    pub cc: Arc<dyn CcFactory>,
    /// Protocol policy: what the sender learns from and probes, and what it asks the peer's
    /// receiver to report (progress ACKs, the arrival rate, ACK frequency; offered to the peer at
    /// start, see [`Policy`](super::Policy)). `None` (the default) is what the congestion
    /// controller declares it needs ([`CcFactory::policy`]).
    pub policy: Option<super::Policy>,
    /// Upper bound on the sending rate in bytes/s of UDT packets (UDT4 `UDT_MAXBW`).
    pub max_bandwidth: Option<u64>,
    /// Re-report missing packets after an increasing interval (thesis §2.2.3; UDT4 4.9+ removed
    /// it). Default on.
    pub periodic_nak: bool,
    /// Start the receiver's arrival-speed and packet-pair estimators as UDT4's
    /// `CPktTimeWindow` does, filled with made-up gaps (1 s between arrivals, 1 ms within a
    /// pair), so that the first ACKs report 1 packet/s and a capacity of 1000 packets/s until
    /// real samples outnumber them. Off by default (ours report "unknown" instead, see
    /// docs/deviations.md); on, a receiver behaves as a UDT4 4.11 one does, for simulating and
    /// testing against UDT4 receivers, and as one it also ignores the peer's policy offers
    /// (they go to its congestion control, as UDT4 hands over every user-defined control packet).
    pub udt4_estimators: bool,
    /// How far a late sender may catch up on its pacing schedule, as time.
    pub max_pacing_debt: Duration,
    /// The peer is declared lost after more than this many EXP expiries in a row... (UDT4: 16)
    pub broken_exp_count: u32,
    /// ...and at least this long without hearing from it (UDT4: 5 s). With the UDT4 values and
    /// the 300 ms EXP floor, a silent peer is declared lost after about 46 s.
    pub broken_min_silence: Duration,
    /// Declare the peer lost once nothing at all has been heard from it for this long, whatever
    /// the EXP count (not in UDT4). Any packet from the peer counts, keep-alives included: an
    /// idle connection exchanges one each way per EXP interval (count x (RTT + 4 RTTVar) +
    /// SYN, at least 300 ms, the count back to 1 at each packet heard), so a live peer is heard
    /// several times a second on a short path and about every two RTTs on a long one; keep
    /// this well above that. `None` (the default) leaves UDT4's rule above alone, about 46 s.
    pub peer_idle_timeout: Option<Duration>,
    /// Initial sequence number to send with; `None` (the default) draws it from the RNG.
    /// Fixed values serve tests (e.g. a transfer across the 2^31 wrap) and replays.
    pub initial_seq: Option<crate::seq::SeqNo>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            mode: Mode::Stream,
            mss: 1500,
            flow_window: DEFAULT_BUFFER_PKTS,
            send_buffer_pkts: DEFAULT_BUFFER_PKTS,
            unsent_limit_pkts: 2048,
            recv_buffer_pkts: DEFAULT_BUFFER_PKTS,
            linger: Some(Duration::from_secs(30)),
            connect_timeout: Duration::from_secs(3),
            rendezvous_timeout: Duration::from_secs(30),
            handshake_resend: Duration::from_millis(250),
            cc: Arc::new(crate::cc::NativeFactory::default()),
            policy: None,
            max_bandwidth: None,
            periodic_nak: true,
            udt4_estimators: false,
            max_pacing_debt: Duration::from_millis(1),
            broken_exp_count: 16,
            broken_min_silence: Duration::from_secs(5),
            peer_idle_timeout: None,
            initial_seq: None,
        }
    }
}

/// A configuration value out of range.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// MSS outside [76, 65535].
    #[error("MSS {0} is outside [{MIN_MSS}, {MAX_MSS}]")]
    Mss(u32),
    /// A window or buffer of fewer than 32 packets (UDT4's minimum buffer is 32).
    #[error("{what} of {value} packets is below the minimum of 32")]
    TooSmall {
        /// Which option.
        what: &'static str,
        /// Its value.
        value: u32,
    },
    /// A buffer so large its memory would not be addressable.
    #[error("{what} of {value} packets is too large")]
    TooLarge {
        /// Which option.
        what: &'static str,
        /// Its value.
        value: u32,
    },
    /// Zero max bandwidth.
    #[error("max bandwidth must be positive")]
    ZeroBandwidth,
    /// A zero peer-idle timeout (every connection would be lost at once).
    #[error("the peer idle timeout must be positive")]
    ZeroPeerIdleTimeout,
}

/// Largest buffer in packets we accept (8 GiB of 1456-byte payloads would be absurd).
const MAX_BUFFER_PKTS: u32 = 1 << 22;

impl Config {
    /// Check every option.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(MIN_MSS..=MAX_MSS).contains(&self.mss) {
            return Err(ConfigError::Mss(self.mss));
        }
        for (what, value) in [
            ("flow window", self.flow_window),
            ("send buffer", self.send_buffer_pkts),
            ("receive buffer", self.recv_buffer_pkts),
        ] {
            if value < 32 {
                return Err(ConfigError::TooSmall { what, value });
            }
            if value > MAX_BUFFER_PKTS && what != "flow window" {
                return Err(ConfigError::TooLarge { what, value });
            }
        }
        if self.max_bandwidth == Some(0) {
            return Err(ConfigError::ZeroBandwidth);
        }
        if self.peer_idle_timeout == Some(Duration::ZERO) {
            return Err(ConfigError::ZeroPeerIdleTimeout);
        }
        Ok(())
    }

    /// Payload bytes per data packet for an MSS: MSS - 28 (IP, UDP) - 16 (UDT header).
    pub fn payload_size(mss: u32) -> usize {
        mss as usize - IP_UDP_OVERHEAD - HEADER_LEN
    }
}
