//! ACK body (protocol notes §1 "ACK, light ACK, ACK2").
//!
//! Body lengths: 4 bytes (light ACK: next expected sequence only), 16 bytes (plus RTT, RTT
//! variance, free buffer in packets), 24 bytes (plus arrival rate and link capacity in
//! packets/s). Any other length is a [`ParseError::BadLength`](super::ParseError::BadLength).
//! The ACK number lives in the control header's additional-info word (0 for light ACKs).

use super::{EmitError, ParseError};
use crate::seq::{AckNo, SeqNo};

/// An acknowledgement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ack {
    /// ACK sub-sequence number (additional info); 0 for light ACKs.
    pub ack_no: AckNo,
    /// Next expected sequence number: everything before it has arrived.
    pub next_expected: SeqNo,
    /// Present for full ACKs (16 or 24-byte body), absent for light ACKs (4-byte body).
    pub info: Option<AckInfo>,
}

/// Fields of a full ACK.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckInfo {
    /// RTT in microseconds.
    pub rtt_us: u32,
    /// RTT variance in microseconds.
    pub rtt_var_us: u32,
    /// Free receive buffer in packets.
    pub avail_buf_pkts: u32,
    /// Present in 24-byte bodies.
    pub rates: Option<AckRates>,
}

/// Rate fields of a 24-byte ACK.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckRates {
    /// Packet arrival rate, packets per second.
    pub recv_rate: u32,
    /// Estimated link capacity, packets per second.
    pub capacity: u32,
}

impl Ack {
    /// Parse an ACK body; `ack_no` comes from the additional-info word.
    pub fn parse(ack_no: u32, body: &[u8]) -> Result<Self, ParseError> {
        todo!()
    }
    /// Body length this value emits (4, 16 or 24).
    pub fn body_len(&self) -> usize {
        todo!()
    }
    /// Write the body.
    pub fn emit_body(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        todo!()
    }
}
