//! Socket options: the protocol configuration plus what only the runtime knows (UDP buffer
//! sizes, timeouts). UDT4 names in brackets.

use std::sync::Arc;
use std::time::Duration;

use udt_cc::CcSpecError;
use udt_proto::cc::CcFactory;

use crate::secure::Credential;
pub use udt_proto::connection::{Config, Mode};

/// The default of [`Options::max_accepted`].
pub const DEFAULT_MAX_ACCEPTED: usize = 16_384;

/// Options of a UDT socket.
#[derive(Clone, Debug)]
pub struct Options {
    /// Protocol options: MSS, flow window, buffers, linger, congestion control, ... (`UDT_MSS`,
    /// `UDT_FC`, `UDT_SNDBUF`, `UDT_RCVBUF`, `UDT_LINGER`, `UDT_CC`, `UDT_MAXBW`), and how soon a
    /// silent peer is declared lost: `config.peer_idle_timeout` (default `None`, UDT4's rule,
    /// about 46 s; see [`Options::set_peer_idle_timeout`]). The runtime's default pacing debt
    /// is 2 ms (`config.max_pacing_debt`; the core's is 1 ms), so that paced bursts may cover
    /// 1 ms, the quantum Linux paces TCP with (`udt/src/pace.rs`).
    pub config: Config,
    /// UDP receive buffer in bytes (`UDP_RCVBUF`, default 12,288,000 as UDT4); raised with
    /// `SO_RCVBUFFORCE` when running as root.
    pub udp_recv_buffer: usize,
    /// UDP send buffer in bytes (`UDP_SNDBUF`; UDT4 uses 64 KiB, we default to 4 MiB).
    pub udp_send_buffer: usize,
    /// Blocking reads give up after this long (`UDT_RCVTIMEO`); `None` waits forever.
    pub read_timeout: Option<Duration>,
    /// Blocking writes give up after this long (`UDT_SNDTIMEO`); `None` waits forever.
    pub write_timeout: Option<Duration>,
    /// Share the port with other sockets of the same user that ask for it too
    /// (`SO_REUSEPORT`; UDT4's `UDT_REUSEADDR` defaults to true). Default false: the port is
    /// the socket's alone, and a second bind of it, by this or any other process, fails with
    /// `ErrorKind::AddrInUse` ("address in use"). Linux spreads a shared port's datagrams over
    /// its sockets by source address, so a connection stays with one socket, but which socket
    /// a new peer reaches is the kernel's choice.
    pub reuse_address: bool,
    /// While data packets keep arriving slowly enough (in each of the I/O thread's last two
    /// rounds, fewer than 64 per 250 us, below about 3 Gb/s), the thread lets them gather in
    /// the UDP socket instead of waking for each one: each gathering lasts as long as 64
    /// packets take at the rate they arrive (one light ACK's worth), at least 250 us and at
    /// most this long. Every datagram is still handled at the kernel's arrival timestamp
    /// (the arrival-rate, packet-pair and RTT figures do not change), timers and application
    /// calls still end the wait on time, and losses do not stop it (a NAK leaves at most one
    /// gathering late). Readers then wake once per gathering, not once per packet.
    /// Costs a streaming receiver up to this much latency (UDT4 makes data readable only at
    /// its next ACK, up to 10 ms later); `Duration::ZERO` turns it off. Default 4 ms, under
    /// half the ACK period (10 ms, when the receiver's reports leave anyway), two of a paced
    /// sender's bursts (its pacing quantum is 2 ms; a gathering of one quantum or less wakes the
    /// receiver for every burst). Paced at 100 Mb/s over a veth pair, the receiving process took
    /// about 2.6 CPU s per GB with 4 ms gatherings and 4.0 with 1 ms ones (UDT4's receiver
    /// 2.3-2.8); on an emulated 100 Mb/s, 10 ms path with 1% loss each way, goodput was level
    /// (91.6 Mb/s against 85.3, medians of three runs). The first socket bound to a port
    /// decides for every connection multiplexed on it.
    pub receive_gather: Duration,
    /// Most connections a listener keeps accepted at once, taken by `accept` or not, counted
    /// until each has closed (UDT4 bounds its queue with the `listen` backlog). A request
    /// beyond it is refused with UDT4's rejection (1002) once its cookie checks out (counted by
    /// the endpoint as `over_limit`), so the client's connect fails at once. Default 16,384: an idle
    /// connection costs about 11 kB (buffers are committed as data needs them), so the default
    /// bounds what a flood of handshakes can take to about 180 MB; raise it for more
    /// connections, lower it to bound memory tighter. Read when the listener binds.
    pub max_accepted: usize,
    /// I/O threads a listener serves its port with (at least 1). With more than one, the port
    /// is bound once per thread with `SO_REUSEPORT` and each accepted connection stays on one
    /// thread, steered by its socket id (`udt/src/shard.rs`), so a server spreads its
    /// connections over cores; one connection never spans threads, and `max_accepted` is split
    /// evenly between them. Default 1 (UDT4's one socket per port): one flow cannot use more,
    /// and a second socket on the port is one more that another process of the same user could
    /// join. Outgoing connections opened from the listener use its first thread. Read when the
    /// listener binds.
    pub io_threads: usize,
    /// An outgoing connection binds a UDP port and I/O thread of its own instead of sharing
    /// the one of earlier connections opened with equal socket options (the default: one port
    /// and thread per set of options, however many connections). A transfer striped over
    /// several connections sets it, so each connection's packets are handled on a core of its
    /// own. Default `false`. Read when the connection opens.
    pub own_client_port: bool,
    /// Encrypt and authenticate the connection (docs/security.md): with `Some`, a connection
    /// opened or accepted with these options first runs the key agreement for this credential
    /// ([`crate::secure`]), then seals every datagram; the peer must be a `udt` end with the same
    /// credential. Default `None`: plain UDT4, which any UDT4 peer speaks. The MSS the
    /// connection offers is smaller by the sealing's overhead, so sealed datagrams stay within
    /// `config.mss`.
    pub security: Option<Credential>,
    /// How long the key agreement may take before the connection is given up (default 10 s).
    pub handshake_timeout: Duration,
    /// Faults and delays the crate's own unit tests inject (absent from every other build).
    #[cfg(test)]
    pub(crate) hooks: TestHooks,
}

