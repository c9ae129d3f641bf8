//! Per-packet authenticated encryption of a secured connection: what the I/O thread applies to
//! every datagram of the connection once its handshake ([`super::handshake`]) has agreed on keys.
//!
//! A sealed datagram is the 16-byte UDT header in clear, authenticated as associated data (the
//! multiplexer routes on its destination socket id, protocol notes §1), an 8-byte packet
//! number (big-endian), the rest of the packet (control information, or a data packet's
//! payload) encrypted with AES-256-GCM, and the 16-byte tag: [`OVERHEAD`] bytes more than the
//! plain packet. The nonce is 4 zero bytes and the packet number; each direction has its own
//! key and numbers its datagrams from 0 on (a retransmission is a new datagram with a new
//! number), so a (key, nonce) pair is never used twice.
//!
//! Rekeying: the key changes every 2^[`EPOCH_BITS`] packets (the packet number's epoch), each
//! epoch's key the HKDF-SHA256 ratchet of the one before, well inside AES-GCM's limits (RFC 8446
//! §5.5 rekeys after 2^24.5 records of up to 16 KiB; ours are at most 1.5 KB). The receiver
//! holds the previous epoch's key, the current one's and the next one's, and moves on at the
//! first packet the next one opens; older secrets are dropped (forward secrecy within a
//! connection).
//!
//! Replay: packet numbers the receiver has opened are remembered in a window of
//! [`REPLAY_WINDOW`] below the highest; a number seen before, or older than the window, is
//! dropped. Only a packet that authenticates moves the window, so forgeries cannot push it.
//!
//! Clear control packets: until the peer's first sealed packet arrives, its control packets
//! may still come in clear (acknowledgements of the key agreement's messages). Once this end
//! seals ([`Sealer::activate`]), a clear one is taken only if it cannot concern anything this
//! end sent sealed: an ACK up to, and a NAK of, what was sent before the keys, a keep-alive,
//! an ACK2; anything else (a later ACK, a shutdown) is dropped. So no forged clear packet can
//! make this end count sealed data as delivered, however long the peer takes to seal. An end
//! that is not sealing yet begins at the peer's first sealed packet, which proves the peer
//! holds the keys.
//!
//! Invariants: a packet that fails authentication, is replayed, or arrives in clear after the
//! peer has sealed (or, once this end seals, concerns what it sealed), never reaches the
//! connection, and is counted ([`SealCounters`]); nothing here panics on any input; secrets
//! are zeroized when dropped.

use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM};
use ring::hkdf;
use udt_proto::packet::{Control, ControlPacket};
use udt_proto::seq::SeqNo;
use zeroize::Zeroize;

/// The clear header: UDT's packet header.
pub const HEADER: usize = 16;
/// The packet number after it.
pub const NUMBER: usize = 8;
/// The authentication tag at the end.
pub const TAG: usize = 16;
/// Bytes a sealed datagram has beyond the plain one.
pub const OVERHEAD: usize = NUMBER + TAG;
/// AES's block size. A sealed plaintext of whole blocks takes one pass of the cipher's bulk
/// code; a partial last block takes a pass of its own.
pub const BLOCK: usize = 16;
/// Packets per key: the epoch is the packet number shifted right by this.
pub const EPOCH_BITS: u32 = 24;
/// Packet numbers the replay window remembers below the highest opened.
pub const REPLAY_WINDOW: u64 = 4096;

/// A direction's 32-byte traffic secret for epoch 0.
pub type Secret = [u8; 32];

/// What [`Sealer`] counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SealCounters {
    /// Datagrams sealed and sent.
    pub sealed: u64,
    /// Datagrams that authenticated and reached the connection.
    pub opened: u64,
    /// Datagrams dropped because they did not authenticate: forged, corrupted, from an older
    /// epoch, or sent in clear after the peer began sealing (or data in clear once keys exist,
    /// or a clear control packet about what this end sent sealed).
    pub rejected: u64,
    /// Datagrams dropped because their packet number was seen before or is too old.
    pub replayed: u64,
}

