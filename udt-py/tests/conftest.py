"""Fixtures of the udt-py tests: the `udt` tool, free loopback ports, key files."""

import os
import socket
import subprocess
import time

import pytest


@pytest.fixture(scope="session")
def udt_bin():
    """The `udt` tool built by cargo (scripts/test-python.sh sets UDT_BIN)."""
    path = os.environ.get("UDT_BIN")
    assert path, "UDT_BIN is not set: run the tests through scripts/test-python.sh"
    assert os.access(path, os.X_OK), f"no udt binary at {path}"
    return path


def free_port():
    """A UDP port of 127.0.0.1 that nothing is bound to right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_key(path, data=None):
    """A key file of 32 random bytes (or `data`), readable by its owner only."""
    with open(path, "wb") as f:
        f.write(data if data is not None else os.urandom(32))
    os.chmod(path, 0o600)
    return path


@pytest.fixture
def key_file(tmp_path):
    return write_key(tmp_path / "shared.key")


@pytest.fixture
def other_key_file(tmp_path):
    return write_key(tmp_path / "other.key")


def wait_for_line(proc, needle, limit=20.0):
    """Read `proc`'s stderr until a line holds `needle`; returns the lines read."""
    lines = []
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        lines.append(line)
        if needle in line:
            return lines
    proc.kill()
    raise AssertionError(f"{needle!r} never came; stderr: {''.join(lines)}")


def run_tool(udt_bin, *args):
    return subprocess.Popen(
        [udt_bin, *map(str, args)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "UDT_CODE"},
    )
