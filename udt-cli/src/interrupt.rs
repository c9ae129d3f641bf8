//! Ctrl-C (SIGINT), SIGTERM and SIGHUP for every command: the first sets a
//! flag that every wait of theirs polls, so the command can tell its peer why it stops, remove
//! what it must, and exit with status 130; a second one exits at once, and so does a watchdog
//! if the command has not finished within [`GRACE`] of the first (`send`, `recv`, `cat`,
//! `perf`; `udt bench` registers without it, [`register`]).
//!
//! Invariant: the handlers are registered at most once per process and stay for its life.

use std::io::{self, Read};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::{Context, Result};

/// The exit status of an interrupted command (128 + SIGINT, as shells report it).
pub const EXIT_STATUS: u8 = 130;
/// How long an interrupted command has to wind down before the watchdog exits for it.
pub const GRACE: Duration = Duration::from_secs(3);

static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Register the handlers and start the watchdog (once; later calls do nothing). The watchdog
/// sleeps on a self-pipe the signals write to (no polling: an idle or slow transfer's process
/// wakes for its work alone).
pub fn install() -> Result<()> {
    if FLAG.get().is_some() {
        return Ok(());
    }
    register()?;
    let (mut signalled, write) = UnixStream::pair().context("cannot create the interrupt watchdog's pipe")?;
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    for sig in [SIGINT, SIGTERM, SIGHUP] {
        let write = write.try_clone().context("cannot create the interrupt watchdog's pipe")?;
        signal_hook::low_level::pipe::register(sig, write).context("cannot install a signal handler")?;
    }
    std::thread::Builder::new()
        .name("interrupt-watchdog".into())
        .spawn(move || {
            let mut byte = [0u8; 1];
            loop {
                match signalled.read(&mut byte) {
                    Ok(n) if n > 0 => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    // The pipe cannot close while its write ends stay registered.
                    _ => return,
                }
            }
            std::thread::sleep(GRACE);
            eprintln!("udt: interrupted");
            std::process::exit(i32::from(EXIT_STATUS));
        })
        .context("cannot start the interrupt watchdog")?;
    Ok(())
}

/// Register the handlers without a watchdog (once; later calls return the same flag): for a
/// command whose clean-up may take longer than [`GRACE`] (`udt bench` stops an emulator).
pub fn register() -> Result<Arc<AtomicBool>> {
    if let Some(flag) = FLAG.get() {
        return Ok(Arc::clone(flag));
    }
    let flag = Arc::new(AtomicBool::new(false));
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    for sig in [SIGINT, SIGTERM, SIGHUP] {
        // Order matters: the conditional exit sees the flag as it was before this signal.
        signal_hook::flag::register_conditional_shutdown(sig, i32::from(EXIT_STATUS), Arc::clone(&flag))
            .context("cannot install a signal handler")?;
        signal_hook::flag::register(sig, Arc::clone(&flag)).context("cannot install a signal handler")?;
    }
    // A concurrent registration set its own flag first; that one is the one polled.
    Ok(Arc::clone(FLAG.get_or_init(|| flag)))
}

/// Whether a stop was asked for.
pub fn requested() -> bool {
    FLAG.get().is_some_and(|f| f.load(Ordering::SeqCst))
}

/// The error a wait returns when a stop was asked for.
pub fn error() -> io::Error {
    io::Error::other("interrupted")
}
