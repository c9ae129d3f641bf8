//! GTP, the Group Transport Protocol (Wu & Chien, "GTP: Group Transport Protocol for
//! Lambda-Grids", CCGrid 2004), as a Composable UDT algorithm (thesis §5.3.5, `CGTP`).
//!
//! GTP controls a group of flows with the same destination from the receiver: "the new algorithm
//! class simply needs to implement a central manager to control a group of connections. The
//! control parameters are calculated by the central manager and then fed back to the control
//! class instance of each individual connection" (§5.3.5). One controller type, [`Gtp`], runs at
//! both ends of every connection:
//!
//! * At the **receiving end** each connection's controller joins the
//!   [`GroupManager`] its [`GtpFactory`] shares among every controller it builds. Once per
//!   control interval (default `max(SYN, RTT)`) it measures its flow's arrival rate and loss; the
//!   manager recomputes the max-min fair allocation of the configured receiver `capacity` over
//!   the active flows (see [`manager`]) and the controller sends the flow's allocation to the
//!   sender as a custom control message ([`message`], UDT4 `sendCustomMsg`).
//! * At the **sending end** the controller paces at the allocated rate (`send_period =
//!   MSS * 8 / rate`), starting from a conservative initial rate until the first allocation
//!   arrives, with a window (the negotiated flow window) that never binds; a loss report or a
//!   timeout between allocations cuts the rate by 1/8 at most once per RTT. A sender with a rate
//!   request of its own sends it to the receiver at `init`, and again whenever an allocation
//!   exceeds it (the request, an unreliable control packet, was lost).
//!
//! Invariants: sans-IO: the manager only sees times passed in through callbacks; a poisoned
//! manager mutex is recovered, never a panic; malformed GTP messages are counted and ignored,
//! messages of other sub-types ignored. A connection carrying data both ways runs both halves.
//!
//! Deviations from the paper: the capacity is configured, not estimated; GTP's TCP-friendly
//! centralized scheduler across receivers is not implemented; rates are bits/s of MSS-sized
//! packets (UDT's rate unit, as in `blast`).

pub mod manager;
pub mod message;
mod receiver;
mod sender;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use super::{CcContext, CcFactory, CongestionControl, CustomMessage};
pub use manager::{FlowId, GroupManager, ManagerConfig, MIN_RATE};
pub use message::{GtpMessage, Malformed, GTP_SUBTYPE};
use receiver::ReceiverSide;
use sender::{period_for, SenderSide};
use udt_proto::seq::SeqNo;

/// The window before `init` supplies the negotiated flow window, packets.
const UNBOUND_WINDOW: f64 = 100_000.0;
/// The MSS assumed until `init`.
const DEFAULT_MSS: u32 = 1500;

/// Lock the manager; a mutex poisoned by a panic elsewhere is still used (its state is only
/// ever changed by whole, panic-free method calls).
fn lock(manager: &Mutex<GroupManager>) -> MutexGuard<'_, GroupManager> {
    manager.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Options of a GTP group.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GtpConfig {
    /// The receiver-side allocation (capacity, headroom, loss threshold, idle timeout).
    pub manager: ManagerConfig,
    /// Sending rate until the first allocation arrives, bits/s.
    pub initial_rate: u64,
    /// The sender's rate request, bits/s (0: as fast as the receiver allows).
    pub request: u64,
    /// Control interval; `None`: `max(SYN, RTT)`, at most one second.
    pub interval: Option<Duration>,
}

impl Default for GtpConfig {
    fn default() -> Self {
        GtpConfig { manager: ManagerConfig::default(), initial_rate: 10_000_000, request: 0, interval: None }
    }
}

/// Builds GTP controllers sharing one [`GroupManager`]: give every connection accepted by one
/// receiver the same factory.
#[derive(Debug)]
pub struct GtpFactory {
    config: GtpConfig,
    manager: Arc<Mutex<GroupManager>>,
}

impl GtpFactory {
    /// A factory with a fresh, empty group.
    pub fn new(config: GtpConfig) -> Self {
        GtpFactory { config, manager: Arc::new(Mutex::new(GroupManager::new(config.manager))) }
    }

