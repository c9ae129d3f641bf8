//! What travels through a topology: UDT flows (with any congestion control) and CBR UDP flows,
//! each between two hosts, starting and stopping at given times.
//!
//! A UDT flow is a bulk transfer: the sender always has data, the receiver reads everything at
//! once. Its [`CcChoice`] picks the congestion control of both ends (a TCP-like flow needs its
//! controller at the receiver too, which decides how often to acknowledge). Flows close without
//! lingering when they stop, so they stop sending at the stop time.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use udt_proto::cc::{CcFactory, CcSpec, FixedFactory, NativeConfig, NativeFactory};
use udt_proto::connection::Config;

use crate::tcp::{NewRenoConfig, NewRenoFactory};
use crate::topology::Vertex;

/// Any algorithm of the `udt-proto` catalog, by specification (`cubic:beta=0.7`, `bbr`, ...).
///
/// Specifications are interned (one leaked entry per distinct text, so a process holds at most
/// as many as it parsed different ones), which keeps [`CcChoice`] `Copy`. The factory is built
/// per run, once per distinct specification, so all flows of a run with the same specification
/// share it (an algorithm with a group manager, GTP, sees all of a receiver's flows) and runs
/// never share state.
#[derive(Debug, PartialEq, Eq)]
pub struct NamedCc {
    spec: CcSpec,
    tcp_like: bool,
}

impl NamedCc {
    /// Look `text` up in the catalog (checking its parameters) and intern it.
    pub fn intern(text: &str) -> Result<&'static NamedCc, String> {
        static TABLE: OnceLock<Mutex<Vec<&'static NamedCc>>> = OnceLock::new();
        let spec = CcSpec::parse(text).map_err(|e| e.to_string())?;
        udt_proto::cc::registry::factory_for(&spec).map_err(|e| e.to_string())?;
        let tcp_like = udt_proto::cc::lookup(&spec.name).is_some_and(|i| i.both_ends);
        let mut table = TABLE.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
        if let Some(found) = table.iter().find(|n| n.spec == spec) {
            return Ok(found);
        }
        let named: &'static NamedCc = Box::leak(Box::new(NamedCc { spec, tcp_like }));
        table.push(named);
        Ok(named)
    }

    /// The specification.
    pub fn spec(&self) -> &CcSpec {
        &self.spec
    }

    /// A fresh factory.
    pub fn factory(&self) -> Arc<dyn CcFactory> {
        udt_proto::cc::registry::factory_for(&self.spec).expect("checked when interned")
    }
}

/// The congestion control of a UDT flow.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CcChoice {
    /// UDT's native algorithm (UDT4 `CUDTCC`), with its options.
    Udt(NativeConfig),
    /// The TCP-like NewReno window controller.
    Tcp(NewRenoConfig),
    /// A fixed sending rate in bits per second.
    Fixed(u64),
    /// Any algorithm of the catalog, by name and parameters.
    Named(&'static NamedCc),
}

impl CcChoice {
    /// UDT native with default options.
    pub fn udt() -> Self {
        CcChoice::Udt(NativeConfig::default())
    }

    /// UDT native with the noisy-link option (thesis §3.5.2).
    pub fn udt_noisy() -> Self {
        CcChoice::Udt(NativeConfig { noisy_link: true, ..NativeConfig::default() })
    }

    /// TCP-like, acknowledging every `ack_every` packets.
    pub fn tcp(ack_every: u32) -> Self {
        CcChoice::Tcp(NewRenoConfig { ack_every, ..NewRenoConfig::default() })
    }

    /// Parse `udt`, `udt-noisy`, `tcp` (ACK every other packet), `tcp1`, `tcp2`, `fixed:<Mb/s>`.
    /// UDT options can be added with `+`: `udt+noisy`, `udt+freeze` (the thesis' one-SYN sending
    /// freeze), `udt+rc` (the thesis' rate correction, off by default), e.g. `udt+noisy+rc`;
    /// `norc` (rate correction off) is accepted for older command lines.
    pub fn parse(s: &str) -> Result<Self, String> {
        if let Some(opts) = s.strip_prefix("udt+") {
            let mut c = NativeConfig::default();
            for o in opts.split('+') {
                match o {
                    "noisy" => c.noisy_link = true,
                    "delay" => c.delay_check = true,
                    "freeze" => c.freeze_on_congestion = true,
                    "rc" => c.rate_correction = true,
                    "norc" => c.rate_correction = false,
                    _ => return Err(format!("unknown UDT option {o:?} (noisy, delay, freeze, rc, norc)")),
                }
            }
            return Ok(CcChoice::Udt(c));
        }
        if s.contains(':') && !s.starts_with("fixed:") {
            return NamedCc::intern(s).map(CcChoice::Named);
        }
        match s {
            "udt" => Ok(Self::udt()),
            "udt-noisy" | "noisy" => Ok(Self::udt_noisy()),
            "tcp" | "tcp2" => Ok(Self::tcp(2)),
            "tcp1" => Ok(Self::tcp(1)),
            _ => match s.strip_prefix("fixed:") {
                Some(mbps) => {
                    let v: f64 = mbps.parse().map_err(|e| format!("cc {s:?}: {e}"))?;
                    Ok(CcChoice::Fixed((v * 1e6) as u64))
                }
                None => NamedCc::intern(s)
                    .map(CcChoice::Named)
                    .map_err(|e| format!("{e}; also udt-noisy, udt+OPTION, tcp1, tcp2, fixed:<Mb/s>")),
            },
        }
    }

