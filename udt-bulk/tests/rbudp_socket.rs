//! RBUDP, ours against ours, over real sockets on 127.0.0.1 with ports other than the
//! reference's (so these run in parallel with each other and with the interop test): files
//! compared byte for byte, each with the server's BLAKE3 digest in the fetch's outcome, and the
//! refusals a server makes before sending anything.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::path::Path;
use std::time::Duration;

use udt_bulk::driver::RunOptions;
use udt_bulk::rbudp::{fetch, serve_connection, Params, NO_RATE};
use udt_bulk::storage::{pattern_byte, FileSink, Memory};
use udt_bulk::BulkError;

fn run_options() -> RunOptions<'static> {
    RunOptions { idle_limit: Duration::from_secs(10), ..RunOptions::default() }
}

/// A UDP port free a moment ago, for the receiver.
fn free_udp_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn params(udp_port: u16) -> Params {
    Params {
        rate_bps: Some(200_000_000),
        udp_port,
        silence_limit: Duration::from_secs(10),
        ..Params::default()
    }
}

/// Serve one connection from `root` on a fresh listener while `client` runs against it.
fn with_server<T>(
    root: &Path,
    params: &Params,
    client: impl FnOnce(SocketAddr) -> T,
) -> (Result<udt_bulk::rbudp::ServeReport, BulkError>, T) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::scope(|s| {
        let server = s.spawn(|| serve_connection(&listener, root, params, run_options()));
        let got = client(addr);
        (server.join().expect("the server thread"), got)
    })
}

#[test]
fn files_of_every_size_shape_arrive_byte_exact_over_loopback() {
    let root = tempfile::tempdir().unwrap();
    let dest = tempfile::tempdir().unwrap();
    for len in [0usize, 1, 1460 * 100, (1 << 20) + 333, 2 << 20] {
        let name = format!("f{len}.bin");
        let content: Vec<u8> = (0..len as u64).map(|i| pattern_byte(len as u64, i)).collect();
        std::fs::write(root.path().join(&name), &content).unwrap();
        let p = params(free_udp_port());
        let out_path = dest.path().join(&name);
        let (served, fetched) = with_server(root.path(), &p, |addr| {
            let mut sink = FileSink::new(std::fs::File::create(&out_path).unwrap());
            fetch(addr, &name, &mut sink, &p, run_options())
        });
        let served = served.unwrap_or_else(|e| panic!("{len} bytes: server: {e}"));
        let fetched = fetched.unwrap_or_else(|e| panic!("{len} bytes: client: {e}"));
        assert_eq!(served.name, name);
        assert!(std::fs::read(&out_path).unwrap() == content, "{len} bytes differ");
        assert_eq!(fetched.counters.delivered, len as u64);
        assert_eq!(served.outcome.counters.delivered, len as u64);
        assert_eq!(fetched.counters.rounds, served.outcome.counters.rounds);
        assert_eq!(fetched.peer_digest, Some(*blake3::hash(&content).as_bytes()), "{len} bytes");
        assert_eq!(served.outcome.peer_digest, None, "a sender has none");
        eprintln!(
            "{len} bytes: {} rounds, {} resent",
            fetched.counters.rounds, served.outcome.counters.retransmitted
        );
    }
}

#[test]
fn a_request_outside_the_served_directory_is_refused_without_a_byte() {
    let top = tempfile::tempdir().unwrap();
    let root = top.path().join("served");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(top.path().join("secret"), b"secret").unwrap();
    for asked in ["../secret", "missing.bin", "/etc/passwd"] {
        let p = params(free_udp_port());
        let (served, fetched) = with_server(&root, &p, |addr| {
            let mut sink = Memory::default();
            let r = fetch(addr, asked, &mut sink, &p, run_options());
            (r, sink)
        });
        assert!(matches!(served, Err(BulkError::Refused(_))), "{asked}: {served:?}");
        let (result, sink) = fetched;
        let why = result.expect_err("nothing fetched").to_string();
        assert!(why.contains("without announcing a size"), "{asked}: {why}");
        assert!(sink.0.is_empty());
    }
}

#[test]
fn a_server_without_a_rate_refuses_before_accepting() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let root = tempfile::tempdir().unwrap();
    let p = Params { rate_bps: None, ..Params::default() };
    let err = serve_connection(&listener, root.path(), &p, run_options()).expect_err("no rate");
    assert_eq!(err.to_string(), NO_RATE);
}
