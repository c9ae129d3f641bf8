//! The paths being received right now, across concurrent transfers.
//!
//! Invariant: while a file's transfer runs, no other transfer in this process can accept a
//! file of the same path (it would take its temporary file); a claim is released when dropped.

use std::collections::HashSet;
use std::sync::Mutex;

/// The paths claimed by running transfers.
#[derive(Debug, Default)]
pub struct Claims(Mutex<HashSet<String>>);

/// A path claimed for one file's reception, released when dropped.
pub struct Claim<'a> {
    claims: &'a Claims,
    name: String,
}

impl Claims {
    /// Claim `name`, unless another transfer holds it.
    pub fn claim(&self, name: &str) -> Option<Claim<'_>> {
        let mut set = self.0.lock().unwrap_or_else(|e| e.into_inner());
        set.insert(name.to_string()).then(|| Claim { claims: self, name: name.to_string() })
    }

    /// Whether a transfer holds `name` now.
    pub fn held(&self, name: &str) -> bool {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).contains(name)
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        self.claims.0.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_claim_per_name_at_a_time() {
        let claims = Claims::default();
        let first = claims.claim("a/b");
        assert!(first.is_some());
        assert!(claims.claim("a/b").is_none());
        drop(first);
        assert!(claims.claim("a/b").is_some());
    }
}
