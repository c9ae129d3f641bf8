//! Tests of `udt completions` and `udt man`: the generated scripts and pages exist, name the
//! subcommands, and a bad shell name is a usage error. They run the built binary; no network.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Output};

fn udt(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_udt")).args(args).env_remove("RUST_LOG").output().expect("run udt")
}

fn stdout(out: &Output) -> String {
    assert!(out.status.success(), "{:?}: {}", out.status, String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout.clone()).expect("UTF-8 output")
}

#[test]
fn bash_completion_names_the_subcommands() {
    let script = stdout(&udt(&["completions", "bash"]));
    assert!(script.contains("complete "), "{script}");
    for word in ["send", "recv", "cat", "perf", "man", "completions"] {
        assert!(script.contains(word), "no {word} in the bash script");
    }
}

#[test]
fn every_shell_has_a_script() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let script = stdout(&udt(&["completions", shell]));
        assert!(script.contains("recv"), "{shell}: {script}");
    }
}

#[test]
fn bad_shell_is_a_usage_error() {
    let out = udt(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty());
    let out = udt(&["completions"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn man_prints_the_main_page() {
    let page = stdout(&udt(&["man"]));
    assert!(page.contains(".TH udt 1"), "{page}");
    assert!(page.contains("udt\\-send(1)"), "the page lists the subcommands' pages: {page}");
}

#[test]
fn man_out_writes_one_page_per_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("man1");
    let listed = stdout(&udt(&["man", "--out", out_dir.to_str().unwrap()]));
    for name in ["udt.1", "udt-send.1", "udt-recv.1", "udt-perf-server.1", "udt-completions.1"] {
        let path = out_dir.join(name);
        let page = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(page.contains(".TH"), "{name}: {page}");
        assert!(listed.lines().any(|l| l.ends_with(name)), "{name} not listed: {listed}");
    }
    let send = std::fs::read_to_string(out_dir.join("udt-send.1")).unwrap();
    assert!(send.contains("\\-\\-code"), "udt-send.1 documents --code: {send}");
    assert_eq!(std::fs::read_dir(&out_dir).unwrap().count(), listed.lines().count());
}
