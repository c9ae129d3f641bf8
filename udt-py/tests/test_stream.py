"""Streams and listeners: byte-exact data, message mode, files, stats, timeouts, errors."""

import errno
import hashlib
import os
import threading
import time

import pytest

import udt


def pair(**kwargs):
    """A listener on a free loopback port, a connected client and the accepted server end."""
    listener = udt.listen(("127.0.0.1", 0), **{k: v for k, v in kwargs.items() if k != "timeout"})
    accepted = {}

    def accept():
        accepted["conn"] = listener.accept()

    t = threading.Thread(target=accept)
    t.start()
    client = udt.connect(listener.local_addr, **kwargs)
    t.join(10)
    assert "conn" in accepted, "accept did not return"
    server, peer = accepted["conn"]
    assert peer[1] == client.local_addr[1]
    return listener, client, server


def test_a_small_message_arrives_byte_exact_and_the_end_reads_empty():
    listener, client, server = pair()
    with listener, client, server:
        client.sendall(b"hello, udt")
        got = b""
        while len(got) < 10:
            got += server.recv(100)
        assert got == b"hello, udt"
        server.sendall(bytearray(b"back"))
        assert client.recv(4) == b"back"
        client.close()
        assert server.recv(10) == b""


def test_a_hundred_megabytes_arrive_byte_exact_through_recv_into():
    total = 100 * 1000 * 1000
    block = os.urandom(1 << 20)
    listener, client, server = pair()
    sent = hashlib.sha256()

    def send():
        left = total
        i = 0
        while left:
            chunk = (block[i % 7 :] + block[: i % 7])[: min(left, len(block))]
            sent.update(chunk)
            client.sendall(memoryview(chunk))
            left -= len(chunk)
            i += 1
        client.close()

    t = threading.Thread(target=send)
    t.start()
    got = hashlib.sha256()
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    received = 0
    while True:
        n = server.recv_into(buf)
        if n == 0:
            break
        got.update(view[:n])
        received += n
    t.join(30)
    assert received == total
    assert got.hexdigest() == sent.hexdigest()
    server.close()
    listener.close()


def test_recv_into_fills_a_memoryview_and_honours_nbytes():
    listener, client, server = pair()
    with listener, client, server:
        client.sendall(b"abcdef")
        target = bytearray(b"......")
        view = memoryview(target)[1:]
        n = server.recv_into(view, 3)
        assert 1 <= n <= 3
        assert target[1 : 1 + n] == b"abc"[:n]
        with pytest.raises(ValueError):
            server.recv_into(bytearray(2), 5)


def test_message_mode_keeps_message_boundaries():
    listener, client, server = pair(mode="message")
    with listener, client, server:
        assert client.mode == "message" and server.mode == "message"
        messages = [b"one", os.urandom(100_000), b"three" * 10]
        for m in messages:
            client.send_msg(m, ttl=None, in_order=True)
        client.send_msg(b"with a ttl", ttl=5.0)
        for m in messages + [b"with a ttl"]:
            assert server.recv_msg() == m


def test_a_stream_call_on_a_message_connection_is_an_error():
    listener, client, server = pair(mode="message")
    with listener, client, server:
        with pytest.raises(udt.Error):
            client.sendall(b"bytes")


def test_sendfile_and_recvfile_move_a_byte_range(tmp_path):
    source = tmp_path / "source.bin"
    data = os.urandom(3 * (1 << 20) + 17)
    source.write_bytes(data)
    listener, client, server = pair()
    with listener, client, server:
        with open(source, "rb") as f:
            sender = threading.Thread(target=lambda: client.sendfile(f, offset=5, count=len(data) - 10))
            sender.start()
            dest = tmp_path / "dest.bin"
            with open(dest, "wb") as out:
                assert server.recvfile(out, len(data) - 10) == len(data) - 10
                assert out.tell() == len(data) - 10
            sender.join(10)
            assert f.tell() == len(data) - 5
        assert dest.read_bytes() == data[5:-5]
        # A path works as well.
        t = threading.Thread(target=lambda: client.sendfile(str(source)))
        t.start()
        assert server.recvfile(tmp_path / "by-path.bin", len(data)) == len(data)
        t.join(10)
        assert (tmp_path / "by-path.bin").read_bytes() == data


def test_stats_hold_the_counters():
    listener, client, server = pair()
    with listener, client, server:
        client.sendall(b"x" * 100_000)
        got = 0
        while got < 100_000:
            got += len(server.recv(1 << 16))
        stats = client.stats()
        for key in [
            "pkts_sent", "bytes_sent", "retransmits", "acks_recv", "naks_recv", "rtt_us",
            "send_period_us", "flow_window", "congestion_window", "elapsed", "send_mbps",
            "recv_mbps", "cc", "interval", "interval_len",
        ]:
            assert key in stats, key
        assert stats["bytes_sent"] >= 100_000
        assert server.stats()["bytes_recv"] >= 100_000
        assert isinstance(stats["interval"], dict) and "pkts_sent" in stats["interval"]
        assert client.stats(clear=True)["interval"]["pkts_sent"] >= 0


