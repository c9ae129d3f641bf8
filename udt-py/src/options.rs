//! The keyword arguments `connect`, `listen` and the transfers share, turned into the
//! runtime's [`Options`]: addresses, congestion control, mode, MSS, the peer's idle timeout and
//! the credential (`key=`, `code=`).
//!
//! A key is derived from a key file's bytes exactly as the `udt` tool derives it from
//! `--key-file` (trailing whitespace dropped, at least 16 bytes, a typed passphrase strong
//! enough, BLAKE3 key derivation), so a script and `udt send`/`udt recv` given the same file
//! agree.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use udt::secure::key_file::KEY_FILE_MAX;
use udt::secure::{Credential, KeyFileError};
use udt::{Mode, Options};
use zeroize::Zeroizing;

use crate::errors::{self, value_error};

/// An address as Python code gives one: a `(host, port)` tuple, or a `"host:port"` string.
pub fn resolve(py: Python<'_>, addr: &Bound<'_, PyAny>) -> PyResult<SocketAddr> {
    let target: String = if let Ok(tuple) = addr.cast::<PyTuple>() {
        let (host, port): (String, u16) = tuple.extract()?;
        if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        }
    } else if let Ok(text) = addr.extract::<String>() {
        text
    } else {
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "an address is a (host, port) tuple or a \"host:port\" string",
        ));
    };
    // Resolving a host name may block on DNS.
    let found = py.detach(|| target.to_socket_addrs().map(|mut addrs| addrs.next()));
    match found {
        Ok(Some(a)) => Ok(a),
        Ok(None) => {
            Err(errors::raise(py, "Error", libc::EADDRNOTAVAIL, &format!("{target} resolved to no address")))
        }
        Err(e) => Err(errors::raise(py, "Error", libc::EINVAL, &format!("cannot resolve {target}: {e}"))),
    }
}

/// A socket address as Python's socket module gives one: `(host, port)`.
pub fn addr_tuple(addr: SocketAddr) -> (String, u16) {
    (addr.ip().to_canonical().to_string(), addr.port())
}

/// What the keyword arguments of `connect` and `listen` ask for.
#[derive(Default)]
pub struct Choice<'a, 'py> {
    /// `cc=`: a congestion-control specification, `NAME[:key=value,...]`.
    pub cc: Option<&'a str>,
    /// `key=`: the shared secret's bytes, or the path of a key file.
    pub key: Option<&'a Bound<'py, PyAny>>,
    /// `code=`: a code phrase.
    pub code: Option<&'a str>,
    /// `mode=`: `"stream"` or `"message"`.
    pub mode: Option<&'a str>,
    /// `mss=`: the maximum segment size.
    pub mss: Option<u32>,
    /// `peer_timeout=`: declare a silent peer lost after this long.
    pub peer_timeout: Option<Duration>,
    /// Whether this end listens (a code phrase it is given must then be hard to guess).
    pub listens: bool,
}

impl Choice<'_, '_> {
    /// The runtime's options for these choices.
    pub fn options(&self, py: Python<'_>) -> PyResult<Options> {
        let mut options = match self.mode.unwrap_or("stream") {
            "stream" => Options::default(),
            "message" => Options::message(),
            other => {
                return Err(value_error(format!("mode must be \"stream\" or \"message\", not {other:?}")))
            }
        };
        if let Some(spec) = self.cc {
            options
                .set_congestion_control(spec)
                .map_err(|e| value_error(format!("cc={spec:?}: {e} (`udt cc list` shows the choices)")))?;
        }
        if let Some(mss) = self.mss {
            if !(76..=65535).contains(&mss) {
                return Err(value_error(format!("mss must be between 76 and 65535, not {mss}")));
            }
            options.config.mss = mss;
        }
        if self.peer_timeout.is_some() {
            options.set_peer_idle_timeout(self.peer_timeout);
        }
        options.security = credential(py, self.key, self.code, self.listens)?;
        Ok(options)
    }
}

/// The credential `key=` or `code=` gives (`None`: neither, a plain UDT4 connection).
pub fn credential(
    py: Python<'_>,
    key: Option<&Bound<'_, PyAny>>,
    code: Option<&str>,
    listens: bool,
) -> PyResult<Option<Credential>> {
    match (key, code) {
        (Some(_), Some(_)) => Err(value_error("give key= or code=, not both")),
        (Some(key), None) => Ok(Some(key_credential(py, key)?)),
        (None, Some(code)) => {
            let code = udt::secure::handshake::normalize_code(code);
            if listens {
                udt::secure::check_code_strength(&code).map_err(|why| value_error(why.to_string()))?;
            } else if code.len() < 6 {
                return Err(value_error("a code phrase has at least 6 characters"));
            }
            Ok(Some(Credential::CodePhrase(code)))
        }
        (None, None) => Ok(None),
    }
}

/// The key `key=` gives: `bytes` are the secret itself (a key file's contents), a `str` or
/// `os.PathLike` names a key file.
fn key_credential(py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Credential> {
    if let Ok(bytes) = key.cast::<PyBytes>() {
        return key_from_bytes(Zeroizing::new(bytes.as_bytes().to_vec()), "the key");
    }
    let path: PathBuf = key.extract().map_err(|_| {
        value_error("key= is the secret as bytes, or the path of a key file (str or os.PathLike)")
    })?;
    let shown = path.display().to_string();
    let bytes = py.detach(|| read_limited(&path)).map_err(|e| {
        errors::raise(
            py,
            "Error",
            e.raw_os_error().unwrap_or(0),
            &format!("cannot read the key file {shown}: {e}"),
        )
    })?;
    key_from_bytes(bytes, &format!("the key file {shown}"))
}

/// A file's first `KEY_FILE_MAX + 1` bytes.
fn read_limited(path: &std::path::Path) -> std::io::Result<Zeroizing<Vec<u8>>> {
    use std::io::Read;
    let mut bytes = Zeroizing::new(Vec::new());
    std::fs::File::open(path)?.take(KEY_FILE_MAX as u64 + 1).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The key of a secret's bytes (`what` names them in errors), as the `udt` tool derives it
/// ([`udt::secure::key_file`]).
fn key_from_bytes(bytes: Zeroizing<Vec<u8>>, what: &str) -> PyResult<Credential> {
    udt::secure::key_from_secret(bytes).map_err(|e| {
        let fix = match e {
            KeyFileError::TooLarge => "",
            KeyFileError::TooShort(_) => " (`udt keygen FILE` writes one)",
            KeyFileError::TooWeak(_) => ": write a random key with `udt keygen FILE`",
        };
        value_error(format!("{what} {e}{fix}"))
    })
}

/// The mode a stream of these options is in.
pub fn is_message(options: &Options) -> bool {
    options.config.mode == Mode::Message
}