/// One direction's key for one epoch, and the secret the next epoch's comes from.
struct EpochKey {
    epoch: u64,
    secret: Secret,
    key: LessSafeKey,
}

impl Drop for EpochKey {
    fn drop(&mut self) {
        self.secret.zeroize();
    }
}

impl EpochKey {
    fn new(epoch: u64, secret: Secret) -> EpochKey {
        // A 32-byte key is what AES-256-GCM takes: `new` cannot fail on it.
        let key = UnboundKey::new(&AES_256_GCM, &secret)
            .map_or_else(|_| unreachable!("32-byte key"), LessSafeKey::new);
        EpochKey { epoch, secret, key }
    }

    /// The next epoch's key: HKDF-SHA256 (RFC 5869) of this secret, labelled.
    fn next(&self) -> EpochKey {
        EpochKey::new(self.epoch + 1, derive(&self.secret, b"udt rekey"))
    }
}

/// A 32-byte secret derived from `from` for the purpose `label`: HKDF-SHA256 (RFC 5869), salted
/// with this layer's name.
pub(crate) fn derive(from: &[u8; 32], label: &[u8]) -> Secret {
    let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, b"udt packet keys").extract(from);
    let mut secret = [0u8; 32];
    // 32 bytes is within HKDF-SHA256's output limit: neither call can fail.
    if let Ok(okm) = prk.expand(&[label], Len32) {
        let _ = okm.fill(&mut secret);
    }
    secret
}

/// HKDF output length marker: 32 bytes.
struct Len32;

impl hkdf::KeyType for Len32 {
    fn len(&self) -> usize {
        32
    }
}

/// The MSS a secured connection offers on a path of MSS `mss`: smaller by [`OVERHEAD`], and by
/// up to 15 bytes more, so that a full data packet's payload (the plaintext sealed) is whole
/// AES blocks. A partial last block costs a pass of its own: on x86-64 with VAES, `ring` seals
/// 1,432-byte payloads (MSS 1500 less the overhead) at about 0.22 CPU s/GB and 1,424-byte ones
/// at 0.19, for 0.6% less payload a packet. An MSS too small for a whole block is only reduced
/// by the overhead.
pub fn secured_mss(mss: u32) -> u32 {
    let mss = mss.saturating_sub(OVERHEAD as u32);
    let headers = (udt_proto::packet::IP_UDP_OVERHEAD + udt_proto::packet::HEADER_LEN) as u32;
    let partial = mss.saturating_sub(headers) % BLOCK as u32;
    if mss >= headers + BLOCK as u32 && mss - partial >= udt_proto::packet::MIN_MSS {
        mss - partial
    } else {
        mss
    }
}

fn nonce(number: u64) -> Nonce {
    let mut n = [0u8; 12];
    n[4..].copy_from_slice(&number.to_be_bytes());
    Nonce::assume_unique_for_key(n)
}

/// The numbers opened recently: a bitmap of the [`REPLAY_WINDOW`] numbers below and including
/// the highest.
struct ReplayWindow {
    /// One more than the highest number opened (0: none yet).
    top: u64,
    bits: [u64; (REPLAY_WINDOW / 64) as usize],
}

impl Default for ReplayWindow {
    fn default() -> Self {
        ReplayWindow { top: 0, bits: [0; (REPLAY_WINDOW / 64) as usize] }
    }
}

impl ReplayWindow {
    fn slot(n: u64) -> (usize, u64) {
        (((n / 64) % (REPLAY_WINDOW / 64)) as usize, 1 << (n % 64))
    }

    /// Whether `n` was not opened before and is inside the window.
    fn is_fresh(&self, n: u64) -> bool {
        if n >= self.top {
            return true;
        }
        if self.top - n > REPLAY_WINDOW - 64 {
            return false;
        }
        let (w, b) = Self::slot(n);
        self.bits[w] & b == 0
    }

