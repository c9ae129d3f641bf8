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
import statistics
import subprocess
import sys
import tempfile

from benchlib import ROOT, UDT, UDT4_PERF, run_iperf, run_udt, run_udt4


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--time", type=float, default=5.0, help="seconds per test (default 5)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    a = ap.parse_args()

    subprocess.run(["cargo", "build", "--release", "-q", "-p", "udt-cli"], cwd=ROOT, check=True)
    udt, peer = UDT, UDT4_PERF
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
                run_ = run(tmp)
                send, recv = run_.cpu_per_gb()
                results[name].append({"gbps": run_.gbps(), "send_cpu_s_per_gb": send, "recv_cpu_s_per_gb": recv})
                print(f"round {r + 1}: {name}: {run_.gbps():.2f} Gb/s", file=sys.stderr)

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
