//! UDT4's error codes (`CUDTException`: major * 1000 + minor, UDT4 4.11 `common.cpp`), their
//! messages, the calling thread's last error, and how the runtime's `io::Error`s map onto them.
//!
//! Invariant: every C function that returns `UDT_ERROR` (or `UDT_INVALID_SOCK`) has recorded
//! the reason with [`set_last`] on the calling thread first; a successful call leaves the last
//! error as it was (as UDT4 does).

use std::cell::{Cell, RefCell};
use std::ffi::CString;
use std::io;

pub(crate) use crate::codes::*;

/// An error of a C call: UDT4's code and the system `errno` behind it (0 if none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdtError {
    /// UDT4's code, major * 1000 + minor.
    pub code: i32,
    /// The system's errno, appended to the message as UDT4 does (0: none).
    pub errno: i32,
}

impl UdtError {
    /// An error with no system errno.
    pub const fn new(code: i32) -> Self {
        UdtError { code, errno: 0 }
    }
}

/// The result of the safe layer under the C functions.
pub type Result<T> = std::result::Result<T, UdtError>;

thread_local! {
    static LAST: Cell<UdtError> = const { Cell::new(UdtError::new(UDT_ERR_SUCCESS)) };
    static LAST_TEXT: RefCell<CString> = RefCell::new(CString::default());
}

/// Record `e` as the calling thread's last error.
pub fn set_last(e: UdtError) {
    LAST.with(|l| l.set(e));
}

/// The calling thread's last error.
pub fn last() -> UdtError {
    LAST.with(Cell::get)
}

/// Run `f` with the calling thread's last error message as a C string, kept until the thread's
/// next call of this function.
pub fn with_last_text<T>(f: impl FnOnce(&CString) -> T) -> T {
    let text = message(last());
    LAST_TEXT.with(|t| {
        let mut t = t.borrow_mut();
        *t = CString::new(text).unwrap_or_default();
        f(&t)
    })
}

