//! What travels through a topology: UDT flows (with any congestion control of the `udt-proto`
//! catalog) and CBR UDP flows, each between two hosts, starting and stopping at given times.
//!
//! A bulk flow of RBUDP, Tsunami or FOBS runs the protocol's two sessions ([`crate::bulk`]).
//!
//! A UDT flow is a bulk transfer: the sender always has data, the receiver reads everything at
//! once. Its [`CcChoice`] is a catalog specification (`NAME[:key=value,...]`, the vocabulary of
//! every `--cc` and of `udt cc list`) and runs at both ends (a TCP-like flow needs its
//! controller at the receiver too, which decides how often to acknowledge). Both ends use the
//! runtime's default configuration ([`Config::default`]: MSS, buffers, flow window), so a limit
//! of the real runtime shows in the simulator; a flow may override buffers or MSS explicitly,
//! as a user would set socket options. Flows close without lingering when they stop, so they
//! stop sending at the stop time.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use udt_cc::{CcSpec, DEFAULT_CC};
use udt_proto::cc::CcFactory;
use udt_proto::connection::Config;

use crate::bulk::BulkFlow;
use crate::ids::Vertex;

/// One interned catalog specification.
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
    /// Look `text` up in the catalog (checking its parameters) and intern it, under the
    /// algorithm's canonical name (`tcp:ack=1` is `newreno:ack=1`).
    pub fn intern(text: &str) -> Result<&'static NamedCc, String> {
        static TABLE: OnceLock<Mutex<Vec<&'static NamedCc>>> = OnceLock::new();
        let hint = |e: udt_cc::CcSpecError| format!("{e} (`udt cc list` shows the catalog)");
        let mut spec = CcSpec::parse(text).map_err(hint)?;
        udt_cc::registry::factory_for(&spec).map_err(hint)?;
        let info = udt_cc::lookup(&spec.name).ok_or_else(|| format!("{text:?}: not in the catalog"))?;
        spec.name = info.name.to_string();
        let mut table = TABLE.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
        if let Some(found) = table.iter().find(|n| n.spec == spec) {
            return Ok(found);
        }
        let named: &'static NamedCc = Box::leak(Box::new(NamedCc { spec, tcp_like: info.tcp_like }));
        table.push(named);
        Ok(named)
    }

    /// The specification.
    pub fn spec(&self) -> &CcSpec {
        &self.spec
    }

    /// A fresh factory.
    pub fn factory(&self) -> Arc<dyn CcFactory> {
        udt_cc::registry::factory_for(&self.spec).expect("checked when interned")
    }
}

/// The congestion control of a UDT flow: a specification of the `udt-proto` catalog.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CcChoice(&'static NamedCc);

impl CcChoice {
    /// Parse a catalog specification, `NAME[:key=value,...]` (`udt`, `daimd:noisy=true`,
    /// `newreno:ack=1`, `blast:rate=50m`, `cubic:beta=0.7`, ...).
    pub fn parse(text: &str) -> Result<Self, String> {
        NamedCc::intern(text).map(CcChoice)
    }

    /// The default of every tool: [`DEFAULT_CC`].
    pub fn default_cc() -> Self {
        Self::known(DEFAULT_CC)
    }

    /// The thesis' algorithm, UDT4's `CUDTCC` (`daimd`).
    pub fn daimd() -> Self {
        Self::known("daimd")
    }

    /// TCP NewReno acknowledging every other packet (`newreno`): the TCP-like reference flow of
    /// the friendliness experiments.
    pub fn newreno() -> Self {
        Self::known("newreno")
    }

    /// The catalog's CUBIC (RFC 8312), the Internet's default TCP, with delayed ACKs.
    pub fn cubic() -> Self {
        Self::known("cubic")
    }

    fn known(text: &str) -> Self {
        Self::parse(text).expect("a catalog name")
    }

    /// The specification as text, with the algorithm's canonical name.
    pub fn label(&self) -> String {
        self.0.spec.to_string()
    }

    /// The specification.
    pub fn spec(&self) -> &CcSpec {
        &self.0.spec
    }

    /// The interned entry (one per distinct specification).
    pub fn named(&self) -> &'static NamedCc {
        self.0
    }

    /// Whether this is a TCP-like (window-based, ACK-clocked) controller, run at both ends:
    /// the TCP side of the friendliness experiments.
    pub fn is_tcp(&self) -> bool {
        self.0.tcp_like
    }

    /// A fresh factory `udt-proto` builds controllers with.
    pub fn factory(&self) -> Arc<dyn CcFactory> {
        self.0.factory()
    }
}

impl Default for CcChoice {
    fn default() -> Self {
        Self::default_cc()
    }
}

