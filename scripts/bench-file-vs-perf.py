#!/usr/bin/env python3
"""Loopback: `udt perf --self -n 1GiB` secured against `udt send`/`udt recv` of a 1 GiB file
(page cache -> tmpfs), interleaved; rates, wall time and CPU (user+sys) of each process.

Usage: bench-file-vs-perf.py UDT ROUNDS OUT.json [LABEL=UDT ...] (send/recv builds to compare)
Run it under `flock /work/wt/bench.lock`."""
import json, os, subprocess, sys, time, shutil, resource

# argv: perf binary, rounds, output JSON, then LABEL=BINARY for each send/recv build to compare
udt = sys.argv[1]
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 2
builds = [a.split("=", 1) for a in sys.argv[4:]] or [["this", udt]]
size = 1 << 30
src = "/tmp/fp-bench-src.bin"
out = "/dev/shm/fp-bench-out"
key = "/tmp/fp-bench.key"
if not os.path.exists(key):
    subprocess.run([udt, "keygen", key], check=True, stdout=subprocess.DEVNULL)
if not os.path.exists(src) or os.path.getsize(src) != size:
    with open(src, "wb") as f:
        for _ in range(size >> 20):
            f.write(os.urandom(1 << 20))
subprocess.run(["cat", src], stdout=subprocess.DEVNULL, check=True)

def run(cmd, **kw):
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
    return p, t0

def finish(p, t0):
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    stdout = p.stdout.read().decode(); stderr = p.stderr.read().decode()
    p.returncode = os.waitstatus_to_exitcode(status)
    return {"wall": wall, "user": ru.ru_utime, "sys": ru.ru_stime, "rc": p.returncode,
            "stdout": stdout, "stderr": stderr[-2000:]}

results = []
for r in range(rounds):
    # perf --self secured
    p, t0 = run([udt, "perf", "--self", "-n", "1GiB", "--json", "--key-file", key])
    res = finish(p, t0)
    rep = json.loads(res["stdout"].strip().splitlines()[-1]) if res["rc"] == 0 else None
    summ = rep.get("summary", {}) if rep else {}
    gbps = None
    for k in ("receiver", "sender"):
        if isinstance(summ.get(k), dict) and "bits_per_second" in summ[k]:
            gbps = summ[k]["bits_per_second"] / 1e9; break
    if gbps is None and isinstance(summ, dict):
        gbps = summ.get("bits_per_second", 0) / 1e9 if "bits_per_second" in summ else None
    cpu = res["user"] + res["sys"]
    entry = {"round": r, "what": "perf --self secured", "wall_s": res["wall"], "goodput_gbps": gbps,
             "cpu_user_s": res["user"], "cpu_sys_s": res["sys"], "cpu_s_per_gb": cpu / (size / 1e9),
             "rc": res["rc"], "report": rep}
    if res["rc"]: entry["stderr"] = res["stderr"]
    results.append(entry)
    print(json.dumps({k: v for k, v in entry.items() if k != "report"}), flush=True)

    for label, sr in builds:
        # send/recv secured
        shutil.rmtree(out, ignore_errors=True); os.makedirs(out)
        port = str(19000 + 10 * r + builds.index([label, sr]))
        rp, rt0 = run([sr, "recv", "-l", "127.0.0.1:" + port, "-o", out, "--key-file", key, "--json", "-q"])
        time.sleep(0.3)
        sp, st0 = run([sr, "send", src, "127.0.0.1:" + port, "--key-file", key, "--json", "-q"])
        sres = finish(sp, st0)
        rres = finish(rp, rt0)
        lines = [json.loads(l) for l in sres["stdout"].splitlines() if l.startswith("{")]
        rlines = [json.loads(l) for l in rres["stdout"].splitlines() if l.startswith("{")]
        ok = os.path.exists(os.path.join(out, os.path.basename(src))) and os.path.getsize(os.path.join(out, os.path.basename(src))) == size
        cpu = sres["user"] + sres["sys"] + rres["user"] + rres["sys"]
        frate = next((l["bits_per_second"] / 1e9 for l in lines if l.get("type") == "file"), None)
        entry = {"round": r, "what": "send/recv secured " + label, "wall_s": sres["wall"], "file_rate_gbps": frate,
                 "goodput_gbps": size * 8 / sres["wall"] / 1e9,
                 "send_cpu_user_s": sres["user"], "send_cpu_sys_s": sres["sys"],
                 "recv_cpu_user_s": rres["user"], "recv_cpu_sys_s": rres["sys"],
                 "cpu_s_per_gb": cpu / (size / 1e9), "rc": [sres["rc"], rres["rc"]], "stored": ok,
                 "send_json": lines, "recv_json": rlines}
        if sres["rc"] or rres["rc"]: entry["stderr"] = [sres["stderr"], rres["stderr"]]
        results.append(entry)
        print(json.dumps({k: v for k, v in entry.items() if k not in ("send_json", "recv_json")}), flush=True)
        shutil.rmtree(out, ignore_errors=True)

if len(sys.argv) > 3:
    with open(sys.argv[3], "w") as f:
        json.dump({"command": " ".join(sys.argv), "size_bytes": size, "runs": results}, f, indent=1)
