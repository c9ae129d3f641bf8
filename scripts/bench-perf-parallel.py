#!/usr/bin/env python3
"""`udt perf client -P N` from one client process to one `udt perf server` port over loopback,
for N in 1, 10, 100, 1000, each beside a one-flow run in the same series (-P 1 before every
size), so ratios are to one flow measured minutes apart at most.

Per run: the aggregate (the client's summary: application bytes acknowledged over the time to
the last acknowledgement), its ratio to the mean of the series' one-flow runs, Jain's index and
the spread of the streams' rates (the client's `fairness`), the client's CPU seconds and the
server's peak resident size and CPU seconds (GNU time: the whole processes, connection set-up
included). Plain (no encryption), 5 s a run by default.

    cargo build --release -p udt-cli
    flock /work/wt/bench.lock scripts/bench-perf-parallel.py [--secs 5] [--sizes 1,10,100,1000]
        [--udt PATH] [--json OUT]

`--json OUT` writes every run's row and both ends' reports, their per-interval per-stream
samples dropped (a thousand streams' samples would be megabytes; the sums stay).
"""

import argparse
import json
import sys
import tempfile
import time

import benchlib


def slim(report):
    """`report` without its intervals' per-stream samples."""
    out = dict(report)
    out["intervals"] = [{k: v for k, v in i.items() if k != "streams"} for i in report.get("intervals", [])]
    return out


def row(p, run):
    """The table's figures of one run."""
    summary = run.client["summary"]
    fairness = summary.get("fairness") or {}
    return {
        "parallel": p,
        "gbps": summary["gbps"],
        "jain": fairness.get("jain"),
        "min_mbps": fairness.get("min_bits_per_second", 0) / 1e6 if fairness else None,
        "median_mbps": fairness.get("median_bits_per_second", 0) / 1e6 if fairness else None,
        "max_mbps": fairness.get("max_bits_per_second", 0) / 1e6 if fairness else None,
        "client_cpu_s": run.cpu_send,
        "client_cpu_s_per_gb": run.cpu_send / (run.nbytes / 1e9) if run.nbytes else None,
        "client_rss_mb": run.rss_send / 1e6,
        "server_cpu_s": run.cpu_recv,
        "server_rss_mb": run.rss_recv / 1e6,
        "errors": len(summary["errors"]) + len(run.server["summary"]["errors"]),
    }


def run_udt(a, tmp, parallel):
    """One run of `udt perf`: `a.udt`'s client against `a.server_udt`'s (or `a.udt`'s) server."""
    if not a.server_udt:
        return benchlib.run_udt(a.udt, a.secs, tmp, parallel=parallel)
    port = benchlib.free_port()
    srv_cmd = [a.server_udt, "perf", "server", "-1", "--json", "--insecure", "-l", f"127.0.0.1:{port}"]
    srv, srv_t = benchlib.timed(srv_cmd, tmp, "udt-srv")
    time.sleep(0.3)
    cli_cmd = [a.udt, "perf", "client", f"127.0.0.1:{port}", "-t", str(a.secs), "-P", str(parallel), "--json", "--insecure"]
    cli, cli_t = benchlib.timed(cli_cmd, tmp, "udt-cli")
    try:
        out = benchlib.finish(cli, a.secs + 120)
    finally:
        srv_out = benchlib.finish(srv, 60)
    client, server = json.loads(out), json.loads(srv_out)
    s = client["summary"]
    return benchlib.Run(s["bytes"], s["seconds"], benchlib.time_of(cli_t), benchlib.time_of(srv_t), client, server)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--secs", type=int, default=5)
    ap.add_argument("--sizes", default="1,10,100,1000")
    ap.add_argument("--udt", default=benchlib.UDT)
    ap.add_argument("--server-udt", help="the server's binary, when not --udt's (to compare two builds' servers)")
    ap.add_argument("--json", dest="json_out")
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    rows, raw = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for p in sizes:
            for n in ([1, p] if p != 1 else [1]):
                print(f"-P {n}, {a.secs} s", file=sys.stderr, flush=True)
                run = run_udt(a, tmp, n)
                rows.append(row(n, run))
                raw.append({"row": rows[-1], "client": slim(run.client), "server": slim(run.server)})
    one = [r["gbps"] for r in rows if r["parallel"] == 1]
    one_flow = sum(one) / len(one)
    print(f"one flow: mean {one_flow:.2f} Gb/s over {len(one)} runs ({', '.join(f'{g:.2f}' for g in one)})")
    print("| `-P` | aggregate | of one flow | Jain | per stream min / median / max | client CPU | server RSS |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        jain = "-" if r["jain"] is None else f"{r['jain']:.3f}"
        spread = "-"
        if r["jain"] is not None:
            spread = f"{r['min_mbps']:.1f} / {r['median_mbps']:.1f} / {r['max_mbps']:.1f} Mb/s"
        print(
            f"| {r['parallel']} | {r['gbps']:.2f} Gb/s | {r['gbps'] / one_flow:.0%} | {jain} | {spread} "
            f"| {r['client_cpu_s']:.2f} s ({r['client_cpu_s_per_gb']:.2f} s/GB) | {r['server_rss_mb']:.0f} MB |"
        )
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump({"secs": a.secs, "one_flow_gbps": one_flow, "runs": raw}, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
