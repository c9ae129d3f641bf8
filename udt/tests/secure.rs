//! Secured connections (`Options::security`) over loopback, through a relay that records every
//! datagram and injects replayed and tampered copies: the data arrives byte for byte, the
//! capture holds none of it in clear, the injected datagrams are dropped and counted, and a
//! wrong credential or a plain peer fails on both ends.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{self, Read, Write};
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use udt::secure::Credential;
use udt::{Options, UdtListener, UdtStream};

/// A recognisable plaintext: the capture must not contain it.
const MARK: &[u8] = b"PLAINTEXT-MARK-";

fn payload(len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len);
    let mut i = 0u64;
    while v.len() < len {
        v.extend_from_slice(MARK);
        v.extend_from_slice(format!("{i:012}|").as_bytes());
        i += 1;
    }
    v.truncate(len);
    v
}

fn secure(credential: Credential) -> Options {
    Options { security: Some(credential), handshake_timeout: Duration::from_secs(10), ..Options::default() }
}

/// A UDP relay on loopback between one client and `server`: records what passes and, every
/// `every`-th datagram from the client (0: never), also sends a copy of it again (a replay)
/// and a copy with its last byte flipped (a forgery).
struct Relay {
    addr: SocketAddr,
    captured: Arc<Mutex<Vec<Vec<u8>>>>,
    stop: Arc<AtomicBool>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Relay {
    fn start(server: SocketAddr, every: usize) -> Relay {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        let addr = socket.local_addr().unwrap();
        let captured = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (c, s) = (Arc::clone(&captured), Arc::clone(&stop));
        let thread = thread::spawn(move || {
            let mut client: Option<SocketAddr> = None;
            let mut buf = vec![0u8; 65536];
            let mut n_from_client = 0usize;
            let deadline = Instant::now() + Duration::from_secs(120);
            while !s.load(Ordering::Relaxed) && Instant::now() < deadline {
                let Ok((n, from)) = socket.recv_from(&mut buf) else { continue };
                let bytes = &buf[..n];
                c.lock().unwrap().push(bytes.to_vec());
                if from == server {
                    if let Some(client) = client {
                        let _ = socket.send_to(bytes, client);
                    }
                } else {
                    client = Some(from);
                    let _ = socket.send_to(bytes, server);
                    n_from_client += 1;
                    if every > 0 && n_from_client % every == 0 && n > 100 {
                        let _ = socket.send_to(bytes, server);
                        let mut forged = bytes.to_vec();
                        forged[n - 1] ^= 0x40;
                        let _ = socket.send_to(&forged, server);
                    }
                }
            }
        });
        Relay { addr, captured, stop, thread: Some(thread) }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn a_secured_transfer_arrives_exactly_hides_its_data_and_drops_injected_datagrams() {
    let key = Credential::Key([0x42; 32]);
    let listener = UdtListener::bind_with("127.0.0.1:0", secure(key.clone())).unwrap();
    let relay = Relay::start(listener.local_addr().unwrap(), 25);
    let sent = payload(4 << 20);
    let reply = payload(300_000);
    let (expect, answer) = (sent.clone(), reply.clone());
    let server = thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut got = vec![0u8; expect.len()];
        s.read_exact(&mut got).unwrap();
        assert!(got == expect, "the server got other bytes than were sent");
        s.write_all(&answer).unwrap();
        s.flush_acknowledged().unwrap();
        s.seal_counters().expect("a secured connection")
    });
    let mut client = UdtStream::connect_with(relay.addr, secure(key)).unwrap();
    client.write_all(&sent).unwrap();
    let mut got = vec![0u8; reply.len()];
    client.read_exact(&mut got).unwrap();
    assert!(got == reply, "the client got other bytes than were sent");
    let server_counts = server.join().unwrap();
    let client_counts = client.seal_counters().unwrap();
    drop(client);
    relay.stop.store(true, Ordering::Relaxed);
    assert!(server_counts.opened > 2000 && client_counts.opened > 100, "{server_counts:?} {client_counts:?}");
    assert!(server_counts.replayed > 10, "replays dropped and counted: {server_counts:?}");
    assert!(server_counts.rejected > 10, "forgeries dropped and counted: {server_counts:?}");
    let captured = relay.captured.lock().unwrap();
    assert!(captured.len() > 3000);
    let clear = captured.iter().filter(|d| d.windows(MARK.len()).any(|w| w == MARK)).count();
    assert_eq!(clear, 0, "datagrams carrying the plaintext");
}

#[test]
fn a_code_phrase_connects_and_a_wrong_one_fails_on_both_ends_and_spends_it() {
    let code = |c: &str| secure(Credential::CodePhrase(c.into()));
    let listener = UdtListener::bind_with("127.0.0.1:0", code("7-amber-fox-quartz-lagoon")).unwrap();
    let addr = listener.local_addr().unwrap();
    let server = thread::spawn(move || {
        let first = listener.accept().map(|(mut s, _)| {
            let mut b = [0u8; 5];
            s.read_exact(&mut b).unwrap();
            b
        });
        let second = listener.accept().map(|_| ());
        let third = listener.accept().map(|_| ());
        (first.unwrap(), second, third)
    });
    let mut ok = UdtStream::connect_with(addr, code("7 Amber FOX quartz Lagoon")).unwrap();
    ok.write_all(b"hello").unwrap();
    let wrong = UdtStream::connect_with(addr, code("7-amber-fix-quartz-lagoon"));
    let e = wrong.expect_err("a wrong code must fail");
    assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{e}");
    assert!(e.to_string().contains("code phrase"), "{e}");
    // One guess in all: even the right phrase is refused now.
    let late = code("7-amber-fox-quartz-lagoon");
    assert!(UdtStream::connect_with(addr, late).is_err(), "a spent listener takes no more guesses");
    let (first, second, third) = server.join().unwrap();
    assert_eq!(&first, b"hello");
    let e = second.expect_err("the listener reports the wrong code");
    assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{e}");
    let e = third.expect_err("then it is spent");
    assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{e}");
    assert!(e.to_string().contains("spent"), "{e}");
}

/// A hello that makes no guess (a key where a code is wanted, a plain peer) spends nothing:
/// the right phrase still connects after them.
#[test]
fn a_peer_that_guesses_nothing_does_not_spend_a_code_phrase() {
    let phrase = "4821-orbit-maple-tunnel";
    let listener =
        UdtListener::bind_with("127.0.0.1:0", secure(Credential::CodePhrase(phrase.into()))).unwrap();
    let addr = listener.local_addr().unwrap();
    let server = thread::spawn(move || {
        let outcomes: Vec<_> = (0..3).map(|_| listener.accept().map(|(s, _)| s)).collect();
        outcomes.into_iter().map(|o| o.map(|_| ()).map_err(|e| e.kind())).collect::<Vec<_>>()
    });
    let e = UdtStream::connect_with(addr, secure(Credential::Key([3; 32]))).expect_err("another mode");
    assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
    let mut plain = UdtStream::connect(addr).unwrap();
    plain.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
    let good = UdtStream::connect_with(addr, secure(Credential::CodePhrase(phrase.into())));
    assert!(good.is_ok(), "the code is not spent: {:?}", good.err());
    let outcomes = server.join().unwrap();
    assert_eq!(outcomes.iter().filter(|o| o.is_ok()).count(), 1, "{outcomes:?}");
    assert!(!outcomes.contains(&Err(io::ErrorKind::PermissionDenied)), "{outcomes:?}");
    drop(plain);
}

#[test]
fn a_listener_refuses_a_guessable_code_phrase() {
    for weak in ["secret", "123456", "7-amber-fox"] {
        let e = UdtListener::bind_with("127.0.0.1:0", secure(Credential::CodePhrase(weak.into())))
            .expect_err("too easy to guess");
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{weak}: {e}");
        assert!(e.to_string().contains("too easy to guess"), "{e}");
    }
}

#[test]
fn a_plain_peer_and_a_secured_one_refuse_each_other() {
    // A secured client meets a plain listener that greets first, like a plain `udt recv`.
    let plain = UdtListener::bind("127.0.0.1:0").unwrap();
    let addr = plain.local_addr().unwrap();
    let server = thread::spawn(move || {
        let (mut s, _) = plain.accept().unwrap();
        s.write_all(b"a plain greeting").unwrap();
        let mut b = [0u8; 8];
        let _ = s.read_exact(&mut b);
        b
    });
    let e = UdtStream::connect_with(addr, secure(Credential::Key([1; 32]))).expect_err("must refuse");
    assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
    assert!(e.to_string().contains("does not encrypt"), "{e}");
    assert_eq!(&server.join().unwrap()[..6], b"UDTSEC", "the plain end sees the secure hello");
    // A plain client meets a secured listener: the listener refuses it.
    let listener = UdtListener::bind_with("127.0.0.1:0", secure(Credential::Key([1; 32]))).unwrap();
    let addr = listener.local_addr().unwrap();
    let server = thread::spawn(move || listener.accept().map(|_| ()));
    let mut c = UdtStream::connect(addr).unwrap();
    c.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
    let e = server.join().unwrap().expect_err("must refuse");
    assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
}

#[test]
fn a_peer_that_stalls_its_key_agreement_delays_nobody_else() {
    let key = Credential::Key([5; 32]);
    // The stalled agreement would hold a serial accept for a minute; accept gives up after 30 s.
    let options = Options { handshake_timeout: Duration::from_secs(60), ..secure(key.clone()) };
    let mut listener = UdtListener::bind_with("127.0.0.1:0", options).unwrap();
    listener.set_accept_timeout(Some(Duration::from_secs(30)));
    let addr = listener.local_addr().unwrap();
    // Connected at the UDT level, silent ever after.
    let stalled = UdtStream::connect(addr).unwrap();
    thread::sleep(Duration::from_millis(200));
    let good = thread::spawn(move || {
        let mut c = UdtStream::connect_with(addr, secure(key)).unwrap();
        c.write_all(b"on time").unwrap();
        c.flush_acknowledged().unwrap();
        c
    });
    let (mut s, _) = listener.accept().expect("the good peer is accepted while the other stalls");
    let mut got = [0u8; 7];
    s.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"on time");
    drop(good.join().unwrap());
    drop(stalled);
}

