//! The C API from C and the C++ layer from C++, our library on both ends: `tests/c/errors.c`
//! checks the error path of every function against UDT4's codes, `tests/cpp/api.cpp` the UDT4
//! calls the interoperability programs do not make (epoll, select, options of connected
//! sockets, files by path, messages, perfmon, a secured connection), and the examples in
//! `examples/c` (a client and a server, linked statically) move bytes to each other and to the
//! reference UDT4 server, and the C++ example of README.md ("From C++ and Python") compiles as
//! written and sends to the C server. Skips, saying why, where gcc or g++ is not installed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::{compile, crate_dir, Peer};

fn gxx_missing() -> bool {
    match support::missing_compiler() {
        Some(why) => {
            eprintln!("SKIP: {why}");
            true
        }
        None => false,
    }
}

fn gcc_missing() -> bool {
    let ok = Command::new("gcc").arg("--version").output().is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("SKIP: gcc is not installed (apt-get install gcc)");
    }
    !ok
}

fn build(source: &Path, name: &str, static_link: bool) -> PathBuf {
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("c-programs");
    std::fs::create_dir_all(&out).unwrap();
    let out = out.join(name);
    compile("gcc", &[source], &out, &["-std=c99"], static_link);
    out
}

#[test]
fn every_function_fails_with_udt4_s_error_code() {
    if gcc_missing() {
        return;
    }
    let program = build(&crate_dir().join("tests/c/errors.c"), "errors", false);
    let out = Command::new(&program).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.starts_with("ERRORS PASS checks="), "{stdout}");
}

#[test]
fn the_cpp_layer_serves_udt4_s_other_calls() {
    if gxx_missing() {
        return;
    }
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("c-programs");
    std::fs::create_dir_all(&out).unwrap();
    let program = out.join("api");
    compile("g++", &[&crate_dir().join("tests/cpp/api.cpp")], &program, &["-std=c++11"], false);
    let result = Command::new(&program).output().unwrap();
    let stdout = String::from_utf8_lossy(&result.stdout);
    assert!(result.status.success(), "{stdout}{}", String::from_utf8_lossy(&result.stderr));
    assert!(stdout.starts_with("API PASS checks="), "{stdout}");
}

#[test]
fn the_c_examples_talk_to_each_other_and_to_udt4() {
    if gcc_missing() {
        return;
    }
    let examples = crate_dir().join("../examples/c");
    let server = build(&examples.join("server.c"), "example-server", true);
    let client = build(&examples.join("client.c"), "example-client", true);
    let run_client = |port: u16| {
        let out = Command::new(&client).args([&port.to_string(), "3000000"]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let line = String::from_utf8(out.stdout).unwrap();
        line.split_whitespace().find_map(|w| w.strip_prefix("fnv1a64=")).unwrap().to_string()
    };

    let mut ours = Peer::spawn_plain(&server, &[]);
    let sent = run_client(ours.ready_port());
    let done = ours.line("DONE");
    assert_eq!((done["bytes"].as_str(), &done["fnv1a64"]), ("3000000", &sent));
    ours.finish();

    let reference = crate_dir().join("../interop/build/udt4_stream_server");
    if !reference.exists() {
        eprintln!("SKIP (the UDT4 half): {} is not built (interop/setup.sh)", reference.display());
        return;
    }
    let mut theirs = Peer::spawn(&reference, &["--port", "0"]);
    let sent = run_client(theirs.ready_port());
    let done = theirs.line("DONE");
    assert_eq!((done["bytes"].as_str(), &done["fnv1a64"]), ("3000000", &sent));
    theirs.finish();
}

/// The fenced `lang` block of README.md's "From C++ and Python" subsection.
fn readme_example(lang: &str) -> String {
    let readme = std::fs::read_to_string(crate_dir().join("../README.md")).unwrap();
    let section =
        readme.split("### From C++ and Python").nth(1).expect("README.md has no \"From C++ and Python\"");
    let fence = format!("```{lang}\n");
    let start = section.find(&fence).unwrap_or_else(|| panic!("no {lang} example")) + fence.len();
    let end = start + section[start..].find("```").unwrap();
    section[start..end].to_string()
}

#[test]
fn the_readme_s_cpp_example_sends_hello() {
    if gxx_missing() || gcc_missing() {
        return;
    }
    let server = build(&crate_dir().join("../examples/c/server.c"), "readme-server", false);
    let mut peer = Peer::spawn_plain(&server, &[]);
    let port = peer.ready_port();

    let source = readme_example("cpp");
    assert_eq!(source.matches("htons(9000)").count(), 1, "the example connects to port 9000:\n{source}");
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("c-programs");
    std::fs::create_dir_all(&dir).unwrap();
    let (src, program) = (dir.join("readme.cpp"), dir.join("readme"));
    std::fs::write(&src, source.replace("htons(9000)", &format!("htons({port})"))).unwrap();
    compile("g++", &[&src], &program, &[], false);
    let out = Command::new(&program).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let done = peer.line("DONE");
    assert_eq!((done["bytes"].as_str(), done["fnv1a64"].as_str()), ("5", "a430d84680aabd0b"), "\"hello\"");
    peer.finish();
}
