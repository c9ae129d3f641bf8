//! Ctrl-C, SIGTERM and SIGHUP during a benchmark: the first sets a flag that every wait in
//! the benchmark polls (children are then killed and the emulator stopped by their guards);
//! a second one exits at once with status 130 (the handlers are [`crate::interrupt`]'s).

use anyhow::{bail, Result};

/// Registers the handlers (once; the process-wide ones of [`crate::interrupt`], without its
/// watchdog: the benchmark's guards need their time).
pub fn install() -> Result<()> {
    crate::interrupt::register().map(|_| ())
}

/// Whether a stop was asked for.
pub fn requested() -> bool {
    crate::interrupt::requested()
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
