//! Our `fetch` against our `serve_connection` over real sockets on 127.0.0.1: files arrive
//! byte-exact into files on disk with the server's BLAKE3 of each, and every refusal (wrong secret, names that are not served,
//! a file too large for the block size, no secret at all, the digest asked for before any file)
//! gives its reason on both ends.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs::File;
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::thread;

use udt_bulk::digest;
use udt_bulk::driver::RunOptions;
use udt_bulk::storage::{FileSink, Memory, Pattern, Source};
use udt_bulk::tsunami::{fetch, serve_connection, Params, ServeReport};
use udt_bulk::BulkError;

fn params(secret: &[u8]) -> Params {
    // A rate loopback and the default socket buffers take without losing most datagrams.
    Params { secret: Some(secret.to_vec()), target_rate: 200_000_000, ..Params::default() }
}

fn content(len: usize, seed: u64) -> Vec<u8> {
    let mut bytes = vec![0u8; len];
    Pattern { seed, len: len as u64 }.read_at(0, &mut bytes).unwrap();
    bytes
}

/// What a fetch wrote and the server's digest it reported.
type Fetched = (Vec<u8>, Option<[u8; 32]>);

/// Serve `root` for one connection in a thread; fetch `name` into `dest` (a file) or memory.
fn transfer(
    root: &Path,
    server: &Params,
    name: &str,
    client: &Params,
    dest: Option<&Path>,
) -> (Result<ServeReport, BulkError>, Result<Fetched, BulkError>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let (root, server) = (root.to_path_buf(), server.clone());
    let served = thread::spawn(move || serve_connection(&listener, &root, &server, RunOptions::default()));
    let fetched = match dest {
        Some(path) => {
            let mut sink = FileSink::new(File::create(path).unwrap());
            fetch(addr, name, &mut sink, client, RunOptions::default())
                .map(|o| (std::fs::read(path).unwrap(), o.peer_digest))
        }
        None => {
            let mut sink = Memory::default();
            fetch(addr, name, &mut sink, client, RunOptions::default()).map(|o| (sink.0, o.peer_digest))
        }
    };
    (served.join().unwrap(), fetched)
}

#[test]
fn files_arrive_byte_exact_over_loopback() {
    let root = tempfile::tempdir().unwrap();
    let dest = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("sub")).unwrap();
    let p = params(b"loopback secret");
    for (i, len) in [0usize, 1, 1024, 1024 * 1024 + 3, 4 * 1024 * 1024].into_iter().enumerate() {
        let name = format!("sub/file{i}.bin");
        let data = content(len, i as u64);
        std::fs::write(root.path().join(&name), &data).unwrap();
        let out = dest.path().join(format!("copy{i}"));
        let (served, fetched) = transfer(root.path(), &p, &name, &p, Some(&out));
        let report = served.unwrap_or_else(|e| panic!("server, {len} bytes: {e}"));
        let (got, sum) = fetched.unwrap_or_else(|e| panic!("client, {len} bytes: {e}"));
        assert!(got == data, "{len} bytes: the copy differs");
        assert_eq!(sum, Some(*blake3::hash(&data).as_bytes()), "{len} bytes: the server's digest");
        assert_eq!(report.name, name);
        assert_eq!(report.files.len(), 1);
        assert_eq!(report.outcome.counters.delivered, len as u64);
    }
}

#[test]
fn a_wrong_secret_is_refused_on_both_ends() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("f"), b"data").unwrap();
    let (served, fetched) = transfer(root.path(), &params(b"right"), "f", &params(b"wrong"), None);
    assert_eq!(fetched.unwrap_err().to_string(), "refused: the server did not accept the shared secret");
    assert_eq!(served.unwrap_err().to_string(), "refused: the client did not prove the shared secret");
}

#[test]
fn names_outside_what_is_served_are_refused_on_both_ends() {
    let top = tempfile::tempdir().unwrap();
    let root = top.path().join("served");
    std::fs::create_dir_all(root.join("dir")).unwrap();
    std::fs::write(top.path().join("secret.txt"), b"not served").unwrap();
    std::os::unix::fs::symlink(top.path().join("secret.txt"), root.join("link")).unwrap();
    let p = params(b"s");
    for (name, why) in [
        ("missing", "no such file"),
        ("../secret.txt", "`..` leaves the served directory"),
        ("/etc/hostname", "absolute paths are not served"),
        ("link", "resolves outside the served directory"),
        ("dir", "not a regular file"),
    ] {
        let (served, fetched) = transfer(&root, &p, name, &p, None);
        let client = fetched.unwrap_err().to_string();
        assert!(client.starts_with(&format!("refused: the server cannot open {name:?}")), "{client}");
        let server = served.unwrap_err().to_string();
        assert!(server.starts_with("refused: ") && server.ends_with(why), "{name}: {server}");
    }
}

#[test]
fn a_file_of_2_pow_32_blocks_or_more_is_refused_with_its_reason() {
    let root = tempfile::tempdir().unwrap();
    // Sparse: 4 GiB + 1 bytes cost no disk.
    let big = File::create(root.path().join("big")).unwrap();
    big.set_len((1 << 32) + 1).unwrap();
    let p = Params { block_size: 1, ..params(b"s") };
    let (served, fetched) = transfer(root.path(), &p, "big", &p, None);
    let server = served.unwrap_err().to_string();
    assert_eq!(
        server,
        "refused: big: 4294967297 bytes make more than 2^32-1 blocks of 1 bytes (the client must ask for larger blocks)"
    );
    let client = fetched.unwrap_err().to_string();
    assert!(client.contains("before describing the file") && client.contains("larger blocks"), "{client}");
}

#[test]
fn no_secret_no_service() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let root = tempfile::tempdir().unwrap();
    let err =
        serve_connection(&listener, root.path(), &Params::default(), RunOptions::default()).unwrap_err();
    assert!(err.to_string().contains("no shared secret"), "{err}");
    let addr = listener.local_addr().unwrap();
    let err =
        fetch(addr, "f", &mut Memory::default(), &Params::default(), RunOptions::default()).unwrap_err();
    assert!(err.to_string().contains("no shared secret"), "{err}");
}

#[test]
fn the_digest_asked_for_first_is_refused_and_never_opened_as_a_file() {
    let root = tempfile::tempdir().unwrap();
    // Even when a file has that name.
    std::fs::write(root.path().join(digest::TSUNAMI_REQUEST), b"not a digest").unwrap();
    let p = params(b"s");
    let (served, fetched) = transfer(root.path(), &p, digest::TSUNAMI_REQUEST, &p, None);
    let client = fetched.unwrap_err().to_string();
    assert!(client.starts_with("refused: the server cannot open \"\\u{1}udt-blake3\""), "{client}");
    let server = served.unwrap_err().to_string();
    assert!(server.ends_with("the digest of a file before any file was sent"), "{server}");
}
