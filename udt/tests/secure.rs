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
fn a_code_phrase_connects_and_a_wrong_one_fails_on_both_ends() {
    let listener =
        UdtListener::bind_with("127.0.0.1:0", secure(Credential::CodePhrase("7-amber-fox".into()))).unwrap();
    let addr = listener.local_addr().unwrap();
    let server = thread::spawn(move || {
        let first = listener.accept().map(|(mut s, _)| {
            let mut b = [0u8; 5];
            s.read_exact(&mut b).unwrap();
            b
        });
        let second = listener.accept().map(|_| ());
        (first.unwrap(), second)
    });
    let mut ok = UdtStream::connect_with(addr, secure(Credential::CodePhrase("7 Amber FOX".into()))).unwrap();
    ok.write_all(b"hello").unwrap();
    let wrong = UdtStream::connect_with(addr, secure(Credential::CodePhrase("7-amber-fix".into())));
    let e = wrong.expect_err("a wrong code must fail");
    assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{e}");
    assert!(e.to_string().contains("code phrase"), "{e}");
    let (first, second) = server.join().unwrap();
    assert_eq!(&first, b"hello");
    let e = second.expect_err("the listener reports the wrong code");
    assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{e}");
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

/// Captures what one side of the key agreement writes; reads see the end of the stream.
struct Capture(Vec<u8>);

impl Read for Capture {
    fn read(&mut self, _buf: &mut [u8]) -> io::Result<usize> {
        Ok(0)
    }
}

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

struct NoKeys;

impl udt::secure::handshake::KeySink for NoKeys {
    fn install(&mut self, _keys: udt::secure::handshake::Keys) -> bool {
        true
    }
    fn activate(&mut self) {}
}

/// An attacker on the path appends clear data (a forged confirmation and a payload) to a
/// valid first message (recorded, or replayed): the listener must refuse the connection, not
/// hand the application the attacker's bytes as if they came through the sealed channel.
#[test]
fn data_appended_in_clear_to_the_key_agreement_is_refused() {
    let key = Credential::Key([8; 32]);
    // The initiator's opening (hello and Noise message 1), as it would cross the network.
    let mut opening = Capture(Vec::new());
    let _ =
        udt::secure::handshake::run(&mut opening, udt::secure::handshake::Role::Initiator, &key, &mut NoKeys);
    assert!(opening.0.len() > 8);
    let listener = UdtListener::bind_with("127.0.0.1:0", secure(key)).unwrap();
    let addr = listener.local_addr().unwrap();
    let mut forged = opening.0.clone();
    forged.push(0x5A);
    forged.extend_from_slice(b"INJECTED-PAYLOAD");
    let mut attacker = UdtStream::connect(addr).unwrap();
    attacker.write_all(&forged).unwrap();
    let e = listener.accept().map(|(mut s, _)| {
        let mut b = [0u8; 16];
        let _ = s.read_exact(&mut b);
        b
    });
    let e = e.expect_err("the injected stream must be refused");
    assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
    assert!(e.to_string().contains("injected"), "{e}");
    drop(attacker);
}
