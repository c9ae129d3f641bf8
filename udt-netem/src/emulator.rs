//! The running emulator: [`Emulator::start`] builds the topology and starts one forwarder
//! thread per direction; the [`EmulatorHandle`] reads statistics and stops it.
//!
//! Invariants: while a handle exists the namespaces are ready and both threads run (unless one
//! failed, see [`EmulatorHandle::check`]); stopping (explicitly or by dropping the handle)
//! joins both threads before the devices are closed and the namespaces deleted, so cleanup
//! happens on every path, panics in the caller included.

use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use anyhow::{bail, Context};

use crate::config::EmulatorConfig;
use crate::forward::{Forwarder, ForwarderParts};
use crate::link::Link;
use crate::schedule::Timeline;
use crate::stats::{DirectionCounters, EmulatorStats};
use crate::sys;
use crate::topology::{self, Topology};

/// Entry point of the library: see [`Emulator::start`].
#[derive(Debug)]
pub struct Emulator;

impl Emulator {
    /// Validates `config`, checks for root and `/dev/net/tun`, sets up the namespaces and
    /// devices and starts forwarding. The link is usable (e.g. with `ip netns exec`) as soon
    /// as this returns.
    pub fn start(config: EmulatorConfig) -> anyhow::Result<EmulatorHandle> {
        config.validate()?;
        check_privileges()?;
        let topology = Topology::setup(&config)?;
        let stop = Arc::new(AtomicBool::new(false));
        let epoch = Instant::now();
        let counters = [Arc::new(DirectionCounters::default()), Arc::new(DirectionCounters::default())];
        let timelines = [Arc::new(Timeline::new()), Arc::new(Timeline::new())];
        let buf_size = (config.mtu as usize).max(2048);
        let devices = [
            (topology.tun_a.clone(), topology.tun_b.clone()),
            (topology.tun_b.clone(), topology.tun_a.clone()),
        ];
        // From here on, dropping the handle (on an error too) stops and cleans up.
        let mut handle = EmulatorHandle {
            threads: Vec::new(),
            stop: stop.clone(),
            counters: counters.clone(),
            timelines: timelines.clone(),
            epoch,
            topology: Some(topology),
            config,
        };
        for (i, (src, dst)) in devices.into_iter().enumerate() {
            let (name, link, seed) = match i {
                0 => ("a-to-b", &handle.config.a_to_b, handle.config.seed),
                _ => ("b-to-a", &handle.config.b_to_a, handle.config.seed.wrapping_add(1)),
            };
            let forwarder = Forwarder::new(ForwarderParts {
                link: Link::new(link, seed),
                src,
                dst,
                counters: counters[i].clone(),
                timeline: timelines[i].clone(),
                stop: stop.clone(),
                epoch,
                spin: handle.config.spin,
                buf_size,
                max_held: handle.config.max_packets_in_flight,
                realtime: handle.config.realtime,
            });
            let thread = std::thread::Builder::new()
                .name(format!("netem-{name}"))
                .spawn(move || forwarder.run())
                .context("cannot start a forwarder thread")?;
            handle.threads.push(thread);
        }
        Ok(handle)
    }
}

/// Refuses to go on without root or without the TUN driver, with a message saying why.
pub fn check_privileges() -> anyhow::Result<()> {
    if !sys::is_root() {
        bail!("udt netem needs root (to create network namespaces and TUN devices): run it with sudo");
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        bail!("/dev/net/tun is missing: load the tun module (modprobe tun) or run where TUN is available");
    }
    Ok(())
}

/// A running emulator. Dropping it stops it and cleans up, like [`EmulatorHandle::stop`].
#[derive(Debug)]
pub struct EmulatorHandle {
    threads: Vec<JoinHandle<std::io::Result<()>>>,
    stop: Arc<AtomicBool>,
    counters: [Arc<DirectionCounters>; 2],
    timelines: [Arc<Timeline>; 2],
    epoch: Instant,
    topology: Option<Topology>,
    config: EmulatorConfig,
}

