//! The key agreement at the start of a secured connection, over the connection's own byte
//! stream, before any application byte.
//!
//! Both credentials (docs/security.md) run the same exchange: first SPAKE2 (Abdalla and
//! Pointcheval 2005, RFC 9382) over Ed25519 turns the credential into a strong shared key
//! without revealing anything an eavesdropper could test guesses against (a recorded
//! agreement gives no offline test of a code phrase or of a key file's passphrase), then the
//! Noise protocol `Noise_NNpsk0_25519_ChaChaPoly_BLAKE2s` (Perrin, The Noise Protocol
//! Framework, rev. 34) runs with that key: an ephemeral X25519 exchange (forward secrecy)
//! that only holders of the same credential complete (mutual authentication). An active
//! attacker gets one guess per agreement; a code-phrase listener stops after one wrong guess
//! (`acceptor.rs`).
//!
//! - [`Credential::Key`]: 32 bytes both ends hold (a key file's derivation);
//! - [`Credential::CodePhrase`]: a short phrase one end shows and the other types.
//!
//! Messages (initiator I = the end that connected, responder R):
//! ```text
//! I -> R  hello: "UDTSEC" version mode transcript[48] frame(SPAKE2 A)
//! R -> I  hello-reply: "UDTSEC" version status, then if ok frame(SPAKE2 B)
//! I -> R  frame(Noise message 1)                       (R tests the guess here)
//! R -> I  status, frame(Noise message 2)               (R opens sealed packets from here)
//! I -> R  0x5A, sealed                                 (I seals from here; R at I's first sealed packet)
//! ```
//! A status other than 0 is a refusal (a wrong credential, another mode, a UDT handshake that
//! was changed on the path) and ends the connection. A frame is a 16-bit big-endian length and
//! at most [`MAX_FRAME`] bytes. The transcript is the UDT handshake as this end saw it
//! (`Connection::handshake_transcript`: MSS, flow window, ISN, socket ids and type of both
//! directions); it is sent so that a mismatch is reported as such, and bound into Noise's
//! prologue with the version and the mode, so a changed UDT handshake or a downgrade fails the
//! agreement whatever the messages say. The traffic secrets are HKDF-SHA256 of Noise's final
//! split, one per direction ([`super::seal`]).
//!
//! Invariants: every read is bounded ([`MAX_FRAME`]); a peer that sends anything unexpected
//! gets a typed error, never a panic; no key material is returned unless the peer proved it
//! holds the same credential and saw the same UDT handshake; intermediate secrets are zeroized
//! when dropped.

use std::io::{self, Read, Write};

use spake2::{Ed25519Group, Identity, Password, Spake2};
use zeroize::{Zeroize, Zeroizing};

use super::seal::Secret;

/// The first bytes of every handshake message that opens a direction.
pub const MAGIC: &[u8; 6] = b"UDTSEC";
/// The agreement's version: 2 runs SPAKE2 for key files too and binds the UDT handshake.
const VERSION: u8 = 2;
/// The longest frame a peer may send (the largest message here is 48 bytes).
pub const MAX_FRAME: usize = 1024;
/// Bytes of the UDT handshake transcript each end sends and binds.
pub const TRANSCRIPT_LEN: usize = udt_proto::connection::TRANSCRIPT_LEN;
const NOISE: &str = "Noise_NNpsk0_25519_ChaChaPoly_BLAKE2s";

const MODE_KEY: u8 = 1;
const MODE_CODE: u8 = 2;

const STATUS_OK: u8 = 0;
const STATUS_WRONG_CREDENTIAL: u8 = 1;
const STATUS_OTHER_MODE: u8 = 2;
const STATUS_CHANGED_ON_PATH: u8 = 3;

/// What proves the two ends belong together. Zeroized when dropped.
#[derive(Clone)]
pub enum Credential {
    /// A 32-byte secret both ends hold (for example derived from a key file).
    Key([u8; 32]),
    /// A short one-time phrase one end shows and the other types.
    CodePhrase(String),
}

