//! Composable congestion control: the CCC of thesis chapter 5 as a trait, with the thesis'
//! algorithm (`daimd`, UDT4's `CUDTCC`: [`NativeCc`]) and a fixed-rate controller built in.
//! The catalog (the default model controller, BBR, the TCP family, GTP, ...) and the lookup by
//! name are the `udt-cc` crate's.
//!
//! A connection owns one `Box<dyn CongestionControl>` made by a [`CcFactory`]. The connection
//! calls the `on_*` callbacks as events happen and reads the outputs (packet-sending period,
//! congestion window, optional RTO and RTT overrides, an optional sending pause, and
//! user-defined control messages to send) after every callback. What the protocol does around
//! it (which ACKs the receiver sends and reports, what the sender learns from) is the
//! connection's [`Policy`]: a factory declares the policy its controllers need, the
//! application may set another, and no controller switches it at run time.
//!
//! Invariants: callbacks get a [`CcContext`] with read-only facts about the connection and the
//! injected random number generator, so an algorithm never reads a clock or a global RNG. Outputs
//! are pure reads: calling them twice without a callback in between returns the same values.

pub mod fixed;
pub mod native;

use std::fmt;
use std::time::Duration;

use rand_core::RngCore;

pub use crate::policy::Policy;
use crate::seq::SeqNo;
use crate::stats::Stats;
use crate::time::Instant;

pub use fixed::FixedRate;
pub use native::{NativeCc, NativeConfig};

/// Read-only facts handed to every callback (UDT4 CCC's protected members), plus the RNG.
pub struct CcContext<'a> {
    /// Current time.
    pub now: Instant,
    /// Maximum segment size in bytes (IP and UDP headers included).
    pub mss: u32,
    /// Data payload bytes per packet (MSS - 44).
    pub payload_size: u32,
    /// The rate-control interval SYN (10 ms).
    pub syn_interval: Duration,
    /// Smoothed RTT.
    pub rtt: Duration,
    /// RTT variance.
    pub rtt_var: Duration,
    /// Packet arrival rate at the receiver, packets/s, as reported in ACKs (0 = unknown).
    pub recv_rate: u32,
    /// Estimated link capacity, packets/s, as reported in ACKs (0 = unknown).
    pub bandwidth: u32,
    /// Largest sequence number sent so far.
    pub snd_curr_seq: SeqNo,
    /// Next sequence number the peer expects (everything before it acknowledged).
    pub last_ack: SeqNo,
    /// Maximum flow window, packets (negotiated in the handshake).
    pub max_window: u32,
    /// Packets sent and not yet acknowledged.
    pub flight: u32,
    /// Measured average interval between data packets sent during the last SYN, when the
    /// sender was busy throughout it; used for rate correction (thesis §2.3.2.4).
    pub measured_send_period: Option<Duration>,
    /// The connection's perfmon counters.
    pub stats: &'a Stats,
    /// In [`CongestionControl::on_ack`] only: the raw values the full ACK carried, before the
    /// connection smoothed them into `rtt`, `recv_rate` and `bandwidth`.
    pub ack: Option<AckReport>,
    /// The peer answered none of this end's policy offers ([`Policy`]; all
    /// `MAX_UNANSWERED_OFFERS` were sent, each an answer time after the one before): a UDT4
    /// peer, whose receiver reports only what UDT4's does (no queueing delay). False while the
    /// exchange may still succeed, and when this end asked nothing beyond UDT4.
    pub peer_udt4: bool,
    /// Randomness injected by the driver (seeded in tests and in the simulator).
    pub rng: &'a mut dyn RngCore,
}

/// What one full ACK reported (protocol notes §1): the receiver's RTT estimate from its ACK/ACK2
/// pairs and, when present, its packet arrival rate and packet-pair capacity (packets/s, 0 =
/// unknown).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckReport {
    /// The receiver's smoothed RTT.
    pub rtt: Duration,
    /// Packet arrival rate at the receiver, packets/s (0 = unknown or absent).
    pub recv_rate: u32,
    /// Link capacity by packet pairs, packets/s (0 = unknown or absent).
    pub capacity: u32,
    /// The receiver's one-way queueing delay since its last report (smallest: the standing
    /// queue; largest), when this end's policy asked for it and the peer sends it
    /// ([`Policy::queue_delay_reports`]); `None` from a UDT4 receiver.
    pub queue: Option<crate::queue_delay::QueueReport>,
}

