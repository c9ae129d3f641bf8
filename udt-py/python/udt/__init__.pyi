"""Type stubs of the udt package (the extension module udt._udt and its exceptions)."""

import os
from types import TracebackType
from typing import Any, Callable, Dict, Iterable, Literal, Optional, Tuple, Type, Union

from ._errors import (
    AddressInUseError as AddressInUseError,
    AuthenticationError as AuthenticationError,
    BrokenPipeError as BrokenPipeError,
    ConnectionAbortedError as ConnectionAbortedError,
    ConnectionRefusedError as ConnectionRefusedError,
    ConnectionResetError as ConnectionResetError,
    Error as Error,
    NotConnectedError as NotConnectedError,
    SecurityError as SecurityError,
    TimeoutError as TimeoutError,
    TransferError as TransferError,
)

Address = Union[Tuple[str, int], str]
"""``(host, port)`` or ``"host:port"``."""
Key = Union[bytes, str, "os.PathLike[str]"]
"""The shared secret's bytes, or the path of a key file (as ``udt ... --key-file``)."""
Mode = Literal["stream", "message"]
Event = Dict[str, Any]
"""A transfer event: ``{"kind": "data_started" | "moved" | "file_done" | ..., ...}``."""
FileArg = Union[str, "os.PathLike[str]", Any]

__version__: str
SLICE_SECONDS: float
"""Longest a blocking call waits before running Python's signal handlers."""

class Stream:
    """A UDT connection: socket-like in stream mode, whole messages in message mode."""

    @property
    def closed(self) -> bool: ...
    @property
    def mode(self) -> Mode: ...
    @property
    def local_addr(self) -> Tuple[str, int]: ...
    @property
    def peer_addr(self) -> Tuple[str, int]: ...
    def getsockname(self) -> Tuple[str, int]: ...
    def getpeername(self) -> Tuple[str, int]: ...
    def send(self, data: Union[bytes, bytearray, memoryview]) -> int:
        """Send some of ``data``; returns how many bytes were taken."""
    def sendall(self, data: Union[bytes, bytearray, memoryview]) -> None:
        """Send all of ``data`` (the timeout limits the whole call)."""
    def recv(self, bufsize: int) -> bytes:
        """At most ``bufsize`` bytes; ``b""`` at the end of the stream."""
    def recv_into(self, buffer: Union[bytearray, memoryview, Any], nbytes: int = 0) -> int:
        """Receive into a writable buffer; returns the bytes received (0 at the end)."""
    def send_msg(self, data: Union[bytes, bytearray, memoryview], ttl: Optional[float] = None, in_order: bool = True) -> None:
        """Send one message (message mode), dropped unless delivered within ``ttl`` seconds."""
    def recv_msg(self, bufsize: int = 1048576) -> bytes:
        """One whole message (message mode); ``b""`` once the peer closed."""
    def sendfile(self, file: FileArg, offset: int = 0, count: Optional[int] = None) -> int:
        """Send a byte range of a file (object or path); returns the bytes sent."""
    def recvfile(self, file: FileArg, count: int, offset: int = 0) -> int:
        """Receive ``count`` bytes into a file (object or path) at ``offset``."""
    def settimeout(self, timeout: Optional[float]) -> None: ...
    def gettimeout(self) -> Optional[float]: ...
    def stats(self, clear: bool = False) -> Dict[str, Any]:
        """Performance counters (UDT4 ``perfmon``): totals, instant values, ``interval``."""
    def close(self) -> None:
        """Deliver what is buffered (up to the linger time), then shut down."""
    def __enter__(self) -> "Stream": ...
    def __exit__(
        self,
        kind: Optional[Type[BaseException]],
        value: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> bool: ...

class Listener:
    """A listening UDT socket."""

    @property
    def closed(self) -> bool: ...
    @property
    def local_addr(self) -> Tuple[str, int]: ...
    def getsockname(self) -> Tuple[str, int]: ...
    def accept(self) -> Tuple[Stream, Tuple[str, int]]:
        """The next connection and its peer's address."""
    def settimeout(self, timeout: Optional[float]) -> None: ...
    def gettimeout(self) -> Optional[float]: ...
    def close(self) -> None: ...
    def __enter__(self) -> "Listener": ...
    def __exit__(
        self,
        kind: Optional[Type[BaseException]],
        value: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> bool: ...

def connect(
    addr: Address,
    *,
    cc: Optional[str] = None,
    key: Optional[Key] = None,
    code: Optional[str] = None,
    timeout: Optional[float] = None,
    mode: Optional[Mode] = None,
    mss: Optional[int] = None,
    peer_timeout: Optional[float] = None,
) -> Stream:
    """Connect to a UDT listener; ``key``/``code`` secure the connection."""

def listen(
    addr: Address,
    *,
    backlog: Optional[int] = None,
    cc: Optional[str] = None,
    key: Optional[Key] = None,
    code: Optional[str] = None,
    mode: Optional[Mode] = None,
    mss: Optional[int] = None,
    peer_timeout: Optional[float] = None,
) -> Listener:
    """Listen for UDT connections (port 0: a free one, see ``local_addr``)."""

def send_files(
    paths: Iterable[Union[str, "os.PathLike[str]"]],
    addr: Address,
    *,
    key: Optional[Key] = None,
    code: Optional[str] = None,
    insecure: bool = False,
    progress: Optional[Callable[[Event], None]] = None,
    timeout: Optional[float] = None,
) -> Dict[str, Any]:
    """Send files and trees to ``udt recv`` (or ``receive_files``); a report dict."""

def receive_files(
    out: Union[str, "os.PathLike[str]"],
    *,
    listen: Address,
    key: Optional[Key] = None,
    code: Optional[str] = None,
    insecure: bool = False,
    progress: Optional[Callable[[Event], None]] = None,
    ready: Optional[Callable[[Tuple[str, int]], None]] = None,
    timeout: Optional[float] = None,
    force: bool = False,
    allow_dotfiles: bool = False,
    max_size: Optional[int] = None,
) -> Dict[str, Any]:
    """Receive one transfer from ``udt send`` (or ``send_files``) into ``out``; a report dict."""
