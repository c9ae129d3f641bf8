#!/usr/bin/env python3
"""Loopback benchmark, one run, four systems side by side (issue: runtime benchmarks).

Memory-to-memory, single flow, MSS 1500, 127.0.0.1 only:
  udt      our `udt perf server` / `udt perf client`          (release build)
  udt4     the reference UDT4 4.11 through interop/build/udt4_perf
  tcp      kernel TCP, iperf3 (default congestion control)
  udp      raw UDP, iperf3 -u -b 0 -l 1472 (a per-datagram ceiling, no reliability)

Each round runs the four in turn (interleaved, so drift on a shared machine hits all alike);
each figure is the median over rounds. Every server and client is a separate process timed by
/usr/bin/time, so CPU seconds are the kernel's own accounting of each side (user + system).
"CPU s/GB" is that side's CPU time per 10^9 payload bytes delivered.

Usage: scripts/bench-loopback.py [--time SECS] [--rounds N] [--json]
Needs: cargo (builds udt-cli in release), interop/setup.sh done, iperf3, GNU time.
"""

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def timed(cmd, tmpdir, name):
    """Start cmd under GNU time; returns (Popen, path of the time report)."""
    report = os.path.join(tmpdir, name + ".time")
    p = subprocess.Popen(
        ["/usr/bin/time", "-f", "%e %U %S", "-o", report] + cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return p, report


def cpu_of(report):
    with open(report) as f:
        wall, user, sys_ = f.read().split()[-3:]
    return float(user) + float(sys_)


def finish(p, timeout):
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        raise RuntimeError(f"timed out: {p.args}\n{err}")
    if p.returncode != 0:
        raise RuntimeError(f"exit {p.returncode}: {' '.join(p.args)}\n{err}")
    return out


def run_udt(udt, secs, tmp):
    port = free_port()
    srv, srv_t = timed([udt, "perf", "server", "-1", "--json", "-l", f"127.0.0.1:{port}"], tmp, "udt-srv")
    time.sleep(0.3)
    cli, cli_t = timed([udt, "perf", "client", f"127.0.0.1:{port}", "-t", str(secs), "--json"], tmp, "udt-cli")
    out = finish(cli, secs + 60)
    finish(srv, 60)
    summary = json.loads(out)["summary"]
    nbytes = summary["bytes"]
    return nbytes, summary["seconds"], cpu_of(cli_t), cpu_of(srv_t)


def run_udt4(peer, secs, tmp):
    srv, srv_t = timed([peer, "--listen", "0"], tmp, "udt4-srv")
    line = srv.stdout.readline()
    port = int(line.split()[1])
    cli, cli_t = timed([peer, "--connect", f"127.0.0.1:{port}", "--secs", str(secs)], tmp, "udt4-cli")
    cli_out = finish(cli, secs + 60)
    srv_out = finish(srv, 60)
    done = dict(kv.split("=") for kv in re.search(r"DONE (.*)", srv_out).group(1).split())
    sent = dict(kv.split("=") for kv in re.search(r"DONE (.*)", cli_out).group(1).split())
    return int(done["bytes"]), float(sent["secs"]), cpu_of(cli_t), cpu_of(srv_t)


def run_iperf(secs, tmp, udp):
    port = free_port()
    srv, srv_t = timed(["iperf3", "-s", "-1", "-p", str(port)], tmp, "ip-srv")
    time.sleep(0.3)
    extra = ["-u", "-b", "0", "-l", "1472"] if udp else []
    cli, cli_t = timed(["iperf3", "-c", "127.0.0.1", "-p", str(port), "-t", str(secs), "-J"] + extra, tmp, "ip-cli")
    out = json.loads(finish(cli, secs + 60))
    finish(srv, 60)
    end = out["end"]
    if udp:
        s = end["sum"]
        delivered = s["bytes"] * (1 - s["lost_percent"] / 100.0)
        return delivered, s["seconds"], cpu_of(cli_t), cpu_of(srv_t)
    s = end["sum_received"]
    return s["bytes"], s["seconds"], cpu_of(cli_t), cpu_of(srv_t)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--time", type=float, default=5.0, help="seconds per test (default 5)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    a = ap.parse_args()

    subprocess.run(["cargo", "build", "--release", "-q", "-p", "udt-cli"], cwd=ROOT, check=True)
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    udt = os.path.join(target, "release", "udt")
    peer = os.path.join(ROOT, "interop", "build", "udt4_perf")
    for path, hint in [(udt, "cargo build"), (peer, "interop/setup.sh")]:
        if not os.path.exists(path):
            sys.exit(f"bench-loopback: {path} missing ({hint})")

    systems = {
        "udt (ours)": lambda tmp: run_udt(udt, a.time, tmp),
        "UDT4 4.11": lambda tmp: run_udt4(peer, a.time, tmp),
        "kernel TCP": lambda tmp: run_iperf(a.time, tmp, False),
        "raw UDP 1472": lambda tmp: run_iperf(a.time, tmp, True),
    }
    results = {k: [] for k in systems}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            for name, run in systems.items():
                nbytes, secs, cpu_send, cpu_recv = run(tmp)
                gb = nbytes / 1e9
                results[name].append(
                    {"gbps": nbytes * 8 / secs / 1e9, "send_cpu_s_per_gb": cpu_send / gb, "recv_cpu_s_per_gb": cpu_recv / gb}
                )
                print(f"round {r + 1}: {name}: {nbytes * 8 / secs / 1e9:.2f} Gb/s", file=sys.stderr)

    med = {
        name: {k: statistics.median(x[k] for x in runs) for k in runs[0]} for name, runs in results.items()
    }
    ref = med["UDT4 4.11"]
    if a.json:
        print(json.dumps({"seconds": a.time, "rounds": a.rounds, "median": med, "runs": results}, indent=2))
        return
    print(f"loopback, single flow, MSS 1500, {a.time:g} s per test, median of {a.rounds} interleaved rounds")
    print("| system | Gb/s | x UDT4 | sender CPU s/GB | receiver CPU s/GB | sender CPU x UDT4 |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, m in med.items():
        print(
            f"| {name} | {m['gbps']:.2f} | {m['gbps'] / ref['gbps']:.2f} | {m['send_cpu_s_per_gb']:.2f} "
            f"| {m['recv_cpu_s_per_gb']:.2f} | {m['send_cpu_s_per_gb'] / ref['send_cpu_s_per_gb']:.2f} |"
        )


if __name__ == "__main__":
    main()
