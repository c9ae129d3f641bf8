//! The impairment stages of one direction, each sans-IO: it is given `now` (time since the
//! emulator started, a plain [`std::time::Duration`]) and draws from an injected seeded
//! [`SimRng`]; none reads a clock. [`crate::link::Link`] chains them.

pub mod bottleneck;
pub mod delay;
pub mod loss;
pub mod rng;

pub use bottleneck::Bottleneck;
pub use delay::{DelayLine, Scheduled};
pub use loss::LossProcess;
pub use rng::SimRng;