    /// Remember `n` (authenticated and fresh).
    fn mark(&mut self, n: u64) {
        if n >= self.top {
            // Clear the words the window moves past.
            let first = self.top.div_ceil(64);
            let last = n / 64;
            for word in first..=last.min(first + REPLAY_WINDOW / 64) {
                let (w, _) = Self::slot(word * 64);
                self.bits[w] = 0;
            }
            self.top = n + 1;
        }
        let (w, b) = Self::slot(n);
        self.bits[w] |= b;
    }
}

/// What to do with a received datagram.
#[derive(Debug, PartialEq, Eq)]
pub enum Incoming {
    /// Hand it to the connection as it is (no keys yet, or a control packet in clear before the
    /// peer began sealing).
    Plain,
    /// It authenticated: hand the first `n` bytes of the buffer (decrypted in place) on.
    Opened(usize),
    /// Drop it (counted).
    Drop,
}

/// The sealing state of one connection.
pub struct Sealer {
    send: EpochKey,
    /// The receive keys of the previous epoch (packets reordered across its end), the current
    /// one and the next.
    recv_prev: Option<EpochKey>,
    recv: EpochKey,
    recv_next: EpochKey,
    next_number: u64,
    replay: ReplayWindow,
    /// Outgoing packets are sealed (switched on once the peer can open them).
    active: bool,
    /// Once active: one past the last data packet this end sent in clear (`None`: everything
    /// it sent went in clear, so far).
    sealed_from: Option<SeqNo>,
    /// The peer's packets have begun to arrive sealed: from then on nothing in clear is taken.
    peer_sealed: bool,
    epoch_bits: u32,
    counters: SealCounters,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sealer")
            .field("active", &self.active)
            .field("peer_sealed", &self.peer_sealed)
            .field("counters", &self.counters)
            .finish_non_exhaustive()
    }
}

impl Sealer {
    /// Keys for both directions, sealing not yet switched on.
    pub fn new(send: Secret, recv: Secret) -> Sealer {
        Sealer::with_epoch_bits(send, recv, EPOCH_BITS)
    }

    /// With epochs of 2^`epoch_bits` packets (tests rekey every few packets).
    pub fn with_epoch_bits(send: Secret, recv: Secret, epoch_bits: u32) -> Sealer {
        let recv = EpochKey::new(0, recv);
        let recv_next = recv.next();
        Sealer {
            send: EpochKey::new(0, send),
            recv_prev: None,
            recv,
            recv_next,
            next_number: 0,
            replay: ReplayWindow::default(),
            active: false,
            sealed_from: None,
            peer_sealed: false,
            epoch_bits: epoch_bits.clamp(1, 63),
            counters: SealCounters::default(),
        }
    }

    /// Seal outgoing packets from now on; `next_seq` is the sequence number of the first data
    /// packet that will go sealed (everything before went in clear). Clear control packets are
    /// then taken only about what went before (see the module's documentation).
    pub fn activate(&mut self, next_seq: SeqNo) {
        if !self.active {
            self.active = true;
            self.sealed_from = Some(next_seq);
        }
    }

    /// Whether outgoing packets are sealed.
    pub fn is_active(&self) -> bool {
        self.active
    }

    /// Whether the peer's packets arrive sealed: from then on a datagram that does not open is
    /// dropped, so it may be opened in place (a failed open leaves its buffer unspecified).
    pub fn is_peer_sealed(&self) -> bool {
        self.peer_sealed
    }

    /// What was counted.
    pub fn counters(&self) -> SealCounters {
        self.counters
    }

    /// Append the sealed form of the packet `header` (at least [`HEADER`] bytes: the clear
    /// header, then any control information) followed by `payload` to `out`. Returns false
    /// (nothing appended) in the impossible case that the packet numbers ran out.
    pub fn seal(&mut self, header: &[u8], payload: &[u8], out: &mut Vec<u8>) -> bool {
        if header.len() < HEADER || self.next_number == u64::MAX {
            return false;
        }
        let number = self.next_number;
        self.next_number += 1;
        let epoch = number >> self.epoch_bits;
        while self.send.epoch < epoch {
            self.send = self.send.next();
        }
        let (clear, rest) = header.split_at(HEADER);
        out.extend_from_slice(clear);
        out.extend_from_slice(&number.to_be_bytes());
        let start = out.len();
        out.extend_from_slice(rest);
        out.extend_from_slice(payload);
        match self.send.key.seal_in_place_separate_tag(nonce(number), Aad::from(clear), &mut out[start..]) {
            Ok(tag) => {
                out.extend_from_slice(tag.as_ref());
                self.counters.sealed += 1;
                true
            }
            Err(_) => {
                out.truncate(start - HEADER - NUMBER);
                false
            }
        }
    }

