//! Ctrl-C, SIGTERM and SIGHUP during a benchmark: the first sets a flag that every wait in
//! the benchmark polls (children are then killed and the emulator stopped by their guards);
//! a second one exits at once with status 130.
//!
//! Invariant: the handlers are registered at most once per process and stay for its life.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use anyhow::{bail, Context, Result};

static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Registers the handlers (once); later calls do nothing.
pub fn install() -> Result<()> {
    if FLAG.get().is_some() {
        return Ok(());
    }
    let flag = Arc::new(AtomicBool::new(false));
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    for sig in [SIGINT, SIGTERM, SIGHUP] {
        // Order matters: the conditional exit sees the flag as it was before this signal.
        signal_hook::flag::register_conditional_shutdown(sig, 130, Arc::clone(&flag))
            .context("cannot install a signal handler")?;
        signal_hook::flag::register(sig, Arc::clone(&flag)).context("cannot install a signal handler")?;
    }
    // A concurrent install would have registered its own flag; keeping the first is fine.
    let _ = FLAG.set(flag);
    Ok(())
}

/// Whether a stop was asked for.
pub fn requested() -> bool {
    FLAG.get().is_some_and(|f| f.load(Ordering::Relaxed))
}

/// An error if a stop was asked for.
pub fn check() -> Result<()> {
    if requested() {
        bail!("interrupted");
    }
    Ok(())
}

/// Sleeps `d`, waking early (with an error) on a stop request.
pub fn sleep(d: std::time::Duration) -> Result<()> {
    let end = std::time::Instant::now() + d;
    loop {
        check()?;
        let now = std::time::Instant::now();
        if now >= end {
            return Ok(());
        }
        std::thread::sleep((end - now).min(std::time::Duration::from_millis(50)));
    }
}
