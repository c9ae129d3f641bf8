"""The exceptions of the udt package.

Every error is a :class:`udt.Error`, a subclass of :class:`OSError` whose ``errno`` is set
where one fits. The subclasses also subclass the builtin exception a socket program already
catches: :class:`udt.TimeoutError` is a :class:`TimeoutError`, :class:`udt.ConnectionResetError`
a :class:`ConnectionResetError`, and so on.
"""

import builtins

__all__ = [
    "Error",
    "TimeoutError",
    "ConnectionRefusedError",
    "ConnectionResetError",
    "ConnectionAbortedError",
    "BrokenPipeError",
    "NotConnectedError",
    "AuthenticationError",
    "SecurityError",
    "AddressInUseError",
    "TransferError",
]


class Error(OSError):
    """An error of the udt package (an :class:`OSError`, with ``errno`` where one fits)."""


class TimeoutError(Error, builtins.TimeoutError):
    """A blocking call ran out of time (its timeout, or the peer never answered)."""


class ConnectionRefusedError(Error, builtins.ConnectionRefusedError):
    """The peer refused the connection (its version, socket type or connection limit)."""


class ConnectionResetError(Error, builtins.ConnectionResetError):
    """The peer stopped answering: the connection is lost."""


class ConnectionAbortedError(Error, builtins.ConnectionAbortedError):
    """The connection was aborted."""


class BrokenPipeError(Error, builtins.BrokenPipeError):
    """The peer closed the connection."""


class NotConnectedError(Error):
    """The stream or listener is closed, or not connected yet (``errno`` ENOTCONN)."""


class AuthenticationError(Error, builtins.PermissionError):
    """The key agreement failed: the peer holds another key or code phrase (``errno`` EACCES).

    A listener with a code phrase is spent by the first wrong guess and raises this for good.
    """


class SecurityError(Error):
    """The key agreement could not run: one end is secured and the other not, or the
    exchange was malformed or tampered with (``errno`` EPROTO)."""


class AddressInUseError(Error):
    """The address to listen on is taken (``errno`` EADDRINUSE)."""


class TransferError(Error):
    """A file transfer (``send_files``/``receive_files``) broke off: the peer is not a
    receiver or sender of the protocol, refused or stopped the session, or broke the protocol."""
