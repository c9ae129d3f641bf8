#!/usr/bin/env python3
"""The cost of a byte over a veth pair: kernel TCP beside `udt perf`, plain and secured.

Two network namespaces joined by a veth pair at MTU 1500 (what a NIC path looks like to both
stacks: a TCP send leaves as one TSO segment, a UDP GSO send as one GSO packet, each reaching
the far socket whole, TCP's as one receive, UDP's as one GRO receive), created for the run and
removed after it.
One flow, memory to memory, the server (receiver) in one namespace and the client (sender) in
the other:
  kernel TCP        iperf3 (the kernel's default congestion control)
  udt plain         `udt perf` --insecure
  udt secured       `udt perf` --key-file (AES-256-GCM on every datagram)
and with --paced RATES, each rate (default 100mbit,1gbit) for
  udt plain @RATE   `udt perf client -b RATE`
  UDT4 @RATE        UDT4 4.11 through interop/build/udt4_perf --maxbw (skipped without it)

Each round runs every configuration once (interleaved, so drift on the shared machine hits all
alike); each figure is the median over rounds. Every server and client is a separate process
timed by GNU time inside its namespace, so its CPU seconds (user + system; softirq work done
in its context included) are the kernel's own accounting. "s/GB" is CPU seconds per 10^9
payload bytes delivered; "both" adds the two ends, the measure of what a rate costs. The
kernel's softirq threads (ksoftirqd, work no process is charged for) are reported apart.

Usage: scripts/bench-veth.py [--time SECS] [--rounds N] [--paced [RATES]] [--only NAMES] [--cc NAMES]
                             [--json FILE] [--perf DIR]
With --perf DIR, it profiles `udt perf`'s configurations instead, both ends under
`perf record -g`; `perf report -i DIR/udt-plain-client.data --no-children` reads a profile.
Needs: root (ip netns), iperf3, GNU time; cargo builds udt-cli in release. Run it under
`flock /work/wt/bench.lock` on a shared machine.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from benchlib import ROOT, UDT, UDT4_PERF, Place, run_iperf, run_udt, run_udt4

# Names with this benchmark's own prefix, so they never collide with another run's.
NS_SERVER, NS_CLIENT = "vcost-srv", "vcost-cli"
IF_SERVER, IF_CLIENT = "vcost-s", "vcost-c"
ADDR_SERVER, ADDR_CLIENT = "10.238.38.1", "10.238.38.2"


def rate_bits(rate):
    """Bits per second of a rate written as udt's -b takes it (`100mbit`, `1gbit`, `500m`)."""
    r = rate.lower().removesuffix("bps").removesuffix("bit").removesuffix("b")
    scale = {"k": 1e3, "m": 1e6, "g": 1e9}
    return float(r[:-1]) * scale[r[-1]] if r[-1] in scale else float(r)