    /// A short name for tables.
    pub fn label(&self) -> String {
        match self {
            CcChoice::Udt(c) => {
                let mut s = String::from("udt");
                let d = NativeConfig::default();
                if c.noisy_link
                    && !c.delay_check
                    && !c.freeze_on_congestion
                    && c.rate_correction == d.rate_correction
                    && c.initial_window == d.initial_window
                {
                    return "udt-noisy".into();
                }
                if c.noisy_link {
                    s.push_str("+noisy");
                }
                if c.delay_check {
                    s.push_str("+delay");
                }
                if c.freeze_on_congestion {
                    s.push_str("+freeze");
                }
                if c.rate_correction {
                    s.push_str("+rc");
                }
                s
            }
            CcChoice::Tcp(c) => format!("tcp{}", c.ack_every),
            CcChoice::Fixed(bps) => format!("fixed:{}", *bps as f64 / 1e6),
            CcChoice::Named(n) => n.spec.to_string(),
        }
    }

    /// Whether this is a TCP-like (window-based, ACK-clocked) controller: the TCP side of the
    /// friendliness experiments.
    pub fn is_tcp(&self) -> bool {
        match self {
            CcChoice::Tcp(_) => true,
            CcChoice::Named(n) => n.tcp_like,
            _ => false,
        }
    }

    /// The factory `udt-proto` builds controllers with.
    pub fn factory(&self) -> Arc<dyn CcFactory> {
        match *self {
            CcChoice::Udt(c) => Arc::new(NativeFactory(c)),
            CcChoice::Tcp(c) => Arc::new(NewRenoFactory(c)),
            CcChoice::Fixed(bps) => Arc::new(FixedFactory { bits_per_sec: bps }),
            CcChoice::Named(n) => n.factory(),
        }
    }
}

/// What a flow carries.
#[derive(Clone, Debug)]
pub enum FlowKind {
    /// A bulk UDT transfer.
    Udt {
        /// Congestion control of both ends.
        cc: CcChoice,
        /// Send and receive buffers and flow window, packets.
        buffer_pkts: u32,
        /// Maximum segment size (IP packet size), bytes.
        mss: u32,
    },
    /// Constant-bit-rate UDP.
    Cbr {
        /// UDP payload bytes per datagram.
        payload: usize,
        /// (time since the simulation start, bits/s of IP packets); zero before the first.
        schedule: Vec<(Duration, u64)>,
    },
}

/// One flow between two hosts.
#[derive(Clone, Debug)]
pub struct FlowSpec {
    /// Name in tables and plots.
    pub label: String,
    /// Sending host.
    pub src: Vertex,
    /// Receiving host.
    pub dst: Vertex,
    /// What it carries.
    pub kind: FlowKind,
    /// When it starts (UDT: connects).
    pub start: Duration,
    /// When it stops, if it does.
    pub stop: Option<Duration>,
}

impl FlowSpec {
    /// A bulk UDT flow from `src` to `dst` with `cc`, 8192-packet buffers, 1500-byte MSS,
    /// starting at time zero.
    pub fn udt(label: impl Into<String>, src: Vertex, dst: Vertex, cc: CcChoice) -> Self {
        FlowSpec {
            label: label.into(),
            src,
            dst,
            kind: FlowKind::Udt { cc, buffer_pkts: 8192, mss: 1500 },
            start: Duration::ZERO,
            stop: None,
        }
    }

    /// A CBR flow of `payload`-byte datagrams following `schedule`.
    pub fn cbr(
        label: impl Into<String>,
        src: Vertex,
        dst: Vertex,
        payload: usize,
        schedule: Vec<(Duration, u64)>,
    ) -> Self {
        FlowSpec {
            label: label.into(),
            src,
            dst,
            kind: FlowKind::Cbr { payload, schedule },
            start: Duration::ZERO,
            stop: None,
        }
    }

