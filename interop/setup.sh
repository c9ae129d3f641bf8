#!/usr/bin/env bash
# Idempotent setup for the UDT4 interoperability peers:
#   1. installs libudt-dev (UDT4 4.11) if /usr/include/udt/udt.h is missing
#      (apt-get install; apt-get update only if the first install fails);
#   2. builds every peer with `make -C interop` into interop/build/;
#   3. prints the absolute path of the build directory (the only line on
#      stdout; make output goes to stderr).
# Works as root on Debian 12 with g++ and make. Exits non-zero on failure.
set -euo pipefail

fail() {
    echo "interop/setup.sh: ERROR: $*" >&2
    exit 1
}

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"

if [ ! -f /usr/include/udt/udt.h ]; then
    echo "interop/setup.sh: /usr/include/udt/udt.h missing; installing libudt-dev" >&2
    command -v apt-get >/dev/null 2>&1 || fail "apt-get not found; install libudt-dev (UDT4 4.11) by hand"
    if [ "$(id -u)" -ne 0 ]; then
        fail "libudt-dev is not installed and this is not root; run as root or: apt-get install -y libudt-dev"
    fi
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-get install -y libudt-dev; then
        echo "interop/setup.sh: install failed; running apt-get update and retrying" >&2
        apt-get update || fail "apt-get update failed"
        apt-get install -y libudt-dev || fail "apt-get install -y libudt-dev failed"
    fi
    [ -f /usr/include/udt/udt.h ] || fail "libudt-dev installed but /usr/include/udt/udt.h is still missing"
fi

command -v make >/dev/null 2>&1 || fail "make not found (apt-get install -y make)"
command -v "${CXX:-g++}" >/dev/null 2>&1 || fail "${CXX:-g++} not found (apt-get install -y g++)"

cd "$root"
make -C interop >&2 || fail "build failed (make -C interop)"

for src in interop/src/*.cpp; do
    bin="interop/build/$(basename "$src" .cpp)"
    [ -x "$bin" ] || fail "missing binary $bin after build"
done

echo "$here/build"
