//! The emulated topology: two network namespaces joined by this process through one TUN
//! device in each.
//!
//! ```text
//!   netns A                      this process                       netns B
//!   dev_a addr_a peer addr_b <-> fd A --[A to B]--> fd B <-> dev_b addr_b peer addr_a
//!                                fd A <--[B to A]-- fd B
//! ```
//!
//! Setup: create (or reuse) the namespaces; create both TUN devices in the root namespace
//! (kernel-numbered names, so parallel emulators do not collide); move each into its
//! namespace (the descriptor stays attached); rename it, set the MTU, add the point-to-point
//! addresses, bring it and `lo` up; turn off IPv6 on it so that only the user's traffic
//! crosses. In namespaces it creates, it also raises TCP's buffer autotuning limit (the
//! maximum of `net.ipv4.tcp_{r,w}mem`) to [`BUFFER_MAX`] so that TCP can fill a long fat link
//! (a 1 Gb/s, 100 ms path needs 12.5 MB in flight). `net.core.{r,w}mem_max`, which caps
//! explicit `SO_RCVBUF`/`SO_SNDBUF` requests (UDT's, `iperf3 -w`), is read-only inside a
//! namespace on recent kernels and follows the host's value; the emulator leaves it alone.
//!
//! Invariants: on any setup error everything created so far is undone (fields drop in
//! order: devices first, then the namespaces this topology created); on drop likewise.

use std::sync::Arc;

use anyhow::Context;

use crate::config::EmulatorConfig;
use crate::ns::{self, Namespace};
use crate::tun::Tun;

/// TCP buffer autotuning limit set in the namespaces the emulator creates: 64 MiB.
pub const BUFFER_MAX: u64 = 64 << 20;

/// The two TUN devices and the two namespaces they live in.
#[derive(Debug)]
pub struct Topology {
    // Declaration order is drop order: close the devices before deleting the namespaces.
    /// Device in namespace A.
    pub tun_a: Arc<Tun>,
    /// Device in namespace B.
    pub tun_b: Arc<Tun>,
    /// Namespace A.
    pub ns_a: Namespace,
    /// Namespace B.
    pub ns_b: Namespace,
}

impl Topology {
    /// Builds the topology of `cfg` (which should be validated). Needs root.
    pub fn setup(cfg: &EmulatorConfig) -> anyhow::Result<Topology> {
        let ns_a = Namespace::create_or_reuse(&cfg.ns_a)?;
        let ns_b = Namespace::create_or_reuse(&cfg.ns_b)?;
        let tun_a = Tun::create("udtnetem%d").context("cannot create a TUN device")?;
        let tun_b = Tun::create("udtnetem%d").context("cannot create a TUN device")?;
        let mtu = cfg.mtu.to_string();
        let qlen = cfg.tun_txqueuelen.to_string();
        let sides = [
            (&ns_a, &tun_a, &cfg.dev_a, cfg.addr_a, cfg.addr_b),
            (&ns_b, &tun_b, &cfg.dev_b, cfg.addr_b, cfg.addr_a),
        ];
        for (ns, tun, dev, local, peer) in sides {
            let n = ns.name();
            let (local, peer) = (format!("{local}/32"), format!("{peer}/32"));
            ip_steps(&[
                &["link", "set", "dev", tun.name(), "netns", n],
                &["-n", n, "link", "set", "dev", tun.name(), "name", dev],
                &["-n", n, "link", "set", "dev", dev, "mtu", &mtu, "txqueuelen", &qlen],
                &["-n", n, "addr", "add", &local, "peer", &peer, "dev", dev],
                &["-n", n, "link", "set", "dev", "lo", "up"],
            ])
            .with_context(|| format!("cannot set up device {dev} in namespace {n}"))?;
            disable_ipv6(n, dev);
            if ns.is_owned() {
                raise_buffer_limits(n).with_context(|| format!("cannot raise buffer limits in {n}"))?;
            }
            ip_steps(&[&["-n", n, "link", "set", "dev", dev, "up"]])?;
        }
        Ok(Topology { tun_a: Arc::new(tun_a), tun_b: Arc::new(tun_b), ns_a, ns_b })
    }
}

/// Packets the kernel dropped on device `dev` of namespace `ns` because its transmit queue
/// was full (the emulator did not read them in time); `None` if `ip` cannot tell.
pub fn tx_dropped(ns: &str, dev: &str) -> Option<u64> {
    let out = std::process::Command::new("ip")
        .args(["-n", ns, "-j", "-s", "link", "show", "dev", dev])
        .output()
        .ok()?;
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    let link = json.get(0)?;
    let stats = link.get("stats64").or_else(|| link.get("stats"))?;
    stats.get("tx")?.get("dropped")?.as_u64()
}

fn ip_steps(steps: &[&[&str]]) -> anyhow::Result<()> {
    steps.iter().try_for_each(|args| ns::ip(args))
}

/// TCP's buffer maxima in `ns` to [`BUFFER_MAX`] (defaults and minima unchanged).
fn raise_buffer_limits(ns: &str) -> anyhow::Result<()> {
    ns::run_in(ns, || -> std::io::Result<()> {
        let max = BUFFER_MAX;
        std::fs::write("/proc/sys/net/ipv4/tcp_rmem", format!("4096 131072 {max}"))?;
        std::fs::write("/proc/sys/net/ipv4/tcp_wmem", format!("4096 16384 {max}"))
    })??;
    Ok(())
}

/// Best effort: no router solicitations or other IPv6 chatter on the emulated link.
fn disable_ipv6(ns: &str, dev: &str) {
    let path = format!("/proc/sys/net/ipv6/conf/{dev}/disable_ipv6");
    let result = ns::run_in(ns, move || std::fs::write(&path, "1"));
    if let Err(e) = result.and_then(|r| r.map_err(anyhow::Error::from)) {
        tracing::debug!(ns, dev, "cannot disable IPv6: {e:#}");
    }
}
