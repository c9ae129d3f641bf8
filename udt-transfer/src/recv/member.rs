//! A connection that joins a striped transfer: its join (the token of a transfer open on this
//! receiver, a number the transfer has, the session's peer), then range records until its end
//! record or the transfer's end, each written into its file through [`Striped`].
//!
//! Invariants: nothing is written before the join is accepted; an unknown token, a number
//! taken or out of range, another peer, or a range that does not fit its file is refused with
//! the reason and ends this connection (and, for a bad range, the whole transfer); a joined
//! connection that fails ends the transfer with a reason naming it, so the session's
//! connection reports it instead of waiting.

use std::sync::Arc;

use udt::UdtStream;

use super::join::{Identity, Joins, Striped};
use super::session::{answer, close, from_peer, Failure, HEADER_TIMEOUT};
use super::stripe::receive_range;
use super::ReceiveOptions;
use crate::link::Link;
use crate::protocol::{self, Header, RangeRecord, Status, Tag, CHUNK, FLAG_JOIN, VERSION};
use crate::{Cancel, Error, Ignore};

/// Serve `stream` (greeted), taken for a connection joining a striped transfer, and close it;
/// anything else is refused.
pub fn serve_stream(stream: UdtStream, joins: &Joins, options: &ReceiveOptions) -> Result<(), Error> {
    let identity = Identity::of(&stream);
    let mut ignore = Ignore;
    let mut link = Link::new(stream, options.cancel.clone(), &mut ignore);
    link.set_deadline(Some(HEADER_TIMEOUT), "`udt send` header");
    let header = Header::read(&mut link);
    link.set_deadline(None, "");
    let result = match header {
        Ok(h) if h.version == VERSION && h.flags & FLAG_JOIN != 0 => {
            serve_member(&mut link, joins, identity, &options.cancel)
        }
        Ok(_) => {
            let why = "this receiver is waiting for the connections of a striped transfer from this \
                       address; try again in a few seconds";
            answer(&mut link, &Status::Error(why.into()))
                .and(Err(Failure::Peer(Error::NotASender(format!("refused a connection: {why}")))))
        }
        Err(e) => Err(Failure::Peer(Error::NotASender(format!(
            "the peer is not a `udt send` joining a striped transfer: {e}"
        )))),
    };
    close(link, result)
}

/// Serve a connection whose header asked to join a striped transfer (its join message is
/// next), from a peer of `identity`, until the transfer ends.
pub fn serve_member(
    link: &mut Link<'_>,
    joins: &Joins,
    identity: Identity,
    cancel: &Cancel,
) -> Result<(), Failure> {
    let join = protocol::read_message_tag(link).and_then(|tag| match tag {
        Tag::Join => protocol::read_join(link),
        _ => Err(protocol::invalid("a joining connection's header without its join message")),
    });
    let (token, member) = join.map_err(|e| from_peer(link, e, || "in a join message".into()))?;
    let Some(striped) = joins.find(&token) else {
        let why = "no striped transfer of this token is open here (it ended, or never began)";
        answer(link, &Status::Error(why.into()))?;
        return Err(Failure::Peer(Error::Protocol(format!("refused a joining connection: {why}"))));
    };
    if let Err(why) = striped.join(member, identity) {
        answer(link, &Status::Error(why.clone()))?;
        return Err(Failure::Peer(Error::Protocol(format!("refused a joining connection: {why}"))));
    }
    answer(link, &Status::Ok)?;
    tracing::info!(member, "a connection joined a striped transfer");
    let over = Arc::clone(&striped);
    let outer = cancel.clone();
    link.set_cancel(Cancel::from_fn(move || over.is_over() || outer.requested()));
    // Joined connections may idle while the session's connection carries small files.
    link.set_idle_limit(None);
    match ranges(link, &striped, member) {
        Ok(()) => Ok(()),
        // The transfer ended, or failed elsewhere (its session says why).
        Err(_) if striped.is_over() && !cancel.requested() => Ok(()),
        Err(failure) => {
            let (Failure::Here(e) | Failure::Peer(e)) = &failure;
            striped.fail(&format!("connection {member} of the striped transfer failed: {}", e.chain()));
            Err(failure)
        }
    }
}

/// Range records until the end record.
fn ranges(link: &mut Link<'_>, striped: &Striped, member: u16) -> Result<(), Failure> {
    let mut buf = vec![0u8; CHUNK];
    loop {
        let record = protocol::read_range(link)
            .map_err(|e| from_peer(link, e, || format!("on connection {member} of a striped transfer")))?;
        match record {
            RangeRecord::Range { len, index, offset } => {
                receive_range(link, striped, (index, offset, len), &mut buf, None)?
            }
            RangeRecord::End => return Ok(()),
            RangeRecord::Abort(..) => {
                return Err(Failure::Here(Error::Protocol(
                    "an abort record on a joined connection (only the session's carries them)".into(),
                )))
            }
        }
    }
}
