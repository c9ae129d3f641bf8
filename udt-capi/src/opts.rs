//! `setsockopt` / `getsockopt` with UDT4's option numbers (`UDTOpt`) and value layouts: `int`
//! for sizes and times, `bool` (one byte) for flags, `struct linger` for `UDT_LINGER`,
//! `int64_t` for `UDT_MAXBW`; plus `UDT_CC` by name and the security credentials.
//!
//! Options that shape the UDP socket or the protocol (MSS, buffers, flow window, congestion
//! control, rendezvous, address reuse) can change only before `bind`/`connect`/`listen`
//! (`EBOUNDSOCK` or `ECONNSOCK` after, as in UDT4); blocking flags, timeouts and linger at any
//! time; `UDT_MAXBW` only before connecting (UDT4 also changes a running connection's).

use std::time::Duration;

use udt::secure::Credential;

use crate::error::{self, Result, UdtError};
use crate::socket::{self, SockOpts, State};

/// UDT4's option numbers (`enum UDTOpt` of udt.h).
#[repr(C)]
#[allow(non_camel_case_types, clippy::upper_case_acronyms)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UDTOpt {
    /// Maximum packet size, IP and UDP headers included (int, bytes; default 1500).
    UDT_MSS = 0,
    /// Blocking sends (bool; default true).
    UDT_SNDSYN = 1,
    /// Blocking receives (bool; default true).
    UDT_RCVSYN = 2,
    /// Congestion control: here a specification string (`"cubic"`, `"blast:rate=500m"`).
    UDT_CC = 3,
    /// Flow window (int, packets).
    UDT_FC = 4,
    /// Send buffer (int, bytes).
    UDT_SNDBUF = 5,
    /// Receive buffer (int, bytes).
    UDT_RCVBUF = 6,
    /// Linger on close (`struct linger`; default on, 180 s).
    UDT_LINGER = 7,
    /// UDP send buffer (int, bytes).
    UDP_SNDBUF = 8,
    /// UDP receive buffer (int, bytes).
    UDP_RCVBUF = 9,
    /// Not supported (UDT4 4.11 ignores it too).
    UDT_MAXMSG = 10,
    /// Not supported (UDT4 4.11 ignores it too).
    UDT_MSGTTL = 11,
    /// Rendezvous connection setup (bool).
    UDT_RENDEZVOUS = 12,
    /// Send timeout (int, ms; -1: forever).
    UDT_SNDTIMEO = 13,
    /// Receive timeout (int, ms; -1: forever).
    UDT_RCVTIMEO = 14,
    /// Share the UDP port (bool).
    UDT_REUSEADDR = 15,
    /// Rate limit (int64_t, bytes/s; -1: none).
    UDT_MAXBW = 16,
    /// The socket's `UDTSTATUS` (int32, read only).
    UDT_STATE = 17,
    /// Readiness flags, `UDT_EPOLL_*` (int32, read only).
    UDT_EVENT = 18,
    /// Bytes sent and not yet acknowledged (int32, read only).
    UDT_SNDDATA = 19,
    /// Bytes ready to read (int32, read only).
    UDT_RCVDATA = 20,
}

/// The `struct linger` of `UDT_LINGER`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Linger {
    on: i32,
    secs: i32,
}

fn int(v: &[u8]) -> Result<i32> {
    let b: [u8; 4] =
        v.get(..4).and_then(|b| b.try_into().ok()).ok_or(UdtError::new(error::UDT_ERR_INVPARAM))?;
    Ok(i32::from_ne_bytes(b))
}

fn long(v: &[u8]) -> Result<i64> {
    let b: [u8; 8] =
        v.get(..8).and_then(|b| b.try_into().ok()).ok_or(UdtError::new(error::UDT_ERR_INVPARAM))?;
    Ok(i64::from_ne_bytes(b))
}

fn flag(v: &[u8]) -> Result<bool> {
    v.first().map(|b| *b != 0).ok_or(UdtError::new(error::UDT_ERR_INVPARAM))
}

fn positive(v: &[u8]) -> Result<u32> {
    u32::try_from(int(v)?).ok().filter(|v| *v > 0).ok_or(UdtError::new(error::UDT_ERR_INVPARAM))
}

fn timeout(ms: i32) -> Option<Duration> {
    u64::try_from(ms).ok().map(Duration::from_millis)
}

/// Check that a protocol option may still change in `state`.
fn before_open(state: &State) -> Result<()> {
    match state {
        State::Init => Ok(()),
        State::Bound { .. } | State::Listening(_) => Err(UdtError::new(error::UDT_ERR_BOUNDSOCK)),
        State::Connecting | State::Connected(_) => Err(UdtError::new(error::UDT_ERR_CONNSOCK)),
    }
}

/// Check that an option that needs no UDP socket may still change in `state`.
fn before_connect(state: &State) -> Result<()> {
    match state {
        State::Connecting | State::Connected(_) => Err(UdtError::new(error::UDT_ERR_CONNSOCK)),
        _ => Ok(()),
    }
}

/// Packets of `bytes`, for the buffers sized in bytes (UDT4 divides by MSS - 28).
fn packets(bytes: u32, mss: u32) -> u32 {
    bytes / mss.saturating_sub(28).max(1)
}