struct NoKeys;

impl udt::secure::handshake::KeySink for NoKeys {
    fn install(&mut self, _keys: udt::secure::handshake::Keys) -> bool {
        true
    }
    fn activate(&mut self) {}
}

/// The initiator's side of an agreement over a plain stream, with `extra` bytes in clear
/// appended on the path right after its Noise message (its second flush), in the same write:
/// they reach the listener with the message, as an attacker's bytes in the same datagram do.
struct Appending<'a> {
    stream: &'a mut UdtStream,
    flushes: usize,
    pending: Vec<u8>,
    extra: &'a [u8],
}

impl Read for Appending<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.stream.read(buf)
    }
}

impl Write for Appending<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.pending.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        self.flushes += 1;
        if self.flushes == 2 {
            self.pending.extend_from_slice(self.extra);
        }
        self.stream.write_all(&self.pending)?;
        self.pending.clear();
        Ok(())
    }
}

/// An attacker on the path appends clear data (a forged confirmation and a payload) to the
/// initiator's last clear message: the listener must refuse the connection, not hand the
/// application the attacker's bytes as if they came through the sealed channel.
#[test]
fn data_appended_in_clear_to_the_key_agreement_is_refused() {
    let key = Credential::Key([8; 32]);
    let listener = UdtListener::bind_with("127.0.0.1:0", secure(key.clone())).unwrap();
    let addr = listener.local_addr().unwrap();
    let server = thread::spawn(move || {
        listener.accept().map(|(mut s, _)| {
            let mut b = [0u8; 16];
            let _ = s.read_exact(&mut b);
            b
        })
    });
    let mut stream = UdtStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(5)));
    let transcript = stream.handshake_transcript().expect("a regular connection");
    let mut injected = vec![0x5A];
    injected.extend_from_slice(b"INJECTED-PAYLOAD");
    let mut io = Appending { stream: &mut stream, flushes: 0, pending: Vec::new(), extra: &injected };
    let _ = udt::secure::handshake::run(
        &mut io,
        udt::secure::handshake::Role::Initiator,
        &key,
        &transcript,
        &mut NoKeys,
    );
    let e = server.join().unwrap().expect_err("the injected stream must be refused");
    assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
    assert!(e.to_string().contains("injected"), "{e}");
}