    /// Judge a received datagram, decrypting it in place when sealed. `is_data`: UDT's data
    /// flag (the header's first bit), which is in clear either way.
    pub fn handle_incoming(&mut self, buf: &mut [u8], is_data: bool) -> Incoming {
        let len = buf.len();
        if len >= HEADER + OVERHEAD {
            let mut number = [0u8; NUMBER];
            number.copy_from_slice(&buf[HEADER..HEADER + NUMBER]);
            let number = u64::from_be_bytes(number);
            match self.open(buf, number) {
                Opening::Opened(n) => {
                    self.peer_sealed = true;
                    self.counters.opened += 1;
                    return Incoming::Opened(n);
                }
                Opening::Replayed => {
                    self.peer_sealed = true;
                    self.counters.replayed += 1;
                    return Incoming::Drop;
                }
                Opening::Failed => {}
            }
        }
        // Not sealed under our keys. Before the peer seals, its control packets come in clear
        // (acknowledgements of the handshake); its data never does once keys exist: the
        // handshake's messages were all received before, so a data packet in clear now is a
        // retransmission we hold already, or an injection.
        if !self.peer_sealed && !is_data && self.clear_control_allowed(buf) {
            return Incoming::Plain;
        }
        self.counters.rejected += 1;
        Incoming::Drop
    }

    /// Whether a control packet in clear, before the peer seals, may reach the connection:
    /// always before this end seals; after, only if it concerns what went before the keys.
    fn clear_control_allowed(&self, bytes: &[u8]) -> bool {
        let Some(end) = self.sealed_from.filter(|_| self.active) else { return true };
        let Ok(packet) = ControlPacket::parse(bytes) else { return false };
        match packet.body {
            Control::KeepAlive | Control::Ack2(_) => true,
            Control::Ack(ack) => !ack.next_expected.is_after(end),
            Control::Nak(list) => list.iter().all(|entry| entry.bounds().1.is_before(end)),
            _ => false,
        }
    }

    /// Open `buf` (sealed under `number`) in place: the plain length, or `None` with the
    /// datagram counted as replayed when it authenticates but was seen before.
    fn open(&mut self, buf: &mut [u8], number: u64) -> Opening {
        let epoch = number >> self.epoch_bits;
        let key = if epoch == self.recv.epoch {
            &self.recv.key
        } else if epoch == self.recv_next.epoch {
            &self.recv_next.key
        } else if let Some(prev) = self.recv_prev.as_ref().filter(|k| k.epoch == epoch) {
            &prev.key
        } else {
            return Opening::Failed;
        };
        let (clear, sealed) = buf.split_at_mut(HEADER);
        if !self.replay.is_fresh(number) {
            // Counted as a replay only if it authenticates (a copy: the buffer stays as it came).
            let mut copy = sealed[NUMBER..].to_vec();
            return match key.open_in_place(nonce(number), Aad::from(&clear[..]), &mut copy) {
                Ok(_) => Opening::Replayed,
                Err(_) => Opening::Failed,
            };
        }
        // Decrypted to where the packet number was, in the same pass (no second copy): the
        // plain packet is then the clear header followed by the plaintext.
        let Ok(plain) = key.open_within(nonce(number), Aad::from(&clear[..]), sealed, NUMBER..) else {
            return Opening::Failed;
        };
        let plain_len = plain.len();
        if epoch == self.recv_next.epoch {
            let next = self.recv_next.next();
            let current = std::mem::replace(&mut self.recv_next, next);
            self.recv_prev = Some(std::mem::replace(&mut self.recv, current));
        }
        self.replay.mark(number);
        Opening::Opened(HEADER + plain_len)
    }
}

