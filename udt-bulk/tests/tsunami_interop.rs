//! Interoperability with the reference Tsunami UDP 1.1 programs on 127.0.0.1: the reference
//! server `tsunamid` to our `fetch`, and our `serve_connection` to the reference client
//! `tsunami`, files of several sizes compared byte for byte, and refusals both ways. The
//! reference server answers our client's digest request "cannot open" at once: the fetch ends
//! without a digest and without waiting for one.
//!
//! The programs are found through `UDT_SEED_PEERS_BIN` or in `target/seed-peers/bin` (built
//! by `interop/seed-peers.sh`); without them each test says it skipped and passes. Every
//! reference process runs under `timeout` on ports chosen free for the test, and is ended at
//! the end of its test. The reference client always exits with status 1: success is judged
//! by comparing the files.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs::File;
use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use udt_bulk::digest;
use udt_bulk::driver::RunOptions;
use udt_bulk::storage::{FileSink, Memory, Pattern, Source};
use udt_bulk::tsunami::{fetch, serve_connection, Params};

const SIZES: [usize; 4] = [0, 1000, 1024 * 1024 + 77, 4 * 1024 * 1024];

fn peers() -> Option<PathBuf> {
    let dir = std::env::var_os("UDT_SEED_PEERS_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/seed-peers/bin"));
    if dir.join("tsunamid").is_file() && dir.join("tsunami").is_file() {
        Some(dir)
    } else {
        eprintln!("skipped: no tsunamid/tsunami in {} (run interop/seed-peers.sh)", dir.display());
        None
    }
}

fn content(len: usize, seed: u64) -> Vec<u8> {
    let mut bytes = vec![0u8; len];
    Pattern { seed, len: len as u64 }.read_at(0, &mut bytes).unwrap();
    bytes
}

fn free_tcp_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn free_udp_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A reference process under `timeout`, ended (with its process group, which `timeout` leads)
/// when dropped.
struct Peer {
    child: Child,
    log: PathBuf,
}

impl Peer {
    fn spawn(command: &mut Command, log: PathBuf) -> Peer {
        let out = File::create(&log).unwrap();
        let child = command
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"));
        Peer { child, log }
    }

    /// Wait up to `limit` for the process to exit by itself.
    fn wait(&mut self, limit: Duration) -> bool {
        let until = Instant::now() + limit;
        while Instant::now() < until {
            if self.child.try_wait().unwrap().is_some() {
                return true;
            }
            thread::sleep(Duration::from_millis(20));
        }
        false
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            // TERM to `timeout`, which passes it to the program and its children, then exits.
            let pid = self.child.id().to_string();
            let _ = Command::new("kill").args(["-TERM", &pid]).status();
            if !self.wait(Duration::from_secs(2)) {
                let _ = self.child.kill();
            }
        }
        let _ = self.child.wait();
    }
}

/// `tsunamid` serving `dir` with `secret`, listening once this returns.
fn tsunamid(bin: &Path, dir: &Path, secret: &str, log: PathBuf) -> (Peer, SocketAddr) {
    let port = free_tcp_port();
    let peer = Peer::spawn(
        Command::new("timeout")
            .arg("60")
            .arg(bin.join("tsunamid"))
            .arg(format!("--port={port}"))
            .arg(format!("--secret={secret}"))
            .current_dir(dir),
        log,
    );
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let until = Instant::now() + Duration::from_secs(10);
    // A probe connection makes the server fork a child that exits when the probe closes.
    while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        assert!(Instant::now() < until, "tsunamid did not listen on {port}:\n{}", peer.log());
        thread::sleep(Duration::from_millis(20));
    }
    (peer, addr)
}

fn ours(secret: &str) -> Params {
    Params { secret: Some(secret.as_bytes().to_vec()), target_rate: 200_000_000, ..Params::default() }
}

