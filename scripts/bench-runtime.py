#!/usr/bin/env python3
"""The runtime's scaling targets (issue 21), one command, one table row per target.

  (a) many_connections: 10,000 connections (--quick: 1,000) to one listener port, all opened
      from one client port, each sending a 64-byte message every second for about 20 s
      (udt/examples/many_connections): all served (every message intact and in order, at the
      latest 30 s after the window), kept up (99% of messages read within the 1 s interval),
      listener resident memory under 1 GB and under 100 kB a connection.
  (b) `udt perf client -P 1`, then `-P 1000` (--quick: -P 100), 5 s each, against a `udt perf
      server` on one port: aggregate at least 80% of the single flow's, Jain's index over the
      streams' bytes (the client's JSON summary: bytes each stream had acknowledged) at least
      0.9, server peak resident size (GNU time's "Maximum resident set size") under 512 MB.
  (c) 2 I/O threads: `udt perf server --io-threads 2` with -P 2 reaches 1.6 times
      `--io-threads 1` with -P 1 (skipped with a `udt` that has no --io-threads option).
  (d) paced at 100 Mb/s and 1 Gb/s (`udt perf client -b`; UDT4 with UDT_MAXBW through
      interop/build/udt4_perf --maxbw), 10 s each (--quick: 5 s), ours and UDT4 interleaved:
      CPU seconds per GB delivered, sender and receiver, at most UDT4's (skipped without
      libudt).
  (e) `udt perf --self -t 5`: single-flow Gb/s, reported.

Servers and clients are separate processes on 127.0.0.1 (free ports), except (e). It builds
what it needs first (cargo release builds of udt-cli and the example, `make -C interop` when
/usr/include/udt/udt.h exists). Progress goes to stderr; the table to stdout, or with --json
the raw results to stdout and the table to stderr. The machine is shared: expect noise.

Usage: scripts/bench-runtime.py [--quick] [--json] [--rounds N]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from benchlib import ROOT, TARGET, UDT, UDT4_PERF, finish, run_udt, run_udt4

EXAMPLE = os.path.join(TARGET, "release", "examples", "many_connections")
UDT4_HEADER = "/usr/include/udt/udt.h"
GB, MB, KB = 1e9, 1e6, 1e3


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def build():
    """Build udt-cli, the example and (with libudt) the UDT4 peers; None or why UDT4 is skipped."""
    cargo = ["cargo", "build", "--release", "-q"]
    subprocess.run(cargo + ["-p", "udt-cli"], cwd=ROOT, check=True)
    subprocess.run(cargo + ["-p", "udt-net", "--features", "tokio", "--example", "many_connections"], cwd=ROOT, check=True)
    if not os.path.exists(UDT4_HEADER):
        return f"{UDT4_HEADER} missing (libudt-dev not installed; interop/setup.sh installs it)"
    made = subprocess.run(["make", "-C", "interop"], cwd=ROOT, stdout=sys.stderr, stderr=sys.stderr)
    if made.returncode != 0 or not os.path.exists(UDT4_PERF):
        return "make -C interop failed"
    return None


def jain(xs):
    """Jain's fairness index of xs (1: all equal, 1/n: one takes all)."""
    squares = sum(x * x for x in xs)
    return sum(xs) ** 2 / (len(xs) * squares) if squares else 0.0


def row(target, figure, goal, met, note=""):
    return {"target": target, "figure": figure, "goal": goal, "met": met, "note": note}


