//! How long what an interrupted transfer left may be resumed: `udt recv --partial-ttl`.
//!
//! Invariant: a part is judged by its modification time (the last byte written into it); a
//! time in the future counts as fresh. `0` means never resume: every part of this user's is
//! then expired.

use std::time::{Duration, SystemTime};

/// How long a part stays resumable; `None`: never resume.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ttl(pub Option<Duration>);

impl Ttl {
    /// Whether a part last written at `mtime` is past its time at `now`.
    pub fn expired(self, mtime: SystemTime, now: SystemTime) -> bool {
        match self.0 {
            None => true,
            Some(ttl) => now.duration_since(mtime).is_ok_and(|age| age > ttl),
        }
    }

    /// Whether parts are kept for a resume at all.
    pub fn resumes(self) -> bool {
        self.0.is_some()
    }
}

/// Parse `--partial-ttl`: a number with a unit `s`, `m`, `h` or `d` (`90m`, `72h`, `3d`; a bare
/// number is seconds), or `0` for never.
pub fn parse_ttl(s: &str) -> Result<Ttl, String> {
    let s = s.trim();
    let (digits, unit) = match s.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => s.split_at(i),
        None => (s, "s"),
    };
    let n: u64 =
        digits.parse().map_err(|_| format!("`{s}` is not a duration (such as 72h, 3d, 90m, or 0)"))?;
    let unit_secs = match unit.trim() {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        other => {
            return Err(format!("unknown unit `{other}` in `{s}`: use s, m, h or d (such as 72h or 3d)"))
        }
    };
    if n == 0 {
        return Ok(Ttl(None));
    }
    let secs = n.checked_mul(unit_secs).ok_or_else(|| format!("`{s}` is too long"))?;
    Ok(Ttl(Some(Duration::from_secs(secs))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_durations() {
        assert_eq!(parse_ttl("72h"), Ok(Ttl(Some(Duration::from_secs(72 * 3600)))));
        assert_eq!(parse_ttl("3d"), parse_ttl("72h"));
        assert_eq!(parse_ttl("90m"), Ok(Ttl(Some(Duration::from_secs(5400)))));
        assert_eq!(parse_ttl("45"), Ok(Ttl(Some(Duration::from_secs(45)))));
        assert_eq!(parse_ttl("0"), Ok(Ttl(None)));
        assert_eq!(parse_ttl("0d"), Ok(Ttl(None)));
        for bad in ["", "h", "3w", "-1d", "1.5h", "99999999999999999999d"] {
            assert!(parse_ttl(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn expiry() {
        let now = SystemTime::now();
        let day = Duration::from_secs(86_400);
        let ttl = Ttl(Some(day));
        assert!(!ttl.expired(now - day / 2, now));
        assert!(ttl.expired(now - day * 2, now));
        assert!(!ttl.expired(now + day, now), "a time in the future is fresh");
        assert!(Ttl(None).expired(now, now), "never resume: always expired");
        assert!(!Ttl(None).resumes());
    }
}
