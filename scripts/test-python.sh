#!/usr/bin/env bash
# The Python package's tests (udt-py): build the extension with maturin into a fresh virtual
# environment under target/py-venv, then run its pytest suite, which also drives the `udt` tool
# (`udt send`/`udt recv`). scripts/test.sh calls it after `cargo test`.
#
# Skips, saying why, only when no python3 >= 3.9 is installed; every other failure (creating
# the environment, installing the pinned tools, building the wheel, a test) fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."

MATURIN_VERSION=1.16.0
PYTEST_VERSION=9.2.0

PYTHON=${PYTHON:-python3}
if ! command -v "$PYTHON" >/dev/null 2>&1; then
    echo "test-python: SKIPPED: no $PYTHON on this machine (the udt-py tests need Python >= 3.9)"
    exit 0
fi
if ! "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 9) else 1)'; then
    echo "test-python: SKIPPED: $("$PYTHON" --version 2>&1) is older than 3.9 (udt-py needs >= 3.9)"
    exit 0
fi

target=$(realpath -m "${CARGO_TARGET_DIR:-target}")
venv="$target/py-venv"
# A fresh environment each run: nothing left from an earlier build can pass for this one.
rm -rf "$venv"
"$PYTHON" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "maturin==${MATURIN_VERSION}" "pytest==${PYTEST_VERSION}"

# The `udt` tool the interoperability tests run (built with the test profile, as `cargo test`
# built it just before: nothing is compiled twice).
cargo build --locked --profile test -p udt-cli
export UDT_BIN="$target/debug/udt"
test -x "$UDT_BIN" || { echo "test-python: no udt binary at $UDT_BIN" >&2; exit 1; }

# The wheel (abi3, Python >= 3.9), built optimized as users get it, then installed.
rm -rf "$target/py-wheels"
"$venv/bin/maturin" build --locked --release -m udt-py/Cargo.toml --out "$target/py-wheels" \
    --interpreter "$venv/bin/python"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-index \
    "$target"/py-wheels/udt_py-*.whl

# From the tests' directory, so `import udt` finds the installed wheel, not the sources.
cd udt-py/tests
"$venv/bin/python" -m pytest -v -p no:cacheprovider .
