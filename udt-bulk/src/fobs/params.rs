//! The knobs of a FOBS transfer ([`Params`], each end's own) and what the two ends agreed on
//! ([`Transfer`], announced by the sender in its accept message).
//!
//! Invariant: a [`Transfer`] is only ever built through [`Transfer::new`], which checks every
//! field against the protocol's limits, so the sessions may size their per-chunk state from it
//! without further checks (at most [`MAX_CHUNK_PACKETS`] bits per map).

use std::time::Duration;

use super::chunk::Geometry;
use super::wire::{DATA_HEADER, MAP_HEADER};

/// The largest chunk, in packets: a chunk's bitmap is at most 128 KiB.
pub const MAX_CHUNK_PACKETS: u32 = 1 << 20;
/// The largest segment, in packets: a segment's bit acknowledgement is at most 8 KiB.
pub const MAX_SEGMENT_PACKETS: u32 = 1 << 16;
/// The smallest packet payload, in bytes.
pub const MIN_PAYLOAD: u16 = 16;
/// The largest packet payload, in bytes: a data or map datagram fits in one IPv4 UDP datagram.
pub const MAX_PAYLOAD: u16 = (65_507 - MAP_HEADER) as u16;

/// How the receiver acknowledges (Kannan et al. 2003 §3.3).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AckScheme {
    /// Segmented bit and composite acknowledgements (bit map, ACK, NACK) over the TCP feedback
    /// connection, answering the sender's end-of-segment and DONE messages (§3.3.3, §3.3.4):
    /// the paper's best scheme.
    #[default]
    SegmentedTcp,
    /// The whole chunk's bit map, sent by the receiver as UDP datagrams every segment's worth
    /// of arrivals (§3.1, §3.3.2): the paper's first design, whose acknowledgements can be lost.
    ChunkMapUdp,
}

impl AckScheme {
    /// The scheme's number on the wire.
    pub fn to_wire(self) -> u8 {
        match self {
            AckScheme::SegmentedTcp => 1,
            AckScheme::ChunkMapUdp => 2,
        }
    }

    /// The scheme a wire number names.
    pub fn from_wire(v: u8) -> Option<Self> {
        match v {
            1 => Some(AckScheme::SegmentedTcp),
            2 => Some(AckScheme::ChunkMapUdp),
            _ => None,
        }
    }
}

/// One end's FOBS knobs. The sender's geometry and rate fields rule a transfer; the receiver
/// chooses the acknowledgement scheme (it sends the acknowledgements) and names it in its request.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// File bytes per data datagram (the datagram adds a 21-byte header).
    pub payload: u16,
    /// Chunk size in bytes, rounded down to whole packets (at least one): the unit transferred
    /// completely before the next one starts (§3).
    pub chunk_bytes: u64,
    /// Packets per segment: the unit of the segmented acknowledgement (§3.2.1, §3.3.3), and the
    /// number of arrivals between two chunk maps with [`AckScheme::ChunkMapUdp`].
    pub segment_packets: u32,
    /// The acknowledgement scheme the receiver asks for.
    pub ack_scheme: AckScheme,
    /// Adapt the sending rate to the loss the acknowledgements reveal (see `rate.rs`); when
    /// false the sender paces at `max_rate_bps` throughout, like FOBS without its rate and
    /// congestion control (§5).
    pub rate_control: bool,
    /// The sending rate at the start, in bits per second of UDP payload (datagram bytes).
    pub initial_rate_bps: u64,
    /// The rate never goes above this, bits per second.
    pub max_rate_bps: u64,
    /// The rate never goes below this, bits per second.
    pub min_rate_bps: u64,
    /// The fraction of datagrams a sample may lose before the rate backs off (0..1).
    pub loss_tolerance: f64,
    /// The round-trip time assumed until the first acknowledgement measures it.
    pub initial_rtt: Duration,
    /// Bound on each step of the connection setup (connect, request, accept of channel 1).
    pub setup_timeout: Duration,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            payload: 1400,
            chunk_bytes: 8 << 20,
            segment_packets: 256,
            ack_scheme: AckScheme::SegmentedTcp,
            rate_control: true,
            initial_rate_bps: 100_000_000,
            max_rate_bps: 10_000_000_000,
            min_rate_bps: 1_000_000,
            loss_tolerance: 0.02,
            initial_rtt: Duration::from_millis(100),
            setup_timeout: Duration::from_secs(10),
        }
    }
}

impl Params {
    /// Packets per chunk these parameters ask for (at least one, at most [`MAX_CHUNK_PACKETS`]).
    pub fn chunk_packets(&self) -> u32 {
        let per = (self.chunk_bytes / u64::from(self.payload.max(1))).max(1);
        u32::try_from(per).unwrap_or(u32::MAX).min(MAX_CHUNK_PACKETS)
    }

