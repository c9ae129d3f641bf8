//! Control packets: the common header and one value per type (protocol notes §1, table of types).
//!
//! Word 0: bit 31 = 1, bits 30..16 type, bits 15..0 reserved (user sub-type for 0x7FFF).
//! Word 1: additional info. Word 2: timestamp. Word 3: destination socket id.
//! Bodies that UDT4 sends as 4 zero bytes (keep-alive, congestion warning, shutdown, ACK2, error)
//! are accepted at any length and emitted as 4 zero bytes.

use super::{Ack, DropRequest, EmitError, Handshake, NakList, ParseError};
use crate::seq::{AckNo, SocketId};

/// Control type numbers (word 0, bits 30..16).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u16)]
pub enum ControlType {
    /// 0
    Handshake = 0,
    /// 1
    KeepAlive = 1,
    /// 2
    Ack = 2,
    /// 3
    Nak = 3,
    /// 4
    CongestionWarning = 4,
    /// 5
    Shutdown = 5,
    /// 6
    Ack2 = 6,
    /// 7
    DropRequest = 7,
    /// 8
    Error = 8,
    /// 0x7FFF
    UserDefined = 0x7FFF,
}

/// The body of a control packet, one variant per type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Control<'a> {
    /// Connection setup.
    Handshake(Handshake),
    /// Keep-alive.
    KeepAlive,
    /// Full or light acknowledgement.
    Ack(Ack),
    /// Loss report.
    Nak(NakList<'a>),
    /// Congestion warning (never sent by UDT4).
    CongestionWarning,
    /// Shutdown.
    Shutdown,
    /// Acknowledgement of a full ACK, carrying its ACK number.
    Ack2(AckNo),
    /// Message drop request.
    DropRequest(DropRequest),
    /// Error signal with its code (4000: peer could not write its file).
    Error(u32),
    /// User-defined control packet of a congestion control module.
    UserDefined {
        /// Sub-type (word 0, bits 15..0).
        subtype: u16,
        /// Additional info word.
        info: u32,
        /// Body bytes.
        data: &'a [u8],
    },
}

/// A control packet: common header fields plus the typed body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ControlPacket<'a> {
    /// Timestamp word (UDT4 sends 0).
    pub timestamp: u32,
    /// Destination socket id.
    pub dst: SocketId,
    /// The typed body.
    pub body: Control<'a>,
}

impl<'a> ControlPacket<'a> {
    /// Parse a control packet (bit 31 of word 0 must be set).
    pub fn parse(bytes: &'a [u8]) -> Result<Self, ParseError> {
        todo!()
    }

    /// Bytes `emit` will write.
    pub fn encoded_len(&self) -> usize {
        todo!()
    }

    /// Write the packet into `buf`; returns the bytes written.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        todo!()
    }
}
