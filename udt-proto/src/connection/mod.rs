//! One UDT connection (placeholder while the state machine is written).

pub mod stats;

pub use stats::{Counters, InstantValues, Snapshot, Stats};
