//! Reliable Blast UDP (He, Leigh, Yu, DeFanti 2002), wire-compatible with QUANTA RBUDP 1.0
//! (`sendfile`, `recvfile`): seed-protocols.md, "QUANTA RBUDP 1.0".
//!
//! The receiver connects to the sender over TCP and names a file; the sender announces its size
//! and blasts every packet over UDP at a set rate, then writes an end-of-blast marker on TCP;
//! the receiver answers with a bitmap of the packets it holds; the sender re-blasts the missing
//! ones in ascending order; the rounds repeat until the bitmap's done flag is set. There is no
//! congestion control: the sender refuses to start without an explicit rate.
//!
//! Modules: [`wire`] (the bytes), [`bitmap`] (the receiver's tally), [`order`] (the sender's
//! byte order, decided once), [`sender`] and [`receiver`] (the sans-IO sessions), `net` (the
//! socket setup: [`serve_connection`], [`fetch`]), [`params`], and [`model`] (the paper's
//! performance model).
//!
//! Where ours differs from the reference, on our side only and staying compatible:
//! - sizes: files whose packet count does not fit RBUDP's `i32` sequence numbers are refused
//!   with a clear error; a receiver refuses an announced size above [`Params::max_size`] or one
//!   whose bitmap would pass [`receiver::MAX_BITMAP`], before allocating anything;
//! - silence: our receiver fails after [`Params::silence_limit`] without a word from the sender
//!   (the reference spins forever), and both ends fail after [`Params::max_stalled_rounds`]
//!   blasts in a row that brought nothing new;
//! - byte order: ours sends little-endian like the x86 reference; our receiver accepts both,
//!   decides once per transfer, and counts datagrams that fit neither as malformed;
//! - an empty file ends at the size announcement (the reference cannot send one), followed by
//!   its digest (below);
//! - the end-to-end digest ([`crate::digest`]), not RBUDP: after the final bitmap (done flag
//!   set) our sender writes [`crate::digest::TAG`] and the 32-byte BLAKE3 of the file on TCP
//!   ([`wire::encode_digest`]) and ends; our receiver waits for it at most
//!   [`crate::digest::wait`] and ends done without one when the connection closes first (the
//!   reference `sendfile` closes right after the done flag), when the wait passes, or when
//!   anything else comes (counted malformed). The reference `recvfile` has closed by the time
//!   the message reaches it, and reads nothing after its final bitmap (nor after a size of 0,
//!   which it cannot map): it is unaffected;
//! - a request outside the served directory is refused (the reference opens any path).

pub mod bitmap;
pub mod model;
mod net;
pub mod order;
pub mod params;
pub mod receiver;
pub mod sender;
pub mod wire;

pub use model::{model_best_ratio, model_resend_bytes, model_rounds};
pub use net::{fetch, serve_connection, ServeReport};
pub use params::{Params, NO_RATE};
pub use receiver::Receiver;
pub use sender::{Resolver, Sender};
