#!/usr/bin/env python3
"""`udt send` over its ssh bootstrap against `scp` and `rsync -e ssh`, through the WAN emulator.

One emulated path (`udt netem` between two network namespaces; default 100 Mb/s, RTT 100 ms,
0.1% random loss each way, a DropTail queue of one BDP) with a throw-away `sshd` (Debian's
openssh-server: its own host key, one authorized client key) in namespace B. From namespace A
each tool copies the same data to `root@B:DIR` through that sshd, the tools interleaved round by
round so drift on a shared machine hits all alike:

  udt     udt send --ssh SSH --remote-udt UDT SRC root@B:DIR   (UDT, encrypted, BLAKE3-checked)
  scp     scp -r SRC root@B:DIR                                 (OpenSSH's default: SFTP)
  rsync   rsync -a -e SSH SRC root@B:DIR

TCP (scp, rsync) runs with the system's congestion control unless --tcp-cc sets one in both
namespaces (one the system allows there: net.ipv4.tcp_allowed_congestion_control; the JSON
records which). Two workloads: one file of --file-size bytes (incompressible), and a tree of --tree-files files
(100 per directory, 1 to 16 KiB each). Each run starts from an empty destination and is timed
from the tool's start to its exit; the destination's bytes and file count are checked after it
(a short copy is reported, never timed).

Usage: scripts/bench-ssh.py [--file-size 1G] [--tree-files 10000] [--rounds 1]
                            [--tools udt,scp,rsync] [--workloads file,tree] [--tcp-cc cubic]
                            [--json-out FILE]
Needs: root, /dev/net/tun, iproute2, openssh-server and -client, rsync, and
`cargo build --release -p udt-cli` (target/release/udt).
"""

import argparse
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
UDT = os.path.join(TARGET, "release", "udt")
NS_A, NS_B = "sshhA", "sshhB"
ADDR_A, ADDR_B = "10.217.0.1", "10.217.0.2"
SSH_PORT = 2222
TOOLS = ("udt", "scp", "rsync")


def size_arg(s):
    """`1G` = 10^9, `200M`, `64K`, or bytes."""
    units = {"K": 10**3, "M": 10**6, "G": 10**9}
    s = s.strip().upper()
    if s and s[-1] in units:
        return int(float(s[:-1]) * units[s[-1]])
    return int(s)


def in_ns(ns, argv):
    return ["ip", "netns", "exec", ns] + argv


def start_emulator(a):
    """`udt netem` between two fresh namespaces, once both ends have their addresses."""
    queue = max(100, int(a.rate_mbit * 1e6 / 8 * a.rtt_ms / 1000 / 1500 + 0.999))
    half = f"{a.rtt_ms / 2}ms"
    cmd = [UDT, "netem", "--ns-a", NS_A, "--ns-b", NS_B, "--addr-a", ADDR_A, "--addr-b", ADDR_B,
           "--quiet", "--json", "--realtime", "--rate", f"{a.rate_mbit}mbit", "--delay", half, "--delay-back", half,
           "--queue", f"{queue}p", "--queue-back", f"{queue}p", "--loss", f"{a.loss}%",
           "--loss-back", f"{a.loss}%"]
    emu = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for _ in range(100):
        if emu.poll() is not None:
            sys.exit(f"bench-ssh: udt netem exited: {emu.stderr.read()}")
        shown = [subprocess.run(in_ns(ns, ["ip", "-4", "addr"]), capture_output=True, text=True).stdout
                 for ns in (NS_A, NS_B)]
        if ADDR_A in shown[0] and ADDR_B in shown[1]:
            time.sleep(0.5)
            return emu, cmd, queue
        time.sleep(0.2)
    emu.terminate()
    sys.exit("bench-ssh: the emulated path never came up")


def stop_emulator(emu):
    """Stop the emulator; its counters (`udt netem --json`: packets, drops by loss and queue)."""
    emu.terminate()
    try:
        out, _ = emu.communicate(timeout=30)
        return json.loads(out)["stats"]
    except (subprocess.TimeoutExpired, ValueError, KeyError) as e:
        emu.kill()
        return {"error": str(e)}


