//! What Linux says about a process: CPU seconds (`/proc/PID/stat`) and resident memory
//! (`/proc/PID/status`: `VmRSS` now, `VmHWM` the peak).

/// User plus system CPU seconds of process `pid` (`/proc/PID/stat`, fields 14 and 15);
/// 0 if it cannot be read.
pub fn cpu_seconds(pid: u32) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return 0.0 };
    // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
    let Some(close) = stat.rfind(')') else { return 0.0 };
    let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
    let tick = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    // Counted in USER_HZ, which Linux fixes at 100 for user space.
    (tick(11) + tick(12)) as f64 / 100.0
}

/// Resident bytes of process `pid`: (`VmRSS`, `VmHWM`); zeros if they cannot be read.
pub fn resident_bytes(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| -> u64 {
        let line = status.lines().find(|l| l.starts_with(name));
        let kib = line.and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse::<u64>().ok());
        kib.unwrap_or(0) * 1024
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Datagrams the kernel dropped for the UDP socket bound to 127.0.0.1:`port` or 0.0.0.0:`port`
/// (`/proc/net/udp`'s `drops` column: mostly a full receive buffer); `None` if there is no such
/// socket.
pub fn udp_drops(port: u16) -> Option<u64> {
    let table = std::fs::read_to_string("/proc/net/udp").ok()?;
    let locals = [format!("0100007F:{port:04X}"), format!("00000000:{port:04X}")];
    let bound = |l: &str| l.split_whitespace().nth(1).is_some_and(|a| locals.iter().any(|x| x == a));
    let line = table.lines().skip(1).find(|l| bound(l))?;
    line.split_whitespace().last()?.parse().ok()
}
