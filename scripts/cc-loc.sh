#!/bin/sh
# Lines of code of each congestion control in udt-cc/src (and udt-proto/src/cc) (docs/congestion-control.md's table next to
# thesis Table 5-1). Counts the code before a file's `#[cfg(test)]`: "loc" = lines that are not
# blank and not comments; "semicolons" = the thesis' own measure ("the number of semicolons in
# the corresponding C/C++ code segment"), which undercounts expression-oriented Rust.
# Usage: scripts/cc-loc.sh
cd "$(dirname "$0")/../udt-cc/src" || exit 1
printf '%-22s %5s %11s\n' file loc semicolons
for f in tcp.rs newreno.rs scalable.rs highspeed.rs bic.rs westwood.rs timing.rs vegas.rs fast.rs \
    cubic.rs bbr.rs copa/mod.rs copa/mode.rs copa/window_min.rs first_rtt.rs ../../udt-proto/src/cc/fixed.rs ../../udt-proto/src/cc/native.rs model/mod.rs \
    model/reports.rs model/losses.rs model/compete.rs model/queue.rs model/config.rs model/filters.rs model/delivery.rs gtp/mod.rs gtp/manager.rs gtp/message.rs gtp/receiver.rs \
    gtp/sender.rs; do
    code=$(awk '/^#\[cfg\(test\)\]/{exit} {print}' "$f" | grep -v '^[[:space:]]*$' | grep -v '^[[:space:]]*//')
    printf '%-22s %5s %11s\n' "$f" "$(printf '%s\n' "$code" | wc -l)" "$(printf '%s' "$code" | tr -cd ';' | wc -c)"
done