impl EmulatorHandle {
    /// The configuration it runs with.
    pub fn config(&self) -> &EmulatorConfig {
        &self.config
    }

    /// Name of namespace A (for `ip netns exec`).
    pub fn ns_a(&self) -> &str {
        &self.config.ns_a
    }

    /// Name of namespace B.
    pub fn ns_b(&self) -> &str {
        &self.config.ns_b
    }

    /// Address of side A.
    pub fn addr_a(&self) -> Ipv4Addr {
        self.config.addr_a
    }

    /// Address of side B.
    pub fn addr_b(&self) -> Ipv4Addr {
        self.config.addr_b
    }

    /// Which namespaces were created by this emulator (and will be deleted when it stops).
    pub fn owned_namespaces(&self) -> Vec<String> {
        let Some(t) = &self.topology else { return Vec::new() };
        [&t.ns_a, &t.ns_b].iter().filter(|n| n.is_owned()).map(|n| n.name().to_owned()).collect()
    }

    /// Counters of both directions so far (runs `ip` twice for the kernel's TUN drop counts).
    pub fn stats(&self) -> EmulatorStats {
        let elapsed = self.epoch.elapsed();
        let mut stats = EmulatorStats {
            elapsed_s: elapsed.as_secs_f64(),
            a_to_b: self.counters[0].snapshot(elapsed),
            b_to_a: self.counters[1].snapshot(elapsed),
        };
        if self.topology.is_some() {
            let c = &self.config;
            stats.a_to_b.tun_drops = topology::tx_dropped(&c.ns_a, &c.dev_a);
            stats.b_to_a.tun_drops = topology::tx_dropped(&c.ns_b, &c.dev_b);
        }
        stats
    }

    /// Start the rate schedule ([`crate::LinkConfig::rate_steps`]) again from now, and the
    /// queueing-delay timelines with it: a benchmark calls it as each transfer starts.
    pub fn restart_schedule(&self) {
        let now = self.epoch.elapsed();
        for t in &self.timelines {
            t.restart(now);
        }
    }

    /// The longest queueing delay at the bottleneck, milliseconds, per
    /// [`Timeline::BUCKET`] since the schedule's origin: A to B, then B to A.
    pub fn queue_delay_timelines(&self) -> [Vec<f64>; 2] {
        [self.timelines[0].snapshot(), self.timelines[1].snapshot()]
    }

    /// An error if a forwarder thread has ended (it only ends early on a device error).
    pub fn check(&self) -> anyhow::Result<()> {
        if self.threads.iter().any(|t| t.is_finished()) {
            bail!("a forwarder thread stopped unexpectedly (stop the emulator to see its error)");
        }
        Ok(())
    }

    /// Stops forwarding, removes the devices and the namespaces it created, and returns the
    /// final counters; an error if a forwarder failed (cleanup happens anyway).
    pub fn stop(mut self) -> anyhow::Result<EmulatorStats> {
        let (stats, result) = self.shutdown();
        result.map(|()| stats)
    }

    fn shutdown(&mut self) -> (EmulatorStats, anyhow::Result<()>) {
        self.stop.store(true, Relaxed);
        let mut result = Ok(());
        for (i, t) in self.threads.drain(..).enumerate() {
            let dir = if i == 0 { "A to B" } else { "B to A" };
            match t.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => result = Err(anyhow::Error::from(e).context(format!("forwarder {dir} failed"))),
                Err(_) => result = Err(anyhow::anyhow!("forwarder {dir} panicked")),
            }
        }
        let stats = self.stats();
        self.topology = None; // close the devices, then delete the namespaces we made
        (stats, result)
    }
}

impl Drop for EmulatorHandle {
    fn drop(&mut self) {
        if self.topology.is_some() || !self.threads.is_empty() {
            let (_, result) = self.shutdown();
            if let Err(e) = result {
                tracing::warn!("{e:#}");
            }
        }
    }
}
