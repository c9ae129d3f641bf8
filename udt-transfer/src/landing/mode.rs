//! The permission bits and modification times a receiver gives what it creates.
//!
//! Invariants: the sender's bits are an upper bound, never a grant: they are masked by the
//! receiver's umask (read once, at startup, [`read_umask`]) and never include set-user-ID,
//! set-group-ID, sticky, group write or other write ([`NEVER`]). A directory the receiver
//! creates always keeps owner read, write and search, so a source directory of mode 000 or
//! 01000 still arrives usable. Existing directories are never given anything (see
//! [`super::SessionDirs`]).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustix::fs::Mode;

/// Bits never given, whatever the sender's mode and the umask: group and other write.
pub const NEVER: u32 = 0o022;

/// The process's umask. Read from `/proc/self/status` where the kernel shows it (Linux 4.7 and
/// later), which changes nothing; otherwise set to 077 and restored at once, which is safe
/// only before threads that create files start (a receiver calls it when it is created).
pub fn read_umask() -> u32 {
    if let Some(mask) = std::fs::read_to_string("/proc/self/status").ok().as_deref().and_then(umask_of_status)
    {
        return mask;
    }
    let old = rustix::process::umask(Mode::from_raw_mode(0o077));
    rustix::process::umask(old);
    old.as_raw_mode() & 0o777
}

/// The `Umask:` line of a `/proc/PID/status` text, in octal.
fn umask_of_status(status: &str) -> Option<u32> {
    let line = status.lines().find_map(|l| l.strip_prefix("Umask:"))?;
    u32::from_str_radix(line.trim(), 8).ok().map(|m| m & 0o777)
}

/// The permission bits of a file this receiver created: the sender's (`0`: unknown, then
/// 0666) within 0777, less the umask and [`NEVER`].
pub fn file_mode(sent: u32, umask: u32) -> u32 {
    let base = if sent == 0 { 0o666 } else { sent & 0o777 };
    base & !umask & !NEVER
}

/// The permission bits of a directory this receiver created: the sender's (`0`: unknown, then
/// 0777) within 0777, less the umask and [`NEVER`], always with owner read, write and search.
pub fn dir_mode(sent: u32, umask: u32) -> u32 {
    let base = if sent == 0 { 0o777 } else { sent & 0o777 };
    (base & !umask & !NEVER) | 0o700
}

/// The modification time sent, if known (nanoseconds of `protocol::NO_MTIME` or out of range:
/// unknown).
pub fn mtime((secs, nanos): (i64, u32)) -> Option<SystemTime> {
    if nanos >= 1_000_000_000 {
        return None;
    }
    if secs >= 0 {
        UNIX_EPOCH.checked_add(Duration::new(secs.unsigned_abs(), nanos))
    } else {
        UNIX_EPOCH
            .checked_sub(Duration::from_secs(secs.unsigned_abs()))?
            .checked_add(Duration::from_nanos(u64::from(nanos)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_masked_and_never_group_or_other_writable() {
        assert_eq!(file_mode(0o666, 0o077), 0o600);
        assert_eq!(file_mode(0o777, 0o022), 0o755);
        assert_eq!(file_mode(0o777, 0), 0o755, "group and other write are never given");
        assert_eq!(file_mode(0o4755, 0o022), 0o755, "no set-user-ID");
        assert_eq!(file_mode(0, 0o027), 0o640, "unknown: the default");
        assert_eq!(file_mode(0o400, 0o022), 0o400);
    }

    #[test]
    fn directories_keep_owner_rwx_and_no_special_bits() {
        assert_eq!(dir_mode(0o1000, 0o022), 0o700);
        assert_eq!(dir_mode(0o000, 0o022), 0o777 & !0o022);
        assert_eq!(dir_mode(0o2777, 0o077), 0o700);
        assert_eq!(dir_mode(0o555, 0o022), 0o755);
        assert_eq!(dir_mode(0o777, 0o700), 0o755);
    }

    #[test]
    fn umask_from_proc_status() {
        assert_eq!(umask_of_status("Name:\tudt\nUmask:\t0077\nState:\tR\n"), Some(0o077));
        assert_eq!(umask_of_status("Name:\tudt\n"), None);
        let mask = read_umask();
        assert!(mask <= 0o777);
    }

    #[test]
    fn times() {
        assert_eq!(mtime((5, 7)), UNIX_EPOCH.checked_add(Duration::new(5, 7)));
        assert_eq!(mtime((5, u32::MAX)), None);
        assert!(mtime((-5, 0)).is_some());
    }
}
