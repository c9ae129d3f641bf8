//! RBUDP against the reference QUANTA RBUDP 1.0 programs (peers/README.md): `sendfile` into our
//! [`fetch`], and our [`serve_connection`] into `recvfile`, files of several sizes compared byte
//! for byte. The reference uses fixed ports (TCP 38000, UDP 38000 -> 38001), so every case runs
//! in the one test function below, one after the other. Each reference program runs under
//! `timeout` and is terminated, by its process id, at the end of its case.
//!
//! Besides clean runs, one case each way drops every 7th datagram of the first blast on our
//! side, so that a bitmap with holes crosses between the implementations and the missing
//! packets are re-blasted.
//!
//! Our end-to-end digest (`udt_bulk::digest`) must cost the reference nothing: our receiver
//! ends done without a digest when `sendfile` closes after the done flag, promptly (the delay
//! between our final bitmap and our end is measured and bounded), and our sender, whose digest
//! message meets a `recvfile` that has closed, still ends cleanly with the file byte-exact.
//!
//! The programs are found through `UDT_SEED_PEERS_BIN` or `<workspace>/target/seed-peers/bin`;
//! without them the test says it is skipped and passes (CI builds them).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Read;
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use udt_bulk::digest;
use udt_bulk::driver::{self, Outcome, RunOptions, Sockets};
use udt_bulk::rbudp::{fetch, serve_connection, wire, Params, Receiver, Sender};
use udt_bulk::storage::{pattern_byte, FileSink, Memory, Source};
use udt_bulk::{Counters, Event, Instant as At, Session};

/// The reference's ports.
const TCP_PORT: u16 = 38000;
const UDP_PORT: u16 = 38001;
const PAYLOAD: usize = 1460;
const RATE_KBPS: u64 = 200_000;

fn peers_bin() -> Option<PathBuf> {
    let dir = std::env::var_os("UDT_SEED_PEERS_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/seed-peers/bin"));
    (dir.join("sendfile").is_file() && dir.join("recvfile").is_file()).then_some(dir)
}

fn params() -> Params {
    Params {
        rate_bps: Some(RATE_KBPS * 1000),
        payload: PAYLOAD,
        tcp_port: TCP_PORT,
        udp_port: UDP_PORT,
        silence_limit: Duration::from_secs(15),
        ..Params::default()
    }
}

fn run_options() -> RunOptions<'static> {
    RunOptions { idle_limit: Duration::from_secs(15), ..RunOptions::default() }
}

/// A reference program running under `timeout`, terminated when dropped.
struct Peer {
    child: Child,
    log: PathBuf,
}

impl Peer {
    fn spawn(log: PathBuf, program: &Path, env_pad: bool, args: &[&str]) -> Peer {
        let out = std::fs::File::create(&log).unwrap();
        let mut cmd = Command::new("timeout");
        cmd.args(["-k", "2", "60"]);
        if env_pad {
            // recvfile sends 256 bytes from its path argument on: make what follows it known.
            cmd.args(["env", "-i", &format!("PAD={}", "0".repeat(256))]);
        }
        cmd.arg(program).args(args);
        let child = cmd.stdin(Stdio::null()).stdout(out.try_clone().unwrap()).stderr(out).spawn().unwrap();
        Peer { child, log }
    }

    /// Wait up to `limit` for the program to exit by itself.
    fn wait_exit(&mut self, limit: Duration) -> bool {
        let start = Instant::now();
        while start.elapsed() < limit {
            if let Ok(Some(_)) = self.child.try_wait() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    fn output(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            // TERM to `timeout` (our child) reaches the program it runs.
            let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
            if !self.wait_exit(Duration::from_secs(5)) {
                let _ = self.child.kill();
            }
        }
        let _ = self.child.wait();
    }
}

/// True once something listens on TCP `port` (read from /proc, without connecting: the
/// reference sender accepts one connection only).
fn listening(port: u16) -> bool {
    let wanted = format!(":{port:04X}");
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|table| {
        std::fs::read_to_string(table).unwrap_or_default().lines().skip(1).any(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            fields.get(1).is_some_and(|local| local.ends_with(&wanted)) && fields.get(3) == Some(&"0A")
        })
    })
}