/// Which way a datagram crosses the on-path attacker.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Toward {
    Server,
    Client,
}

/// An attacker on the path between one client and `server`, on loopback: `attack` sees each
/// datagram (and the way it goes) and returns what to send on instead, each with its way.
struct OnPath {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: thread::JoinHandle<()>,
}

impl OnPath {
    fn start(
        server: SocketAddr,
        mut attack: impl FnMut(Toward, &[u8]) -> Vec<(Toward, Vec<u8>)> + Send + 'static,
    ) -> OnPath {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        let addr = socket.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let s = Arc::clone(&stop);
        let thread = thread::spawn(move || {
            let mut client = None;
            let mut buf = vec![0u8; 65536];
            let deadline = Instant::now() + Duration::from_secs(60);
            while !s.load(Ordering::Relaxed) && Instant::now() < deadline {
                let Ok((n, from)) = socket.recv_from(&mut buf) else { continue };
                let toward = if from == server { Toward::Client } else { Toward::Server };
                if toward == Toward::Server {
                    client = Some(from);
                }
                for (way, bytes) in attack(toward, &buf[..n]) {
                    let to = if way == Toward::Server { Some(server) } else { client };
                    if let Some(to) = to {
                        let _ = socket.send_to(&bytes, to);
                    }
                }
            }
        });
        OnPath { addr, stop, thread }
    }

    fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap();
    }
}

/// An on-path attacker who drops the initiator's confirmation (and everything sealed after it)
/// and answers each dropped data packet with a forged ACK in clear: the responder never seals,
/// yet the initiator must not count data as delivered that never arrived.
#[test]
fn forged_clear_acks_cannot_acknowledge_sealed_data() {
    let key = Credential::Key([9; 32]);
    let listener = UdtListener::bind_with("127.0.0.1:0", secure(key.clone())).unwrap();
    let server_addr = listener.local_addr().unwrap();
    let server = thread::spawn(move || listener.accept().map(|_| ()));
    let forged = Arc::new(Mutex::new(0u32));
    let f = Arc::clone(&forged);
    let (mut client_id, mut clear_seen, mut ack_no) = (None, 0, 1u32);
    let path = OnPath::start(server_addr, move |toward, p| {
        let is_data = p[0] & 0x80 == 0;
        if toward == Toward::Client {
            if is_data && client_id.is_none() {
                client_id = Some([p[12], p[13], p[14], p[15]]);
            }
            return vec![(toward, p.to_vec())];
        }
        // The initiator's clear data is two packets (its hello, its Noise message); what
        // follows is sealed: the confirmation and the application's data.
        if is_data {
            clear_seen += 1;
        }
        if !is_data || clear_seen <= 2 {
            return vec![(toward, p.to_vec())];
        }
        let Some(id) = client_id else { return Vec::new() };
        let seq = u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & 0x7FFF_FFFF;
        let mut ack = vec![0x80, 0x02, 0, 0];
        ack.extend_from_slice(&ack_no.to_be_bytes());
        ack.extend_from_slice(&[0; 4]);
        ack.extend_from_slice(&id);
        for word in [(seq + 1) & 0x7FFF_FFFF, 10_000, 1_000, 8192] {
            ack.extend_from_slice(&word.to_be_bytes());
        }
        ack_no += 1;
        *f.lock().unwrap() += 1;
        vec![(Toward::Client, ack)]
    });
    let mut client = UdtStream::connect_with(path.addr, secure(key)).unwrap();
    client.write_all(b"this never reaches the listener").unwrap();
    client.set_write_timeout(Some(Duration::from_secs(3)));
    let flushed = client.flush_acknowledged();
    let counts = client.seal_counters().unwrap();
    path.stop();
    assert!(*forged.lock().unwrap() > 0, "the attacker forged acknowledgements");
    let e = flushed.expect_err("data that never arrived must not count as acknowledged");
    assert_eq!(e.kind(), io::ErrorKind::TimedOut, "{e}");
    assert!(counts.rejected > 0, "the forged ACKs were dropped and counted: {counts:?}");
    assert!(server.join().unwrap().is_err(), "the listener never got the confirmation");
}

