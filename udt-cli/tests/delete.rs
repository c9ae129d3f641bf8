//! `--delete` (rsync's): after a tree transfer the receiver removes, in each directory the
//! sender sent, what the sender's tree does not have, only when asked, only inside the
//! destination, never through a symbolic link, keeping what the sender excluded; each path
//! deleted is listed (text and JSON) on both ends. Pushed and pulled through a fake `ssh` (a
//! script that runs the far command here, as sshd would), and sent straight to a `udt recv`,
//! which must allow it. Loopback only.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod listening;

use common::{run_within, text, udt};
use listening::Listening;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;
use std::process::{Command, Output};

fn udt_path() -> &'static str {
    env!("CARGO_BIN_EXE_udt")
}

/// Run to the end (at most 60 s).
fn run(cmd: Command) -> Output {
    run_within(cmd, 60)
}

/// A fake ssh: skips to `--`, drops the destination and runs the far command here with
/// `sh -c`, as sshd runs it through the user's shell.
fn fake_ssh(dir: &Path) -> String {
    let path = dir.join("fake-ssh");
    std::fs::write(
        &path,
        "#!/bin/sh\nwhile [ \"$1\" != \"--\" ]; do shift; done\nshift; shift\nsh -c \"$1\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_str().unwrap().to_string()
}

/// The sender's tree: nested directories, an empty one.
fn make_tree(root: &Path) {
    std::fs::create_dir_all(root.join("tree/sub/deeper")).unwrap();
    std::fs::create_dir_all(root.join("tree/empty")).unwrap();
    std::fs::write(root.join("tree/a.txt"), b"alpha\n").unwrap();
    std::fs::write(root.join("tree/sub/c.txt"), b"see\n").unwrap();
    std::fs::write(root.join("tree/sub/deeper/d.txt"), b"deep\n").unwrap();
}

/// What the receiver holds beyond the sender's tree, in `far` (its `tree` already received):
/// stale files, a stale nested directory, an excluded file, a dir of excluded files with a
/// stale one, a symbolic link to `outside`, and a file next to the tree.
fn add_extras(far: &Path, outside: &Path) {
    std::fs::create_dir_all(far.join("tree/sub/old/deeper")).unwrap();
    std::fs::create_dir_all(far.join("tree/objs")).unwrap();
    for f in
        ["tree/stale.txt", "tree/sub/old/deeper/x.txt", "tree/keep.o", "tree/objs/y.o", "tree/objs/z.txt"]
    {
        std::fs::write(far.join(f), b"extra\n").unwrap();
    }
    symlink(outside, far.join("tree/sub/link-out")).unwrap();
    std::fs::write(far.join("beside.txt"), b"not in the tree\n").unwrap();
}

/// The paths `add_extras` made that --delete --exclude '*.o' removes.
const DELETED: [&str; 6] = [
    "tree/objs/z.txt",
    "tree/stale.txt",
    "tree/sub/link-out",
    "tree/sub/old",
    "tree/sub/old/deeper",
    "tree/sub/old/deeper/x.txt",
];

/// What `add_extras` made that --delete --exclude '*.o' keeps, and the link's target.
fn assert_kept(far: &Path, outside: &Path) {
    for kept in ["tree/keep.o", "tree/objs/y.o", "beside.txt", "tree/a.txt", "tree/sub/deeper/d.txt"] {
        assert!(far.join(kept).exists(), "{kept} is gone");
    }
    assert!(far.join("tree/empty").is_dir());
    assert_eq!(std::fs::read(outside.join("precious")).unwrap(), b"keep me\n", "outside touched");
}

/// The `deleted` lines of a `--json` output, sorted, and the total's count.
fn deleted_in_json(out: &str) -> (Vec<String>, u64) {
    let lines: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let mut deleted: Vec<String> = lines
        .iter()
        .filter(|l| l["type"] == "deleted")
        .map(|l| l["name"].as_str().unwrap().to_string())
        .collect();
    deleted.sort();
    let total = lines.last().unwrap();
    assert_eq!(total["type"], "total", "{out}");
    (deleted, total["deleted"].as_u64().unwrap())
}

/// Push to `host:DIR`: nothing deleted without --delete; with it, exactly the extras the tree
/// lacks, listed in the sender's JSON. Then pull with
/// --delete into a local copy with extras: deleted here.
#[test]
fn push_and_pull_delete_only_what_the_tree_lacks() {
    let tmp = tempfile::tempdir().unwrap();
    let ssh = fake_ssh(tmp.path());
    let src = tmp.path().join("src");
    make_tree(&src);
    let outside = tmp.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("precious"), b"keep me\n").unwrap();
    let far = tmp.path().join("far");
    let push = |extra: &[&str]| {
        let mut c = udt();
        c.args(["send", "--ssh", &ssh, "--remote-udt", udt_path()]).args(extra).arg(src.join("tree"));
        c.arg(format!("localhost:{}", far.to_str().unwrap()));
        run(c)
    };
    let first = push(&[]);
    assert!(first.status.success(), "{}", text(&first.stderr));
    add_extras(&far, &outside);

    let plain = push(&["--exclude", "*.o"]);
    assert!(plain.status.success(), "{}", text(&plain.stderr));
    assert!(far.join("tree/stale.txt").exists(), "deleted without --delete");
    assert!(!text(&plain.stdout).contains("deleted"), "{}", text(&plain.stdout));

    let pruned = push(&["--delete", "--exclude", "*.o", "--json"]);
    assert!(pruned.status.success(), "{}", text(&pruned.stderr));
    let (deleted, count) = deleted_in_json(&text(&pruned.stdout));
    assert_eq!(deleted, DELETED, "{}", text(&pruned.stdout));
    assert_eq!(count, DELETED.len() as u64);
    for gone in DELETED {
        assert!(std::fs::symlink_metadata(far.join(gone)).is_err(), "{gone} is still there");
    }
    assert_kept(&far, &outside);

    // Pull it back into a copy holding extras of its own.
    let back = tmp.path().join("back");
    let pull = |extra: &[&str]| {
        let mut c = udt();
        c.args(["recv", "--ssh", &ssh, "--remote-udt", udt_path()]).args(extra);
        c.arg(format!("localhost:{}", far.join("tree").to_str().unwrap())).arg(&back);
        run(c)
    };
    assert!(pull(&[]).status.success());
    std::fs::create_dir_all(back.join("tree/new/dir")).unwrap();
    std::fs::write(back.join("tree/new/dir/n.txt"), b"local only\n").unwrap();
    std::fs::write(back.join("tree/sub/local.txt"), b"local only\n").unwrap();
    let pulled = pull(&["--delete"]);
    assert!(pulled.status.success(), "{}", text(&pulled.stderr));
    let out = text(&pulled.stdout);
    for gone in ["tree/new", "tree/new/dir", "tree/new/dir/n.txt", "tree/sub/local.txt"] {
        assert!(out.contains(&format!("deleted {gone}\n")), "{gone}: {out}");
        assert!(!back.join(gone).exists(), "{gone}");
    }
    assert!(out.contains("4 deleted"), "{out}");
    assert!(back.join("tree/keep.o").exists() && back.join("tree/sub/deeper/d.txt").exists());
}

