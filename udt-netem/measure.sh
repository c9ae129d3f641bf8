#!/usr/bin/env bash
# Measures the emulator on this machine (needs root, iperf3): for each link rate, 50 ms delay
# each way and a BDP-sized queue (rate x 100 ms RTT), the idle RTT (UDP echo, 20 probes), iperf3
# TCP for 10 s (with the RTT under load) and iperf3 UDP at 95% of the rate for 5 s, with the
# emulator's counters. Usage: udt-netem/measure.sh [extra netem options, e.g. --realtime]
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"
cargo build -q --release -p udt-netem --example measure
bin="$CARGO_TARGET_DIR/release/examples/measure"
uptime
for case in "100mbit 834p 95mbit" "1gbit 8334p 950mbit" "2gbit 16667p 1900mbit" "0 1000p 3gbit"; do
    read -r rate queue udp <<<"$case"
    echo "== rate $rate, delay 50ms each way, queue $queue"
    "$bin" --rate "$rate" --delay 50ms --queue "$queue" --rtt-count 20 \
        --iperf-tcp 10 --rtt-under-load --iperf-udp "$udp" "$@"
done
uptime