/// Every agreement gives its place back, whatever its outcome: a code-phrase listener serves
/// more successful agreements, one after the other, than it has places for running ones.
#[test]
fn a_code_phrase_listener_serves_more_agreements_than_it_has_places() {
    let phrase = "4821-orbit-maple-tunnel";
    let count = udt::secure::acceptor_limits().0 + 44;
    let listener =
        UdtListener::bind_with("127.0.0.1:0", secure(Credential::CodePhrase(phrase.into()))).unwrap();
    let addr = listener.local_addr().unwrap();
    let server = thread::spawn(move || (0..count).filter(|_| listener.accept().is_ok()).count());
    for i in 0..count {
        let c = UdtStream::connect_with(addr, secure(Credential::CodePhrase(phrase.into())));
        assert!(c.is_ok(), "connection {i}: {:?}", c.err());
    }
    assert_eq!(server.join().unwrap(), count);
}

/// An on-path attacker lowers the MSS of the connection request (to UDT's minimum, 76): both
/// ends then agree on the small MSS at the UDT level, but the key agreement binds what each
/// end sent and received, so it fails on both ends, named as a change on the path.
#[test]
fn a_udt_handshake_changed_on_the_path_fails_the_key_agreement() {
    let key = Credential::Key([4; 32]);
    let listener = UdtListener::bind_with("127.0.0.1:0", secure(key.clone())).unwrap();
    let server_addr = listener.local_addr().unwrap();
    let server = thread::spawn(move || listener.accept().map(|_| ()));
    let path = OnPath::start(server_addr, |toward, p| {
        let mut p = p.to_vec();
        // A handshake to the listener (control type 0): its MSS is body word 3.
        if toward == Toward::Server && p.len() >= 64 && p[0] == 0x80 && p[1] == 0 {
            p[28..32].copy_from_slice(&76u32.to_be_bytes());
        }
        vec![(toward, p)]
    });
    let e = UdtStream::connect_with(path.addr, secure(key)).expect_err("a changed set-up must fail");
    path.stop();
    assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
    assert!(e.to_string().contains("changed on the path"), "{e}");
    let e = server.join().unwrap().expect_err("the listener refuses it too");
    assert!(e.to_string().contains("the MSS"), "{e}");
}

/// A listener's socket ids are drawn at random, not counted: one connection's id does not
/// tell an off-path attacker the next one's (which is all that authenticates a plain
/// connection's shutdown).
#[test]
fn socket_ids_of_accepted_connections_are_unpredictable() {
    let listener = UdtListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = thread::spawn(move || (0..16).map(|_| listener.accept().unwrap().0).collect::<Vec<_>>());
    let clients: Vec<_> = (0..16).map(|_| UdtStream::connect(addr).unwrap()).collect();
    let ids: Vec<u32> = clients
        .iter()
        .map(|c| {
            let t = c.handshake_transcript().unwrap();
            u32::from_be_bytes([t[44], t[45], t[46], t[47]])
        })
        .collect();
    drop(server.join().unwrap());
    let steps: std::collections::HashSet<i64> =
        ids.windows(2).map(|w| i64::from(w[1]) - i64::from(w[0])).collect();
    assert!(steps.len() > 8, "ids follow a pattern: {ids:?}");
    assert!(ids.iter().all(|&id| id != 0 && id <= 1 << 30), "{ids:?}");
}
