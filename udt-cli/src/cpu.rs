//! CPU time used by this process (user and system), from `getrusage(RUSAGE_SELF)`.

use std::time::Duration;

/// CPU time consumed so far by every thread of the process.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTime {
    /// Time in user mode.
    pub user: Duration,
    /// Time in the kernel.
    pub system: Duration,
}

impl CpuTime {
    /// The process's CPU time now (zero if the kernel will not say).
    #[allow(unsafe_code)]
    pub fn now() -> CpuTime {
        let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: `usage` points to writable memory the size of a `rusage`; getrusage fills it
        // (or fails and leaves the zeroes, which are a valid `rusage`).
        let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
        if rc != 0 {
            return CpuTime::default();
        }
        // SAFETY: zero-initialised, then written by the kernel: every field is initialised.
        let usage = unsafe { usage.assume_init() };
        let tv = |t: libc::timeval| {
            Duration::from_secs(u64::try_from(t.tv_sec).unwrap_or(0))
                + Duration::from_micros(u64::try_from(t.tv_usec).unwrap_or(0))
        };
        CpuTime { user: tv(usage.ru_utime), system: tv(usage.ru_stime) }
    }

    /// CPU time used since `earlier`.
    pub fn since(&self, earlier: &CpuTime) -> CpuTime {
        CpuTime {
            user: self.user.saturating_sub(earlier.user),
            system: self.system.saturating_sub(earlier.system),
        }
    }

    /// User plus system.
    pub fn total(&self) -> Duration {
        self.user + self.system
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_with_work() {
        let before = CpuTime::now();
        let mut x = 0u64;
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_millis(50) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        assert!(CpuTime::now().since(&before).total() > Duration::ZERO);
    }
}
