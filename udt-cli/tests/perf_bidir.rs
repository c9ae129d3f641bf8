//! `udt perf --bidir` (iperf3's): both directions at once over loopback, on two sets of
//! connections, each direction reported on its own in the text and the JSON, and checked
//! against the in-process server's view; with -O in both directions; -R and -n refused beside
//! it (usage errors). Also -R with -O, which the receiving direction now counts as well.
//! Checks behaviour, not speed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::{Command, Output};

use serde_json::Value;

fn udt() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_udt"));
    c.env_remove("RUST_LOG").env_remove("UDT_CODE");
    c
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `udt perf --self --insecure ARGS`, which must succeed.
fn perf_self(args: &[&str]) -> Output {
    let done = udt().args(["perf", "--self", "--insecure"]).args(args).output().unwrap();
    assert!(done.status.success(), "{}", text(&done.stderr));
    done
}

/// The summary's streams' ids and bytes.
fn streams(summary: &Value) -> Vec<(u64, u64)> {
    summary["streams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["id"].as_u64().unwrap(), s["bytes"].as_u64().unwrap()))
        .collect()
}

#[test]
fn bidir_sends_both_ways_and_reports_each_direction() {
    let done = perf_self(&["--bidir", "-P", "2", "-t", "1", "--json"]);
    let out = text(&done.stdout);
    assert!(!out.contains("4294967295"), "a sentinel: {out}");
    let report: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(report["start"]["bidir"], true);
    assert_eq!(report["start"]["streams"], 2);
    assert!(report["start"].get("reverse").is_none(), "{}", report["start"]);

    // Client to server: streams 1 and 2, every byte written arrived.
    let sent = &report["summary"];
    let ids: Vec<u64> = streams(sent).iter().map(|s| s.0).collect();
    assert_eq!(ids, [1, 2]);
    assert!(streams(sent).iter().all(|s| s.1 > 0), "{sent}");
    assert_eq!(sent["receiver"]["bytes"], sent["bytes"], "the server received what the client sent");

    // Server to client: streams 3 and 4, every byte the server wrote arrived.
    let reverse = &report["bidir_reverse"];
    let received = &reverse["summary"];
    let ids: Vec<u64> = streams(received).iter().map(|s| s.0).collect();
    assert_eq!(ids, [3, 4]);
    assert!(streams(received).iter().all(|s| s.1 > 0), "{received}");
    assert_eq!(received["receiver"]["bytes"], received["bytes"], "the client received what the server sent");
    for intervals in [&report["intervals"], &reverse["intervals"]] {
        let intervals = intervals.as_array().unwrap();
        assert!(!intervals.is_empty());
        assert_eq!(intervals[0]["streams"].as_array().unwrap().len(), 2);
    }
    assert_eq!(report["intervals"][0]["streams"][0]["id"], 1);
    assert_eq!(reverse["intervals"][0]["streams"][0]["id"], 3);
}

#[test]
fn bidir_text_names_each_direction() {
    let out = text(&perf_self(&["--bidir", "-t", "0.5"]).stdout);
    assert!(out.contains("1 stream each way"), "{out}");
    let tx = out.lines().filter(|l| l.starts_with("[  1]") && l.ends_with("  TX")).count();
    let rx = out.lines().filter(|l| l.starts_with("[  2]") && l.ends_with("  RX")).count();
    assert!(tx >= 2 && rx >= 1, "interval and summary lines per direction: {out}");
    assert!(out.contains("sender  TX") && out.contains("receiver  RX"), "{out}");
    assert!(out.contains("sender (server to client):"), "{out}");
}

#[test]
fn bidir_omits_the_first_seconds_in_both_directions() {
    // A counted second, not half of one: a loaded machine may stall a transfer for a while. A
    // whole omitted second: the sending half flushes what it buffered while the other half
    // takes its share of the cores.
    let done = perf_self(&["--bidir", "-t", "1", "-O", "1", "-i", "0.25", "--json"]);
    let report: Value = serde_json::from_str(text(&done.stdout).trim()).unwrap();
    assert_eq!(report["start"]["omit_s"], 1.0);
    common::assert_counts_after_omitted(&report, common::End::Sender);
    common::assert_counts_after_omitted(&report["bidir_reverse"], common::End::Receiver);
}

#[test]
fn reverse_omits_the_first_seconds() {
    let done = perf_self(&["-R", "-t", "1", "-O", "0.5", "-i", "0.25", "--json"]);
    let report: Value = serde_json::from_str(text(&done.stdout).trim()).unwrap();
    assert_eq!(
        (report["start"]["reverse"].clone(), report["start"]["omit_s"].clone()),
        (true.into(), 0.5.into())
    );
    common::assert_counts_after_omitted(&report, common::End::Receiver);
}

#[test]
fn bidir_refuses_reverse_and_a_number_of_bytes() {
    for extra in [&["-R"][..], &["-n", "1M"]] {
        let done = udt().args(["perf", "--self", "--bidir"]).args(extra).output().unwrap();
        assert_eq!(done.status.code(), Some(2), "{extra:?}: {}", text(&done.stderr));
        assert!(text(&done.stderr).contains("--bidir"), "{}", text(&done.stderr));
    }
}
