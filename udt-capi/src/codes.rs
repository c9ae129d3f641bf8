//! The constants of the C API: UDT4's error codes (`CUDTException`'s, major * 1000 + minor,
//! UDT4 4.11 `common.cpp`) as `UDT_ERR_*`, socket states (`UDTSTATUS`) as `UDT_STATUS_*`, and the
//! readiness flags (`EPOLLOpt`). The C++ layer (`include/udt/udt.h`) gives them UDT4's names.

use std::ffi::c_int;

/// Success (no error).
pub const UDT_ERR_SUCCESS: c_int = 0;

/// Connection setup failure.
pub const UDT_ERR_CONNSETUP: c_int = 1000;

/// Connection setup failure: connection time out.
pub const UDT_ERR_NOSERVER: c_int = 1001;

/// Connection setup failure: connection rejected.
pub const UDT_ERR_CONNREJ: c_int = 1002;

/// Connection setup failure: unable to create/configure UDP socket.
pub const UDT_ERR_SOCKFAIL: c_int = 1003;

/// Connection setup failure: abort for security reasons.
pub const UDT_ERR_SECFAIL: c_int = 1004;

/// Connection failure (no further detail).
pub const UDT_ERR_CONNFAIL: c_int = 2000;

/// Connection was broken.
pub const UDT_ERR_CONNLOST: c_int = 2001;

/// Connection does not exist.
pub const UDT_ERR_NOCONN: c_int = 2002;

/// System resource failure.
pub const UDT_ERR_RESOURCE: c_int = 3000;

/// System resource failure: unable to create new threads.
pub const UDT_ERR_THREAD: c_int = 3001;

/// System resource failure: unable to allocate buffers.
pub const UDT_ERR_NOBUF: c_int = 3002;

/// File system failure.
pub const UDT_ERR_FILE: c_int = 4000;

/// File system failure: cannot seek read position.
pub const UDT_ERR_INVRDOFF: c_int = 4001;

/// File system failure: failure in read.
pub const UDT_ERR_RDPERM: c_int = 4002;

/// File system failure: cannot seek write position.
pub const UDT_ERR_INVWROFF: c_int = 4003;

/// File system failure: failure in write.
pub const UDT_ERR_WRPERM: c_int = 4004;

/// Operation not supported.
pub const UDT_ERR_INVOP: c_int = 5000;

/// Operation not supported on a bound socket.
pub const UDT_ERR_BOUNDSOCK: c_int = 5001;

/// Operation not supported on a connected socket.
pub const UDT_ERR_CONNSOCK: c_int = 5002;

/// Bad parameters.
pub const UDT_ERR_INVPARAM: c_int = 5003;

/// Invalid socket ID.
pub const UDT_ERR_INVSOCK: c_int = 5004;

/// Operation not supported on an unbound socket.
pub const UDT_ERR_UNBOUNDSOCK: c_int = 5005;

/// Socket is not in listening state.
pub const UDT_ERR_NOLISTEN: c_int = 5006;

/// Listen/accept is not supported in rendezvous connection setup.
pub const UDT_ERR_RDVNOSERV: c_int = 5007;

/// Cannot call connect on an unbound socket in rendezvous connection setup.
pub const UDT_ERR_RDVUNBOUND: c_int = 5008;

/// This operation is not supported in SOCK_STREAM mode.
pub const UDT_ERR_STREAMILL: c_int = 5009;

/// This operation is not supported in SOCK_DGRAM mode.
pub const UDT_ERR_DGRAMILL: c_int = 5010;

/// Another socket is already listening on the same port.
pub const UDT_ERR_DUPLISTEN: c_int = 5011;

/// Message is too large to send.
pub const UDT_ERR_LARGEMSG: c_int = 5012;

/// Invalid epoll ID.
pub const UDT_ERR_INVPOLLID: c_int = 5013;

/// Non-blocking call failure.
pub const UDT_ERR_ASYNCFAIL: c_int = 6000;

/// Non-blocking call failure: no buffer available for sending.
pub const UDT_ERR_ASYNCSND: c_int = 6001;

/// Non-blocking call failure: no data available for reading.
pub const UDT_ERR_ASYNCRCV: c_int = 6002;

/// A timeout (`UDT_SNDTIMEO`, `UDT_RCVTIMEO`, `epoll_wait`) expired.
pub const UDT_ERR_TIMEOUT: c_int = 6003;

/// The peer side has signalled an error.
pub const UDT_ERR_PEERERR: c_int = 7000;

/// Unknown error.
pub const UDT_ERR_UNKNOWN: c_int = -1;

/// Created, not bound.
pub const UDT_STATUS_INIT: c_int = 1;
/// Bound.
pub const UDT_STATUS_OPENED: c_int = 2;
/// Listening.
pub const UDT_STATUS_LISTENING: c_int = 3;
/// Connecting.
pub const UDT_STATUS_CONNECTING: c_int = 4;
/// Connected.
pub const UDT_STATUS_CONNECTED: c_int = 5;
/// The connection ended: the peer closed or was lost.
pub const UDT_STATUS_BROKEN: c_int = 6;
/// Closing.
pub const UDT_STATUS_CLOSING: c_int = 7;
/// Closed.
pub const UDT_STATUS_CLOSED: c_int = 8;
/// No such socket.
pub const UDT_STATUS_NONEXIST: c_int = 9;

/// Readiness flags (UDT4's `EPOLLOpt`: the values of Linux's epoll).
#[repr(C)]
#[allow(non_camel_case_types, clippy::upper_case_acronyms)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EPOLLOpt {
    /// Data to read, or a connection to accept.
    UDT_EPOLL_IN = 0x1,
    /// Room to write.
    UDT_EPOLL_OUT = 0x4,
    /// The connection ended, or the socket is gone.
    UDT_EPOLL_ERR = 0x8,
}