impl Drop for Credential {
    fn drop(&mut self) {
        match self {
            Credential::Key(k) => k.zeroize(),
            Credential::CodePhrase(c) => c.zeroize(),
        }
    }
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Credential::Key(_) => "Credential::Key(..)",
            Credential::CodePhrase(_) => "Credential::CodePhrase(..)",
        })
    }
}

impl Credential {
    fn mode(&self) -> u8 {
        match self {
            Credential::Key(_) => MODE_KEY,
            Credential::CodePhrase(_) => MODE_CODE,
        }
    }

    /// What SPAKE2 takes as the password: the mode's label and the credential.
    fn password(&self) -> Password {
        let mut bytes = Zeroizing::new(Vec::with_capacity(64));
        match self {
            Credential::Key(k) => {
                bytes.extend_from_slice(b"udt key\0");
                bytes.extend_from_slice(k);
            }
            Credential::CodePhrase(c) => {
                bytes.extend_from_slice(b"udt code\0");
                bytes.extend_from_slice(normalize_code(c).as_bytes());
            }
        }
        Password::new(&bytes)
    }
}

/// Which end of the handshake this is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The end that connected.
    Initiator,
    /// The end that accepted.
    Responder,
}

/// The traffic secrets a handshake agreed on (zeroized when dropped).
pub struct Keys {
    /// What this end seals with.
    pub send: Secret,
    /// What the peer seals with.
    pub recv: Secret,
}

impl Drop for Keys {
    fn drop(&mut self) {
        self.send.zeroize();
        self.recv.zeroize();
    }
}

