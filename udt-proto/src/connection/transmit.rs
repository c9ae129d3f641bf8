//! Encoding of queued control packets into the driver's buffer. Control packets always go
//! before data; each call emits at most one datagram.

use super::{Connection, PendingControl};
use crate::packet::{Control, ControlPacket, LossEntry, NakList};
use crate::time::Instant;

impl Connection {
    /// Emit the oldest queued control packet, if any.
    pub(super) fn transmit_control(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        loop {
            let pending = self.control.pop_front()?;
            let timestamp = now.wire_timestamp(self.start);
            let mut dst = self.peer_id;
            let mut scratch = std::mem::take(&mut self.scratch);
            let body = match &pending {
                PendingControl::Handshake { hs, dst: d } => {
                    dst = *d;
                    Control::Handshake(*hs)
                }
                PendingControl::KeepAlive => Control::KeepAlive,
                PendingControl::Ack(ack) => Control::Ack(*ack),
                PendingControl::Ack2(no) => Control::Ack2(*no),
                PendingControl::Shutdown => Control::Shutdown,
                PendingControl::DropRequest(req) => Control::DropRequest(*req),
                PendingControl::Custom(m) => {
                    Control::UserDefined { subtype: m.subtype, info: m.info, data: &m.data }
                }
                PendingControl::Nak(ranges) => {
                    scratch.clear();
                    scratch.resize(ranges.len() * 8, 0);
                    let entries = ranges.iter().map(|&(s, e)| LossEntry::from_bounds(s, e));
                    let n = NakList::encode(entries, &mut scratch).ok()?;
                    scratch.truncate(n);
                    match NakList::parse(&scratch) {
                        Ok(list) => Control::Nak(list),
                        Err(_) => continue,
                    }
                }
            };
            let result = ControlPacket { timestamp, dst, body }.emit(buf);
            self.scratch = scratch;
            match result {
                Ok(n) => return Some(n),
                Err(e) => {
                    tracing::warn!(error = %e, "control packet does not fit the transmit buffer");
                    continue;
                }
            }
        }
    }
}
