"""Shared helpers of the benchmark scripts (bench-loopback.py, bench-runtime.py, bench-veth.py).

Each test runs its server and client as separate processes under GNU time, so each side's CPU
seconds (user + system) and peak resident size are the kernel's own accounting. Traffic goes to
127.0.0.1, or between the network namespaces bench-veth.py creates (`Place`: the command prefix
and address of each side); every wait is bounded.
"""

import json
import os
import re
import socket
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
UDT = os.path.join(TARGET, "release", "udt")
UDT4_PERF = os.path.join(ROOT, "interop", "build", "udt4_perf")


def free_port():
    """A UDP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Place:
    """Where a benchmark's two ends run: each side's command prefix (such as
    `ip netns exec NAME`) and the address the client reaches the server at."""

    def __init__(self, host="127.0.0.1", server_prefix=(), client_prefix=()):
        self.host, self.server_prefix, self.client_prefix = host, list(server_prefix), list(client_prefix)


LOOPBACK = Place()


def timed(cmd, tmpdir, name, prefix=()):
    """Start cmd under GNU time (after `prefix`, which must exec it: GNU time then measures cmd
    alone); returns (Popen, path of the time report)."""
    report = os.path.join(tmpdir, name + ".time")
    p = subprocess.Popen(
        list(prefix) + ["/usr/bin/time", "-f", "%e %U %S %M", "-o", report] + cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return p, report


def time_of(report):
    """(CPU seconds, peak resident bytes) from a time report (`-v`'s "Maximum resident set size")."""
    with open(report) as f:
        wall, user, sys_, max_kib = f.read().split()[-4:]
    return float(user) + float(sys_), int(max_kib) * 1024


def cpu_of(report):
    """CPU seconds (user + system) from a time report."""
    return time_of(report)[0]


def finish(p, timeout):
    """Wait at most timeout seconds for p (killed after that); its stdout; raises on failure."""
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        raise RuntimeError(f"timed out: {' '.join(p.args)}\n{err}")
    if p.returncode != 0:
        raise RuntimeError(f"exit {p.returncode}: {' '.join(p.args)}\n{err}")
    return out


class Run:
    """One memory-to-memory test: bytes delivered, seconds, and each side's CPU and peak RSS."""

    def __init__(self, nbytes, secs, send, recv, client=None, server=None):
        self.nbytes, self.secs = nbytes, secs
        (self.cpu_send, self.rss_send), (self.cpu_recv, self.rss_recv) = send, recv
        self.client, self.server = client, server

    def gbps(self):
        return self.nbytes * 8 / self.secs / 1e9

    def cpu_per_gb(self):
        """(sender, receiver) CPU seconds per 10^9 payload bytes delivered."""
        gb = self.nbytes / 1e9
        return self.cpu_send / gb, self.cpu_recv / gb


def run_udt(
    udt, secs, tmp, parallel=1, bandwidth=None, server_args=(), client_args=(), place=LOOPBACK, key_file=None
):
    """`udt perf server -1` and `udt perf client -P parallel [-b bandwidth]` for secs seconds,
    in clear, or secured with `key_file` (a file both ends read).

    Bytes and seconds are the client's summary (application bytes the server acknowledged);
    Run.client and Run.server hold both ends' JSON reports."""
    port = free_port()
    # In clear by default: the runtime measured as UDT4 is (no encryption there).
    security = ["--key-file", key_file] if key_file else ["--insecure"]
    srv_cmd = [udt, "perf", "server", "-1", "--json", *security, "-l", f"{place.host}:{port}", *server_args]
    srv, srv_t = timed(srv_cmd, tmp, "udt-srv", place.server_prefix)
    time.sleep(0.3)
    cli_cmd = [udt, "perf", "client", f"{place.host}:{port}", "-t", str(secs), "-P", str(parallel), "--json", *security]
    if bandwidth:
        cli_cmd += ["-b", bandwidth]
    cli, cli_t = timed(cli_cmd + list(client_args), tmp, "udt-cli", place.client_prefix)
    try:
        out = finish(cli, secs + 120)
    finally:
        srv_out = finish(srv, 60)
    client, server = json.loads(out), json.loads(srv_out)
    summary = client["summary"]
    return Run(summary["bytes"], summary["seconds"], time_of(cli_t), time_of(srv_t), client, server)


def run_udt4(peer, secs, tmp, maxbw=None, place=LOOPBACK):
    """interop udt4_perf --listen / --connect for secs seconds (maxbw: UDT_MAXBW, bytes/s).

    Bytes are the receiver's; seconds the sender's (connected to close() returned)."""
    srv, srv_t = timed([peer, "--listen", "0", "--bind", place.host], tmp, "udt4-srv", place.server_prefix)
    line = srv.stdout.readline()
    port = int(line.split()[1])
    cmd = [peer, "--connect", f"{place.host}:{port}", "--secs", str(secs)]
    if maxbw:
        cmd += ["--maxbw", str(maxbw)]
    cli, cli_t = timed(cmd, tmp, "udt4-cli", place.client_prefix)
    try:
        cli_out = finish(cli, secs + 60)
    finally:
        srv_out = finish(srv, 60)
    done = dict(kv.split("=") for kv in re.search(r"DONE (.*)", srv_out).group(1).split())
    sent = dict(kv.split("=") for kv in re.search(r"DONE (.*)", cli_out).group(1).split())
    return Run(int(done["bytes"]), float(sent["secs"]), time_of(cli_t), time_of(srv_t))


def run_iperf(secs, tmp, udp, place=LOOPBACK, bandwidth=None):
    """iperf3 TCP (capped at `bandwidth`, iperf3's -b, when given), or UDP at full speed with
    1472-byte datagrams (delivered bytes only)."""
    port = free_port()
    srv, srv_t = timed(["iperf3", "-s", "-1", "-p", str(port)], tmp, "ip-srv", place.server_prefix)
    time.sleep(0.3)
    extra = ["-u", "-b", "0", "-l", "1472"] if udp else []
    if bandwidth and not udp:
        extra += ["-b", bandwidth]
    cmd = ["iperf3", "-c", place.host, "-p", str(port), "-t", str(secs), "-J"] + extra
    cli, cli_t = timed(cmd, tmp, "ip-cli", place.client_prefix)
    out = json.loads(finish(cli, secs + 60))
    finish(srv, 60)
    end = out["end"]
    if udp:
        s = end["sum"]
        delivered = s["bytes"] * (1 - s["lost_percent"] / 100.0)
        return Run(delivered, s["seconds"], time_of(cli_t), time_of(srv_t))
    s = end["sum_received"]
    return Run(s["bytes"], s["seconds"], time_of(cli_t), time_of(srv_t))
