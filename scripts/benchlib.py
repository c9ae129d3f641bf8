"""Shared helpers of the loopback benchmark scripts (bench-loopback.py, bench-runtime.py).

Each test runs its server and client as separate processes under GNU time, so each side's CPU
seconds (user + system) and peak resident size are the kernel's own accounting. Traffic goes to
127.0.0.1 only; every wait is bounded.
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


def timed(cmd, tmpdir, name):
    """Start cmd under GNU time; returns (Popen, path of the time report)."""
    report = os.path.join(tmpdir, name + ".time")
    p = subprocess.Popen(
        ["/usr/bin/time", "-f", "%e %U %S %M", "-o", report] + cmd,
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


def run_udt(udt, secs, tmp, parallel=1, bandwidth=None, server_args=(), client_args=()):
    """`udt perf server -1` and `udt perf client -P parallel [-b bandwidth]` for secs seconds.

    Bytes and seconds are the client's summary (application bytes the server acknowledged);
    Run.client and Run.server hold both ends' JSON reports."""
    port = free_port()
    # In clear: the runtime measured as UDT4 is (no encryption there).
    srv_cmd = [udt, "perf", "server", "-1", "--json", "--insecure", "-l", f"127.0.0.1:{port}", *server_args]
    srv, srv_t = timed(srv_cmd, tmp, "udt-srv")
    time.sleep(0.3)
    cli_cmd = [udt, "perf", "client", f"127.0.0.1:{port}", "-t", str(secs), "-P", str(parallel), "--json", "--insecure"]
    if bandwidth:
        cli_cmd += ["-b", bandwidth]
    cli, cli_t = timed(cli_cmd + list(client_args), tmp, "udt-cli")
    try:
        out = finish(cli, secs + 120)
    finally:
        srv_out = finish(srv, 60)
    client, server = json.loads(out), json.loads(srv_out)
    summary = client["summary"]
    return Run(summary["bytes"], summary["seconds"], time_of(cli_t), time_of(srv_t), client, server)


def run_udt4(peer, secs, tmp, maxbw=None):
    """interop udt4_perf --listen / --connect for secs seconds (maxbw: UDT_MAXBW, bytes/s).

    Bytes are the receiver's; seconds the sender's (connected to close() returned)."""
    srv, srv_t = timed([peer, "--listen", "0"], tmp, "udt4-srv")
    line = srv.stdout.readline()
    port = int(line.split()[1])
    cmd = [peer, "--connect", f"127.0.0.1:{port}", "--secs", str(secs)]
    if maxbw:
        cmd += ["--maxbw", str(maxbw)]
    cli, cli_t = timed(cmd, tmp, "udt4-cli")
    try:
        cli_out = finish(cli, secs + 60)
    finally:
        srv_out = finish(srv, 60)
    done = dict(kv.split("=") for kv in re.search(r"DONE (.*)", srv_out).group(1).split())
    sent = dict(kv.split("=") for kv in re.search(r"DONE (.*)", cli_out).group(1).split())
    return Run(int(done["bytes"]), float(sent["secs"]), time_of(cli_t), time_of(srv_t))


def run_iperf(secs, tmp, udp):
    """iperf3 TCP, or UDP at full speed with 1472-byte datagrams (delivered bytes only)."""
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
        return Run(delivered, s["seconds"], time_of(cli_t), time_of(srv_t))
    s = end["sum_received"]
    return Run(s["bytes"], s["seconds"], time_of(cli_t), time_of(srv_t))
