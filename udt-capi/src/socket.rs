//! The sockets behind the C handles: a process-wide table from UDT4-style integer ids to
//! sockets, each with UDT4's life cycle (created, bound, listening, connecting, connected) over
//! the runtime's `UdtListener` and `UdtStream`.
//!
//! Invariants: an id is never reused in a process; the table lock and a socket's own lock are
//! held only for bookkeeping, never across a call that blocks (connect, accept, send, recv,
//! close), so one thread blocked on a socket never stalls another thread's call on another
//! socket; a socket's stream is behind a read-write lock whose read side every data call takes
//! (several threads may send and receive at once) and whose write side only option changes and
//! `close` take.

use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, RwLock, RwLockReadGuard};
use std::time::Duration;

use udt::{Mode, Options, UdtListener, UdtStream};

use crate::error::{self, Context, Result, UdtError};

/// The first id handed out (UDT4 draws a random start; any positive value serves).
const FIRST_ID: i32 = 1 << 20;

/// UDT4's `UDTSTATUS` values.
pub(crate) mod status {
    pub(crate) use crate::codes::{
        UDT_STATUS_BROKEN as BROKEN, UDT_STATUS_CLOSED as CLOSED, UDT_STATUS_CONNECTED as CONNECTED,
        UDT_STATUS_CONNECTING as CONNECTING, UDT_STATUS_INIT as INIT, UDT_STATUS_LISTENING as LISTENING,
        UDT_STATUS_NONEXIST as NONEXIST, UDT_STATUS_OPENED as OPENED,
    };
}

/// Readiness flags (UDT4's `EPOLLOpt`).
pub(crate) mod event {
    use crate::codes::EPOLLOpt;
    /// Data to read, or a connection to accept.
    pub(crate) const IN: i32 = EPOLLOpt::UDT_EPOLL_IN as i32;
    /// Room to write.
    pub(crate) const OUT: i32 = EPOLLOpt::UDT_EPOLL_OUT as i32;
    /// The connection ended, or the socket is gone.
    pub(crate) const ERR: i32 = EPOLLOpt::UDT_EPOLL_ERR as i32;
}

/// The per-socket options the C API keeps besides the runtime's `Options`.
#[derive(Clone, Debug)]
pub struct SockOpts {
    /// The runtime's options, handed over at listen or connect.
    pub options: Options,
    /// `UDT_RENDEZVOUS`.
    pub rendezvous: bool,
    /// `UDT_SNDSYN`, `UDT_RCVSYN`: blocking sends and receives.
    pub snd_syn: bool,
    /// See `snd_syn`.
    pub rcv_syn: bool,
    /// `UDT_SNDTIMEO`, `UDT_RCVTIMEO` (`None`: forever).
    pub snd_timeo: Option<Duration>,
    /// See `snd_timeo`.
    pub rcv_timeo: Option<Duration>,
}

impl SockOpts {
    fn new(mode: Mode) -> Self {
        let mut options = if mode == Mode::Message { Options::message() } else { Options::default() };
        // UDT4's default linger: on, 180 s.
        options.config.linger = Some(Duration::from_secs(180));
        SockOpts {
            options,
            rendezvous: false,
            snd_syn: true,
            rcv_syn: true,
            snd_timeo: None,
            rcv_timeo: None,
        }
    }

    /// The timeouts a stream's blocking calls get: zero for a non-blocking socket.
    fn apply(&self, stream: &mut UdtStream) {
        stream.set_write_timeout(if self.snd_syn { self.snd_timeo } else { Some(Duration::ZERO) });
        stream.set_read_timeout(if self.rcv_syn { self.rcv_timeo } else { Some(Duration::ZERO) });
    }
}

/// A connected socket's connection.
#[derive(Debug)]
pub struct Conn {
    /// `None` once closed.
    stream: RwLock<Option<UdtStream>>,
    /// The port a bound socket connected from (it refuses incoming connections).
    _port: Option<UdtListener>,
    /// The linger the connection was opened with (its `close` waits this long).
    opened_linger: Option<Duration>,
}

