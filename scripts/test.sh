#!/usr/bin/env bash
# The project's test command: formatting, lints, docs, then every test of the workspace and
# the Python package's tests (scripts/test-python.sh).
# `.ci/run` runs exactly this. Works on a fresh machine with a Rust toolchain: installs the
# rustfmt and clippy components when they are missing, and builds the UDT4 interoperability
# peers (installing Debian's libudt-dev, the reference UDT 4.11, when it is missing) and the
# Tsunami and RBUDP reference peers (interop/seed-peers.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

for component in rustfmt clippy; do
    if ! rustup component list --installed 2>/dev/null | grep -q "^${component}"; then
        echo "installing the ${component} component"
        rustup component add "${component}"
    fi
done

# iperf3 (kernel TCP through the WAN emulator in the `udt bench --quick` smoke test); the test
# skips with a message where it cannot be installed.
if ! command -v iperf3 >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing iperf3"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iperf3 >/dev/null \
        || { apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iperf3 >/dev/null; } \
        || echo "iperf3 could not be installed: the bench smoke test will be skipped"
fi

# openssh-server (a throw-away sshd on loopback for the ssh-started transfers' test, which
# skips with a message where it cannot be installed or run).
if [ ! -x /usr/sbin/sshd ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing openssh-server"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssh-server >/dev/null \
        || { apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssh-server >/dev/null; } \
        || echo "openssh-server could not be installed: the real-sshd test will be skipped"
fi

echo "== interop peers (reference UDT4 4.11; Tsunami UDP 1.1 and QUANTA RBUDP 1.0 from ../shared/peers)"
interop/setup.sh >/dev/null
interop/seed-peers.sh >/dev/null

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== no import circle inside any crate"
python3 scripts/module-circles.py
echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets --all-features --locked -- -D warnings
echo "== cargo doc -D warnings"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --all-features --no-deps --locked --quiet
echo "== cargo package (every crate packs for the registry; verification builds are the tests below)"
cargo package --workspace --no-verify --locked --allow-dirty --quiet
echo "== cargo test"
cargo test --workspace --all-features --locked
echo "== Python package (udt-py: maturin wheel in a fresh venv, pytest)"
scripts/test-python.sh
