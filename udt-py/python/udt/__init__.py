"""UDT (UDP-based Data Transfer) for Python.

A socket-like API over the Rust runtime of this project, and the file transfer protocol of
``udt send``/``udt recv``::

    import udt

    with udt.listen(("127.0.0.1", 9000)) as listener:
        ...                                   # in another thread or process:
        # with udt.connect(("127.0.0.1", 9000)) as s: s.sendall(b"hello")
        conn, peer = listener.accept()
        print(conn.recv(5))

Blocking calls release the GIL, honour the stream's timeout (``settimeout``) and are
interrupted by Ctrl-C. Errors are :class:`udt.Error` (an :class:`OSError`) and its
subclasses. See docs/python.md.
"""

from ._errors import (
    AddressInUseError,
    AuthenticationError,
    BrokenPipeError,
    ConnectionAbortedError,
    ConnectionRefusedError,
    ConnectionResetError,
    Error,
    NotConnectedError,
    SecurityError,
    TimeoutError,
    TransferError,
)
from ._udt import (
    SLICE_SECONDS,
    Listener,
    Stream,
    __version__,
    connect,
    listen,
    receive_files,
    send_files,
)

from . import _errors

__all__ = [
    "connect",
    "listen",
    "send_files",
    "receive_files",
    "Stream",
    "Listener",
    *_errors.__all__,
    "SLICE_SECONDS",
    "__version__",
]
