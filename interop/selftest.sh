#!/usr/bin/env bash
# Reference-to-reference self-test of the UDT4 interop peers on 127.0.0.1:
# every peer pair runs against each other (small sizes) and the hashes are
# compared with each other and with udt4_gen. Every process runs under
# `timeout`. Prints PASS/FAIL lines and a final summary line
#   SELFTEST PASS checks=<n> perf_mbps=<x>     (exit 0)
#   SELFTEST FAIL failed=<k> checks=<n>        (exit 1)
# Usage: interop/selftest.sh   (builds first with make -C interop)
set -u

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
B="$here/build"
make -C "$here" >&2 || { echo "SELFTEST FAIL build"; exit 1; }

tmp="$(mktemp -d /tmp/udt4-selftest.XXXXXX)"
bg_pids=()
cleanup() {
    local p
    for p in "${bg_pids[@]}"; do kill "$p" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT

PT=15          # --timeout given to the peers
KT=25          # hard `timeout` per process
checks=0
fails=0
perf_mbps="n/a"
t_start=$(date +%s.%N)

last_t=$t_start
took="" # seconds since the previous check
tick() {
    local now; now=$(date +%s.%N)
    took=$(awk -v a="$last_t" -v b="$now" 'BEGIN { printf "%.1fs", b - a }')
    last_t=$now
}
pass() { tick; checks=$((checks + 1)); echo "PASS [$took] $*"; }
fail() {
    tick; checks=$((checks + 1)); fails=$((fails + 1)); echo "FAIL [$took] $*"
}
dump() { # dump NAME...: show a process's output on failure
    local n
    for n in "$@"; do
        echo "---- $n stdout"; tail -n 5 "$tmp/$n.out" 2>/dev/null
        echo "---- $n stderr"; tail -n 20 "$tmp/$n.err" 2>/dev/null
    done
}

# start NAME CMD...: run in the background under timeout; pid in $tmp/NAME.pid
start() {
    local name=$1; shift
    timeout "$KT" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
    local pid=$!
    echo "$pid" >"$tmp/$name.pid"
    bg_pids+=("$pid")
}
# run NAME CMD...: run in the foreground under timeout; returns its exit code
run() {
    local name=$1; shift
    timeout "$KT" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
}
# finish NAME: wait for a background process; returns its exit code
finish() { wait "$(cat "$tmp/$1.pid")"; }
# ready NAME: wait (max 10 s) for "READY <port>" and print the port
ready() {
    local i line
    for i in $(seq 100); do
        line=$(grep -m1 '^READY ' "$tmp/$1.out" 2>/dev/null)
        if [ -n "$line" ]; then echo "${line#READY }"; return 0; fi
        kill -0 "$(cat "$tmp/$1.pid")" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}
# field NAME KEY [N]: value of KEY=... in the N-th (default: last) DONE line
field() {
    local sel
    if [ -n "${3:-}" ]; then sel="NR==$3"; else sel="END"; fi
    grep '^DONE ' "$tmp/$1.out" | awk -v k="$2" "$sel"' { for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == k) v = kv[2] } print v }'
}
gen_hash() { "$B/udt4_gen" "$@" | awk '/^DONE/ { for (i = 2; i <= NF; i++) if ($i ~ /^fnv1a64=/) print substr($i, 9) }'; }

# ---------------------------------------------------------------- generator
vec=$("$B/udt4_gen" --bytes 16 --seed 1 --hex | head -n 1)
if [ "$vec" = "41208240000000004114010c06410010" ] && [ "$(gen_hash --bytes 0)" = "cbf29ce484222325" ] \
    && [ "$("$B/udt4_gen" --msg-index 0 --size 12 --hex | head -n 1)" = "00000000ad4df30bae771bdc" ]; then
    pass "generator known-answer vectors"
else
    fail "generator known-answer vectors (got $vec)"
fi

# ---------------------------------------------------------------- timeouts (background, checked at the end)
start to_srv "$B/udt4_stream_server" --timeout 2
to_srv_t0=$(date +%s.%N)

# ---------------------------------------------------------------- stream: 2 sequential connections
start ss "$B/udt4_stream_server" --count 2 --timeout "$PT"
if port=$(ready ss); then
    run sc1 "$B/udt4_stream_client" --connect "127.0.0.1:$port" --bytes 10000000 --seed 1 --timeout "$PT"; rc1=$?
    run sc2 "$B/udt4_stream_client" --connect "localhost:$port" --bytes 10000000 --seed 7 --mss 1052 --timeout "$PT"; rc2=$?
    finish ss; rcs=$?
    exp1=$(gen_hash --bytes 10000000 --seed 1); exp2=$(gen_hash --bytes 10000000 --seed 7)
    if [ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && [ $rcs -eq 0 ] \
        && [ "$(field sc1 fnv1a64)" = "$exp1" ] && [ "$(field ss fnv1a64 1)" = "$exp1" ] \
        && [ "$(field sc2 fnv1a64)" = "$exp2" ] && [ "$(field ss fnv1a64 2)" = "$exp2" ] \
        && [ "$(field ss bytes 1)" = 10000000 ] && [ "$(field ss bytes 2)" = 10000000 ]; then
        pass "stream 2 x 10 MB (seed 1; seed 7 with --mss 1052) hash=$exp1,$exp2 server_secs=$(field ss secs 1),$(field ss secs 2)"
    else
        fail "stream (rc client=$rc1,$rc2 server=$rcs)"; dump ss sc1 sc2
    fi
    # connecting to a port nobody listens on any more must fail (UDT4: ~3 s)
    start nosrv "$B/udt4_stream_client" --connect "127.0.0.1:$port" --bytes 10 --timeout "$PT"
else
    fail "stream server not ready"; dump ss
fi

# ---------------------------------------------------------------- stream echo
start es "$B/udt4_stream_server" --echo --timeout "$PT"
if port=$(ready es); then
    run ec "$B/udt4_stream_client" --connect "127.0.0.1:$port" --bytes 10000000 --seed 3 --echo --timeout "$PT"; rc=$?
    finish es; rcs=$?
    exp=$(gen_hash --bytes 10000000 --seed 3)
    if [ $rc -eq 0 ] && [ $rcs -eq 0 ] && [ "$(field ec fnv1a64)" = "$exp" ] && [ "$(field es fnv1a64)" = "$exp" ]; then
        pass "stream echo 10 MB hash=$exp"
    else
        fail "stream echo (rc client=$rc server=$rcs)"; dump es ec
    fi
else
    fail "echo server not ready"; dump es
fi

# ---------------------------------------------------------------- sendfile -> recvfile
"$B/udt4_gen" --bytes 5000000 --seed 11 --out "$tmp/in.bin" >/dev/null
start rf "$B/udt4_recvfile" --port 0 --out "$tmp/out.bin" --timeout "$PT"
if port=$(ready rf); then
    run sf "$B/udt4_sendfile" --connect "127.0.0.1:$port" --file "$tmp/in.bin" --timeout "$PT"; rc=$?
    finish rf; rcs=$?
    exp=$(gen_hash --bytes 5000000 --seed 11)
    if [ $rc -eq 0 ] && [ $rcs -eq 0 ] && [ "$(field sf fnv1a64)" = "$exp" ] && [ "$(field rf fnv1a64)" = "$exp" ] \
        && cmp -s "$tmp/in.bin" "$tmp/out.bin"; then
        pass "file 5 MB sendfile->recvfile hash=$exp"
    else
        fail "file (rc sender=$rc receiver=$rcs)"; dump rf sf
    fi
else
    fail "recvfile not ready"; dump rf
fi

# ---------------------------------------------------------------- messages: 2 sequential connections
start ms "$B/udt4_msg_server" --count 2 --timeout "$PT"
if port=$(ready ms); then
    run mc1 "$B/udt4_msg_client" --connect "127.0.0.1:$port" --count 200 --size 1000 --inorder --timeout "$PT"; rc1=$?
    run mc2 "$B/udt4_msg_client" --connect "127.0.0.1:$port" --count 200 --size 5000 --ttl 5000 --timeout "$PT"; rc2=$?
    finish ms; rcs=$?
    okl=$(grep -c '^MSG [0-9]* [0-9]* ok$' "$tmp/ms.out")
    badl=$(grep -c '^MSG .* corrupt$' "$tmp/ms.out")
    # in-order run: indices 0..199 exactly once, in order
    order=$(awk '/^MSG/ && n < 200 { if ($2 != n) bad = 1; n++ } END { print (n == 200 && !bad) ? "ok" : "bad" }' "$tmp/ms.out")
    if [ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && [ $rcs -eq 0 ] && [ "$okl" = 400 ] && [ "$badl" = 0 ] && [ "$order" = ok ] \
        && [ "$(field ms messages 1)" = 200 ] && [ "$(field ms messages 2)" = 200 ] \
        && [ "$(field ms fnv1a64 1)" = "$(field mc1 fnv1a64)" ] && [ "$(field ms fnv1a64 2)" = "$(field mc2 fnv1a64)" ]; then
        pass "messages 200 x 1000 B (inorder) + 200 x 5000 B (ttl 5000) hash=$(field mc1 fnv1a64),$(field mc2 fnv1a64)"
    else
        fail "messages (rc client=$rc1,$rc2 server=$rcs ok_lines=$okl corrupt_lines=$badl order=$order)"; dump ms mc1 mc2
    fi
else
    fail "msg server not ready"; dump ms
fi

# ---------------------------------------------------------------- rendezvous
pa=$((20000 + RANDOM % 30000))
start rv_b "$B/udt4_rendezvous" --local 0 --peer "127.0.0.1:$pa" --bytes 1000000 --role recv --seed 5 --timeout "$PT"
if pb=$(ready rv_b); then
    run rv_a "$B/udt4_rendezvous" --local "$pa" --peer "127.0.0.1:$pb" --bytes 1000000 --role send --seed 5 --timeout "$PT"; rc=$?
    finish rv_b; rcs=$?
    exp=$(gen_hash --bytes 1000000 --seed 5)
    if [ $rc -eq 0 ] && [ $rcs -eq 0 ] && [ "$(field rv_a fnv1a64)" = "$exp" ] && [ "$(field rv_b fnv1a64)" = "$exp" ]; then
        pass "rendezvous 1 MB hash=$exp"
    else
        fail "rendezvous (rc send=$rc recv=$rcs)"; dump rv_a rv_b
    fi
else
    fail "rendezvous peer not ready"; dump rv_b
fi

# ---------------------------------------------------------------- perf
start ps "$B/udt4_perf" --listen 0 --timeout "$PT"
if port=$(ready ps); then
    run pc "$B/udt4_perf" --connect "127.0.0.1:$port" --secs 2 --timeout "$PT"; rc=$?
    finish ps; rcs=$?
    if [ $rc -eq 0 ] && [ $rcs -eq 0 ] && [ -n "$(field pc bytes)" ] && [ "$(field pc bytes)" = "$(field ps bytes)" ] \
        && [ "$(field pc bytes)" != 0 ]; then
        perf_mbps=$(field ps mbps)
        pass "perf 2 s: receiver $(grep '^DONE' "$tmp/ps.out") | sender $(grep '^DONE' "$tmp/pc.out")"
        grep '^INFO' "$tmp/pc.err" | sed 's/^/     sender /'
    else
        fail "perf (rc sender=$rc receiver=$rcs)"; dump ps pc
    fi
else
    fail "perf server not ready"; dump ps
fi

# ---------------------------------------------------------------- timeout / failure behaviour
finish to_srv; rc=$?
if [ $rc -eq 3 ] && grep -q 'timeout' "$tmp/to_srv.err"; then
    pass "idle server with --timeout 2 exits 3 ($(cat "$tmp/to_srv.err"))"
else
    fail "idle server timeout (rc=$rc, want 3)"; dump to_srv
fi
if [ -f "$tmp/nosrv.pid" ]; then
    finish nosrv; rc=$?
    if [ $rc -ne 0 ] && [ $rc -ne 124 ] && ! grep -q '^DONE' "$tmp/nosrv.out"; then
        pass "connect to a closed port fails (rc=$rc: $(cat "$tmp/nosrv.err"))"
    else
        fail "connect to closed port (rc=$rc)"; dump nosrv
    fi
fi

total=$(awk -v a="$t_start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
if [ $fails -eq 0 ]; then
    echo "SELFTEST PASS checks=$checks perf_mbps=$perf_mbps elapsed_secs=$total"
    exit 0
fi
echo "SELFTEST FAIL failed=$fails checks=$checks elapsed_secs=$total"
exit 1