/// Why a handshake failed.
#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    /// The connection failed or timed out.
    #[error("the connection failed during the key agreement: {0}")]
    Io(#[from] io::Error),
    /// The peer does not speak this handshake: a plain (unencrypted) peer.
    #[error("the peer does not encrypt (a plain UDT peer, or one run with --insecure)")]
    NotSecure,
    /// The peer's code phrase or key differs from ours: it made a wrong guess.
    #[error("the peer's {0} does not match ours")]
    WrongCredential(&'static str),
    /// The peer wants a code phrase where we have a key, or the reverse (no guess was made).
    #[error("the peer uses a {theirs}, we use a {ours}")]
    OtherMode {
        /// What the peer uses.
        theirs: &'static str,
        /// What we use.
        ours: &'static str,
    },
    /// The two ends saw different UDT handshakes: something on the path changed one.
    #[error("the connection's set-up was changed on the path ({0} differs between the two ends)")]
    ChangedOnPath(&'static str),
    /// A malformed message, or another version of the agreement.
    #[error("malformed key agreement message: {0}")]
    Malformed(&'static str),
    /// Data in clear arrived past the agreement's messages: someone on the path injected it.
    #[error("data arrived in clear past the key agreement (injected on the path?); connection refused")]
    Injected,
}

impl HandshakeError {
    /// Whether the peer tested a guess of the credential and it was wrong: the only failure
    /// that spends a one-time code phrase.
    pub fn is_wrong_guess(&self) -> bool {
        matches!(self, HandshakeError::WrongCredential(_))
    }
}

fn mode_name(mode: u8) -> &'static str {
    if mode == MODE_CODE {
        "code phrase"
    } else {
        "key"
    }
}

/// Where the agreed keys go: the connection's sealing ([`super::seal::Sealer`]).
pub trait KeySink {
    /// Take the keys: from now on, sealed packets from the peer are opened, and data in clear
    /// is dropped. Returns false (keys not taken) if data in clear already arrived past the
    /// key agreement's messages: an injection, which must never reach the application.
    fn install(&mut self, keys: Keys) -> bool;
    /// Seal outgoing packets from now on. Control packets in clear from the peer are then
    /// accepted only for what this end sent before (`seal.rs`).
    fn activate(&mut self);
}

/// The byte the initiator sends, sealed, once it seals: it proves the initiator holds the
/// keys, so the responder may seal. It can only arrive sealed: the responder installed its
/// keys with nothing past message 1 received, and drops data in clear from then on.
const CONFIRM: u8 = 0x5A;

/// Run the handshake on `io` (a freshly connected stream, with a read timeout set by the
/// caller) as `role` with `credential`, binding `transcript` (this end's view of the UDT
/// handshake), and hand the keys to `sink` at the point where each end can take them: the
/// responder before it sends its last message (the initiator may seal right after reading
/// it), the initiator after reading it. When this returns `Ok`, both directions of this end
/// are sealed.
pub fn run<S: Read + Write>(
    io: &mut S,
    role: Role,
    credential: &Credential,
    transcript: &[u8; TRANSCRIPT_LEN],
    sink: &mut dyn KeySink,
) -> Result<(), HandshakeError> {
    match role {
        Role::Initiator => {
            let keys = initiate(io, credential, transcript)?;
            if !sink.install(keys) {
                return Err(HandshakeError::Injected);
            }
            sink.activate();
            io.write_all(&[CONFIRM])?;
            io.flush()?;
            Ok(())
        }
        Role::Responder => {
            respond(io, credential, transcript, sink)?;
            if read_byte(io)? != CONFIRM {
                return Err(HandshakeError::Malformed("confirmation"));
            }
            sink.activate();
            Ok(())
        }
    }
}

fn initiate<S: Read + Write>(
    io: &mut S,
    credential: &Credential,
    transcript: &[u8; TRANSCRIPT_LEN],
) -> Result<Keys, HandshakeError> {
    let mode = credential.mode();
    let mut hello = MAGIC.to_vec();
    hello.extend_from_slice(&[VERSION, mode]);
    hello.extend_from_slice(transcript);
    let (spake, a) =
        Spake2::<Ed25519Group>::start_a(&credential.password(), &id_initiator(), &id_responder());
    push_frame(&mut hello, &a);
    io.write_all(&hello)?;
    io.flush()?;
    read_hello_reply(io, mode)?;
    let b = read_frame(io)?;
    let psk = to_key(spake.finish(&b).map_err(|_| HandshakeError::Malformed("SPAKE2 message"))?);
    let mut noise = noise(mode, transcript, &psk, true)?;
    let mut buf = [0u8; MAX_FRAME];
    let n = noise.write_message(&[], &mut buf).map_err(|_| HandshakeError::Malformed("noise message 1"))?;
    let mut out = Vec::new();
    push_frame(&mut out, &buf[..n]);
    io.write_all(&out)?;
    io.flush()?;
    match read_byte(io)? {
        STATUS_OK => {}
        STATUS_WRONG_CREDENTIAL => return Err(HandshakeError::WrongCredential(mode_name(mode))),
        _ => return Err(HandshakeError::Malformed("status")),
    }
    let m2 = read_frame(io)?;
    let mut payload = [0u8; MAX_FRAME];
    noise.read_message(&m2, &mut payload).map_err(|_| HandshakeError::WrongCredential(mode_name(mode)))?;
    if !noise.is_handshake_finished() {
        return Err(HandshakeError::Malformed("unfinished handshake"));
    }
    let (i_to_r, r_to_i) = noise.dangerously_get_raw_split();
    let (i_to_r, r_to_i) = (Zeroizing::new(i_to_r), Zeroizing::new(r_to_i));
    Ok(Keys { send: traffic_secret(&i_to_r), recv: traffic_secret(&r_to_i) })
}

fn respond<S: Read + Write>(
    io: &mut S,
    credential: &Credential,
    transcript: &[u8; TRANSCRIPT_LEN],
    sink: &mut dyn KeySink,
) -> Result<(), HandshakeError> {
    let ours = credential.mode();
    let vm = read_opening(io)?;
    let theirs = vm[1];
    if vm[0] != VERSION || !(theirs == MODE_KEY || theirs == MODE_CODE) {
        return Err(HandshakeError::Malformed("version or mode"));
    }
    let mut their_transcript = [0u8; TRANSCRIPT_LEN];
    io.read_exact(&mut their_transcript)?;
    let refuse = |io: &mut S, status: u8| {
        let mut reply = MAGIC.to_vec();
        reply.extend_from_slice(&[VERSION, status]);
        let _ = io.write_all(&reply).and_then(|()| io.flush());
    };
    if theirs != ours {
        refuse(io, STATUS_OTHER_MODE);
        return Err(HandshakeError::OtherMode { theirs: mode_name(theirs), ours: mode_name(ours) });
    }
    if &their_transcript != transcript {
        refuse(io, STATUS_CHANGED_ON_PATH);
        return Err(HandshakeError::ChangedOnPath(transcript_difference(transcript, &their_transcript)));
    }
    let a = read_frame(io)?;
    let (spake, b) =
        Spake2::<Ed25519Group>::start_b(&credential.password(), &id_initiator(), &id_responder());
    let mut reply = MAGIC.to_vec();
    reply.extend_from_slice(&[VERSION, STATUS_OK]);
    push_frame(&mut reply, &b);
    io.write_all(&reply)?;
    io.flush()?;
    reply.clear();
    let psk = to_key(spake.finish(&a).map_err(|_| HandshakeError::Malformed("SPAKE2 message"))?);
    let mut noise = noise(ours, transcript, &psk, false)?;
    let m1 = read_frame(io)?;
    let mut payload = [0u8; MAX_FRAME];
    if noise.read_message(&m1, &mut payload).is_err() {
        reply.push(STATUS_WRONG_CREDENTIAL);
        let _ = io.write_all(&reply).and_then(|()| io.flush());
        return Err(HandshakeError::WrongCredential(mode_name(ours)));
    }
    let mut buf = [0u8; MAX_FRAME];
    let n = noise.write_message(&[], &mut buf).map_err(|_| HandshakeError::Malformed("noise message 2"))?;
    let (i_to_r, r_to_i) = noise.dangerously_get_raw_split();
    let (i_to_r, r_to_i) = (Zeroizing::new(i_to_r), Zeroizing::new(r_to_i));
    if !sink.install(Keys { send: traffic_secret(&r_to_i), recv: traffic_secret(&i_to_r) }) {
        return Err(HandshakeError::Injected);
    }
    reply.push(STATUS_OK);
    push_frame(&mut reply, &buf[..n]);
    io.write_all(&reply)?;
    io.flush()?;
    Ok(())
}

/// The first field of the UDT handshake transcript where the two views differ, by name.
fn transcript_difference(ours: &[u8; TRANSCRIPT_LEN], theirs: &[u8; TRANSCRIPT_LEN]) -> &'static str {
    const FIELDS: [&str; 6] = [
        "the UDT version",
        "the socket type",
        "the initial sequence number",
        "the MSS",
        "the flow window",
        "a socket id",
    ];
    let word = (0..TRANSCRIPT_LEN / 4).find(|&w| ours[w * 4..w * 4 + 4] != theirs[w * 4..w * 4 + 4]);
    word.map_or("nothing", |w| FIELDS[w % FIELDS.len()])
}

/// The Noise handshake state for `mode` with `psk`, as the initiator or the responder.
fn noise(
    mode: u8,
    transcript: &[u8; TRANSCRIPT_LEN],
    psk: &[u8; 32],
    initiator: bool,
) -> Result<snow::HandshakeState, HandshakeError> {
    let params = NOISE.parse().map_err(|_| HandshakeError::Malformed("noise parameters"))?;
    // The prologue binds the version, the mode and the UDT handshake: a downgrade or a changed
    // set-up changes the transcript, and the agreement fails.
    let mut prologue = b"udt secure 2 ".to_vec();
    prologue.extend_from_slice(if mode == MODE_CODE { b"code " } else { b"key " });
    prologue.extend_from_slice(transcript);
    let builder = snow::Builder::new(params).prologue(&prologue).and_then(|b| b.psk(0, psk));
    let state = builder.and_then(|b| if initiator { b.build_initiator() } else { b.build_responder() });
    state.map_err(|_| HandshakeError::Malformed("noise setup"))
}

/// The magic that opens each direction, and the two bytes after it (the version and the mode or
/// status); other first bytes are a peer that does not speak this handshake.
fn read_opening<S: Read>(io: &mut S) -> Result<[u8; 2], HandshakeError> {
    let mut magic = [0u8; 6];
    io.read_exact(&mut magic)?;
    if &magic != MAGIC {
        return Err(HandshakeError::NotSecure);
    }
    let mut pair = [0u8; 2];
    io.read_exact(&mut pair)?;
    Ok(pair)
}

fn read_hello_reply<S: Read>(io: &mut S, mode: u8) -> Result<(), HandshakeError> {
    match read_opening(io)? {
        [VERSION, STATUS_OK] => Ok(()),
        [VERSION, STATUS_OTHER_MODE] => Err(HandshakeError::OtherMode {
            theirs: mode_name(if mode == MODE_CODE { MODE_KEY } else { MODE_CODE }),
            ours: mode_name(mode),
        }),
        [VERSION, STATUS_WRONG_CREDENTIAL] => Err(HandshakeError::WrongCredential(mode_name(mode))),
        [VERSION, STATUS_CHANGED_ON_PATH] => Err(HandshakeError::ChangedOnPath("the UDT handshake")),
        [VERSION, _] => Err(HandshakeError::Malformed("hello reply")),
        _ => Err(HandshakeError::Malformed(
            "another version of the key agreement (use the same udt at both ends)",
        )),
    }
}

fn push_frame(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u16).to_be_bytes());
    out.extend_from_slice(bytes);
}

