"""Ctrl-C interrupts a blocking call: SIGINT sent to the main thread while it waits."""

import signal
import threading
import time

import pytest

import udt


@pytest.fixture(autouse=True)
def python_handles_sigint():
    """Python's own SIGINT handler, whatever the test runner inherited: a process started in
    the background by a shell without job control inherits SIGINT ignored, and Python then
    keeps it ignored, so no KeyboardInterrupt would ever come."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def interrupt_soon(delay=0.3):
    """Send SIGINT to the main thread after `delay` seconds (Python's handler raises
    KeyboardInterrupt in the main thread once the blocked call runs the handlers)."""
    main = threading.main_thread().ident
    timer = threading.Timer(delay, lambda: signal.pthread_kill(main, signal.SIGINT))
    timer.start()
    return timer


def test_ctrl_c_interrupts_a_blocking_accept():
    assert threading.current_thread() is threading.main_thread()
    with udt.listen(("127.0.0.1", 0)) as listener:
        timer = interrupt_soon()
        start = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            listener.accept()
        timer.join()
        assert time.monotonic() - start < 5.0


def test_ctrl_c_interrupts_a_blocking_recv():
    listener = udt.listen(("127.0.0.1", 0))
    accepted = {}
    t = threading.Thread(target=lambda: accepted.setdefault("c", listener.accept()))
    t.start()
    client = udt.connect(listener.local_addr)
    t.join(10)
    server, _ = accepted["c"]
    with listener, client, server:
        timer = interrupt_soon()
        start = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            server.recv(100)
        timer.join()
        assert time.monotonic() - start < 5.0
        # The connection is still usable after the interruption.
        client.sendall(b"after")
        assert server.recv(5) == b"after"


def test_ctrl_c_interrupts_receive_files_waiting_for_a_sender(tmp_path):
    timer = interrupt_soon()
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        udt.receive_files(tmp_path, listen=("127.0.0.1", 0), insecure=True)
    timer.join()
    assert time.monotonic() - start < 5.0