/// The outcome of [`Sealer::open`].
enum Opening {
    Opened(usize),
    Replayed,
    Failed,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(bits: u32) -> (Sealer, Sealer) {
        let (a, b) = ([1u8; 32], [2u8; 32]);
        let mut x = Sealer::with_epoch_bits(a, b, bits);
        let mut y = Sealer::with_epoch_bits(b, a, bits);
        x.activate(SeqNo::new(0));
        y.activate(SeqNo::new(0));
        (x, y)
    }

    fn sealed(s: &mut Sealer, header: &[u8], payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        assert!(s.seal(header, payload, &mut out));
        out
    }

    #[test]
    fn a_secured_mss_leaves_a_full_packet_whole_blocks_of_payload() {
        use udt_proto::connection::Config;
        assert_eq!(secured_mss(1500), 1468);
        assert_eq!(Config::payload_size(secured_mss(1500)), 1424);
        for mss in [udt_proto::packet::MIN_MSS + OVERHEAD as u32, 576, 1280, 1500, 9000, 65_535] {
            let secured = secured_mss(mss);
            assert!(secured <= mss - OVERHEAD as u32 && secured + 15 >= mss - OVERHEAD as u32, "{mss}");
            assert!(secured >= udt_proto::packet::MIN_MSS, "{mss}");
            if secured >= udt_proto::packet::MIN_MSS + BLOCK as u32 {
                assert_eq!(Config::payload_size(secured) % BLOCK, 0, "{mss}");
            }
        }
    }

    const DATA_HEADER: [u8; 16] = [0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 9];

    #[test]
    fn a_sealed_packet_opens_to_what_was_sealed_and_hides_it() {
        let (mut a, mut b) = pair(EPOCH_BITS);
        let payload = b"the plaintext of the transfer";
        let mut d = sealed(&mut a, &DATA_HEADER, payload);
        assert_eq!(d.len(), 16 + payload.len() + OVERHEAD);
        assert_eq!(&d[..16], &DATA_HEADER, "the header stays in clear for routing");
        assert!(!d.windows(9).any(|w| w == b"plaintext"), "the payload is encrypted");
        let Incoming::Opened(n) = b.handle_incoming(&mut d, true) else { panic!("must open") };
        assert_eq!(&d[..16], &DATA_HEADER);
        assert_eq!(&d[16..n], payload);
        // A control packet: its information words are encrypted too.
        let control = [0x80, 2, 0, 0, 0, 0, 0, 5, 0, 0, 0, 1, 0, 0, 0, 9, 0xAA, 0xBB, 0xCC, 0xDD];
        let mut d = sealed(&mut b, &control, &[]);
        assert_eq!(a.handle_incoming(&mut d, false), Incoming::Opened(20));
        assert_eq!(&d[..20], &control);
        assert_eq!(b.counters().opened, 1);
    }

    #[test]
    fn sealed_datagrams_in_one_batch_buffer_open_in_place_and_a_resent_one_is_byte_exact() {
        let (mut a, mut b) = pair(EPOCH_BITS);
        // Full-size payloads sealed back to back into one buffer, as a GSO run is staged, then
        // the first packet again: a retransmission is sealed anew, under its own number.
        let payloads: Vec<Vec<u8>> =
            (0..4u8).map(|k| (0..1456).map(|i| (i as u8) ^ k.wrapping_mul(37)).collect()).collect();
        let mut batch = Vec::new();
        for p in payloads.iter().chain([&payloads[0]]) {
            assert!(a.seal(&DATA_HEADER, p, &mut batch));
        }
        let size = 16 + 1456 + OVERHEAD;
        assert_eq!(batch.len(), 5 * size, "equal sizes: one GSO run");
        let (first, resent) = (batch[..size].to_vec(), batch[4 * size..].to_vec());
        assert_ne!(first[16..], resent[16..], "the resent datagram has a new number and ciphertext");
        // Opened in place, one by one as a GRO receive hands them over: each is its plain
        // packet in the first bytes of its own buffer, the resent one as well.
        for (k, datagram) in batch.chunks_mut(size).enumerate() {
            let Incoming::Opened(n) = b.handle_incoming(datagram, true) else {
                panic!("datagram {k} must open")
            };
            assert_eq!(n, 16 + 1456);
            assert_eq!(&datagram[..16], &DATA_HEADER);
            assert!(datagram[16..n] == payloads[k % 4][..], "datagram {k} is byte-exact");
        }
        // The first transmission, replayed, is refused; its retransmission was taken.
        let mut again = first;
        assert_eq!(b.handle_incoming(&mut again, true), Incoming::Drop);
        assert_eq!((b.counters().opened, b.counters().replayed), (5, 1));
    }