fn read_byte<S: Read>(io: &mut S) -> Result<u8, HandshakeError> {
    let mut b = [0u8; 1];
    io.read_exact(&mut b)?;
    Ok(b[0])
}

fn read_frame<S: Read>(io: &mut S) -> Result<Vec<u8>, HandshakeError> {
    let mut len = [0u8; 2];
    io.read_exact(&mut len)?;
    let len = usize::from(u16::from_be_bytes(len));
    if len == 0 || len > MAX_FRAME {
        return Err(HandshakeError::Malformed("frame length"));
    }
    let mut buf = vec![0u8; len];
    io.read_exact(&mut buf)?;
    Ok(buf)
}

/// The code phrase as both ends compare it: lowercase, words joined by single dashes (so
/// `7 Apple-pie` and `7-apple-pie` are the same phrase).
pub fn normalize_code(code: &str) -> String {
    code.split(|c: char| c.is_whitespace() || c == '-')
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join("-")
}

fn id_initiator() -> Identity {
    Identity::new(b"udt initiator")
}

fn id_responder() -> Identity {
    Identity::new(b"udt responder")
}

/// SPAKE2's shared key (32 bytes) as Noise's pre-shared key; the input is zeroized.
fn to_key(k: Vec<u8>) -> Zeroizing<[u8; 32]> {
    let k = Zeroizing::new(k);
    let mut key = Zeroizing::new([0u8; 32]);
    let n = k.len().min(32);
    key[..n].copy_from_slice(&k[..n]);
    key
}