/// A `udt recv` started without --delete refuses a sender that asks for it, says why on both
/// ends and keeps listening; one started with it deletes, and its own output lists the paths.
#[test]
fn a_direct_receiver_must_allow_it() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    make_tree(&src);
    let outside = tmp.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("precious"), b"keep me\n").unwrap();
    let out = tmp.path().join("out");
    std::fs::create_dir_all(out.join("tree")).unwrap();
    add_extras(&out, &outside);

    let mut cmd = udt();
    cmd.args(["recv", "--insecure", "-l", "127.0.0.1:0", "-o"]).arg(&out);
    let mut recv = Listening::start(cmd);
    let target = format!("127.0.0.1:{}", recv.port());
    let send = |extra: &[&str]| {
        let mut c = udt();
        c.args(["send", "--insecure"]).args(extra).arg(src.join("tree")).arg(&target);
        run(c)
    };
    let refused = send(&["--delete", "--exclude", "*.o"]);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused.stderr));
    assert!(text(&refused.stderr).contains("start it with --delete"), "{}", text(&refused.stderr));
    Listening::line(&recv.err, "still listening");
    assert!(out.join("tree/stale.txt").exists());
    let plain = send(&[]);
    assert!(plain.status.success(), "{}", text(&plain.stderr));
    assert_eq!(recv.wait(), Some(0));
    assert!(out.join("tree/stale.txt").exists());

    let mut cmd = udt();
    cmd.args(["recv", "--insecure", "--delete", "--json", "-l", "127.0.0.1:0", "-o"]).arg(&out);
    let mut recv = Listening::start(cmd);
    let target = format!("127.0.0.1:{}", recv.port());
    let mut c = udt();
    c.args(["send", "--insecure", "--delete", "--exclude", "*.o"]).arg(src.join("tree")).arg(&target);
    let sent = run(c);
    assert!(sent.status.success(), "{}", text(&sent.stderr));
    assert!(text(&sent.stdout).contains("6 deleted"), "{}", text(&sent.stdout));
    assert_eq!(recv.wait(), Some(0));
    let lines: Vec<String> = recv.out.iter().collect();
    let (deleted, count) = deleted_in_json(&lines.join("\n"));
    assert_eq!(deleted, DELETED);
    assert_eq!(count, 6);
    assert_kept(&out, &outside);
}

/// Something the sender could not read: nothing is deleted (the receiver would lose its
/// copy), and the sender says so.
#[test]
fn nothing_is_deleted_after_a_read_failure_here() {
    let tmp = tempfile::tempdir().unwrap();
    let ssh = fake_ssh(tmp.path());
    let src = tmp.path().join("src");
    make_tree(&src);
    // A name the receiver would refuse: left out by the sender, as a file it cannot send.
    std::fs::write(src.join("tree/tab\there.txt"), b"x").unwrap();
    let far = tmp.path().join("far");
    std::fs::create_dir_all(far.join("tree")).unwrap();
    std::fs::write(far.join("tree/stale.txt"), b"extra\n").unwrap();
    let mut c = udt();
    c.args(["send", "--delete", "--ssh", &ssh, "--remote-udt", udt_path()]).arg(src.join("tree"));
    c.arg(format!("localhost:{}", far.to_str().unwrap()));
    let done = run(c);
    assert!(text(&done.stderr).contains("--delete not done"), "{}", text(&done.stderr));
    assert!(far.join("tree/stale.txt").exists());
    assert!(far.join("tree/sub/deeper/d.txt").exists(), "the rest still went");
}