def test_a_recv_timeout_raises_udt_timeout_error():
    listener, client, server = pair()
    with listener, client, server:
        server.settimeout(0.3)
        assert server.gettimeout() == pytest.approx(0.3)
        start = time.monotonic()
        with pytest.raises(udt.TimeoutError) as caught:
            server.recv(10)
        took = time.monotonic() - start
        assert 0.29 <= took < 5.0, took
        e = caught.value
        assert isinstance(e, TimeoutError) and isinstance(e, OSError) and isinstance(e, udt.Error)
        assert e.errno == errno.ETIMEDOUT
        # The stream still works after a timeout.
        client.sendall(b"late")
        assert server.recv(4) == b"late"


def test_an_accept_timeout_and_a_connect_to_nobody_time_out():
    with udt.listen(("127.0.0.1", 0)) as listener:
        listener.settimeout(0.2)
        with pytest.raises(udt.TimeoutError):
            listener.accept()
    with udt.listen(("127.0.0.1", 0)) as gone:
        addr = gone.local_addr
    start = time.monotonic()
    with pytest.raises(udt.TimeoutError):
        udt.connect(addr, timeout=0.5)
    assert time.monotonic() - start < 3.0


def test_calls_on_closed_objects_raise_not_connected():
    listener, client, server = pair()
    server.close()
    client.close()
    client.close()  # twice: nothing
    assert client.closed
    with pytest.raises(udt.NotConnectedError) as caught:
        client.send(b"x")
    assert caught.value.errno == errno.ENOTCONN
    listener.close()
    with pytest.raises(udt.NotConnectedError):
        listener.accept()


def test_a_wrong_key_raises_authentication_error(key_file, other_key_file):
    with udt.listen(("127.0.0.1", 0), key=key_file) as listener:
        failures = []

        def accept():
            try:
                listener.accept()
            except udt.Error as e:
                failures.append(e)

        t = threading.Thread(target=accept)
        t.start()
        with pytest.raises(udt.AuthenticationError) as caught:
            udt.connect(listener.local_addr, key=other_key_file, timeout=10)
        assert isinstance(caught.value, PermissionError)
        assert caught.value.errno == errno.EACCES
        t.join(15)
        assert failures and isinstance(failures[0], udt.Error)


def test_the_same_key_as_a_path_and_as_bytes_connects(key_file):
    secret = open(key_file, "rb").read()
    listener = udt.listen(("127.0.0.1", 0), key=os.fspath(key_file))
    accepted = {}
    t = threading.Thread(target=lambda: accepted.setdefault("c", listener.accept()))
    t.start()
    with udt.connect(listener.local_addr, key=secret, timeout=10) as client:
        t.join(15)
        server, _ = accepted["c"]
        client.sendall(b"sealed")
        assert server.recv(6) == b"sealed"
        server.close()
    listener.close()


def test_a_code_phrase_connects_and_a_weak_one_is_refused():
    with pytest.raises(ValueError):
        udt.listen(("127.0.0.1", 0), code="password123")
    code = "4821-orbit-maple-tunnel"
    listener, client, server = pair(code=code)
    with listener, client, server:
        client.sendall(b"ok")
        assert server.recv(2) == b"ok"


def test_bad_arguments_are_value_errors(tmp_path):
    with pytest.raises(ValueError):
        udt.connect(("127.0.0.1", 9), cc="no-such-controller")
    with pytest.raises(ValueError):
        udt.connect(("127.0.0.1", 9), mode="datagram")
    with pytest.raises(ValueError):
        udt.connect(("127.0.0.1", 9), key=b"short")
    with pytest.raises(ValueError):
        udt.connect(("127.0.0.1", 9), key=b"0" * 32, code="4821-orbit-maple-tunnel")
    with pytest.raises(ValueError):
        udt.connect(("127.0.0.1", 9), timeout=-1)
    with pytest.raises(udt.Error):
        udt.connect(("127.0.0.1", 9), key=tmp_path / "missing.key")
    with pytest.raises(TypeError):
        udt.connect(42)


def test_a_congestion_control_by_name_is_used():
    listener, client, server = pair(cc="cubic")
    with listener, client, server:
        assert client.stats()["cc"].lower().startswith("cubic")


def test_other_threads_run_while_a_call_blocks():
    listener, client, server = pair()
    with listener, client, server:
        ticks = []
        stop = threading.Event()

        def tick():
            while not stop.is_set():
                ticks.append(1)
                time.sleep(0.01)

        t = threading.Thread(target=tick)
        t.start()
        server.settimeout(1.0)
        with pytest.raises(udt.TimeoutError):
            server.recv(1)
        stop.set()
        t.join()
        assert len(ticks) >= 10


def test_the_exceptions_subclass_the_builtins():
    assert issubclass(udt.Error, OSError)
    assert issubclass(udt.TimeoutError, TimeoutError)
    assert issubclass(udt.ConnectionResetError, ConnectionResetError)
    assert issubclass(udt.ConnectionRefusedError, ConnectionRefusedError)
    assert issubclass(udt.BrokenPipeError, BrokenPipeError)
    assert issubclass(udt.AuthenticationError, PermissionError)
    for cls in [udt.TimeoutError, udt.NotConnectedError, udt.TransferError, udt.SecurityError]:
        assert issubclass(cls, udt.Error)
