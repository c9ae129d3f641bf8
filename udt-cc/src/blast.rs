//! UDP blast (thesis §5.3.1 `CUDPBlast`): fixed-rate controllers sharing one rate that the
//! application changes while they run.
//!
//! A [`BlastFactory`] builds [`Blast`] controllers, each a [`FixedRate`] whose rate is read from
//! a shared atomic at every `send_period`; a [`BlastHandle`] stores a new rate there.
//!
//! Invariants: the only state shared between connections is that one rate (bits per second, 0
//! for unlimited); each controller converts it with its own negotiated MSS.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use udt_proto::cc::fixed::{period_for, DEFAULT_MSS};
use udt_proto::cc::{CcContext, CcFactory, CongestionControl, FixedRate};

/// Changes, at run time, the rate of every controller its [`BlastFactory`] built.
#[derive(Clone, Debug)]
pub struct BlastHandle(Arc<AtomicU64>);

impl BlastHandle {
    /// Send `bits_per_sec` of MSS-sized packets from now on (zero: unlimited).
    pub fn set_rate_bits_per_sec(&self, bits_per_sec: u64) {
        self.0.store(bits_per_sec, Ordering::Relaxed);
    }

    /// The current rate in bits per second (zero: unlimited).
    pub fn rate_bits_per_sec(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Fixed-rate controllers sharing one changeable rate.
#[derive(Debug)]
pub struct BlastFactory {
    rate: Arc<AtomicU64>,
}

impl BlastFactory {
    /// Controllers sending `bits_per_sec` (zero: unlimited, the flow window is the only limit).
    pub fn new(bits_per_sec: u64) -> Self {
        BlastFactory { rate: Arc::new(AtomicU64::new(bits_per_sec)) }
    }

    /// A handle that changes the rate of every controller built by this factory.
    pub fn handle(&self) -> BlastHandle {
        BlastHandle(Arc::clone(&self.rate))
    }
}

impl CcFactory for BlastFactory {
    fn build(&self) -> Box<dyn CongestionControl> {
        let inner = FixedRate::from_bits_per_sec(self.rate.load(Ordering::Relaxed), DEFAULT_MSS);
        Box::new(Blast { inner, rate: Arc::clone(&self.rate) })
    }
}

/// A fixed-rate controller whose rate a [`BlastHandle`] sets.
#[derive(Debug)]
pub struct Blast {
    inner: FixedRate,
    rate: Arc<AtomicU64>,
}

impl CongestionControl for Blast {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn init(&mut self, ctx: &mut CcContext<'_>) {
        self.inner.init(ctx);
    }

    fn send_period(&self) -> Duration {
        period_for(self.rate.load(Ordering::Relaxed), self.inner.mss())
    }

    fn congestion_window(&self) -> f64 {
        self.inner.congestion_window()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::script::Script;
    use udt_proto::cc::fixed::UNLIMITED_PERIOD;

    #[test]
    fn blast_rate_changes_at_run_time() {
        let factory = BlastFactory::new(12_000_000);
        let handle = factory.handle();
        let mut a = factory.build();
        let b = factory.build();
        assert_eq!(a.send_period(), Duration::from_millis(1));
        handle.set_rate_bits_per_sec(120_000_000);
        assert_eq!(a.send_period(), Duration::from_micros(100));
        assert_eq!(b.send_period(), Duration::from_micros(100));
        assert_eq!(handle.rate_bits_per_sec(), 120_000_000);
        // The negotiated MSS scales the period.
        let mut script = Script::new();
        let mut ctx = script.ctx();
        (ctx.mss, ctx.payload_size) = (9000, 9000 - 44);
        a.init(&mut ctx);
        assert_eq!(a.send_period(), Duration::from_micros(600));
        handle.set_rate_bits_per_sec(0);
        assert_eq!(a.send_period(), UNLIMITED_PERIOD);
        assert_eq!(a.name(), "fixed");
    }
}
