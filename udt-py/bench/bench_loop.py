#!/usr/bin/env python3
"""Memory-to-memory throughput of the `udt` package, as a Python program moves data.

    python3 bench_loop.py recv --listen 127.0.0.1:0        # prints READY <port>, then JSON
    python3 bench_loop.py send --connect 127.0.0.1:PORT --secs 5   # prints JSON

The receiver accepts one connection and reads it with `recv_into` into one preallocated
1 MiB buffer until the peer closes. The sender calls `sendall` with one 1 MiB `bytes` object
for `--secs` seconds, then closes (which returns once everything was acknowledged). Both are
plain UDT4 (no key), with the default congestion control and MSS.

Each prints one JSON line: `role`, `bytes`, `seconds`, `mbps` (bytes * 8 / seconds / 1e6).
The sender's seconds run from connected to `close()` returned, as `udt4_perf`'s sender and
`udt perf client` count them; the receiver's from accept to the last byte.
`scripts/bench-bindings.sh` runs the pair against `udt perf` and the C API.
"""

import argparse
import json
import sys
import time

import udt

CHUNK = 1 << 20


def report(role, nbytes, seconds):
    mbps = nbytes * 8 / seconds / 1e6 if seconds > 0 else 0.0
    print(json.dumps({"role": role, "bytes": nbytes, "seconds": seconds, "mbps": mbps}), flush=True)


def receive(listen, timeout):
    with udt.listen(listen) as listener:
        listener.settimeout(timeout)
        print(f"READY {listener.local_addr[1]}", flush=True)
        conn, _peer = listener.accept()
        with conn:
            conn.settimeout(timeout)
            buf = bytearray(CHUNK)
            view = memoryview(buf)
            t0 = time.monotonic()
            last = t0
            total = 0
            while True:
                n = conn.recv_into(view)
                if n == 0:
                    break
                total += n
                last = time.monotonic()
    report("receiver", total, last - t0)


def send(connect, secs, timeout):
    chunk = bytes(range(256)) * (CHUNK // 256)
    s = udt.connect(connect, timeout=timeout)
    t0 = time.monotonic()
    total = 0
    while time.monotonic() - t0 < secs:
        s.sendall(chunk)
        total += len(chunk)
    s.close()
    report("sender", total, time.monotonic() - t0)


def main():
    parser = argparse.ArgumentParser(description="udt package throughput loop")
    sub = parser.add_subparsers(dest="role", required=True)
    r = sub.add_parser("recv", help="accept one connection and read it until it closes")
    r.add_argument("--listen", default="127.0.0.1:0", help="HOST:PORT (port 0: any)")
    s = sub.add_parser("send", help="connect and send for --secs seconds")
    s.add_argument("--connect", required=True, help="HOST:PORT of the receiver")
    s.add_argument("--secs", type=float, default=5.0, help="seconds to send for")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds any one call may wait")
    args = parser.parse_args()
    try:
        if args.role == "recv":
            receive(args.listen, args.timeout)
        else:
            send(args.connect, args.secs, args.timeout)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)


if __name__ == "__main__":
    main()