    #[test]
    fn tampered_replayed_and_foreign_packets_are_dropped_and_counted() {
        let (mut a, mut b) = pair(EPOCH_BITS);
        let good = sealed(&mut a, &DATA_HEADER, &[5; 100]);
        for at in [0, 15, 16, 23, 24, 60, good.len() - 1] {
            let mut d = good.clone();
            d[at] ^= 1;
            assert_eq!(b.handle_incoming(&mut d, true), Incoming::Drop, "byte {at} flipped");
        }
        let mut short = good[..30].to_vec();
        assert_eq!(b.handle_incoming(&mut short, true), Incoming::Drop);
        assert_eq!(b.counters().rejected, 8);
        let mut d = good.clone();
        assert!(matches!(b.handle_incoming(&mut d, true), Incoming::Opened(_)));
        let mut d = good.clone();
        assert_eq!(b.handle_incoming(&mut d, true), Incoming::Drop, "a replay");
        assert_eq!(b.counters().replayed, 1);
        // Another connection's keys do not open.
        let mut stranger = Sealer::new([9; 32], [8; 32]);
        stranger.activate(SeqNo::new(0));
        let mut e = sealed(&mut stranger, &DATA_HEADER, &[5; 100]);
        assert_eq!(b.handle_incoming(&mut e, true), Incoming::Drop);
        let mut next = sealed(&mut a, &DATA_HEADER, &[6; 100]);
        assert!(matches!(b.handle_incoming(&mut next, true), Incoming::Opened(_)), "the next one does");
        assert_eq!(b.counters(), SealCounters { sealed: 0, opened: 2, rejected: 9, replayed: 1 });
    }

    #[test]
    fn clear_packets_are_taken_only_before_the_peer_seals_and_never_data() {
        let (mut a, _) = pair(EPOCH_BITS);
        // `b` does not seal yet: every control packet in clear is taken until the peer seals.
        let mut b = Sealer::with_epoch_bits([2u8; 32], [1u8; 32], EPOCH_BITS);
        let mut ack = [0x80u8, 2, 0, 0, 0, 0, 0, 5, 0, 0, 0, 1, 0, 0, 0, 9, 0, 0, 0, 1];
        assert_eq!(b.handle_incoming(&mut ack, false), Incoming::Plain, "a control packet in clear, before");
        let mut data = [0u8; 80];
        assert_eq!(b.handle_incoming(&mut data, true), Incoming::Drop, "data in clear, once keys exist");
        let mut d = sealed(&mut a, &DATA_HEADER, &[1; 10]);
        assert!(matches!(b.handle_incoming(&mut d, true), Incoming::Opened(_)));
        assert_eq!(b.handle_incoming(&mut ack, false), Incoming::Drop, "in clear after the peer sealed");
    }

    /// A clear control packet (type `t`, additional info 5, destination 1) with `body`.
    fn control(t: u8, body: &[u32]) -> Vec<u8> {
        let mut p = vec![0x80u8, t, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 1];
        for w in body {
            p.extend_from_slice(&w.to_be_bytes());
        }
        p
    }