def start_sshd(work):
    """A throw-away sshd in namespace B; returns (process, the ssh command line as a list)."""
    for key in ("host_key", "client_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", os.path.join(work, key)],
                       check=True, stdin=subprocess.DEVNULL)
    shutil.copy(os.path.join(work, "client_key.pub"), os.path.join(work, "authorized_keys"))
    os.makedirs("/run/sshd", exist_ok=True)
    config = os.path.join(work, "sshd_config")
    with open(config, "w") as f:
        f.write(f"Port {SSH_PORT}\nListenAddress {ADDR_B}\nHostKey {work}/host_key\n"
                f"AuthorizedKeysFile {work}/authorized_keys\nPidFile none\nStrictModes no\nUsePAM no\n"
                "PasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n"
                "PermitRootLogin prohibit-password\nMaxStartups 100\nSubsystem sftp internal-sftp\n")
    sshd = subprocess.Popen(in_ns(NS_B, ["/usr/sbin/sshd", "-D", "-e", "-f", config]),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    ssh = ["ssh", "-p", str(SSH_PORT), "-F", "/dev/null", "-i", os.path.join(work, "client_key"),
           "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
           "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR"]
    for _ in range(100):
        if sshd.poll() is not None:
            sys.exit(f"bench-ssh: sshd exited: {sshd.stderr.read()}")
        probe = subprocess.run(in_ns(NS_A, ssh + [f"root@{ADDR_B}", "true"]), capture_output=True,
                               timeout=30)
        if probe.returncode == 0:
            return sshd, ssh
        time.sleep(0.3)
    sshd.terminate()
    sys.exit("bench-ssh: sshd never answered")


def make_data(work, file_size, tree_files, seed):
    """The file and the tree; returns {workload: (path, bytes, files)}."""
    rng = random.Random(seed)
    big = os.path.join(work, "src", "big.bin")
    os.makedirs(os.path.dirname(big))
    with open(big, "wb") as f:
        left = file_size
        while left > 0:
            n = min(left, 1 << 20)
            f.write(rng.randbytes(n))
            left -= n
    tree = os.path.join(work, "src", "tree")
    total = 0
    for i in range(tree_files):
        d = os.path.join(tree, f"d{i // 100:03}")
        os.makedirs(d, exist_ok=True)
        n = rng.randint(1024, 16 * 1024)
        with open(os.path.join(d, f"f{i:05}.dat"), "wb") as f:
            f.write(rng.randbytes(n))
        total += n
    return {"file": (big, file_size, 1), "tree": (tree, total, tree_files)}


def measure(path):
    """(bytes, files) of regular files below path (or of the file)."""
    if os.path.isfile(path):
        return os.path.getsize(path), 1
    nbytes = files = 0
    for d, _, names in os.walk(path):
        for n in names:
            if not n.startswith("."):
                nbytes += os.path.getsize(os.path.join(d, n))
                files += 1
    return nbytes, files


def command(tool, ssh, src, dest):
    far = f"root@{ADDR_B}:{dest}"
    if tool == "udt":
        return [UDT, "send", "-q", "--ssh", " ".join(ssh), "--remote-udt", UDT, src, far]
    if tool == "scp":
        opts = ssh[3:]  # after `ssh -p PORT`
        return ["scp", "-q", "-r", "-P", str(SSH_PORT)] + opts + [src, far + "/"]
    return ["rsync", "-a", "-e", " ".join(ssh), src, far + "/"]


def one(tool, workload, data, ssh, work, timeout):
    src, nbytes, files = data[workload]
    dest = os.path.join(work, "dest")
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    cmd = command(tool, ssh, src, dest)
    start = time.monotonic()
    try:
        p = subprocess.run(in_ns(NS_A, cmd), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"tool": tool, "workload": workload, "error": f"timed out after {timeout} s"}
    secs = time.monotonic() - start
    row = {"tool": tool, "workload": workload, "command": " ".join(cmd), "bytes": nbytes, "files": files}
    if p.returncode != 0:
        row["error"] = f"exit {p.returncode}: {p.stderr.strip()[-300:]}"
        return row
    got = measure(os.path.join(dest, os.path.basename(src)))
    if got != (nbytes, files):
        row["error"] = f"SHORT: {got[1]} files, {got[0]} bytes of {files}, {nbytes}"
        return row
    row["seconds"] = round(secs, 2)
    row["mbit_per_second"] = round(nbytes * 8 / secs / 1e6, 2)
    return row


def version(argv):
    p = subprocess.run(argv, capture_output=True, text=True)
    return (p.stdout + p.stderr).strip().splitlines()[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--file-size", type=size_arg, default=10**9, help="the one file's size (default 1G)")
    ap.add_argument("--tree-files", type=int, default=10_000, help="files in the tree (default 10000)")
    ap.add_argument("--rounds", type=int, default=1, help="interleaved rounds (default 1)")
    ap.add_argument("--tools", default=",".join(TOOLS), help="comma-separated: udt,scp,rsync")
    ap.add_argument("--workloads", default="file,tree", help="comma-separated: file,tree")
    ap.add_argument("--rate-mbit", type=float, default=100)
    ap.add_argument("--rtt-ms", type=float, default=100)
    ap.add_argument("--loss", type=float, default=0.1, help="random loss each way, percent")
    ap.add_argument("--tcp-cc", default=None,
                    help="TCP congestion control in both namespaces (scp and rsync), one of "
                         "net.ipv4.tcp_allowed_congestion_control (a namespace may take no other); "
                         "default: the system's")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds any one copy may take")
    ap.add_argument("--work", default=None, help="directory for the data (default: a temporary one)")
    ap.add_argument("--json-out", default=None, help="write every result here as JSON")
    a = ap.parse_args()
    tools = [t for t in a.tools.split(",") if t]
    workloads = [w for w in a.workloads.split(",") if w]
    if any(t not in TOOLS for t in tools) or any(w not in ("file", "tree") for w in workloads):
        sys.exit("bench-ssh: --tools takes udt,scp,rsync and --workloads file,tree")
    if os.geteuid() != 0:
        sys.exit("bench-ssh: needs root (network namespaces)")
    if not os.path.exists(UDT):
        sys.exit(f"bench-ssh: no {UDT}: run `cargo build --release -p udt-cli`")
    for tool in ("ssh", "scp", "rsync", "ssh-keygen", "/usr/sbin/sshd"):
        if not shutil.which(tool):
            sys.exit(f"bench-ssh: needs {tool}")

    work = tempfile.mkdtemp(prefix="bench-ssh-", dir=a.work)
    emu = sshd = None
    try:
        data = make_data(work, a.file_size, a.tree_files, seed=36)
        emu, emu_cmd, queue = start_emulator(a)
        for ns in (NS_A, NS_B):
            if a.tcp_cc and subprocess.run(
                    in_ns(ns, ["sysctl", "-q", "-w", f"net.ipv4.tcp_congestion_control={a.tcp_cc}"])).returncode:
                sys.exit(f"bench-ssh: cannot set {a.tcp_cc} in a namespace: it must be in "
                         "net.ipv4.tcp_allowed_congestion_control")
        tcp_cc = subprocess.run(in_ns(NS_A, ["sysctl", "-n", "net.ipv4.tcp_congestion_control"]),
                                capture_output=True, text=True, check=True).stdout.strip()
        sshd, ssh = start_sshd(work)
        runs, result = [], {}
        for r in range(a.rounds):
            for workload in workloads:
                for tool in tools:
                    row = one(tool, workload, data, ssh, work, a.timeout)
                    row["round"] = r + 1
                    runs.append(row)
                    print(json.dumps(row), file=sys.stderr, flush=True)
        result |= {
            "path": {"rate_mbit": a.rate_mbit, "rtt_ms": a.rtt_ms, "loss_percent_each_way": a.loss,
                     "queue_packets": queue, "emulator": " ".join(emu_cmd)},
            "tcp_congestion_control": tcp_cc,
            "file_size": a.file_size,
            "tree_files": a.tree_files,
            "tree_bytes": data["tree"][1],
            "versions": {"udt": version([UDT, "--version"]), "ssh": version(["ssh", "-V"]),
                         "rsync": version(["rsync", "--version"])},
            "runs": runs,
        }
        result["emulator_stats"] = stop_emulator(emu)
        emu = None
        if a.json_out:
            with open(a.json_out, "w") as f:
                json.dump(result, f, indent=1)
                f.write("\n")
        print("| workload | tool | seconds | Mb/s |")
        print("| --- | --- | ---: | ---: |")
        for row in runs:
            shown = (f"{row['seconds']} | {row['mbit_per_second']}" if "seconds" in row
                     else f"{row['error']} | -")
            print(f"| {row['workload']} | {row['tool']} | {shown} |")
    finally:
        for p in (sshd, emu):
            if p is not None:
                p.terminate()
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