impl Conn {
    /// The stream, for a data call.
    pub fn stream(&self) -> Result<RwLockReadGuard<'_, Option<UdtStream>>> {
        Ok(self.stream.read().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Where a socket is in UDT4's life cycle.
#[derive(Debug)]
pub enum State {
    /// Created.
    Init,
    /// Bound to `addr`; the port is held by `reserved` until listen or connect.
    Bound {
        /// The address, with the port chosen when bound to port 0.
        addr: SocketAddr,
        /// The port's placeholder.
        reserved: Option<UdpSocket>,
    },
    /// Listening.
    Listening(Arc<UdtListener>),
    /// A connect is under way.
    Connecting,
    /// Connected.
    Connected(Arc<Conn>),
}

/// One socket.
#[derive(Debug)]
pub struct Socket {
    /// Stream or message mode (`SOCK_STREAM` / `SOCK_DGRAM`).
    pub mode: Mode,
    inner: Mutex<Inner>,
}

/// A socket's mutable part.
#[derive(Debug)]
pub struct Inner {
    /// Life cycle.
    pub state: State,
    /// Options.
    pub opts: SockOpts,
}

impl Socket {
    /// Lock the socket's bookkeeping.
    pub fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The connection of a connected socket (`ENOCONN` otherwise).
    pub fn conn(&self) -> Result<(Arc<Conn>, SockOpts)> {
        let inner = self.lock();
        match &inner.state {
            State::Connected(c) => Ok((Arc::clone(c), inner.opts.clone())),
            _ => Err(UdtError::new(error::UDT_ERR_NOCONN)),
        }
    }
}

/// The table of sockets.
struct Table {
    next: i32,
    sockets: HashMap<i32, Arc<Socket>>,
}

static TABLE: LazyLock<Mutex<Table>> =
    LazyLock::new(|| Mutex::new(Table { next: FIRST_ID, sockets: HashMap::new() }));

fn table() -> MutexGuard<'static, Table> {
    TABLE.lock().unwrap_or_else(|e| e.into_inner())
}

fn insert(socket: Socket) -> Result<i32> {
    let mut t = table();
    let id = t.next;
    t.next = t.next.checked_add(1).ok_or(UdtError::new(error::UDT_ERR_RESOURCE))?;
    t.sockets.insert(id, Arc::new(socket));
    Ok(id)
}

/// The socket with id `u` (`EINVSOCK` if there is none).
pub fn get(u: i32) -> Result<Arc<Socket>> {
    table().sockets.get(&u).cloned().ok_or(UdtError::new(error::UDT_ERR_INVSOCK))
}

/// `socket(af, type, protocol)`: `kind` is `SOCK_STREAM` or `SOCK_DGRAM`.
pub fn create(kind: i32) -> Result<i32> {
    let mode = match kind {
        libc::SOCK_STREAM => Mode::Stream,
        libc::SOCK_DGRAM => Mode::Message,
        _ => return Err(UdtError::new(error::UDT_ERR_INVPARAM)),
    };
    insert(Socket { mode, inner: Mutex::new(Inner { state: State::Init, opts: SockOpts::new(mode) }) })
}

/// `bind`: the port is taken at once (so `getsockname` tells it), the runtime's socket is
/// opened by `listen` or `connect`.
pub fn bind(u: i32, addr: SocketAddr) -> Result<()> {
    let s = get(u)?;
    let mut inner = s.lock();
    if !matches!(inner.state, State::Init) {
        return Err(UdtError::new(error::UDT_ERR_INVOP));
    }
    let reserved = UdpSocket::bind(addr).map_err(|e| error::from_io(&e, Context::Setup))?;
    let addr = reserved.local_addr().map_err(|e| error::from_io(&e, Context::Setup))?;
    inner.state = State::Bound { addr, reserved: Some(reserved) };
    Ok(())
}

/// `listen` (the backlog is not used: the runtime's `max_accepted` bounds the queue).
pub fn listen(u: i32) -> Result<()> {
    let s = get(u)?;
    let mut inner = s.lock();
    let rendezvous = inner.opts.rendezvous;
    // UDT4's order: listening already, then not bound (connected sockets included), then
    // rendezvous.
    let addr = match &mut inner.state {
        State::Listening(_) => return Ok(()),
        State::Bound { .. } if rendezvous => return Err(UdtError::new(error::UDT_ERR_RDVNOSERV)),
        State::Bound { addr, reserved } => {
            drop(reserved.take());
            *addr
        }
        _ => return Err(UdtError::new(error::UDT_ERR_UNBOUNDSOCK)),
    };
    let listener = UdtListener::bind_with(addr, inner.opts.options.clone())
        .map_err(|e| error::from_io(&e, Context::Setup))?;
    inner.state = State::Listening(Arc::new(listener));
    Ok(())
}

/// `accept`: the new socket's id and its peer's address. Blocks (a non-blocking listener with
/// nothing waiting fails with `EASYNCRCV`, as UDT4's does).
pub fn accept(u: i32) -> Result<(i32, SocketAddr)> {
    let s = get(u)?;
    let (listener, opts) = {
        let inner = s.lock();
        if inner.opts.rendezvous {
            return Err(UdtError::new(error::UDT_ERR_RDVNOSERV));
        }
        match &inner.state {
            State::Listening(l) => (Arc::clone(l), inner.opts.clone()),
            _ => return Err(UdtError::new(error::UDT_ERR_NOLISTEN)),
        }
    };
    if !opts.rcv_syn && listener.pending() == 0 {
        return Err(UdtError::new(error::UDT_ERR_ASYNCRCV));
    }
    let (mut stream, peer) = listener.accept().map_err(|e| error::from_io(&e, Context::Setup))?;
    opts.apply(&mut stream);
    let opened_linger = opts.options.config.linger;
    let conn = Conn { stream: RwLock::new(Some(stream)), _port: None, opened_linger };
    let id = insert(Socket {
        mode: s.mode,
        inner: Mutex::new(Inner { state: State::Connected(Arc::new(conn)), opts }),
    })?;
    Ok((id, peer))
}

/// `connect` (always blocking: UDT4's non-blocking connect is not offered).
pub fn connect(u: i32, peer: SocketAddr) -> Result<()> {
    let s = get(u)?;
    let (previous, opts) = {
        let mut inner = s.lock();
        let rendezvous = inner.opts.rendezvous;
        let previous = match &mut inner.state {
            State::Init if rendezvous => return Err(UdtError::new(error::UDT_ERR_RDVUNBOUND)),
            State::Init => None,
            State::Bound { addr, reserved } => {
                drop(reserved.take());
                Some(*addr)
            }
            _ => return Err(UdtError::new(error::UDT_ERR_CONNSOCK)),
        };
        inner.state = State::Connecting;
        (previous, inner.opts.clone())
    };
    let opened = open(previous, peer, &opts);
    let mut inner = s.lock();
    match opened {
        Ok((mut stream, port)) => {
            inner.opts.apply(&mut stream);
            let opened_linger = opts.options.config.linger;
            let conn = Conn { stream: RwLock::new(Some(stream)), _port: port, opened_linger };
            inner.state = State::Connected(Arc::new(conn));
            Ok(())
        }
        Err(e) => {
            inner.state = match previous {
                Some(addr) => State::Bound { addr, reserved: None },
                None => State::Init,
            };
            Err(error::from_io(&e, Context::Setup))
        }
    }
}

/// Open the connection of `connect`: from the process's shared port, from the bound port, or
/// rendezvous.
fn open(
    bound: Option<SocketAddr>,
    peer: SocketAddr,
    opts: &SockOpts,
) -> std::io::Result<(UdtStream, Option<UdtListener>)> {
    match bound {
        Some(local) if opts.rendezvous => {
            Ok((UdtStream::rendezvous(local, peer, opts.options.clone())?, None))
        }
        Some(local) => {
            let mut options = opts.options.clone();
            // The port connects out; requests to it are refused as by a UDT4 socket that
            // does not listen.
            options.max_accepted = 0;
            let port = UdtListener::bind_with(local, options)?;
            Ok((port.connect(peer)?, Some(port)))
        }
        None => Ok((UdtStream::connect_with(peer, opts.options.clone())?, None)),
    }
}

/// `close`: the id is gone at once; a connection lingers (sends what is buffered for at most
/// `UDT_LINGER`) before this returns, as UDT4's does.
pub fn close(u: i32) -> Result<()> {
    let s = table().sockets.remove(&u).ok_or(UdtError::new(error::UDT_ERR_INVSOCK))?;
    let (state, linger) = {
        let mut inner = s.lock();
        (std::mem::replace(&mut inner.state, State::Init), inner.opts.options.config.linger)
    };
    let State::Connected(conn) = state else { return Ok(()) };
    let taken = conn.stream.write().unwrap_or_else(|e| e.into_inner()).take();
    let Some(mut stream) = taken else { return Ok(()) };
    if linger != conn.opened_linger {
        // UDT_LINGER changed after the connection opened: wait for the acknowledgements here,
        // for at most the new linger, then close.
        stream.set_write_timeout(Some(linger.unwrap_or_default()));
        if linger.is_none() || stream.flush_acknowledged().is_err() {
            drop(stream);
            return Ok(());
        }
    }
    // UDT4's close succeeds whatever the linger found (a broken connection, an expired
    // linger): the socket is gone either way.
    let _ = stream.close();
    Ok(())
}

/// Close every socket (UDT4's `cleanup`), without lingering.
pub fn close_all() {
    let all: Vec<Arc<Socket>> = table().sockets.drain().map(|(_, s)| s).collect();
    drop(all);
}

/// `getsockname`.
pub fn local_addr(u: i32) -> Result<SocketAddr> {
    let s = get(u)?;
    let inner = s.lock();
    match &inner.state {
        State::Bound { addr, .. } => Ok(*addr),
        State::Listening(l) => l.local_addr().map_err(|e| error::from_io(&e, Context::Setup)),
        State::Connected(c) => match &*c.stream()? {
            Some(stream) => stream.local_addr().map_err(|e| error::from_io(&e, Context::Setup)),
            None => Err(UdtError::new(error::UDT_ERR_NOCONN)),
        },
        State::Init | State::Connecting => Err(UdtError::new(error::UDT_ERR_NOCONN)),
    }
}

/// `getpeername`.
pub fn peer_addr(u: i32) -> Result<SocketAddr> {
    let (conn, _) = get(u)?.conn()?;
    let guard = conn.stream()?;
    let stream = guard.as_ref().ok_or(UdtError::new(error::UDT_ERR_NOCONN))?;
    stream.peer_addr().map_err(|e| error::from_io(&e, Context::Setup))
}

/// `getsockstate` / `UDT_STATE`.
pub fn state(u: i32) -> i32 {
    let Ok(s) = get(u) else { return status::NONEXIST };
    let inner = s.lock();
    match &inner.state {
        State::Init => status::INIT,
        State::Bound { .. } => status::OPENED,
        State::Listening(_) => status::LISTENING,
        State::Connecting => status::CONNECTING,
        State::Connected(c) => match c.stream().ok().as_deref() {
            Some(Some(stream)) if stream.readiness().open => status::CONNECTED,
            Some(Some(_)) => status::BROKEN,
            _ => status::CLOSED,
        },
    }
}

/// Readiness flags of `u` (`event::*`): what `epoll_wait`, `select` and `UDT_EVENT` report.
pub fn events(u: i32) -> i32 {
    let Ok(s) = get(u) else { return event::ERR };
    let conn = {
        let inner = s.lock();
        match &inner.state {
            State::Listening(l) => return if l.pending() > 0 { event::IN } else { 0 },
            State::Connected(c) => Arc::clone(c),
            _ => return 0,
        }
    };
    let Ok(guard) = conn.stream() else { return event::ERR };
    let Some(stream) = guard.as_ref() else { return event::ERR };
    let r = stream.readiness();
    let mut flags = 0;
    if r.readable_bytes > 0 {
        flags |= event::IN;
    }
    if r.writable_bytes > 0 {
        flags |= event::OUT;
    }
    if !r.open {
        flags |= event::ERR;
    }
    flags
}

/// Change a socket's options with `f`, and a connected socket's timeouts to match (which
/// waits for the socket's blocking calls under way to return).
pub fn update_opts<T>(u: i32, f: impl FnOnce(&State, &mut SockOpts) -> Result<T>) -> Result<T> {
    let s = get(u)?;
    let (result, conn, opts) = {
        let mut inner = s.lock();
        let Inner { state, opts } = &mut *inner;
        let timeouts = |o: &SockOpts| (o.snd_syn, o.rcv_syn, o.snd_timeo, o.rcv_timeo);
        let before = timeouts(opts);
        let result = f(state, opts)?;
        let conn = match state {
            State::Connected(c) if timeouts(opts) != before => Some(Arc::clone(c)),
            _ => None,
        };
        (result, conn, opts.clone())
    };
    if let Some(conn) = conn {
        if let Some(stream) = conn.stream.write().unwrap_or_else(|e| e.into_inner()).as_mut() {
            opts.apply(stream);
        }
    }
    Ok(result)
}