fn content(len: usize) -> Vec<u8> {
    (0..len as u64).map(|i| pattern_byte(len as u64 ^ 0x5eed, i)).collect()
}

/// Start the reference `sendfile` and wait for its listen (a receiver started earlier can
/// connect to itself on loopback).
fn start_sendfile(bin: &Path, dir: &Path, tag: &str) -> Peer {
    let mut peer = Peer::spawn(
        dir.join(format!("sendfile-{tag}.log")),
        &bin.join("sendfile"),
        false,
        &["127.0.0.1", &RATE_KBPS.to_string(), &PAYLOAD.to_string()],
    );
    let start = Instant::now();
    while !listening(TCP_PORT) {
        assert!(start.elapsed() < Duration::from_secs(10), "sendfile never listened: {}", peer.output());
        assert!(peer.child.try_wait().unwrap().is_none(), "sendfile exited: {}", peer.output());
        std::thread::sleep(Duration::from_millis(20));
    }
    peer
}

/// The reference `sendfile` serves one file to our `fetch`.
fn reference_sender_to_our_receiver(bin: &Path, dir: &Path, len: usize) {
    let src = dir.join(format!("ref-src-{len}.bin"));
    let dst = dir.join(format!("our-dst-{len}.bin"));
    let data = content(len);
    std::fs::write(&src, &data).unwrap();
    let peer = start_sendfile(bin, dir, &len.to_string());
    let server = SocketAddr::from(([127, 0, 0, 1], TCP_PORT));
    let mut sink = FileSink::new(std::fs::File::create(&dst).unwrap());
    let remote = src.to_str().unwrap();
    let outcome = fetch(server, remote, &mut sink, &params(), run_options())
        .unwrap_or_else(|e| panic!("sendfile -> fetch, {len} bytes: {e}\nsendfile said:\n{}", peer.output()));
    assert!(std::fs::read(&dst).unwrap() == data, "sendfile -> fetch, {len} bytes: the files differ");
    assert_eq!(outcome.counters.delivered, len as u64);
    assert_eq!(outcome.counters.malformed, 0, "every datagram read as the reference meant it");
    assert_eq!(outcome.peer_digest, None, "the reference sends no digest");
    assert!(outcome.elapsed < digest::wait(len as u64), "the digest waited for: {:?}", outcome.elapsed);
    eprintln!(
        "sendfile -> fetch: {len} bytes, {} rounds, {} duplicates, {:?}",
        outcome.counters.rounds, outcome.counters.duplicates, outcome.elapsed
    );
    drop(peer);
}

/// Our `serve_connection` serves one file to the reference `recvfile`.
fn our_sender_to_reference_receiver(bin: &Path, dir: &Path, len: usize) {
    let root = dir.join("served");
    std::fs::create_dir_all(&root).unwrap();
    let name = format!("our-src-{len}.bin");
    let dst = dir.join(format!("ref-dst-{len}.bin"));
    let data = content(len);
    std::fs::write(root.join(&name), &data).unwrap();
    let listener = TcpListener::bind(("127.0.0.1", TCP_PORT)).expect("TCP 38000 free for the test");
    let p = params();
    std::thread::scope(|s| {
        let server = s.spawn(|| serve_connection(&listener, &root, &p, run_options()));
        let mut peer = Peer::spawn(
            dir.join(format!("recvfile-{len}.log")),
            &bin.join("recvfile"),
            true,
            &["127.0.0.1", &name, dst.to_str().unwrap(), &PAYLOAD.to_string()],
        );
        let report = server.join().expect("the server thread").unwrap_or_else(|e| {
            panic!("serve -> recvfile, {len} bytes: {e}\nrecvfile said:\n{}", peer.output())
        });
        assert_eq!(report.name, name);
        assert_eq!(report.outcome.counters.delivered, len as u64);
        assert_eq!(report.outcome.peer_digest, None);
        // The done bitmap comes after the last write into its mapping; let it close the file.
        peer.wait_exit(Duration::from_secs(5));
        assert!(std::fs::read(&dst).unwrap() == data, "serve -> recvfile, {len} bytes: the files differ");
        eprintln!(
            "serve -> recvfile: {len} bytes, {} rounds, {} resent",
            report.outcome.counters.rounds, report.outcome.counters.retransmitted
        );
    });
}