    /// Start at `t`.
    pub fn starting(mut self, t: Duration) -> Self {
        self.start = t;
        self
    }

    /// Stop at `t`.
    pub fn stopping(mut self, t: Duration) -> Self {
        self.stop = Some(t);
        self
    }

    /// Buffers (and flow window) of `pkts` packets (UDT flows).
    pub fn buffers(mut self, pkts: u32) -> Self {
        if let FlowKind::Udt { buffer_pkts, .. } = &mut self.kind {
            *buffer_pkts = pkts.max(32);
        }
        self
    }

    /// Maximum segment size (IP packet bytes) of a UDT flow.
    pub fn mss(mut self, bytes: u32) -> Self {
        if let FlowKind::Udt { mss, .. } = &mut self.kind {
            *mss = bytes;
        }
        self
    }

    /// The congestion control, for UDT flows.
    pub fn cc(&self) -> Option<CcChoice> {
        match &self.kind {
            FlowKind::Udt { cc, .. } => Some(*cc),
            FlowKind::Cbr { .. } => None,
        }
    }

    /// The `udt-proto` configuration of both ends of a UDT flow.
    pub fn udt_config(&self) -> Option<Config> {
        let FlowKind::Udt { cc, buffer_pkts, mss } = &self.kind else { return None };
        Some(Config {
            mss: *mss,
            flow_window: *buffer_pkts,
            send_buffer_pkts: *buffer_pkts,
            recv_buffer_pkts: *buffer_pkts,
            linger: None,
            cc: cc.factory(),
            ..Config::default()
        })
    }
}

/// Buffers a UDT flow needs to fill a path of `rate_bps` and `rtt` with a queue of
/// `queue_pkts`: the packets in flight with a full queue and a quarter more, or, if larger, the
/// packets sent over the round trip and one ACK interval (SYN) with a full queue; 64 more, at
/// least UDT4's 8192.
///
/// The SYN: a light ACK shrinks the flow window by what it acknowledges (UDT4), and only the
/// next full ACK, one SYN later, reopens it, so the window must hold a SYN of sending on top of
/// the round trip (thesis §2.2.4: W = AS (RTT + SYN)). The quarter covers it wherever the RTT
/// is long against the SYN; where it is not, a 10 Gb/s flow on a 1 ms path was held to 8192
/// packets per SYN, 94% of the link.
pub fn buffer_for(rate_bps: u64, rtt: Duration, queue_pkts: usize) -> u32 {
    let bdp = crate::link::bdp_packets(rate_bps, rtt, 1500) as u64;
    let per_ack = crate::link::bdp_packets(rate_bps, rtt + SYN, 1500) as u64;
    let queue = queue_pkts as u64;
    let need = ((bdp + queue) * 5 / 4).max(per_ack + queue) + 64;
    need.clamp(8192, 1 << 22) as u32
}

/// UDT's ACK interval (the SYN of `udt-proto`'s default config).
const SYN: Duration = Duration::from_millis(10);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_labels_controllers() {
        for s in ["udt", "udt-noisy", "tcp1", "tcp2", "udt+freeze", "udt+noisy+rc"] {
            assert_eq!(CcChoice::parse(s).unwrap().label(), s);
        }
        assert_eq!(CcChoice::parse("tcp").unwrap(), CcChoice::tcp(2));
        assert_eq!(CcChoice::parse("fixed:50").unwrap(), CcChoice::Fixed(50_000_000));
        // Anything in the catalog, with parameters; one interned entry per distinct spec.
        let cubic = CcChoice::parse("cubic:beta=0.8").unwrap();
        assert_eq!(cubic.label(), "cubic:beta=0.8");
        assert!(cubic.is_tcp());
        assert_eq!(cubic, CcChoice::parse("cubic:beta=0.8").unwrap());
        assert!(!CcChoice::parse("bbr").unwrap().is_tcp());
        assert_eq!(CcChoice::parse("cubic:beta=0.8").unwrap().factory().build().name(), "cubic");
        for bad in ["nosuch", "cubic:beta=2", "cubic:typo=1", "udt+fast"] {
            assert!(CcChoice::parse(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn buffers_cover_the_path() {
        assert_eq!(buffer_for(100_000_000, Duration::from_millis(10), 83), 8192);
        let b = buffer_for(1_000_000_000, Duration::from_millis(100), 8333);
        assert!(b >= 2 * 8333);
        // 10 Gb/s, 1 ms: the window holds a SYN of sending (8333 packets) on top of the path.
        assert!(buffer_for(10_000_000_000, Duration::from_millis(1), 833) >= 8333 + 833 + 833);
    }
}