/// Faults and delays injected by the crate's unit tests, to make races and rare kernel answers
/// happen on demand. Outside the crate's unit tests it has no fields and every hook is a no-op.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct TestHooks {
    /// The binding caller (listener or stream) sleeps this long between `Mux::bind` and using
    /// the multiplexer: a loaded machine's delay.
    #[cfg(test)]
    pub after_bind: Duration,
    /// The multiplexer finds every `refuse_sends`-th `sendmsg` refused with `WouldBlock` (a
    /// full kernel send buffer) without sending; 0: never.
    #[cfg(test)]
    pub refuse_sends: u32,
    /// A listener with several I/O threads attaches no steering program: the kernel spreads
    /// datagrams by address and port, and the threads forward what is not theirs.
    #[cfg(test)]
    pub no_steering: bool,
    /// Building each datagram takes this long (a slow machine's, or sealing's, cost): the
    /// multiplexer sleeps it before asking the connection for the next one.
    #[cfg(test)]
    pub slow_build: Duration,
}

impl TestHooks {
    /// Whether the listener's I/O threads go without the steering program.
    pub(crate) fn no_steering(&self) -> bool {
        #[cfg(test)]
        return self.no_steering;
        #[cfg(not(test))]
        false
    }
}

impl TestHooks {
    /// The pause between binding and using the multiplexer.
    pub(crate) fn after_bind(&self) {
        #[cfg(test)]
        std::thread::sleep(self.after_bind);
    }
}

impl Options {
    /// The protocol configuration a connection with these options offers: with security on,
    /// an MSS smaller by the sealing's overhead, its payloads whole cipher blocks
    /// ([`crate::secure::seal::secured_mss`]).
    pub(crate) fn connection_config(&self) -> Config {
        let mut config = self.config.clone();
        if self.security.is_some() {
            config.mss = crate::secure::seal::secured_mss(config.mss);
        }
        config
    }

    /// The test hooks (no-ops outside the crate's unit tests).
    pub(crate) fn hooks(&self) -> TestHooks {
        #[cfg(test)]
        return self.hooks.clone();
        #[cfg(not(test))]
        TestHooks::default()
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            config: Config {
                cc: default_congestion_control(),
                max_pacing_debt: crate::pace::PACING_DEBT,
                ..Config::default()
            },
            udp_recv_buffer: 12_288_000,
            udp_send_buffer: 4 << 20,
            read_timeout: None,
            write_timeout: None,
            reuse_address: false,
            receive_gather: Duration::from_millis(4),
            max_accepted: DEFAULT_MAX_ACCEPTED,
            io_threads: 1,
            own_client_port: false,
            security: None,
            handshake_timeout: Duration::from_secs(10),
            #[cfg(test)]
            hooks: TestHooks::default(),
        }
    }
}

/// The runtime's default congestion control: the catalog's [`udt_cc::DEFAULT_CC`].
fn default_congestion_control() -> Arc<dyn CcFactory> {
    udt_cc::default_factory()
}

impl Options {
    /// Options for message (datagram) sockets.
    pub fn message() -> Self {
        let mut o = Options::default();
        o.config.mode = Mode::Message;
        o
    }
}

impl Options {
    /// Choose the congestion control by specification, `NAME[:key=value,...]`, from the
    /// catalog of `udt_cc::registry` (`udt`, `blast:rate=500m`, `newreno`, `cubic:beta=0.7`,
    /// ...; `udt cc list` shows them all). Set it before connecting or listening; an accepted
    /// socket gets its listener's choice.
    ///
    /// ```
    /// let mut options = udt::Options::default();
    /// options.set_congestion_control("cubic:beta=0.7").unwrap();
    /// assert!(options.set_congestion_control("cubic:speed=9").is_err());
    /// ```
    pub fn set_congestion_control(&mut self, spec: &str) -> Result<(), CcSpecError> {
        self.config.cc = udt_cc::factory(spec)?;
        Ok(())
    }

    /// Declare the peer lost (reads and writes fail with `ConnectionReset`) once nothing has
    /// been heard from it for `timeout`, keep-alives included; `None` keeps UDT4's rule (more
    /// than 16 EXP expiries and 5 s of silence, about 46 s). A live idle peer is heard at least
    /// once per EXP interval (300 ms to about two RTTs), so a few seconds is safe on most
    /// paths. Sets `config.peer_idle_timeout`.
    ///
    /// ```
    /// let mut options = udt::Options::default();
    /// options.set_peer_idle_timeout(Some(std::time::Duration::from_secs(10)));
    /// assert_eq!(options.config.peer_idle_timeout, Some(std::time::Duration::from_secs(10)));
    /// ```
    pub fn set_peer_idle_timeout(&mut self, timeout: Option<Duration>) {
        self.config.peer_idle_timeout = timeout;
    }

    /// Choose the congestion control by factory: an algorithm of your own (implement
    /// `udt_proto::cc::CongestionControl` and a `CcFactory` that builds it), or a built-in one
    /// whose factory you keep a handle on (e.g. `BlastFactory::handle` to change its rate).
    pub fn set_congestion_control_factory(&mut self, factory: Arc<dyn CcFactory>) {
        self.config.cc = factory;
    }
}