def many_connections(n, secs):
    """(a): the many_connections example, parsed from its JSON line."""
    log(f"(a) many_connections: {n} connections, a message a second, {secs} s")
    cmd = [EXAMPLE, "--connections", str(n), "--seconds", str(secs), "--interval", "1", "--json"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Connecting runs at a few thousand a second; the example bounds its own waits too.
    r = json.loads(finish(p, secs + n / 100 + 240))
    per_conn = r["server_bytes_per_connection"] or 0
    peak = r["server_rss_peak_bytes"] or 0
    rows = [
        row(
            f"{n:,} connections, one port, a message a second: all served",
            f"{r['accepted']:,.0f}/{n:,} accepted, {r['messages_received']:,.0f}/{r['messages_expected']:,} messages, "
            f"{r['starved']:.0f} starved",
            "all",
            bool(r["all_served"]),
            f"{r['seconds']:.0f} s window; "
            f"{r['client_retransmits']:,} retransmissions; kernel UDP drops listener {r['server_udp_drops']:,.0f}, "
            f"client {r['client_udp_drops']:,.0f}",
        ),
        row(
            f"{n:,} connections: kept up (delivered within the 1 s interval)",
            f"p99 {r['latency_p99_ms']:,.1f} ms, {r['late_over_1s']:,.0f} messages later than 1 s",
            "p99 < 1 s",
            r["latency_p99_ms"] < 1000,
            f"max {r['latency_max_ms']:,.0f} ms; latency from write to read, message 0 (sent before accept) apart",
        ),
        row(
            f"{n:,} connections: listener resident memory",
            f"peak {peak / MB:.0f} MB, {per_conn / KB:.1f} kB a connection",
            "< 1 GB, < 100 kB a connection",
            peak < 1 * GB and per_conn < 100 * KB,
            f"CPU over the window: listener {r['server_cpu_s']} s, client {r['client_cpu_s']} s",
        ),
    ]
    return rows, r


def perf_summary(run):
    """The client's summary with per-stream bytes only, and the server's totals."""
    client = {k: v for k, v in run.client["summary"].items() if k != "streams"}
    client["stream_bytes"] = [s["bytes"] for s in run.client["summary"]["streams"]]
    server = {k: v for k, v in run.server["summary"].items() if k != "streams"}
    return {
        "client": client,
        "server": server,
        "server_peak_rss_bytes": run.rss_recv,
        "client_peak_rss_bytes": run.rss_send,
        "server_cpu_s": run.cpu_recv,
        "client_cpu_s": run.cpu_send,
    }


def many_flows(udt, secs, parallel, tmp):
    """(b): -P 1 then -P parallel through one server port."""
    runs = {}
    for p in (1, parallel):
        log(f"(b) udt perf client -P {p}, {secs} s")
        runs[f"P{p}"] = perf_summary(run_udt(udt, secs, tmp, parallel=p))
    one, many = runs["P1"]["client"], runs[f"P{parallel}"]["client"]
    ratio = many["gbps"] / one["gbps"] if one["gbps"] else 0.0
    streams = many["stream_bytes"]
    fairness = jain(streams)
    starved = sum(1 for b in streams if b == 0)
    rss = runs[f"P{parallel}"]["server_peak_rss_bytes"]
    errors = len(many["errors"])
    rows = [
        row(
            f"-P {parallel} aggregate vs -P 1",
            f"{many['gbps']:.2f} vs {one['gbps']:.2f} Gb/s = {ratio:.0%}",
            ">= 80%",
            ratio >= 0.8,
            f"{errors} stream errors" if errors else "",
        ),
        row(
            f"-P {parallel} fairness (Jain over per-stream bytes, client summary)",
            f"{fairness:.3f}, {starved} streams with no byte, min/max stream {min(streams) / MB:.1f}/"
            f"{max(streams) / MB:.1f} MB",
            ">= 0.9, none starved",
            fairness >= 0.9 and starved == 0 and len(streams) == parallel,
            "" if len(streams) == parallel else f"only {len(streams)} streams reported",
        ),
        row(f"-P {parallel} server peak resident size", f"{rss / MB:.0f} MB", "< 512 MB", rss < 512 * MB),
    ]
    return rows, runs


def io_threads(udt, secs, tmp):
    """(c): 2 I/O threads with -P 2 against 1 I/O thread with -P 1 (needs --io-threads)."""
    target = "2 I/O threads, -P 2 vs 1 I/O thread, -P 1"
    helptext = subprocess.run([udt, "perf", "server", "--help"], capture_output=True, text=True, timeout=30).stdout
    if "--io-threads" not in helptext:
        log("(c) not available: no --io-threads option")
        return [row(target, "not available: no --io-threads option", ">= 1.6x", None)], None
    runs = {}
    for threads, p in ((1, 1), (2, 2)):
        log(f"(c) udt perf server --io-threads {threads}, client -P {p}, {secs} s")
        run = run_udt(udt, secs, tmp, parallel=p, server_args=("--io-threads", str(threads)))
        runs[f"io_threads_{threads}"] = perf_summary(run)
    one, two = runs["io_threads_1"]["client"]["gbps"], runs["io_threads_2"]["client"]["gbps"]
    ratio = two / one if one else 0.0
    return [row(target, f"{two:.2f} vs {one:.2f} Gb/s = {ratio:.2f}x", ">= 1.6x", ratio >= 1.6)], runs


RATES = [("100 Mb/s", "100mbit", 100_000_000 // 8), ("1 Gb/s", "1gbit", 1_000_000_000 // 8)]


def paced(udt, secs, rounds, tmp, skip):
    """(d): CPU s/GB of ours and UDT4 at each rate, interleaved, median over rounds."""
    if skip:
        log(f"(d) skipped: {skip}")
        return [row(f"paced {r[0]}: CPU s/GB vs UDT4", f"skipped: {skip}", "<= UDT4", None) for r in RATES], None
    rows, raw = [], {}
    for label, rate, maxbw in RATES:
        got = {"udt": [], "udt4": []}
        for r in range(rounds):
            log(f"(d) paced {label}, round {r + 1}: udt, then UDT4, {secs} s each")
            for name, run in (
                ("udt", lambda: run_udt(udt, secs, tmp, bandwidth=rate)),
                ("udt4", lambda: run_udt4(UDT4_PERF, secs, tmp, maxbw=maxbw)),
            ):
                x = run()
                send, recv = x.cpu_per_gb()
                got[name].append({"gbps": x.gbps(), "send_cpu_s_per_gb": send, "recv_cpu_s_per_gb": recv})
        med = {n: {k: statistics.median(v[k] for v in runs) for k in runs[0]} for n, runs in got.items()}
        raw[label] = {"median": med, "runs": got}
        ours, ref = med["udt"], med["udt4"]
        for side, key in (("sender", "send_cpu_s_per_gb"), ("receiver", "recv_cpu_s_per_gb")):
            rows.append(
                row(
                    f"paced {label}: {side} CPU s/GB vs UDT4",
                    f"{ours[key]:.2f} vs {ref[key]:.2f} ({ours[key] / ref[key]:.2f}x)",
                    "<= UDT4",
                    ours[key] <= ref[key],
                    f"rates {ours['gbps']:.3f} / {ref['gbps']:.3f} Gb/s",
                )
            )
    return rows, raw


def self_test(udt, secs):
    """(e): `udt perf --self`."""
    log(f"(e) udt perf --self -t {secs}")
    cmd = [udt, "perf", "--self", "-t", str(secs), "--json", "--insecure"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    summary = json.loads(finish(p, secs + 120))["summary"]
    summary.pop("streams", None)
    return [row("udt perf --self, single flow", f"{summary['gbps']:.2f} Gb/s", "reported", None)], summary


def table(rows):
    met = {True: "met", False: "NOT MET", None: "-"}
    lines = ["| target | measured | goal | met | note |", "| --- | --- | --- | --- | --- |"]
    lines += [f"| {r['target']} | {r['figure']} | {r['goal']} | {met[r['met']]} | {r['note']} |" for r in rows]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="1,000 connections, -P 100, 5 s paced tests")
    ap.add_argument("--json", action="store_true", help="raw results as JSON on stdout (the table on stderr)")
    ap.add_argument("--rounds", type=int, default=1, help="interleaved rounds of the paced tests (default 1)")
    a = ap.parse_args()
    if not 1 <= a.rounds <= 10:
        sys.exit("bench-runtime: --rounds must be in 1..10")

    skip_udt4 = build()
    n, parallel, paced_secs = (1_000, 100, 5) if a.quick else (10_000, 1000, 10)
    load = [os.getloadavg()[0]]
    rows, raw = [], {"quick": a.quick, "cores": os.cpu_count()}
    with tempfile.TemporaryDirectory() as tmp:
        for key, step in (
            ("many_connections", lambda: many_connections(n, 20)),
            ("many_flows", lambda: many_flows(UDT, 5, parallel, tmp)),
            ("io_threads", lambda: io_threads(UDT, 5, tmp)),
            ("paced", lambda: paced(UDT, paced_secs, a.rounds, tmp, skip_udt4)),
            ("self", lambda: self_test(UDT, 5)),
        ):
            try:
                got, raw[key] = step()
            except (RuntimeError, ValueError, KeyError, TypeError, subprocess.SubprocessError) as e:
                log(f"{key} failed: {e}")
                got, raw[key] = [row(key, f"failed: {str(e).splitlines()[0]}", "", False)], {"error": str(e)}
            rows += got
            load.append(os.getloadavg()[0])
    raw["rows"] = rows
    raw["load_average_1min"] = load
    text = table(rows)
    if a.json:
        log(text)
        print(json.dumps(raw, indent=1))
    else:
        print(text)
        print(f"\nload average (1 min) before and after each step: {', '.join(f'{x:.1f}' for x in load)}")


if __name__ == "__main__":
    main()