    #[test]
    fn once_sealing_clear_control_is_taken_only_about_what_went_in_clear() {
        // `b` seals from sequence number 100 on; its peer has not sealed yet.
        let mut b = Sealer::with_epoch_bits([2u8; 32], [1u8; 32], EPOCH_BITS);
        b.activate(SeqNo::new(100));
        let mut take = |p: Vec<u8>| b.handle_incoming(&mut p.clone(), false) == Incoming::Plain;
        assert!(take(control(2, &[100, 10_000, 1_000, 8192])), "an ACK of what went in clear");
        assert!(take(control(2, &[90])), "a light ACK below");
        assert!(!take(control(2, &[101, 10_000, 1_000, 8192])), "an ACK of sealed data");
        assert!(!take(control(2, &[100 + (1 << 29)])), "an ACK far ahead");
        assert!(take(control(3, &[98])), "a NAK of a clear packet");
        assert!(!take(control(3, &[0x8000_0000 | 95, 100])), "a NAK range reaching sealed data");
        assert!(take(control(1, &[])), "a keep-alive");
        assert!(take(control(6, &[])), "an ACK2");
        assert!(!take(control(5, &[])), "a shutdown");
        assert!(!take(vec![0x80, 2, 0]), "a truncated packet");
        assert_eq!(b.counters().rejected, 5);
    }

    #[test]
    fn keys_roll_over_every_epoch_and_reordering_within_the_window_is_accepted() {
        let (mut a, mut b) = pair(3);
        let packets: Vec<Vec<u8>> = (0..64u8).map(|i| sealed(&mut a, &DATA_HEADER, &[i; 20])).collect();
        // Epoch keys differ: the same plaintext under numbers 0 and 8 (epochs 0 and 1) encrypt
        // differently, and each opens in order.
        let mut opened = 0;
        for (i, p) in packets.iter().enumerate() {
            let mut d = p.clone();
            let Incoming::Opened(n) = b.handle_incoming(&mut d, true) else { panic!("packet {i}") };
            assert_eq!(&d[16..n], &[i as u8; 20]);
            opened += 1;
        }
        assert_eq!(opened, 64);
        // Out of order across an epoch's end: the previous epoch's key is kept.
        let (mut a, mut b) = pair(3);
        let packets: Vec<Vec<u8>> = (0..24u8).map(|i| sealed(&mut a, &DATA_HEADER, &[i; 20])).collect();
        for i in [1, 0, 9, 3, 2, 10, 4] {
            let mut d = packets[i].clone();
            assert!(matches!(b.handle_incoming(&mut d, true), Incoming::Opened(_)), "packet {i}");
        }
        let mut d = packets[17].clone();
        assert!(matches!(b.handle_incoming(&mut d, true), Incoming::Opened(_)), "epoch 2");
        let mut d = packets[5].clone();
        assert_eq!(b.handle_incoming(&mut d, true), Incoming::Drop, "two epochs behind: its key is gone");
        let mut d = packets[11].clone();
        assert!(matches!(b.handle_incoming(&mut d, true), Incoming::Opened(_)), "one epoch behind");
    }

    #[test]
    fn the_replay_window_forgets_only_what_is_too_old() {
        let mut w = ReplayWindow::default();
        for n in [0, 1, 5, 4000, 4001] {
            assert!(w.is_fresh(n));
            w.mark(n);
            assert!(!w.is_fresh(n));
        }
        assert!(w.is_fresh(4002) && w.is_fresh(3999), "not seen");
        assert!(!w.is_fresh(5), "seen, still inside the window");
        w.mark(100_000);
        assert!(!w.is_fresh(4001) && !w.is_fresh(5), "too old");
        assert!(w.is_fresh(99_000), "inside the window, not seen");
        assert!(w.is_fresh(99_999) && w.is_fresh(100_001));
        w.mark(99_999);
        assert!(!w.is_fresh(99_999));
    }

    #[test]
    fn garbage_never_panics() {
        let (_, mut b) = pair(2);
        let mut x = 0x1234_5678u32;
        for len in 0..200 {
            let mut d: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    x as u8
                })
                .collect();
            let _ = b.handle_incoming(&mut d, len % 2 == 0);
        }
        assert_eq!(b.counters().opened, 0);
    }
}
