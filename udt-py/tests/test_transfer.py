"""send_files / receive_files against the `udt` tool's `udt recv` and `udt send`."""

import os
import threading

import pytest

import udt
from conftest import free_port, run_tool, wait_for_line


def make_tree(root):
    """A file and a small tree with a nested directory; returns {relative path: bytes}."""
    files = {
        "single.bin": os.urandom(2 * (1 << 20) + 3),
        "tree/a.txt": b"alpha\n",
        "tree/sub/b.bin": os.urandom(50_000),
    }
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return files


def test_send_files_to_a_running_udt_recv(udt_bin, tmp_path, key_file):
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    out.mkdir()
    files = make_tree(src)
    port = free_port()
    recv = run_tool(udt_bin, "recv", "--listen", f"127.0.0.1:{port}", "--out", out, "--key-file", key_file)
    try:
        wait_for_line(recv, "listening on")
        events = []
        report = udt.send_files(
            [src / "single.bin", src / "tree"], ("127.0.0.1", port), key=key_file, progress=events.append
        )
        assert recv.wait(30) == 0, recv.stderr.read()
    finally:
        recv.kill()
    assert report["files"] == 3 and report["sent"] == 3 and report["failed"] == []
    assert report["bytes"] == sum(len(d) for d in files.values())
    for rel, data in files.items():
        assert (out / rel).read_bytes() == data, rel
    kinds = [e["kind"] for e in events]
    assert "session_started" in kinds and "data_started" in kinds and "moved" in kinds
    done = [e for e in events if e["kind"] == "file_done"]
    assert len(done) == 3
    single = next(e for e in done if e["path"] == "single.bin")
    assert single["blake3"] and single["bytes"] == len(files["single.bin"])
    assert sum(e["bytes"] for e in events if e["kind"] == "moved") == report["bytes"]


def test_receive_files_from_udt_send(udt_bin, tmp_path, key_file):
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    out.mkdir()
    files = make_tree(src)
    senders = []

    def start_sender(addr):
        host, port = addr
        senders.append(
            run_tool(udt_bin, "send", src / "single.bin", src / "tree", f"{host}:{port}", "--key-file", key_file)
        )

    events = []
    # The key as bytes: the same secret as the file `udt send` reads.
    report = udt.receive_files(
        out,
        listen=("127.0.0.1", 0),
        key=open(key_file, "rb").read(),
        ready=start_sender,
        progress=events.append,
        timeout=30,
    )
    sender = senders[0]
    assert sender.wait(30) == 0, sender.stderr.read()
    assert report["files"] == 3 and report["stored"] == 3 and report["failed"] == []
    assert report["peer"][0] == "127.0.0.1"
    for rel, data in files.items():
        assert (out / rel).read_bytes() == data, rel
    done = {e["path"]: e for e in events if e["kind"] == "file_done"}
    assert len(done["single.bin"]["blake3"]) == 64 and done["single.bin"]["bytes"] == len(files["single.bin"])


def test_send_files_with_a_wrong_key_raises_authentication_error(udt_bin, tmp_path, key_file, other_key_file):
    (tmp_path / "f").write_bytes(b"data")
    out = tmp_path / "out"
    out.mkdir()
    port = free_port()
    recv = run_tool(udt_bin, "recv", "--listen", f"127.0.0.1:{port}", "--out", out, "--key-file", key_file)
    try:
        wait_for_line(recv, "listening on")
        with pytest.raises(udt.AuthenticationError):
            udt.send_files([tmp_path / "f"], ("127.0.0.1", port), key=other_key_file, timeout=10)
    finally:
        recv.kill()
        recv.wait()
    assert not (out / "f").exists()


def test_send_files_between_two_scripts_with_a_code_phrase(tmp_path):
    (tmp_path / "f.bin").write_bytes(os.urandom(10_000))
    out = tmp_path / "out"
    out.mkdir()
    code = "4821-orbit-maple-tunnel"
    results = {}
    threads = []

    def send(addr):
        def run():
            results["send"] = udt.send_files([tmp_path / "f.bin"], addr, code=code)

        threads.append(threading.Thread(target=run))
        threads[0].start()

    report = udt.receive_files(out, listen=("127.0.0.1", 0), code=code, ready=send, timeout=30)
    threads[0].join(30)
    assert results["send"]["sent"] == 1
    assert report["stored"] == 1
    assert (out / "f.bin").read_bytes() == (tmp_path / "f.bin").read_bytes()


def test_a_rerun_skips_the_files_the_receiver_holds_already(tmp_path):
    (tmp_path / "f.bin").write_bytes(os.urandom(10_000))
    out = tmp_path / "out"
    out.mkdir()
    code = "5930-pebble-quartz-meadow"
    reports = []
    for _ in range(2):
        sent = {}
        events = []

        def send(addr):
            def run():
                sent["report"] = udt.send_files([tmp_path / "f.bin"], addr, code=code, progress=events.append)

            thread = threading.Thread(target=run)
            thread.start()
            sent["thread"] = thread

        received = udt.receive_files(out, listen=("127.0.0.1", 0), code=code, ready=send, timeout=30)
        sent["thread"].join(30)
        reports.append((sent["report"], received, events))
    (first, first_received, _), (again, again_received, events) = reports
    assert (first["sent"], first["skipped"], first_received["stored"]) == (1, 0, 1)
    assert (again["sent"], again["skipped"], again["failed"]) == (0, 1, [])
    assert again_received["skipped"] == 1
    unchanged = [e for e in events if e["kind"] == "unchanged"]
    assert [e["path"] for e in unchanged] == ["f.bin"], events


def test_a_transfer_needs_a_credential_or_insecure(tmp_path):
    with pytest.raises(ValueError):
        udt.send_files([tmp_path], ("127.0.0.1", 9))
    with pytest.raises(ValueError):
        udt.receive_files(tmp_path, listen=("127.0.0.1", 0))
    with pytest.raises(ValueError):
        udt.receive_files(tmp_path, listen=("127.0.0.1", 0), insecure=True, key=b"k" * 32)


def test_sending_nothing_that_exists_is_a_transfer_error(tmp_path):
    with pytest.raises(udt.TransferError):
        udt.send_files([tmp_path / "missing"], ("127.0.0.1", 9), insecure=True)


def test_receiving_into_a_missing_directory_is_a_transfer_error(tmp_path):
    with pytest.raises(udt.Error):
        udt.receive_files(tmp_path / "missing", listen=("127.0.0.1", 0), insecure=True)
