#!/bin/bash
# `udt send -P 1` and `-P 2` of one file over loopback, secured with a key file, interleaved:
# the file from the page cache into tmpfs (/dev/shm), each run checked byte-exact; prints the
# rate `udt send --json` reports and the CPU (user + system, GNU time) of both ends per GB.
# Run it under the shared lock: flock /work/wt/bench.lock scripts/bench-stripe.sh UDT FILE [ROUNDS]
set -euo pipefail
U=${1:?usage: bench-stripe.sh UDT FILE [ROUNDS]}
SRC=${2:?usage: bench-stripe.sh UDT FILE [ROUNDS]}
ROUNDS=${3:-2}
D=$(mktemp -d /dev/shm/udt-bench-stripe.XXXXXX)
trap 'rm -rf "$D"' EXIT
"$U" keygen "$D/key" >/dev/null
cat "$SRC" >/dev/null
bytes=$(stat -c %s "$SRC")
port=$((20000 + RANDOM % 20000))
for round in $(seq 1 "$ROUNDS"); do
  for P in 1 2; do
    port=$((port + 1))
    rm -rf "$D/out" && mkdir "$D/out"
    /usr/bin/time -f '%U %S' -o "$D/recv.time" "$U" -q recv --listen "127.0.0.1:$port" --out "$D/out" \
      --key-file "$D/key" --io-threads "$P" >/dev/null &
    receiver=$!
    sleep 0.5
    /usr/bin/time -f '%U %S' -o "$D/send.time" "$U" -q send -P "$P" "$SRC" "127.0.0.1:$port" \
      --key-file "$D/key" --json >"$D/send.json"
    wait "$receiver"
    cmp -s "$SRC" "$D/out/$(basename "$SRC")" && same=byte-exact || same=DIFFERS
    python3 - "$D" "$P" "$round" "$same" "$bytes" <<'PY'
import json, sys
d, p, r, same, size = sys.argv[1:]
gb = int(size) / 1e9
f = [x for x in map(json.loads, filter(str.strip, open(f"{d}/send.json"))) if x.get("type") == "file"][0]
cpu = lambda name: sum(map(float, open(f"{d}/{name}.time").read().split()[-2:]))
s, v = cpu("send"), cpu("recv")
print(f"-P {p} round {r}: {same}, {f['bits_per_second'] / 1e9:.2f} Gb/s, CPU s/GB send {s / gb:.2f} "
      f"recv {v / gb:.2f} both {(s + v) / gb:.2f}")
PY
  done
done