/// A direction's packet secret from Noise's split key: HKDF-SHA256, labelled, so the AES-GCM
/// packet keys are never the keys Noise's own cipher would use.
fn traffic_secret(split: &[u8; 32]) -> Secret {
    super::seal::derive(split, b"udt traffic secret")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufReader, BufWriter};
    use std::os::unix::net::UnixStream;

    /// Records what the handshake hands over.
    #[derive(Default)]
    struct Record {
        keys: Option<Keys>,
        active: bool,
    }

    impl KeySink for Record {
        fn install(&mut self, keys: Keys) -> bool {
            assert!(!self.active && self.keys.is_none());
            self.keys = Some(keys);
            true
        }
        fn activate(&mut self) {
            assert!(self.keys.is_some(), "activated without keys");
            self.active = true;
        }
    }

    const TRANSCRIPT: [u8; TRANSCRIPT_LEN] = [3; TRANSCRIPT_LEN];

    fn go<S: Read + Write>(s: &mut S, role: Role, c: &Credential) -> Result<Keys, HandshakeError> {
        go_with(s, role, c, &TRANSCRIPT)
    }

    fn go_with<S: Read + Write>(
        s: &mut S,
        role: Role,
        c: &Credential,
        transcript: &[u8; TRANSCRIPT_LEN],
    ) -> Result<Keys, HandshakeError> {
        let mut r = Record::default();
        run(s, role, c, transcript, &mut r)?;
        assert!(r.active);
        Ok(r.keys.expect("keys"))
    }

    /// Both ends over a socket pair, each on its thread.
    fn both(i: Credential, r: Credential) -> (Result<Keys, HandshakeError>, Result<Keys, HandshakeError>) {
        both_with(i, r, TRANSCRIPT, TRANSCRIPT)
    }

    /// Both ends, each with its own view of the UDT handshake.
    fn both_with(
        i: Credential,
        r: Credential,
        ti: [u8; TRANSCRIPT_LEN],
        tr: [u8; TRANSCRIPT_LEN],
    ) -> (Result<Keys, HandshakeError>, Result<Keys, HandshakeError>) {
        let (a, b) = UnixStream::pair().expect("socket pair");
        for s in [&a, &b] {
            s.set_read_timeout(Some(std::time::Duration::from_secs(5))).expect("timeout");
        }
        let t = std::thread::spawn(move || {
            let mut s = Duplex(BufReader::new(b.try_clone().expect("clone")), BufWriter::new(b));
            go_with(&mut s, Role::Responder, &r, &tr)
        });
        let mut s = Duplex(BufReader::new(a.try_clone().expect("clone")), BufWriter::new(a));
        let x = go_with(&mut s, Role::Initiator, &i, &ti);
        drop(s);
        (x, t.join().expect("responder thread"))
    }

    struct Duplex<R, W>(R, W);
    impl<R: Read, W: Write> Read for Duplex<R, W> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.0.read(buf)
        }
    }
    impl<R: Read, W: Write> Write for Duplex<R, W> {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.1.write(buf)
        }
        fn flush(&mut self) -> io::Result<()> {
            self.1.flush()
        }
    }

    fn code(s: &str) -> Credential {
        Credential::CodePhrase(s.into())
    }

    #[test]
    fn the_same_credential_agrees_on_mirrored_keys() {
        for (i, r) in [
            (Credential::Key([7; 32]), Credential::Key([7; 32])),
            (code("42-apple-tide"), code("42 Apple TIDE")),
        ] {
            let (x, y) = both(i, r);
            let (x, y) = (x.expect("initiator"), y.expect("responder"));
            assert_eq!(x.send, y.recv);
            assert_eq!(x.recv, y.send);
            assert_ne!(x.send, x.recv, "one key per direction");
        }
        // Fresh ephemeral keys every time: the same credential gives other traffic keys.
        let (a, _) = both(Credential::Key([7; 32]), Credential::Key([7; 32]));
        let (b, _) = both(Credential::Key([7; 32]), Credential::Key([7; 32]));
        assert_ne!(a.expect("a").send, b.expect("b").send);
    }

    #[test]
    fn a_wrong_code_or_key_fails_on_both_ends() {
        for (i, r) in [
            (Credential::Key([7; 32]), Credential::Key([8; 32])),
            (code("42-apple-tide"), code("42-apple-time")),
        ] {
            let (x, y) = both(i, r);
            assert!(matches!(x, Err(HandshakeError::WrongCredential(_))), "initiator: {:?}", x.err());
            assert!(matches!(y, Err(HandshakeError::WrongCredential(_))), "responder: {:?}", y.err());
        }
        let (x, y) = both(Credential::Key([7; 32]), code("1-a-b"));
        assert!(matches!(x, Err(HandshakeError::OtherMode { .. })), "{:?}", x.err());
        assert!(matches!(y, Err(HandshakeError::OtherMode { .. })), "{:?}", y.err());
    }

    #[test]
    fn only_a_wrong_credential_is_a_wrong_guess() {
        let (x, y) = both(code("42-apple-tide"), code("42-apple-time"));
        assert!(x.err().is_some_and(|e| e.is_wrong_guess()));
        assert!(y.err().is_some_and(|e| e.is_wrong_guess()), "the responder tested a guess");
        let (_, y) = both(Credential::Key([7; 32]), code("42-apple-tide"));
        assert!(y.err().is_some_and(|e| !e.is_wrong_guess()), "a key-mode hello guesses nothing");
    }

    /// Every field of the UDT handshake is bound: an MSS or flow window lowered on the path
    /// (or any other change) fails the agreement on both ends, as a change, not a wrong guess.
    #[test]
    fn a_udt_handshake_changed_on_the_path_fails_the_agreement() {
        for (word, field) in [(3, "the MSS"), (4, "the flow window"), (2, "the initial sequence number")] {
            let mut theirs = TRANSCRIPT;
            theirs[word * 4 + 3] ^= 1;
            let (x, y) = both_with(code("42-apple-tide"), code("42-apple-tide"), TRANSCRIPT, theirs);
            assert!(matches!(x, Err(HandshakeError::ChangedOnPath(_))), "{:?}", x.err());
            match y {
                Err(HandshakeError::ChangedOnPath(f)) => assert_eq!(f, field),
                other => panic!("responder: {:?}", other.err()),
            }
        }
        // An attacker who also rewrites the transcript field in the hello still fails: the
        // prologue binds each end's own view.
        let mut a = [0u8; TRANSCRIPT_LEN];
        let b = a;
        a[0] = 9;
        let (mut n_i, mut n_r) = (
            noise(MODE_KEY, &a, &[1; 32], true).expect("noise"),
            noise(MODE_KEY, &b, &[1; 32], false).expect("noise"),
        );
        let mut m = [0u8; MAX_FRAME];
        let mut p = [0u8; MAX_FRAME];
        let n = n_i.write_message(&[], &mut m).expect("message 1");
        assert!(n_r.read_message(&m[..n], &mut p).is_err(), "different prologues must not agree");
    }

    /// Records what the initiator writes, passing it on.
    struct Tee<S>(S, Vec<u8>);
    impl<S: Read> Read for Tee<S> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.0.read(buf)
        }
    }
    impl<S: Write> Write for Tee<S> {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let n = self.0.write(buf)?;
            self.1.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            self.0.flush()
        }
    }

    /// A recorded agreement is no oracle for a key file's key: even the right key, tried
    /// offline against the recorded Noise message as its pre-shared key, does not open it
    /// (the pre-shared key is SPAKE2's output, which needs an ephemeral secret).
    #[test]
    fn a_recorded_key_agreement_gives_nothing_to_test_a_key_against() {
        let key = [0x11u8; 32];
        let (a, b) = UnixStream::pair().expect("socket pair");
        for s in [&a, &b] {
            s.set_read_timeout(Some(std::time::Duration::from_secs(5))).expect("timeout");
        }
        let t = std::thread::spawn(move || {
            go(&mut Duplex(b.try_clone().expect("clone"), b), Role::Responder, &Credential::Key(key))
        });
        let mut tee = Tee(Duplex(a.try_clone().expect("clone"), a), Vec::new());
        go(&mut tee, Role::Initiator, &Credential::Key(key)).expect("initiator");
        t.join().expect("responder thread").expect("responder");
        let recorded = tee.1;
        // hello: magic, version, mode, transcript, frame(A); then frame(Noise message 1).
        let at = MAGIC.len() + 2 + TRANSCRIPT_LEN;
        let a_len = usize::from(u16::from_be_bytes([recorded[at], recorded[at + 1]]));
        let m1_at = at + 2 + a_len;
        let m1_len = usize::from(u16::from_be_bytes([recorded[m1_at], recorded[m1_at + 1]]));
        let m1 = &recorded[m1_at + 2..m1_at + 2 + m1_len];
        let mut guess = noise(MODE_KEY, &TRANSCRIPT, &key, false).expect("noise");
        let mut payload = [0u8; MAX_FRAME];
        assert!(guess.read_message(m1, &mut payload).is_err(), "the right key must not open it offline");
        // Where the key is Noise's pre-shared key itself, a recorded message 1 is that oracle.
        let mut direct = noise(MODE_KEY, &TRANSCRIPT, &key, true).expect("noise");
        let mut m = [0u8; MAX_FRAME];
        let n = direct.write_message(&[], &mut m).expect("message 1");
        let mut guess = noise(MODE_KEY, &TRANSCRIPT, &key, false).expect("noise");
        assert!(guess.read_message(&m[..n], &mut payload).is_ok());
    }

    #[test]
    fn a_plain_peer_is_told_apart() {
        let (a, b) = UnixStream::pair().expect("socket pair");
        b.set_read_timeout(Some(std::time::Duration::from_secs(5))).expect("timeout");
        let mut b2 = b.try_clone().expect("clone");
        (&a).write_all(b"UDTP 1 some greeting of a plain receiver").expect("write");
        let r = go(&mut b2, Role::Initiator, &Credential::Key([1; 32]));
        assert!(matches!(r, Err(HandshakeError::NotSecure)), "{:?}", r.err());
        let r = go(&mut b2, Role::Responder, &Credential::Key([1; 32]));
        assert!(matches!(r, Err(HandshakeError::NotSecure | HandshakeError::Malformed(_))), "{:?}", r.err());
    }

    #[test]
    fn hostile_frames_are_refused_without_panicking() {
        let mut msgs: Vec<Vec<u8>> =
            vec![b"UDTSEC\x02\x01\xff\xff".to_vec(), b"UDTSEC\x09\x01".to_vec(), b"UDTSEC\x02\x07".to_vec()];
        let t = TRANSCRIPT.as_slice();
        msgs.push([b"UDTSEC\x02\x01".as_slice(), t, b"\x00\x05", &[0u8; 5]].concat());
        msgs.push([b"UDTSEC\x02\x02".as_slice(), t, b"\x00\x20", &[0u8; 32]].concat());
        msgs.push([b"UDTSEC\x02\x02".as_slice(), t, b"\x04\x01", &[0u8; 1025]].concat());
        msgs.push([b"UDTSEC\x01\x02".as_slice(), t].concat());
        for m in msgs {
            let (a, b) = UnixStream::pair().expect("socket pair");
            b.set_read_timeout(Some(std::time::Duration::from_secs(5))).expect("timeout");
            (&a).write_all(&m).expect("write");
            drop(a);
            let mut b = b;
            let cred = if m[7] == MODE_CODE { code("1-a-b") } else { Credential::Key([1; 32]) };
            assert!(go(&mut b, Role::Responder, &cred).is_err(), "{m:?}");
        }
    }

    #[test]
    fn code_phrases_compare_without_case_or_spacing() {
        assert_eq!(normalize_code("  7  Apple--Pie "), "7-apple-pie");
        assert_eq!(normalize_code("7-apple-pie"), "7-apple-pie");
    }
}
