//! The runtime's clock: `udt_proto::Instant` counted from the first use in this process.
//! This is the one place the runtime reads the system clock for the core.

use std::sync::OnceLock;

use udt_proto::Instant;

static EPOCH: OnceLock<std::time::Instant> = OnceLock::new();

/// Now, as the protocol core counts time.
pub fn now() -> Instant {
    let epoch = EPOCH.get_or_init(std::time::Instant::now);
    Instant::from_nanos(u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX))
}