/// UDT4's message for an error: `CUDTException::getErrorMessage` of 4.11, word for word.
pub fn message(e: UdtError) -> String {
    let (major, minor) = if e.code < 0 { (-1, 0) } else { (e.code / 1000, e.code % 1000) };
    let detail = |list: &[(i32, &'static str)]| -> &'static str {
        list.iter().find(|(m, _)| *m == minor).map_or("", |(_, s)| *s)
    };
    let mut text = match major {
        0 => "Success".to_string(),
        1 => {
            "Connection setup failure".to_string()
                + detail(&[
                    (1, ": connection time out"),
                    (2, ": connection rejected"),
                    (3, ": unable to create/configure UDP socket"),
                    (4, ": abort for security reasons"),
                ])
        }
        2 => detail(&[(1, "Connection was broken"), (2, "Connection does not exist")]).to_string(),
        3 => {
            "System resource failure".to_string()
                + detail(&[(1, ": unable to create new threads"), (2, ": unable to allocate buffers")])
        }
        4 => {
            "File system failure".to_string()
                + detail(&[
                    (1, ": cannot seek read position"),
                    (2, ": failure in read"),
                    (3, ": cannot seek write position"),
                    (4, ": failure in write"),
                ])
        }
        5 => "Operation not supported".to_string() + detail(OP_DETAILS),
        6 => {
            "Non-blocking call failure".to_string()
                + detail(&[(1, ": no buffer available for sending"), (2, ": no data available for reading")])
        }
        7 => "The peer side has signalled an error".to_string(),
        _ => "Unknown error".to_string(),
    };
    if major != 0 && e.errno > 0 {
        text.push_str(": ");
        // strerror's text, as UDT4 appends it (without Rust's " (os error N)").
        let system = io::Error::from_raw_os_error(e.errno).to_string();
        text.push_str(system.split(" (os error").next().unwrap_or_default());
    }
    text.push('.');
    text
}

/// The details of major code 5 (operation not supported), UDT4's spelling kept.
const OP_DETAILS: &[(i32, &str)] = &[
    (1, ": Cannot do this operation on a BOUND socket"),
    (2, ": Cannot do this operation on a CONNECTED socket"),
    (3, ": Bad parameters"),
    (4, ": Invalid socket ID"),
    (5, ": Cannot do this operation on an UNBOUND socket"),
    (6, ": Socket is not in listening state"),
    (7, ": Listen/accept is not supported in rendezous connection setup"),
    (8, ": Cannot call connect on UNBOUND socket in rendezvous connection setup"),
    (9, ": This operation is not supported in SOCK_STREAM mode"),
    (10, ": This operation is not supported in SOCK_DGRAM mode"),
    (11, ": Another socket is already listening on the same port"),
    (12, ": Message is too large to send (it must be less than the UDT send buffer size)"),
    (13, ": Invalid epoll ID"),
];

/// What an `io::Error` of the runtime means to a UDT4 caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Context {
    /// Setting up a connection (connect, rendezvous, bind, listen).
    Setup,
    /// Sending on a connection (`nonblocking`: `UDT_SNDSYN` off).
    Send {
        /// `UDT_SNDSYN` is off.
        nonblocking: bool,
    },
    /// Receiving on a connection (`nonblocking`: `UDT_RCVSYN` off).
    Recv {
        /// `UDT_RCVSYN` is off.
        nonblocking: bool,
    },
    /// Reading the file of a `sendfile`.
    FileRead,
    /// Writing the file of a `recvfile`.
    FileWrite,
}

/// The UDT4 error for an `io::Error` of the runtime in `context`.
pub fn from_io(e: &io::Error, context: Context) -> UdtError {
    use io::ErrorKind as K;
    let errno = e.raw_os_error().unwrap_or(0);
    let code = match (e.kind(), context) {
        (K::TimedOut | K::WouldBlock, Context::Send { nonblocking: true }) => UDT_ERR_ASYNCSND,
        (K::TimedOut | K::WouldBlock, Context::Recv { nonblocking: true }) => UDT_ERR_ASYNCRCV,
        (K::TimedOut, Context::Setup) => UDT_ERR_NOSERVER,
        (K::TimedOut, _) => UDT_ERR_TIMEOUT,
        (K::ConnectionRefused, _) => UDT_ERR_CONNREJ,
        (K::PermissionDenied | K::InvalidData, Context::Setup) => UDT_ERR_SECFAIL,
        (K::AddrInUse | K::AddrNotAvailable, _) => return UdtError { code: UDT_ERR_SOCKFAIL, errno },
        (
            K::ConnectionReset | K::BrokenPipe | K::UnexpectedEof,
            Context::Send { .. } | Context::Recv { .. },
        ) => UDT_ERR_CONNLOST,
        (K::NotConnected, _) => UDT_ERR_NOCONN,
        (K::InvalidInput, Context::Send { .. }) => UDT_ERR_LARGEMSG,
        (K::InvalidInput, _) => UDT_ERR_INVPARAM,
        (K::Unsupported, _) => UDT_ERR_INVOP,
        (_, Context::FileRead) => return UdtError { code: UDT_ERR_RDPERM, errno },
        (_, Context::FileWrite) => return UdtError { code: UDT_ERR_WRPERM, errno },
        (_, Context::Setup) => return UdtError { code: UDT_ERR_CONNSETUP, errno },
        _ => return UdtError { code: UDT_ERR_UNKNOWN, errno },
    };
    UdtError { code, errno: 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_udt4_s() {
        assert_eq!(
            message(UdtError::new(UDT_ERR_NOSERVER)),
            "Connection setup failure: connection time out."
        );
        assert_eq!(message(UdtError::new(UDT_ERR_CONNLOST)), "Connection was broken.");
        assert_eq!(message(UdtError::new(UDT_ERR_INVSOCK)), "Operation not supported: Invalid socket ID.");
        assert_eq!(message(UdtError::new(UDT_ERR_TIMEOUT)), "Non-blocking call failure.");
        assert_eq!(message(UdtError::new(UDT_ERR_SUCCESS)), "Success.");
        assert_eq!(message(UdtError::new(UDT_ERR_UNKNOWN)), "Unknown error.");
        assert_eq!(message(UdtError::new(UDT_ERR_CONNFAIL)), ".");
        let with_errno = message(UdtError { code: UDT_ERR_SOCKFAIL, errno: libc::EADDRINUSE });
        assert_eq!(
            with_errno,
            "Connection setup failure: unable to create/configure UDP socket: Address already in use."
        );
    }

    #[test]
    fn io_errors_map_by_context() {
        let timed_out = io::Error::from(io::ErrorKind::TimedOut);
        assert_eq!(from_io(&timed_out, Context::Setup).code, UDT_ERR_NOSERVER);
        assert_eq!(from_io(&timed_out, Context::Recv { nonblocking: false }).code, UDT_ERR_TIMEOUT);
        assert_eq!(from_io(&timed_out, Context::Recv { nonblocking: true }).code, UDT_ERR_ASYNCRCV);
        let reset = io::Error::from(io::ErrorKind::ConnectionReset);
        assert_eq!(from_io(&reset, Context::Send { nonblocking: false }).code, UDT_ERR_CONNLOST);
    }
}
