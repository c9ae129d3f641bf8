//! The TCP-like reference flow of the friendliness experiments: TCP NewReno from the
//! `udt-proto` catalog ([`udt_proto::cc::newreno`] on the [`udt_proto::cc::tcp`] base, the thesis'
//! CTCP), acknowledging every packet or every other packet.
//!
//! The receiving end of such a flow runs the same controller: it decides how often to acknowledge.

use udt_proto::cc::newreno::NewReno;
use udt_proto::cc::{CcFactory, CongestionControl, Tcp, TcpConfig};

/// Options of the TCP-like controller (ACK interval and initial window).
pub type NewRenoConfig = TcpConfig;

/// Factory for the TCP-like controller.
#[derive(Clone, Copy, Debug, Default)]
pub struct NewRenoFactory(pub NewRenoConfig);

impl CcFactory for NewRenoFactory {
    fn build(&self) -> Box<dyn CongestionControl> {
        Box::new(Tcp::new(self.0, NewReno))
    }
}