/// What a flow carries.
#[derive(Clone, Debug)]
pub enum FlowKind {
    /// A bulk UDT transfer.
    Udt {
        /// Congestion control of both ends.
        cc: CcChoice,
        /// Send and receive buffers and flow window, packets; `None`: the runtime's defaults.
        buffer_pkts: Option<u32>,
        /// Maximum segment size (IP packet size), bytes.
        mss: u32,
        /// The receiving end behaves as a UDT4 4.11 receiver ([`FlowSpec::udt4_receiver`]).
        udt4_receiver: bool,
    },
    /// Constant-bit-rate UDP.
    Cbr {
        /// UDP payload bytes per datagram.
        payload: usize,
        /// (time since the simulation start, bits/s of IP packets); zero before the first.
        schedule: Vec<(Duration, u64)>,
    },
    /// An RBUDP, Tsunami or FOBS transfer (see [`crate::bulk`]).
    Bulk(BulkFlow),
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
    /// A bulk UDT flow from `src` to `dst` with `cc` and the runtime's default configuration,
    /// starting at time zero.
    pub fn udt(label: impl Into<String>, src: Vertex, dst: Vertex, cc: CcChoice) -> Self {
        FlowSpec {
            label: label.into(),
            src,
            dst,
            kind: FlowKind::Udt { cc, buffer_pkts: None, mss: Config::default().mss, udt4_receiver: false },
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

    /// A flow of a seed paper's protocol from `src` (holding the data) to `dst`.
    pub fn bulk(label: impl Into<String>, src: Vertex, dst: Vertex, flow: BulkFlow) -> Self {
        FlowSpec {
            label: label.into(),
            src,
            dst,
            kind: FlowKind::Bulk(flow),
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

    /// Buffers (and flow window) of `pkts` packets instead of the runtime's defaults (UDT
    /// flows), as a user would set `UDT_SNDBUF`, `UDT_RCVBUF` and `UDT_FC`.
    pub fn buffers(mut self, pkts: u32) -> Self {
        if let FlowKind::Udt { buffer_pkts, .. } = &mut self.kind {
            *buffer_pkts = Some(pkts.max(32));
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

    /// Make the receiving end behave as a UDT4 4.11 receiver does, whatever the sender runs: its
    /// controller is UDT4's own (`daimd`, which asks for no progress ACKs and reports the
    /// median-filtered arrival speed, not a counted rate), its estimators start from UDT4's
    /// made-up gaps (`Config::udt4_estimators`: 1 packet/s and a capacity of 1000 in its first
    /// ACKs), it ignores the sender's policy offer (so it sends neither progress ACKs nor
    /// queueing-delay reports), and it never repeats a NAK (4.11 relies on the sender's EXP
    /// timer). What a UDT4 peer gives our sender, in virtual time.
    pub fn udt4_receiver(mut self) -> Self {
        if let FlowKind::Udt { udt4_receiver, .. } = &mut self.kind {
            *udt4_receiver = true;
        }
        self
    }

    /// The `udt-proto` configuration of the receiving end: [`FlowSpec::udt_config`], or a UDT4
    /// receiver's ([`FlowSpec::udt4_receiver`]).
    pub fn receiver_config(&self) -> Option<Config> {
        let config = self.udt_config()?;
        match &self.kind {
            FlowKind::Udt { udt4_receiver: true, .. } => Some(Config {
                cc: CcChoice::daimd().factory(),
                periodic_nak: false,
                udt4_estimators: true,
                ..config
            }),
            _ => Some(config),
        }
    }

    /// The congestion control, for UDT flows.
    pub fn cc(&self) -> Option<CcChoice> {
        match &self.kind {
            FlowKind::Udt { cc, .. } => Some(*cc),
            FlowKind::Cbr { .. } | FlowKind::Bulk(_) => None,
        }
    }

    /// The `udt-proto` configuration of both ends of a UDT flow: [`Config::default`] with the
    /// flow's controller, no linger, and the flow's overrides.
    pub fn udt_config(&self) -> Option<Config> {
        let FlowKind::Udt { cc, buffer_pkts, mss, .. } = &self.kind else { return None };
        let mut config = Config { mss: *mss, linger: None, cc: cc.factory(), ..Config::default() };
        if let Some(pkts) = *buffer_pkts {
            config.flow_window = pkts;
            config.send_buffer_pkts = pkts;
            config.recv_buffer_pkts = pkts;
        }
        Some(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_catalog_specifications_only() {
        assert_eq!(CcChoice::default().label(), DEFAULT_CC);
        assert_eq!(CcChoice::daimd().label(), "daimd");
        // Aliases become the canonical name; one interned entry per distinct specification.
        assert_eq!(CcChoice::parse("tcp").unwrap(), CcChoice::newreno());
        assert_eq!(CcChoice::parse("tcp:ack=1").unwrap().label(), "newreno:ack=1");
        assert_eq!(CcChoice::parse("thesis:noisy=true").unwrap().label(), "daimd:noisy=true");
        let cubic = CcChoice::parse("cubic:beta=0.8").unwrap();
        assert_eq!(cubic.label(), "cubic:beta=0.8");
        assert!(cubic.is_tcp() && CcChoice::newreno().is_tcp());
        assert_eq!(cubic, CcChoice::parse("cubic:beta=0.8").unwrap());
        assert!(!CcChoice::parse("bbr").unwrap().is_tcp() && !CcChoice::daimd().is_tcp());
        assert_eq!(cubic.factory().build().name(), "cubic");
        assert_eq!(
            CcChoice::parse("blast:rate=12m").unwrap().factory().build().send_period().as_micros(),
            1000
        );
        // The simulator's former private names are gone.
        for bad in
            ["nosuch", "cubic:beta=2", "cubic:typo=1", "udt+noisy", "udt-noisy", "tcp1", "tcp2", "fixed:50"]
        {
            assert!(CcChoice::parse(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn flows_use_the_runtime_defaults_unless_told() {
        let d = Config::default();
        let f = FlowSpec::udt("f", Vertex(0), Vertex(1), CcChoice::daimd());
        let c = f.udt_config().unwrap();
        assert_eq!(
            (c.mss, c.flow_window, c.send_buffer_pkts, c.recv_buffer_pkts),
            (d.mss, d.flow_window, d.send_buffer_pkts, d.recv_buffer_pkts)
        );
        assert_eq!(c.linger, None);
        let c = f.buffers(20_000).udt_config().unwrap();
        assert_eq!((c.flow_window, c.send_buffer_pkts, c.recv_buffer_pkts), (20_000, 20_000, 20_000));
    }
}