/// The reference `sendfile` into our receiver, which loses every 7th datagram of the first
/// blast: the reference must read our bitmap and re-blast exactly the holes.
fn reference_sender_re_blasts_for_our_bitmap(bin: &Path, dir: &Path, len: usize) {
    let src = dir.join("ref-src-holes.bin");
    let data = content(len);
    std::fs::write(&src, &data).unwrap();
    let peer = start_sendfile(bin, dir, "holes");
    let udp = UdpSocket::bind(("127.0.0.1", UDP_PORT)).expect("UDP 38001 free for the test");
    let stream = TcpStream::connect(("127.0.0.1", TCP_PORT)).unwrap();
    let mut sink = Memory::default();
    let p = params();
    let receiver = Receiver::new(src.to_str().unwrap(), &mut sink, &p).unwrap();
    let mut lossy = Lossy::new(receiver, 0);
    let sockets = Sockets { controls: vec![stream], udp, data_peer: None };
    let outcome: Outcome = driver::run(&mut lossy, sockets, run_options())
        .unwrap_or_else(|e| panic!("sendfile -> lossy receiver: {e}\nsendfile said:\n{}", peer.output()));
    let dropped = lossy.dropped;
    let waited = lossy.done_at.unwrap().duration_since(lossy.last_control_at.unwrap());
    drop(lossy);
    assert!(sink.0 == data, "sendfile -> lossy receiver: the bytes differ");
    assert!(dropped > 0 && outcome.counters.rounds >= 2, "{dropped} dropped, {:?}", outcome.counters);
    assert_eq!(outcome.peer_digest, None, "the reference sends no digest");
    // sendfile closes right after reading the done flag: no digest wait (5 s) on our side.
    assert!(waited < Duration::from_secs(3), "{waited:?} from the final bitmap to the end");
    eprintln!(
        "sendfile -> lossy receiver: {len} bytes, {dropped} dropped, {} rounds, ended {waited:?} after \
         the final bitmap",
        outcome.counters.rounds
    );
    drop(peer);
}

/// Our sender, which loses every 7th datagram of its first blast, into the reference
/// `recvfile`: our sender must read the reference's bitmap and re-blast exactly the holes.
fn our_sender_re_blasts_for_the_reference_bitmap(bin: &Path, dir: &Path, len: usize) {
    let root = dir.join("served");
    std::fs::create_dir_all(&root).unwrap();
    let name = "our-src-holes.bin";
    let dst = dir.join("ref-dst-holes.bin");
    let data = content(len);
    std::fs::write(root.join(name), &data).unwrap();
    let listener = TcpListener::bind(("127.0.0.1", TCP_PORT)).expect("TCP 38000 free for the test");
    let udp = UdpSocket::bind(("127.0.0.1", TCP_PORT)).expect("UDP 38000 free for the test");
    let mut peer = Peer::spawn(
        dir.join("recvfile-holes.log"),
        &bin.join("recvfile"),
        true,
        &["127.0.0.1", name, dst.to_str().unwrap(), &PAYLOAD.to_string()],
    );
    let (mut stream, _) = listener.accept().unwrap();
    let mut field = [0u8; wire::REQUEST_LEN];
    stream.read_exact(&mut field).unwrap();
    assert_eq!(wire::decode_request(&field).unwrap(), name, "recvfile's request field");
    let p = params();
    let source = Box::new(Memory(data.clone())) as Box<dyn Source>;
    let sender = Sender::for_request(&p, name, source).unwrap();
    let mut lossy = Lossy::new(sender, 1);
    let sockets = Sockets {
        controls: vec![stream],
        udp,
        data_peer: Some(SocketAddr::from(([127, 0, 0, 1], UDP_PORT))),
    };
    let outcome = driver::run(&mut lossy, sockets, run_options())
        .unwrap_or_else(|e| panic!("lossy sender -> recvfile: {e}\nrecvfile said:\n{}", peer.output()));
    peer.wait_exit(Duration::from_secs(5));
    assert!(std::fs::read(&dst).unwrap() == data, "lossy sender -> recvfile: the files differ");
    let c = outcome.counters;
    assert!(lossy.dropped > 0 && c.rounds >= 2, "{} dropped, {c:?}", lossy.dropped);
    assert!(c.retransmitted >= lossy.dropped, "every hole re-blasted: {c:?}");
    assert_eq!(lossy.last_control.get(..4), Some(&digest::TAG[..]), "our digest went last");
    eprintln!("lossy sender -> recvfile: {len} bytes, {} dropped, {} rounds", lossy.dropped, c.rounds);
}