/// Change option `opt` of `u` to `value`.
pub fn set(u: i32, opt: i32, value: &[u8]) -> Result<()> {
    socket::update_opts(u, |state, o| set_on(state, o, opt, value))
}

fn set_on(state: &State, o: &mut SockOpts, opt: i32, value: &[u8]) -> Result<()> {
    let mut next = o.options.clone();
    let config = &mut next.config;
    match opt {
        0 => {
            before_open(state)?;
            config.mss = positive(value)?;
        }
        1 => o.snd_syn = flag(value)?,
        2 => o.rcv_syn = flag(value)?,
        3 => {
            before_connect(state)?;
            let spec = std::str::from_utf8(value).map_err(|_| UdtError::new(error::UDT_ERR_INVPARAM))?;
            next.set_congestion_control(spec.trim_end_matches('\0'))
                .map_err(|_| UdtError::new(error::UDT_ERR_INVPARAM))?;
        }
        4 => {
            before_connect(state)?;
            config.flow_window = positive(value)?;
        }
        5 => {
            before_open(state)?;
            config.send_buffer_pkts = packets(positive(value)?, config.mss);
        }
        6 => {
            before_open(state)?;
            config.recv_buffer_pkts = packets(positive(value)?, config.mss);
        }
        7 => {
            let l = Linger { on: int(value)?, secs: int(value.get(4..).unwrap_or_default())? };
            let secs = u64::try_from(l.secs).map_err(|_| UdtError::new(error::UDT_ERR_INVPARAM))?;
            config.linger = (l.on != 0).then(|| Duration::from_secs(secs));
        }
        8 => {
            before_open(state)?;
            next.udp_send_buffer = positive(value)? as usize;
        }
        9 => {
            before_open(state)?;
            next.udp_recv_buffer = positive(value)? as usize;
        }
        12 => {
            before_connect(state)?;
            o.rendezvous = flag(value)?;
        }
        13 => o.snd_timeo = timeout(int(value)?),
        14 => o.rcv_timeo = timeout(int(value)?),
        15 => {
            before_open(state)?;
            next.reuse_address = flag(value)?;
        }
        16 => {
            before_connect(state)?;
            config.max_bandwidth = u64::try_from(long(value)?).ok().filter(|v| *v > 0);
        }
        _ => return Err(UdtError::new(error::UDT_ERR_INVPARAM)),
    }
    next.config.validate().map_err(|_| UdtError::new(error::UDT_ERR_INVPARAM))?;
    o.options = next;
    Ok(())
}

/// The value of option `opt` of `u`, in UDT4's layout.
pub fn get(u: i32, opt: i32) -> Result<Vec<u8>> {
    let int = |v: i64| i32::try_from(v).unwrap_or(i32::MAX).to_ne_bytes().to_vec();
    let ms = |t: Option<Duration>| t.map_or(-1, |t| t.as_millis() as i64);
    match opt {
        17 => return Ok(int(socket::state(u).into())),
        18 => return Ok(int(socket::events(u).into())),
        19 | 20 => {
            let (snd, rcv) = crate::io::buffered(u)?;
            return Ok(int(if opt == 19 { snd } else { rcv } as i64));
        }
        _ => {}
    }
    let opts = socket::update_opts(u, |_, o| Ok(o.clone()))?;
    let config = &opts.options.config;
    let payload = i64::from(config.mss.saturating_sub(28));
    Ok(match opt {
        0 => int(config.mss.into()),
        1 => vec![u8::from(opts.snd_syn)],
        2 => vec![u8::from(opts.rcv_syn)],
        3 => opts.options.config.cc.build().name().as_bytes().iter().copied().chain([0]).collect(),
        4 => int(config.flow_window.into()),
        5 => int(i64::from(config.send_buffer_pkts) * payload),
        6 => int(i64::from(config.recv_buffer_pkts) * payload),
        7 => {
            let l = config.linger.map_or(Linger { on: 0, secs: 0 }, |d| Linger {
                on: 1,
                secs: i32::try_from(d.as_secs()).unwrap_or(i32::MAX),
            });
            [l.on.to_ne_bytes(), l.secs.to_ne_bytes()].concat()
        }
        8 => int(opts.options.udp_send_buffer as i64),
        9 => int(opts.options.udp_recv_buffer as i64),
        12 => vec![u8::from(opts.rendezvous)],
        13 => int(ms(opts.snd_timeo)),
        14 => int(ms(opts.rcv_timeo)),
        15 => vec![u8::from(opts.options.reuse_address)],
        16 => {
            config.max_bandwidth.map_or(-1, |b| i64::try_from(b).unwrap_or(i64::MAX)).to_ne_bytes().to_vec()
        }
        _ => return Err(UdtError::new(error::UDT_ERR_INVPARAM)),
    })
}

/// Secure the socket's connections with `credential` (off by default, as UDT4 has none): set
/// before `connect` or `listen`; the peer must be a `udt` end with the same credential.
pub fn set_credential(u: i32, credential: Credential) -> Result<()> {
    socket::update_opts(u, |state, o| {
        before_connect(state)?;
        if matches!(state, State::Listening(_)) {
            return Err(UdtError::new(error::UDT_ERR_BOUNDSOCK));
        }
        o.options.security = Some(credential);
        Ok(())
    })
}
