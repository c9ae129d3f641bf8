//! A listener's port is its own: a second bind of the same address (or of the wildcard over a
//! specific address, or IPv4 over a dual-stack `[::]`) fails with `AddrInUse` and says
//! "address in use", from this process or another user's; `Options::reuse_address` lets
//! sockets of the same user share a port, never another user's. Loopback only. The other-user
//! cases run this test binary again under `setpriv` as `nobody` when the tests run as root and
//! `setpriv` exists, and are skipped with a printed reason otherwise.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::ErrorKind;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;

use udt::{Options, UdtListener};

/// Set in the child: the address to bind.
const BIND_ENV: &str = "UDT_EXCLUSIVE_BIND_ADDR";
/// Set in the child: bind with `reuse_address`.
const REUSE_ENV: &str = "UDT_EXCLUSIVE_BIND_REUSE";
/// Prefix of the child's answer.
const MARK: &str = "udt-exclusive-bind: ";

fn reuse() -> Options {
    Options { reuse_address: true, ..Options::default() }
}

fn assert_in_use(result: std::io::Result<UdtListener>, what: &str) {
    let e = result.err().unwrap_or_else(|| panic!("{what}: the second bind succeeded"));
    assert_eq!(e.kind(), ErrorKind::AddrInUse, "{what}: {e}");
    assert!(e.to_string().contains("address in use"), "{what}: {e}");
}

#[test]
fn a_second_listener_on_the_same_address_fails() {
    let first = UdtListener::bind("127.0.0.1:0").unwrap();
    let addr = first.local_addr().unwrap();
    assert_in_use(UdtListener::bind(addr), "same address");
    assert_in_use(UdtListener::bind(("0.0.0.0", addr.port())), "wildcard over a specific address");
    // Even one asking to share: the first did not.
    assert_in_use(UdtListener::bind_with(addr, reuse()), "reuse over an exclusive listener");
    // The first still works.
    let mut c = udt::UdtStream::connect(addr).unwrap();
    std::io::Write::write_all(&mut c, b"still here").unwrap();
    let (mut s, _) = first.accept().unwrap();
    let mut got = [0u8; 10];
    std::io::Read::read_exact(&mut s, &mut got).unwrap();
    assert_eq!(&got, b"still here");
}

#[test]
fn a_dual_stack_listener_owns_the_port_for_both_families() {
    let first = UdtListener::bind("[::]:0").unwrap();
    let port = first.local_addr().unwrap().port();
    assert_in_use(UdtListener::bind(("0.0.0.0", port)), "IPv4 wildcard over [::]");
    assert_in_use(UdtListener::bind(("127.0.0.1", port)), "IPv4 loopback over [::]");
    assert_in_use(UdtListener::bind(("::1", port)), "IPv6 loopback over [::]");
}

#[test]
fn the_port_is_free_again_once_the_listener_is_gone() {
    let first = UdtListener::bind("127.0.0.1:0").unwrap();
    let addr = first.local_addr().unwrap();
    drop(first);
    // The I/O thread lingers briefly for stray handshakes, then closes the socket.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match UdtListener::bind(addr) {
            Ok(_) => break,
            Err(e) if e.kind() == ErrorKind::AddrInUse && std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => panic!("rebinding {addr}: {e}"),
        }
    }
}

#[test]
fn sharing_is_only_on_request_and_only_between_the_same_user() {
    let first = UdtListener::bind_with("127.0.0.1:0", reuse()).unwrap();
    let addr = first.local_addr().unwrap();
    let second = UdtListener::bind_with(addr, reuse());
    assert!(second.is_ok(), "both asked to share: {:?}", second.err());
    assert_in_use(UdtListener::bind(addr), "a plain bind over sharing listeners");
    match as_nobody(addr, true) {
        None => {}
        Some(answer) => assert!(answer.contains("AddrInUse"), "another user joined a shared port: {answer}"),
    }
}

#[test]
fn another_user_cannot_bind_a_listening_port() {
    for addr in ["127.0.0.1:0", "0.0.0.0:0", "[::]:0"] {
        let first = UdtListener::bind(addr).unwrap();
        let bound = first.local_addr().unwrap();
        let Some(answer) = as_nobody(bound, false) else { return };
        assert!(answer.contains("AddrInUse"), "{addr}: another user bound {bound}: {answer}");
        let Some(answer) = as_nobody(bound, true) else { return };
        assert!(answer.contains("AddrInUse"), "{addr}: another user bound {bound} with reuse: {answer}");
    }
}

/// This process's effective user id (from /proc: no unsafe code for `geteuid`).
fn effective_uid() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
    line.split_whitespace().nth(2).unwrap().parse().unwrap()
}

/// Bind `addr` as user `nobody` in a child process; its answer (`OK` or the error's kind and
/// text), or `None` (with the reason printed) where users cannot be switched.
fn as_nobody(addr: SocketAddr, reuse: bool) -> Option<String> {
    if effective_uid() != 0 {
        eprintln!("skipped: switching to another user needs root");
        return None;
    }
    let Some(setpriv) = ["/usr/bin/setpriv", "/bin/setpriv"].into_iter().find(|p| Path::new(p).exists())
    else {
        eprintln!("skipped: setpriv is not installed");
        return None;
    };
    let out = Command::new(setpriv)
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", "child_bind", "--ignored", "--nocapture", "--test-threads=1"])
        .env(BIND_ENV, addr.to_string())
        .env(REUSE_ENV, if reuse { "1" } else { "0" })
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let Some(answer) = stdout.lines().find_map(|l| l.split_once(MARK).map(|(_, a)| a.to_string())) else {
        panic!(
            "the child as nobody gave no answer ({}): {stdout} {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    };
    eprintln!("as nobody, {addr} (reuse {reuse}): {answer}");
    Some(answer)
}

/// Run by [`as_nobody`] in a child process: bind, say what happened.
#[test]
#[ignore = "helper process for the other-user tests"]
fn child_bind() {
    let Ok(addr) = std::env::var(BIND_ENV) else { return };
    let options = if std::env::var(REUSE_ENV).as_deref() == Ok("1") { reuse() } else { Options::default() };
    match UdtListener::bind_with(addr.as_str(), options) {
        Ok(_) => println!("{MARK}OK (uid {})", effective_uid()),
        Err(e) => println!("{MARK}{:?}: {e}", e.kind()),
    }
}
