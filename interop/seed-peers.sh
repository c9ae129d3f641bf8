#!/usr/bin/env bash
# Builds the seed papers' reference peers (Tsunami UDP 1.1: tsunamid, tsunami; QUANTA RBUDP 1.0:
# sendfile, recvfile) from the source archives in ../shared/peers (outside this repository:
# third-party code is never copied into the project) into target/seed-peers/bin, for the
# interop tests of udt-bulk. Prints that directory. Where the archives or a C compiler are
# missing it says so and exits 0: the interop tests then skip with that message.
set -euo pipefail
cd "$(dirname "$0")/.."
src=${UDT_SEED_PEERS_SRC:-../shared/peers}
out=target/seed-peers
if [ ! -x "$src/build.sh" ]; then
    echo "seed peers: no $src/build.sh; the Tsunami and RBUDP interop tests will skip" >&2
    exit 0
fi
if ! command -v gcc >/dev/null 2>&1 || ! command -v g++ >/dev/null 2>&1; then
    echo "seed peers: gcc/g++ missing; the Tsunami and RBUDP interop tests will skip" >&2
    exit 0
fi
"$src/build.sh" "$out" >/dev/null
echo "$PWD/$out/bin"