    /// The rate-control fields are usable: 0 < min <= initial <= max, tolerance in [0, 1).
    pub fn check_rates(&self) -> Result<(), String> {
        if self.min_rate_bps == 0 || self.min_rate_bps > self.max_rate_bps {
            return Err(format!(
                "rates: need 0 < min_rate_bps ({}) <= max_rate_bps ({})",
                self.min_rate_bps, self.max_rate_bps
            ));
        }
        if !(self.min_rate_bps..=self.max_rate_bps).contains(&self.initial_rate_bps) {
            return Err(format!("initial_rate_bps {} is outside [min, max]", self.initial_rate_bps));
        }
        if !(0.0..1.0).contains(&self.loss_tolerance) {
            return Err(format!("loss_tolerance {} is outside [0, 1)", self.loss_tolerance));
        }
        Ok(())
    }
}

/// What both ends agreed on: the file's geometry and the acknowledgement scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transfer {
    /// Size, payload, chunk and segment sizes.
    pub geometry: Geometry,
    /// How the receiver acknowledges.
    pub scheme: AckScheme,
}

impl Transfer {
    /// Check the fields against the protocol's limits (they may come from the network).
    pub fn new(
        size: u64,
        payload: u16,
        chunk_packets: u32,
        segment_packets: u32,
        scheme: AckScheme,
    ) -> Result<Self, String> {
        if !(MIN_PAYLOAD..=MAX_PAYLOAD).contains(&payload) {
            return Err(format!("payload {payload} is outside [{MIN_PAYLOAD}, {MAX_PAYLOAD}]"));
        }
        if !(1..=MAX_CHUNK_PACKETS).contains(&chunk_packets) {
            return Err(format!("chunk of {chunk_packets} packets is outside [1, {MAX_CHUNK_PACKETS}]"));
        }
        if !(1..=MAX_SEGMENT_PACKETS.min(chunk_packets)).contains(&segment_packets) {
            return Err(format!(
                "segment of {segment_packets} packets is outside [1, min(chunk, {MAX_SEGMENT_PACKETS})]"
            ));
        }
        let chunk_bytes = u64::from(chunk_packets) * u64::from(payload);
        if size.div_ceil(chunk_bytes) > u64::from(u32::MAX) {
            return Err(format!("size {size} needs more than 2^32 - 1 chunks"));
        }
        let geometry = Geometry { size, payload, chunk_packets, segment_packets };
        Ok(Transfer { geometry, scheme })
    }

    /// The transfer the sender's `params` give a file of `size` bytes, with the receiver's
    /// `scheme`.
    pub fn from_params(size: u64, params: &Params, scheme: AckScheme) -> Result<Self, String> {
        let segment = params.segment_packets.min(params.chunk_packets());
        Transfer::new(size, params.payload, params.chunk_packets(), segment, scheme)
    }

    /// Bytes of the largest data datagram.
    pub fn data_datagram(&self) -> usize {
        DATA_HEADER + usize::from(self.geometry.payload)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_make_a_valid_transfer() {
        let p = Params::default();
        p.check_rates().unwrap();
        let t = Transfer::from_params(1 << 30, &p, AckScheme::SegmentedTcp).unwrap();
        assert_eq!(t.geometry.chunk_packets, (8 << 20) / 1400);
        assert_eq!(t.geometry.segment_packets, 256);
    }

    #[test]
    fn out_of_range_fields_are_refused() {
        let s = AckScheme::SegmentedTcp;
        assert!(Transfer::new(10, 8, 10, 1, s).is_err(), "payload too small");
        assert!(Transfer::new(10, 1000, 0, 1, s).is_err(), "empty chunk");
        assert!(Transfer::new(10, 1000, MAX_CHUNK_PACKETS + 1, 1, s).is_err(), "huge chunk");
        assert!(Transfer::new(10, 1000, 10, 11, s).is_err(), "segment over the chunk");
        assert!(Transfer::new(10, 1000, 10, 0, s).is_err(), "empty segment");
        assert!(Transfer::new(u64::MAX, 16, 1, 1, s).is_err(), "too many chunks");
        assert!(Transfer::new(0, 1000, 10, 10, s).is_ok(), "an empty file is fine");
    }

    #[test]
    fn a_tiny_chunk_request_still_holds_one_packet_and_segments_fit_in_it() {
        let p = Params { chunk_bytes: 10, segment_packets: 50, ..Params::default() };
        let t = Transfer::from_params(100, &p, AckScheme::ChunkMapUdp).unwrap();
        assert_eq!((t.geometry.chunk_packets, t.geometry.segment_packets), (1, 1));
    }

    #[test]
    fn rate_fields_are_checked() {
        assert!(Params { min_rate_bps: 0, ..Params::default() }.check_rates().is_err());
        assert!(Params { initial_rate_bps: 1, ..Params::default() }.check_rates().is_err());
        assert!(Params { loss_tolerance: 1.0, ..Params::default() }.check_rates().is_err());
    }

    #[test]
    fn schemes_round_trip_their_wire_numbers() {
        for s in [AckScheme::SegmentedTcp, AckScheme::ChunkMapUdp] {
            assert_eq!(AckScheme::from_wire(s.to_wire()), Some(s));
        }
        assert_eq!(AckScheme::from_wire(0), None);
    }
}
