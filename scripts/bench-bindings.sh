#!/usr/bin/env bash
# The bindings against the Rust API, in one run on loopback: `udt perf` (the Rust API), a
# Python `sendall`/`recv_into` loop over the `udt` package (udt-py/bench/bench_loop.py), and
# UDT4's `udt4_perf` (interop/src) compiled against udt-capi's C++ header and linked to
# libudt_capi. Targets: Python >= 80% of `udt perf`, the C API >= 95% of it.
#
#   scripts/bench-bindings.sh [--rounds N] [--secs T] [--out FILE]
#
# Builds what it needs in release (the `udt` tool, libudt_capi, the wheel with maturin into
# target/bench-venv, udt4_perf with g++). Each round runs the three systems one after another,
# T seconds each, as separate receiver and sender processes under GNU time, all plain UDT4 (no
# encryption: `udt perf --insecure`, no key in Python, UDT4 in C), MSS 1500, the default
# congestion control; the order rotates from round to round. Throughput is the bytes the
# receiver got over the sender's seconds from connected to its close() returning (for
# `udt perf`, the client's summary: bytes the server acknowledged). Prints a table of the
# medians over rounds and the ratios, and writes every round's value, the medians and the
# ratios as JSON to FILE (default docs/data/bindings-bench.json). Exits 0 when every run
# completed, whether or not the targets were met (the table says which).
set -euo pipefail
cd "$(dirname "$0")/.."

MATURIN_VERSION=1.16.0
rounds=5
secs=5
out=docs/data/bindings-bench.json
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds=$2; shift 2 ;;
        --secs) secs=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "bench-bindings: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done

PYTHON=${PYTHON:-python3}
target=$(realpath -m "${CARGO_TARGET_DIR:-target}")
export CARGO_TARGET_DIR=$target

# The Rust API's tool and the C library, optimized.
cargo build --locked --release -p udt-cli -p udt-capi

# The Python package, as users get it: the abi3 wheel built by maturin, installed in a venv.
venv="$target/bench-venv"
if ! "$venv/bin/maturin" --version 2>/dev/null | grep -q " ${MATURIN_VERSION}\$"; then
    rm -rf "$venv"
    "$PYTHON" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "maturin==${MATURIN_VERSION}"
fi
rm -rf "$target/bench-wheels"
"$venv/bin/maturin" build --locked --release -m udt-py/Cargo.toml --out "$target/bench-wheels" \
    --interpreter "$venv/bin/python"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-index --force-reinstall \
    "$target"/bench-wheels/udt_py-*.whl

# UDT4's perf program, unchanged, against the C++ layer and the release libudt_capi.so.
bin="$target/bench-bin"
mkdir -p "$bin"
g++ -std=c++11 -O2 -Wall -Wextra -pthread -I udt-capi/include interop/src/udt4_perf.cpp \
    -o "$bin/udt4_perf" -L "$target/release" -ludt_capi "-Wl,-rpath,$target/release"

ROUNDS=$rounds SECS=$secs OUT=$out VENV_PY="$venv/bin/python" UDT4_PERF_CAPI="$bin/udt4_perf" \
    "$PYTHON" - <<'EOF'
import json
import os
import platform
import statistics
import sys
import tempfile

sys.path.insert(0, "scripts")
import benchlib  # noqa: E402

rounds, secs, out = int(os.environ["ROUNDS"]), float(os.environ["SECS"]), os.environ["OUT"]
secs_arg = f"{secs:g}"
py, udt4_perf = os.environ["VENV_PY"], os.environ["UDT4_PERF_CAPI"]
loop = os.path.join("udt-py", "bench", "bench_loop.py")


def run_python(tmp):
    """bench_loop.py recv / send: receiver's bytes over the sender's seconds."""
    srv, srv_t = benchlib.timed([py, loop, "recv", "--listen", "127.0.0.1:0"], tmp, "py-srv")
    port = int(srv.stdout.readline().split()[1])
    cmd = [py, loop, "send", "--connect", f"127.0.0.1:{port}", "--secs", secs_arg]
    cli, cli_t = benchlib.timed(cmd, tmp, "py-cli")
    try:
        sent = json.loads(benchlib.finish(cli, secs + 60).strip().splitlines()[-1])
    finally:
        got = json.loads(benchlib.finish(srv, 60).strip().splitlines()[-1])
    return benchlib.Run(got["bytes"], sent["seconds"], benchlib.time_of(cli_t), benchlib.time_of(srv_t))


SYSTEMS = {
    "udt_perf": ("udt perf (Rust API)", lambda tmp: benchlib.run_udt(benchlib.UDT, secs, tmp)),
    "python": ("Python sendall/recv_into", run_python),
    "capi": ("udt4_perf over udt-capi (C API)", lambda tmp: benchlib.run_udt4(udt4_perf, secs, tmp)),
}
order = list(SYSTEMS)
runs = {name: [] for name in order}
with tempfile.TemporaryDirectory() as tmp:
    for r in range(rounds):
        for name in order[r % len(order):] + order[: r % len(order)]:
            run = SYSTEMS[name][1](tmp)
            send_cpu, recv_cpu = run.cpu_per_gb()
            runs[name].append({
                "gbps": run.gbps(),
                "bytes": run.nbytes,
                "seconds": run.secs,
                "sender_cpu_s_per_gb": send_cpu,
                "receiver_cpu_s_per_gb": recv_cpu,
            })
            print(f"round {r + 1}/{rounds}: {name:9} {run.gbps():7.2f} Gb/s", file=sys.stderr, flush=True)

median = {name: statistics.median(x["gbps"] for x in runs[name]) for name in order}
targets = {"python": 0.80, "capi": 0.95}
ratios = {
    name: {"ratio": median[name] / median["udt_perf"], "target": t, "met": median[name] / median["udt_perf"] >= t}
    for name, t in targets.items()
}
result = {
    "command": f"scripts/bench-bindings.sh --rounds {rounds} --secs {secs_arg}",
    "host": {"machine": platform.machine(), "cpus": os.cpu_count(), "python": platform.python_version()},
    "rounds": rounds,
    "secs": secs,
    "throughput": "receiver's bytes / sender's seconds (connected to close() returned); udt perf: client summary",
    "systems": {
        name: {"label": SYSTEMS[name][0], "median_gbps": median[name], "rounds": runs[name]} for name in order
    },
    "ratios_to_udt_perf": ratios,
}
os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
with open(out, "w") as f:
    json.dump(result, f, indent=1)
    f.write("\n")

print(f"| system | median Gb/s | rounds (Gb/s) | / udt perf | target | met |")
print(f"| --- | ---: | --- | ---: | ---: | --- |")
for name in order:
    each = ", ".join(f"{x['gbps']:.2f}" for x in runs[name])
    if name in ratios:
        q = ratios[name]
        tail = f"{q['ratio']:.2f} | >= {q['target']:.2f} | {'met' if q['met'] else 'NOT MET'}"
    else:
        tail = "1.00 | | "
    print(f"| {SYSTEMS[name][0]} | {median[name]:.2f} | {each} | {tail} |")
print(f"(JSON: {out})", file=sys.stderr)
EOF