    /// The group manager shared by the controllers built here (for inspection).
    pub fn manager(&self) -> Arc<Mutex<GroupManager>> {
        Arc::clone(&self.manager)
    }
}

impl CcFactory for GtpFactory {
    fn build(&self) -> Box<dyn CongestionControl> {
        Box::new(Gtp::new(self.config, Arc::clone(&self.manager)))
    }
}

/// A GTP controller: the receiving half reports to the group manager and sends allocations, the
/// sending half paces at the allocation it receives.
#[derive(Debug)]
pub struct Gtp {
    config: GtpConfig,
    manager: Arc<Mutex<GroupManager>>,
    mss: u32,
    window: f64,
    rx: ReceiverSide,
    tx: SenderSide,
    outbox: VecDeque<CustomMessage>,
    malformed: u64,
}

impl Gtp {
    /// A controller in the group of `manager`.
    pub fn new(config: GtpConfig, manager: Arc<Mutex<GroupManager>>) -> Self {
        Gtp {
            config,
            manager,
            mss: DEFAULT_MSS,
            window: UNBOUND_WINDOW,
            rx: ReceiverSide::default(),
            tx: SenderSide::new(config.initial_rate, config.request),
            outbox: VecDeque::new(),
            malformed: 0,
        }
    }

    /// The sending rate, bits/s of MSS-sized packets.
    pub fn rate_bits_per_sec(&self) -> u64 {
        self.tx.rate
    }

    /// The number and rate of the last allocation adopted as a sender.
    pub fn allocation(&self) -> Option<(u32, u64)> {
        self.tx.allocation
    }

    /// The flow's id in the group, once it has received data.
    pub fn flow_id(&self) -> Option<FlowId> {
        self.rx.flow
    }

    /// GTP messages dropped because they could not be read.
    pub fn malformed_messages(&self) -> u64 {
        self.malformed
    }

    fn send_request(&mut self) {
        self.outbox.push_back(GtpMessage::Request { bits_per_sec: self.config.request }.encode());
    }
}

impl Drop for Gtp {
    fn drop(&mut self) {
        self.rx.leave(&self.manager);
    }
}

impl CongestionControl for Gtp {
    fn name(&self) -> &'static str {
        "gtp"
    }

    fn init(&mut self, ctx: &mut CcContext<'_>) {
        self.mss = ctx.mss;
        self.window = f64::from(ctx.max_window.max(1));
        if self.config.request > 0 {
            self.send_request();
        }
    }

    fn close(&mut self, _ctx: &mut CcContext<'_>) {
        self.rx.leave(&self.manager);
    }

    fn on_loss(&mut self, ctx: &mut CcContext<'_>, _lost: &[(SeqNo, SeqNo)]) {
        self.tx.on_congestion(ctx.now, ctx.rtt);
    }

    fn on_timeout(&mut self, ctx: &mut CcContext<'_>) {
        self.tx.on_congestion(ctx.now, ctx.rtt);
    }

    fn on_packet_received(&mut self, ctx: &mut CcContext<'_>, _seq: SeqNo) {
        if let Some(m) = self.rx.on_packet(ctx, &self.manager, self.config.interval) {
            self.outbox.push_back(m.encode());
        }
    }

    fn on_custom_message(&mut self, ctx: &mut CcContext<'_>, msg: &CustomMessage) {
        match GtpMessage::decode(msg) {
            None => {}
            Some(Err(Malformed)) => self.malformed += 1,
            Some(Ok(GtpMessage::Allocation { number, bits_per_sec })) => {
                let request_lost = self.tx.on_allocation(number, bits_per_sec);
                if request_lost {
                    self.send_request();
                }
            }
            Some(Ok(GtpMessage::Request { bits_per_sec })) => {
                let flow = self.rx.flow(&self.manager, ctx.now);
                lock(&self.manager).set_request(flow, ctx.now, bits_per_sec);
            }
        }
    }

    fn send_period(&self) -> Duration {
        period_for(self.tx.rate, self.mss)
    }

    fn congestion_window(&self) -> f64 {
        self.window
    }

    fn poll_custom_message(&mut self) -> Option<CustomMessage> {
        self.outbox.pop_front()
    }
}

#[cfg(test)]
mod tests;