#[test]
fn the_reference_server_sends_to_our_client() {
    let Some(bin) = peers() else { return };
    let served = tempfile::tempdir().unwrap();
    let dest = tempfile::tempdir().unwrap();
    let (server, addr) = tsunamid(&bin, served.path(), "interop one", dest.path().join("tsunamid.log"));
    for (i, len) in SIZES.into_iter().enumerate() {
        let name = format!("file{i}.bin");
        let data = content(len, 100 + i as u64);
        std::fs::write(served.path().join(&name), &data).unwrap();
        let out = dest.path().join(&name);
        let mut sink = FileSink::new(File::create(&out).unwrap());
        let result = fetch(addr, &name, &mut sink, &ours("interop one"), RunOptions::default());
        let outcome = result.unwrap_or_else(|e| panic!("{len} bytes: {e}\n{}", server.log()));
        assert!(std::fs::read(&out).unwrap() == data, "{len} bytes: the copy differs");
        assert_eq!(outcome.counters.delivered, len as u64);
        assert_eq!(outcome.peer_digest, None, "{len} bytes: a reference server has no digest");
        assert_eq!(outcome.counters.malformed, 0, "{len} bytes: it answers 8");
        eprintln!("{len} bytes from tsunamid in {:?}", outcome.elapsed);
        assert!(
            outcome.elapsed < digest::wait(len as u64),
            "{len} bytes: {:?}, the client waited for a digest",
            outcome.elapsed
        );
    }
    // Refusals from the reference server, with our reasons.
    let mut sink = Memory::default();
    let err = fetch(addr, "file1.bin", &mut sink, &ours("not it"), RunOptions::default()).unwrap_err();
    assert_eq!(err.to_string(), "refused: the server did not accept the shared secret");
    let err =
        fetch(addr, "no-such-file", &mut sink, &ours("interop one"), RunOptions::default()).unwrap_err();
    assert!(err.to_string().starts_with("refused: the server cannot open \"no-such-file\""), "{err}");
}

/// Run the reference client in `dest` with `commands` on its standard input; it exits by
/// itself after `quit`.
fn tsunami_client(bin: &Path, dest: &Path, commands: &str) -> Peer {
    let log = dest.join(format!("tsunami-{}.log", free_udp_port()));
    let mut command = Command::new("timeout");
    command.arg("60").arg(bin.join("tsunami")).current_dir(dest).stdin(Stdio::piped());
    let mut peer = Peer::spawn(&mut command, log);
    let mut stdin = peer.child.stdin.take().unwrap();
    stdin.write_all(commands.as_bytes()).unwrap();
    drop(stdin);
    peer
}

#[test]
fn our_server_sends_to_the_reference_client() {
    let Some(bin) = peers() else { return };
    let served = tempfile::tempdir().unwrap();
    let dest = tempfile::tempdir().unwrap();
    let secret = "interop-two"; // the client splits its commands at spaces
    for (i, len) in SIZES.into_iter().enumerate() {
        let name = format!("file{i}.bin");
        let data = content(len, 200 + i as u64);
        std::fs::write(served.path().join(&name), &data).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let root = served.path().to_path_buf();
        let server =
            thread::spawn(move || serve_connection(&listener, &root, &ours(secret), RunOptions::default()));
        let commands = format!(
            "set passphrase {secret}\nset udpport {}\nset rate 200M\nset verbose no\n\
             connect 127.0.0.1 {port}\nget {name}\nquit\n",
            free_udp_port()
        );
        let mut client = tsunami_client(&bin, dest.path(), &commands);
        let exited = client.wait(Duration::from_secs(30));
        let report = server.join().unwrap();
        let log = client.log();
        assert!(exited, "{len} bytes: the reference client did not finish:\n{log}");
        let report = report.unwrap_or_else(|e| panic!("{len} bytes: {e}\n{log}"));
        assert_eq!(report.name, name);
        let got = std::fs::read(dest.path().join(&name)).unwrap_or_default();
        assert!(got == data, "{len} bytes: the copy differs ({} bytes)\n{log}", got.len());
    }
}

#[test]
fn our_server_refuses_the_reference_client_with_a_wrong_passphrase() {
    let Some(bin) = peers() else { return };
    let served = tempfile::tempdir().unwrap();
    let dest = tempfile::tempdir().unwrap();
    std::fs::write(served.path().join("f"), b"data").unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let root = served.path().to_path_buf();
    let server =
        thread::spawn(move || serve_connection(&listener, &root, &ours("right"), RunOptions::default()));
    let commands = format!(
        "set passphrase kitten\nset udpport {}\nconnect 127.0.0.1 {port}\nget f\nquit\n",
        free_udp_port()
    );
    let mut client = tsunami_client(&bin, dest.path(), &commands);
    let err = server.join().unwrap().unwrap_err();
    assert_eq!(err.to_string(), "refused: the client did not prove the shared secret");
    assert!(client.wait(Duration::from_secs(10)), "the reference client gives up");
    assert!(!dest.path().join("f").exists());
}