/// A session that loses every 7th datagram it sends or receives while its inner session's
/// rounds are at most `first_blast_rounds` (the sender counts a blast when it starts, the
/// receiver when it ends), and notes when it wrote its last control message and when it ended.
struct Lossy<S> {
    inner: S,
    first_blast_rounds: u64,
    seen: u64,
    dropped: u64,
    last_control: Vec<u8>,
    last_control_at: Option<Instant>,
    done_at: Option<Instant>,
}

impl<S: Session> Lossy<S> {
    fn new(inner: S, first_blast_rounds: u64) -> Self {
        Lossy {
            inner,
            first_blast_rounds,
            seen: 0,
            dropped: 0,
            last_control: vec![],
            last_control_at: None,
            done_at: None,
        }
    }

    fn lose(&mut self) -> bool {
        if self.inner.counters().rounds > self.first_blast_rounds {
            return false;
        }
        self.seen += 1;
        let lose = self.seen % 7 == 3;
        self.dropped += u64::from(lose);
        lose
    }
}

impl<S: Session> Session for Lossy<S> {
    fn handle_control(&mut self, now: At, channel: usize, bytes: &[u8]) {
        self.inner.handle_control(now, channel, bytes)
    }
    fn handle_control_closed(&mut self, now: At, channel: usize) {
        self.inner.handle_control_closed(now, channel)
    }
    fn handle_datagram(&mut self, now: At, datagram: &[u8]) {
        if !self.lose() {
            self.inner.handle_datagram(now, datagram)
        }
    }
    fn handle_timeout(&mut self, now: At) {
        self.inner.handle_timeout(now)
    }
    fn poll_control(&mut self) -> Option<(usize, Vec<u8>)> {
        let polled = self.inner.poll_control()?;
        self.last_control.clone_from(&polled.1);
        self.last_control_at = Some(Instant::now());
        Some(polled)
    }
    fn poll_datagram(&mut self, now: At, buf: &mut [u8]) -> Option<usize> {
        loop {
            let n = self.inner.poll_datagram(now, buf)?;
            if !self.lose() {
                return Some(n);
            }
        }
    }
    fn poll_timeout(&self) -> Option<At> {
        self.inner.poll_timeout()
    }
    fn poll_event(&mut self) -> Option<Event> {
        let event = self.inner.poll_event()?;
        if event == Event::Done {
            self.done_at.get_or_insert_with(Instant::now);
        }
        Some(event)
    }
    fn counters(&self) -> Counters {
        self.inner.counters()
    }
    fn max_datagram(&self) -> usize {
        self.inner.max_datagram()
    }
    fn peer_digest(&self) -> Option<[u8; 32]> {
        self.inner.peer_digest()
    }
}

#[test]
fn reference_peers_both_ways() {
    let Some(bin) = peers_bin() else {
        eprintln!("skipped: the reference RBUDP programs are not built (run interop/seed-peers.sh)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for len in [1024, (1 << 20) + 333, 4 << 20] {
        reference_sender_to_our_receiver(&bin, dir.path(), len);
        our_sender_to_reference_receiver(&bin, dir.path(), len);
    }
    // recvfile cannot map an empty file: it creates it, fails and closes, our digest unread.
    our_sender_to_reference_receiver(&bin, dir.path(), 0);
    reference_sender_re_blasts_for_our_bitmap(&bin, dir.path(), (1 << 20) + 333);
    our_sender_re_blasts_for_the_reference_bitmap(&bin, dir.path(), (1 << 20) + 333);
}