def sh(*cmd, check=True):
    return subprocess.run(list(cmd), check=check, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def veth_up(mtu):
    """Create the two namespaces and the veth pair between them (removing a stale pair first)."""
    veth_down()
    sh("ip", "netns", "add", NS_SERVER)
    sh("ip", "netns", "add", NS_CLIENT)
    sh("ip", "link", "add", IF_SERVER, "netns", NS_SERVER, "type", "veth", "peer", "name", IF_CLIENT, "netns", NS_CLIENT)
    for ns, ifc, addr in [(NS_SERVER, IF_SERVER, ADDR_SERVER), (NS_CLIENT, IF_CLIENT, ADDR_CLIENT)]:
        ex = ["ip", "netns", "exec", ns]
        sh(*ex, "ip", "link", "set", "lo", "up")
        sh(*ex, "ip", "link", "set", ifc, "mtu", str(mtu), "up")
        sh(*ex, "ip", "addr", "add", f"{addr}/24", "dev", ifc)


def veth_down():
    for ns in (NS_SERVER, NS_CLIENT):
        sh("ip", "netns", "del", ns, check=False)


def ksoftirqd_seconds():
    """CPU seconds all ksoftirqd threads have used so far (utime + stime, /proc/PID/stat)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        if name.startswith("ksoftirqd/"):
            fields = stat[stat.rindex(")") + 2 :].split()
            total += int(fields[11]) + int(fields[12])
    return total / tick


def profiled(place, name, directory):
    """`place` with both sides run under `perf record -g`, into DIR/NAME-server.data and
    DIR/NAME-client.data (perf follows the namespaced command's children)."""
    slug = "".join(c if c.isalnum() else "-" for c in name.lower())

    def rec(side):
        return ["perf", "record", "-g", "-q", "-o", os.path.join(directory, f"{slug}-{side}.data"), "--"]

    return Place(place.host, rec("server") + place.server_prefix, rec("client") + place.client_prefix)


def configurations(a, key_file, place):
    """name -> function(tmp) returning a benchlib.Run. With --perf, only `udt perf`'s, each
    side under `perf record`."""
    t = a.time
    if a.perf:
        os.makedirs(a.perf, exist_ok=True)

    def at(name):
        return profiled(place, name, a.perf) if a.perf else place

    runs = {}
    if not a.perf:
        runs["kernel TCP"] = lambda tmp: run_iperf(t, tmp, False, place=place)
    for rate in [None] + (a.paced or []):
        tag = f" @{rate}" if rate else ""
        for cc in [None] + (a.cc.split(",") if a.cc else []):
            with_cc = f" --cc {cc}" if cc else ""
            for name, key in [("udt plain", None), ("udt secured", key_file)]:
                label = name + with_cc + tag
                runs[label] = lambda tmp, p=at(label), k=key, r=rate, c=cc: run_udt(
                    UDT, t, tmp, bandwidth=r, place=p, key_file=k, client_args=["--cc", c] if c else []
                )
        if rate and os.path.exists(UDT4_PERF) and not a.perf:
            maxbw = int(rate_bits(rate) / 8)
            runs[f"UDT4{tag}"] = lambda tmp, m=maxbw: run_udt4(UDT4_PERF, t, tmp, maxbw=m, place=place)
    if a.only:
        wanted = set(a.only.split(","))
        runs = {k: v for k, v in runs.items() if k in wanted}
    return runs


def table(med, a):
    lines = [
        f"veth pair between two namespaces, MTU {a.mtu}, one flow, {a.time:g} s per test, "
        f"median of {a.rounds} interleaved rounds; CPU s/GB = user + system seconds per 10^9 "
        "payload bytes",
        "| configuration | Gb/s | x TCP | sender s/GB | receiver s/GB | both s/GB | both x TCP "
        "| ksoftirqd s/GB |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    tcp = med.get("kernel TCP")
    for name, m in med.items():
        x_rate = f"{m['gbps'] / tcp['gbps']:.2f}" if tcp else "-"
        x_cpu = f"{m['both_cpu_s_per_gb'] / tcp['both_cpu_s_per_gb']:.2f}" if tcp else "-"
        lines.append(
            f"| {name} | {m['gbps']:.2f} | {x_rate} | {m['send_cpu_s_per_gb']:.2f} "
            f"| {m['recv_cpu_s_per_gb']:.2f} | {m['both_cpu_s_per_gb']:.2f} | {x_cpu} "
            f"| {m['ksoftirqd_s_per_gb']:.2f} |"
        )
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--time", type=float, default=8.0, help="seconds per test (default 8)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    ap.add_argument("--mtu", type=int, default=1500, help="veth MTU (default 1500)")
    ap.add_argument(
        "--paced",
        nargs="?",
        const="100mbit,1gbit",
        type=lambda s: s.split(","),
        help="also paced runs at these rates (default 100mbit,1gbit), ours and UDT4's",
    )
    ap.add_argument("--only", help="comma-separated configuration names to run")
    ap.add_argument(
        "--cc",
        help="comma-separated congestion controls (`udt cc list`) to run `udt perf` with too, beside the default",
    )
    ap.add_argument(
        "--perf",
        metavar="DIR",
        help="profile `udt perf`'s configurations (kernel TCP and UDT4 left out), both ends under "
        "`perf record -g` (Debian's linux-perf), into DIR/udt-plain-server.data and so on",
    )
    ap.add_argument("--json", metavar="FILE", help="also write the raw results to FILE")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench-veth: needs root (ip netns)")
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "udt-cli"], cwd=ROOT, check=True)
    if not os.path.exists(UDT):
        sys.exit(f"bench-veth: {UDT} missing")

    place = Place(
        host=ADDR_SERVER,
        server_prefix=["ip", "netns", "exec", NS_SERVER],
        client_prefix=["ip", "netns", "exec", NS_CLIENT],
    )
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        key_file = os.path.join(tmp, "key")
        subprocess.run([UDT, "keygen", "-q", key_file], check=True)
        veth_up(a.mtu)
        try:
            runs = configurations(a, key_file, place)
            results = {k: [] for k in runs}
            for r in range(a.rounds):
                for name, run in runs.items():
                    soft = ksoftirqd_seconds()
                    run_ = run(tmp)
                    soft = ksoftirqd_seconds() - soft
                    send, recv = run_.cpu_per_gb()
                    gb = run_.nbytes / 1e9
                    results[name].append(
                        {
                            "gbps": run_.gbps(),
                            "bytes": run_.nbytes,
                            "seconds": run_.secs,
                            "send_cpu_s": run_.cpu_send,
                            "recv_cpu_s": run_.cpu_recv,
                            "send_cpu_s_per_gb": send,
                            "recv_cpu_s_per_gb": recv,
                            "both_cpu_s_per_gb": send + recv,
                            "ksoftirqd_s_per_gb": soft / gb if gb else 0.0,
                        }
                    )
                    print(
                        f"round {r + 1}: {name}: {run_.gbps():.2f} Gb/s, {send + recv:.2f} CPU s/GB",
                        file=sys.stderr,
                        flush=True,
                    )
        finally:
            veth_down()

    keys = ["gbps", "send_cpu_s_per_gb", "recv_cpu_s_per_gb", "both_cpu_s_per_gb", "ksoftirqd_s_per_gb"]
    med = {name: {k: statistics.median(x[k] for x in runs) for k in keys} for name, runs in results.items()}
    print(table(med, a))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(
                {
                    "command": " ".join(["scripts/bench-veth.py"] + sys.argv[1:]),
                    "mtu": a.mtu,
                    "seconds": a.time,
                    "rounds": a.rounds,
                    "cpu": cpu_model(),
                    "median": med,
                    "runs": results,
                },
                f,
                indent=2,
            )
            f.write("\n")


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip() + f" ({os.cpu_count()} CPUs)"
    return ""


if __name__ == "__main__":
    main()
