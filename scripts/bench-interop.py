#!/usr/bin/env python3
"""Interoperability benchmark: our sender and receiver against the reference UDT4 4.11, one run.

Each row moves the same number of bytes from a fresh connection to a closed one (time from the
sender's start to its exit, which UDT4's linger and ours hold until everything is
acknowledged), in each direction that matters to a user:
  ours -> libudt     `udt cat --insecure` into interop/build/udt4_stream_server
                     (default controller, then --cc daimd: the thesis' algorithm, UDT4's own)
  libudt -> libudt   udt4_stream_client into udt4_stream_server
  libudt -> ours     udt4_stream_client into `udt cat --listen --insecure`
  ours -> ours       `udt cat` into `udt cat --listen` (plain, as the others)
on loopback and through the WAN emulator (`udt netem`, two network namespaces; root). Every
receiver's byte count is checked: a short transfer is reported, never timed.

Rounds alternate the rows (drift on a shared machine hits all alike); figures are medians.

Usage: scripts/bench-interop.py [--rounds N] [--paths loopback,100mbit-100ms,...] [--json]
Needs: cargo (builds udt-cli in release), interop/setup.sh done; root for the emulated paths.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UDT = os.path.join(ROOT, "target", "release", "udt")
SERVER = os.path.join(ROOT, "interop", "build", "udt4_stream_server")
CLIENT = os.path.join(ROOT, "interop", "build", "udt4_stream_client")
NS_A, NS_B = "udtIA", "udtIB"
ADDR_A, ADDR_B = "10.214.0.1", "10.214.0.2"
PORT = 9471

# name: (emulator arguments or None for loopback, bytes moved)
PATHS = {
    "loopback": (None, 200_000_000),
    # Queue one BDP each: 100 Mb/s x 100 ms = 833 packets; 200 Mb/s x 30 ms = 500.
    "100mbit-100ms": (["--rate", "100mbit", "--delay", "50ms", "--delay-back", "50ms", "--queue", "833p"], 50_000_000),
    "200mbit-30ms-0.1%": (
        ["--rate", "200mbit", "--delay", "15ms", "--delay-back", "15ms", "--queue", "500p",
         "--loss", "0.1%", "--loss-back", "0.1%"],
        50_000_000,
    ),
}

ROWS = [
    ("ours (default) -> libudt", "ours", "libudt", None),
    ("ours (daimd) -> libudt", "ours", "libudt", "daimd"),
    ("libudt -> libudt", "libudt", "libudt", None),
    ("libudt -> ours", "libudt", "ours", None),
    ("ours (default) -> ours", "ours", "ours", None),
]


def in_ns(ns, argv):
    return ["ip", "netns", "exec", ns] + argv if ns else argv


def start_emulator(args):
    """Start `udt netem` between two fresh namespaces; returns the process once both ends have
    their addresses."""
    cmd = [UDT, "netem", "--ns-a", NS_A, "--ns-b", NS_B, "--addr-a", ADDR_A, "--addr-b", ADDR_B,
           "--quiet"] + args
    emu = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for _ in range(100):
        if emu.poll() is not None:
            sys.exit(f"bench-interop: udt netem exited: {emu.stderr.read()}")
        shown = [subprocess.run(in_ns(ns, ["ip", "-4", "addr"]), capture_output=True, text=True).stdout
                 for ns in (NS_A, NS_B)]
        if ADDR_A in shown[0] and ADDR_B in shown[1]:
            time.sleep(0.5)
            return emu
        time.sleep(0.2)
    emu.terminate()
    sys.exit("bench-interop: the emulated path never came up")


def one(row, path, data, size, tmp, port):
    """Run one transfer; returns seconds, or a string saying why there is none."""
    _, sender, receiver, cc = row
    emulated = PATHS[path][0] is not None
    ns_a, ns_b = (NS_A, NS_B) if emulated else (None, None)
    addr = ADDR_B if emulated else "127.0.0.1"
    out = os.path.join(tmp, "received")
    if receiver == "libudt":
        rx = subprocess.Popen(in_ns(ns_b, [SERVER, "--port", str(port), "--bind", addr, "--timeout", "60"]),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        ready = rx.stdout.readline()
        if not ready.startswith("READY"):
            rx.kill()
            return f"udt4_stream_server: {ready.strip() or rx.stderr.read().strip()}"
    else:
        rx = subprocess.Popen(in_ns(ns_b, [UDT, "cat", "--listen", f"{addr}:{port}", "--insecure", "-q"]),
                              stdout=open(out, "wb"), stderr=subprocess.PIPE)
        time.sleep(0.3)
    if sender == "libudt":
        tx_cmd = [CLIENT, "--connect", f"{addr}:{port}", "--bytes", str(size), "--timeout", "60"]
        stdin = subprocess.DEVNULL
    else:
        tx_cmd = [UDT, "cat", "--insecure", "-q", f"{addr}:{port}"] + (["--cc", cc] if cc else [])
        stdin = open(data, "rb")
    start = time.monotonic()
    tx = subprocess.run(in_ns(ns_a, tx_cmd), stdin=stdin, stdout=subprocess.DEVNULL,
                        stderr=subprocess.PIPE, text=True, timeout=180)
    secs = time.monotonic() - start
    try:
        rx_out, rx_err = rx.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        rx.kill()
        rx_out, rx_err = rx.communicate()
    if tx.returncode != 0:
        return f"sender exit {tx.returncode}: {tx.stderr.strip()[-200:]}"
    got = None
    if receiver == "libudt":
        for line in (rx_out or "").splitlines():
            if line.startswith("DONE"):
                got = int(dict(kv.split("=", 1) for kv in line.split()[1:])["bytes"])
    else:
        got = os.path.getsize(out)
    if got != size:
        return f"SHORT: the receiver got {got} of {size} bytes"
    return secs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3, help="alternated rounds (default 3)")
    ap.add_argument("--paths", default=",".join(PATHS), help="comma-separated: " + ", ".join(PATHS))
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    a = ap.parse_args()
    paths = [p for p in a.paths.split(",") if p]
    for p in paths:
        if p not in PATHS:
            sys.exit(f"bench-interop: unknown path {p!r} (use {', '.join(PATHS)})")
    if any(PATHS[p][0] for p in paths) and os.geteuid() != 0:
        sys.exit("bench-interop: the emulated paths need root (or give --paths loopback)")
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "udt-cli"], cwd=ROOT, check=True)
    for path, hint in [(UDT, "cargo build"), (SERVER, "interop/setup.sh"), (CLIENT, "interop/setup.sh")]:
        if not os.path.exists(path):
            sys.exit(f"bench-interop: {path} missing ({hint})")

    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for path in paths:
            emu_args, size = PATHS[path]
            data = os.path.join(tmp, f"data-{size}")
            if not os.path.exists(data):
                with open(data, "wb") as f:
                    f.write(os.urandom(size))
            emu = start_emulator(emu_args) if emu_args else None
            try:
                port = PORT
                for r in range(a.rounds):
                    for row in ROWS:
                        port += 1
                        got = one(row, path, data, size, tmp, port)
                        results.setdefault(path, {}).setdefault(row[0], []).append(got)
                        shown = f"{got:.2f} s" if isinstance(got, float) else got
                        print(f"{path} round {r + 1}: {row[0]}: {shown}", file=sys.stderr)
            finally:
                if emu:
                    emu.terminate()
                    emu.wait(timeout=30)

    summary = {}
    for path, rows in results.items():
        size = PATHS[path][1]
        for name, runs in rows.items():
            times = [x for x in runs if isinstance(x, float)]
            failures = [x for x in runs if not isinstance(x, float)]
            med = statistics.median(times) if times else None
            summary.setdefault(path, {})[name] = {
                "bytes": size,
                "seconds": runs,
                "median_s": med,
                "median_mbps": size * 8 / med / 1e6 if med else None,
                "failures": failures,
            }
    if a.json:
        print(json.dumps(summary, indent=2))
        return
    print(f"| sender -> receiver | " + " | ".join(f"{p} ({PATHS[p][1] // 1_000_000} MB)" for p in paths) + " |")
    print("| --- |" + " --- |" * len(paths))
    for row in ROWS:
        cells = []
        for p in paths:
            s = summary[p][row[0]]
            if s["median_s"] is None:
                cells.append("failed: " + "; ".join(s["failures"])[:80])
            else:
                extra = f" ({len(s['failures'])} failed)" if s["failures"] else ""
                cells.append(f"{s['median_s']:.2f} s, {s['median_mbps']:.0f} Mb/s{extra}")
        print(f"| {row[0]} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
