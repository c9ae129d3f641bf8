//! # udt-cc: congestion control for UDT
//!
//! The algorithms a UDT connection can run, behind `udt-proto`'s [`CongestionControl`] trait
//! (thesis chapter 5, Composable UDT): the default, Copa ([`copa`]), the model controller
//! ([`model`], `udt`) it hands a flow to a UDT4 receiver, BBR,
//! the TCP family over one window engine ([`tcp`]: NewReno, CUBIC, BIC, HighSpeed, Scalable,
//! Westwood, Vegas, FAST), GTP ([`gtp`]) and UDP blast ([`blast`]); the thesis' algorithm
//! (`daimd`, UDT4's `CUDTCC`) is built into `udt-proto` and listed here too. [`registry`] looks
//! an algorithm up by name (`--cc NAME[:key=value,...]`, [`spec`]).
//!
//! Invariants: a controller reads what the connection measured and sets a rate and a window;
//! it never reads a clock or a global random number generator (time and randomness come in
//! its [`CcContext`]), and what the protocol does around it is the connection's
//! [`Policy`], which a factory declares ([`CcFactory::policy`]). State shared between
//! connections is explicit: GTP's group manager and blast's rate, each owned by its factory.

#![forbid(unsafe_code)]

pub mod bbr;
pub mod bic;
pub mod blast;
pub mod copa;
pub mod cubic;
pub mod fast;
pub mod first_rtt;
pub mod gtp;
pub mod highspeed;
pub mod model;
pub mod newreno;
pub mod params;
pub mod registry;
#[cfg(test)]
mod response;
pub mod scalable;
pub mod send_times;
pub mod spec;
mod tables;
pub mod tcp;
pub mod timing;
pub mod vegas;
pub mod westwood;

pub use blast::{BlastFactory, BlastHandle};
pub use gtp::{Gtp, GtpConfig, GtpFactory};
pub use registry::{catalog, default_factory, factory, lookup, CcInfo, DEFAULT_CC};
pub use spec::{CcSpec, CcSpecError};
pub use tcp::{Tcp, TcpConfig, TcpFactory, TcpVariant};
pub use udt_proto::cc::{
    AckReport, CcContext, CcFactory, CongestionControl, CustomMessage, FixedFactory, FixedRate, NativeCc,
    NativeConfig, NativeFactory, Policy,
};
