//! Network namespaces: the `ip` command runner, a guard that deletes the namespaces it
//! created, and running code inside a namespace from this process.
//!
//! Invariants: a [`Namespace`] deletes its namespace on drop if and only if it created it; a
//! namespace that already existed is used as it is and left in place.

use std::fs::File;
use std::process::Command;
use std::thread::JoinHandle;

use anyhow::{bail, Context};

use crate::sys;

/// Runs `ip ARGS...`, turning a failure into an error carrying the command and its stderr.
pub fn ip(args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .context("cannot run the `ip` command (is iproute2 installed?)")?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        bail!("`ip {}` failed: {}", args.join(" "), stderr.trim());
    }
    Ok(())
}

/// Whether a named network namespace (`/run/netns/NAME`) exists.
pub fn exists(name: &str) -> bool {
    std::path::Path::new("/run/netns").join(name).exists()
}

/// A named network namespace, deleted on drop if this guard created it.
#[derive(Debug)]
pub struct Namespace {
    name: String,
    owned: bool,
}

impl Namespace {
    /// Uses the namespace `name` if it exists, otherwise creates it (and owns it).
    pub fn create_or_reuse(name: &str) -> anyhow::Result<Self> {
        if exists(name) {
            tracing::info!(ns = name, "using the existing network namespace");
            return Ok(Self { name: name.to_owned(), owned: false });
        }
        ip(&["netns", "add", name])?;
        tracing::debug!(ns = name, "created network namespace");
        Ok(Self { name: name.to_owned(), owned: true })
    }

    /// The namespace's name, as `ip netns exec NAME` takes it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether this guard created the namespace (and will delete it).
    pub fn is_owned(&self) -> bool {
        self.owned
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        if self.owned {
            match ip(&["netns", "del", &self.name]) {
                Ok(()) => tracing::debug!(ns = %self.name, "deleted network namespace"),
                Err(e) => tracing::warn!(ns = %self.name, "cannot delete the namespace: {e:#}"),
            }
        }
    }
}

/// Runs `f` on a new thread that first enters the network namespace `ns`: sockets `f`
/// creates live in that namespace (and stay there when handed to other threads). The thread's
/// result is an error if the namespace cannot be entered.
pub fn spawn_in<T, F>(ns: &str, f: F) -> JoinHandle<anyhow::Result<T>>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let path = std::path::Path::new("/run/netns").join(ns);
    std::thread::spawn(move || {
        let file = File::open(&path).with_context(|| format!("cannot open {}", path.display()))?;
        sys::enter_netns(&file).with_context(|| format!("cannot enter {}", path.display()))?;
        Ok(f())
    })
}

/// [`spawn_in`], then waits for the result.
pub fn run_in<T, F>(ns: &str, f: F) -> anyhow::Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    match spawn_in(ns, f).join() {
        Ok(result) => result,
        Err(_) => bail!("the thread running in namespace {ns} panicked"),
    }
}