/// A user-defined control message (control type 0x7FFF) to send to the peer's algorithm.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CustomMessage {
    /// Sub-type (word 0, bits 15..0).
    pub subtype: u16,
    /// Additional-info word.
    pub info: u32,
    /// Body bytes (padded to a multiple of 4 on the wire is not required).
    pub data: Vec<u8>,
}

/// A congestion control algorithm (thesis §5.1.2).
///
/// Defaults: every callback does nothing; no overrides; no pause; no custom messages.
pub trait CongestionControl: Send + fmt::Debug {
    /// Short name (`"udt"`, `"fixed"`, ...).
    fn name(&self) -> &'static str;

    /// The connection is established; `ctx` holds the negotiated parameters.
    fn init(&mut self, _ctx: &mut CcContext<'_>) {}
    /// The connection is closing.
    fn close(&mut self, _ctx: &mut CcContext<'_>) {}
    /// A full ACK advanced the acknowledged point to `ack` (next expected); light ACKs do not
    /// call it (their progress shows in the next full ACK).
    fn on_ack(&mut self, _ctx: &mut CcContext<'_>, _ack: SeqNo) {}
    /// A NAK reported the inclusive ranges `lost` (already validated against what was sent).
    fn on_loss(&mut self, _ctx: &mut CcContext<'_>, _lost: &[(SeqNo, SeqNo)]) {}
    /// The EXP timer fired with unacknowledged data outstanding.
    fn on_timeout(&mut self, _ctx: &mut CcContext<'_>) {}
    /// A data packet left (`retransmission` true for a resend).
    fn on_packet_sent(&mut self, _ctx: &mut CcContext<'_>, _seq: SeqNo, _retransmission: bool) {}
    /// A data packet arrived.
    fn on_packet_received(&mut self, _ctx: &mut CcContext<'_>, _seq: SeqNo) {}
    /// A user-defined control packet arrived.
    fn on_custom_message(&mut self, _ctx: &mut CcContext<'_>, _msg: &CustomMessage) {}
    /// A congestion warning control packet arrived (UDT4: period x 1.125).
    fn on_congestion_warning(&mut self, _ctx: &mut CcContext<'_>) {}

    /// Packet-sending period: the interval between two data packets.
    fn send_period(&self) -> Duration;
    /// Congestion window in packets (the flow window caps it further).
    fn congestion_window(&self) -> f64;
    /// Fixed retransmission timeout without back-off (UDT4 `setRTO`).
    fn rto(&self) -> Option<Duration> {
        None
    }
    /// RTT override (thesis §5.1.2.2: "use either the RTT value provided by UDT, or its own"):
    /// when set, the connection's timers (EXP, loss-report interval) use it in place of the
    /// smoothed RTT. The RTT reported to the peer in ACKs stays the measured one.
    fn rtt(&self) -> Option<Duration> {
        None
    }
    /// A pause before the next data packet (the thesis' one-SYN sending freeze after a
    /// congestion event). Taken once: the second call returns `None`.
    fn take_pause(&mut self) -> Option<Duration> {
        None
    }
    /// A user-defined control message to send to the peer, taken once.
    fn poll_custom_message(&mut self) -> Option<CustomMessage> {
        None
    }
}

/// Makes one congestion controller per connection.
pub trait CcFactory: Send + Sync + fmt::Debug {
    /// A fresh controller.
    fn build(&self) -> Box<dyn CongestionControl>;
    /// The protocol policy its controllers need (what the sender learns from, what it asks the
    /// receiver to report), used where the application sets none ([`crate::connection::Config::policy`]).
    /// Default: UDT4's.
    fn policy(&self) -> Policy {
        Policy::UDT4
    }
}

/// Factory for the UDT native algorithm with a given configuration.
#[derive(Clone, Copy, Debug, Default)]
pub struct NativeFactory(pub NativeConfig);

impl CcFactory for NativeFactory {
    fn build(&self) -> Box<dyn CongestionControl> {
        Box::new(NativeCc::new(self.0))
    }
}

/// Factory for the fixed-rate controller.
#[derive(Clone, Copy, Debug)]
pub struct FixedFactory {
    /// Target rate in bits per second of UDT packets (MSS - 28 bytes each).
    pub bits_per_sec: u64,
}

impl CcFactory for FixedFactory {
    fn build(&self) -> Box<dyn CongestionControl> {
        Box::new(FixedRate::from_bits_per_sec(self.bits_per_sec, 1500))
    }
}
