//! Tsunami's shared-secret check: the server sends 64 random bytes, the client answers the MD5
//! digest of those bytes XORed with the secret repeated over them (seed-protocols.md, Tsunami
//! step 2).
//!
//! This proves knowledge of the secret to a peer that already has it; it is wire compatibility,
//! not security: MD5, no key derivation, the data travels in clear.
//!
//! Which secrets are accepted: the reference treats the secret as a C string (up to its first
//! NUL; an empty one divides by zero), and both reference programs fall back to the well-known
//! `kitten`. Ours has no default: a session without a secret, with an empty one or with a NUL in
//! it is refused before anything is sent, so a server never accepts `kitten` unless its user
//! gave exactly that.

use md5::{Digest, Md5};

use super::wire::{CHALLENGE_LEN, PROOF_LEN};

/// The well-known default secret of the reference programs (`tsunamid`, `tsunami`).
pub const REFERENCE_DEFAULT_SECRET: &[u8] = b"kitten";

/// The proof of `secret` for `challenge`: MD5 of `challenge[i] ^ secret[i % len]` for each i.
/// `secret` must be non-empty (see [`check_secret`]); an empty one is treated as all zeros.
pub fn proof(challenge: &[u8; CHALLENGE_LEN], secret: &[u8]) -> [u8; PROOF_LEN] {
    let mut mixed = *challenge;
    if !secret.is_empty() {
        for (byte, key) in mixed.iter_mut().zip(secret.iter().cycle()) {
            *byte ^= key;
        }
    }
    Md5::digest(mixed).into()
}

/// The secret to use, or why there is none usable: it must be given, non-empty and free of
/// NUL bytes (a reference peer would use only what precedes the first NUL).
pub fn check_secret(secret: Option<&[u8]>) -> Result<&[u8], String> {
    match secret {
        None => Err("no shared secret was given (Tsunami peers must share one; the reference \
                     programs' default `kitten` is used only when given explicitly)"
            .into()),
        Some([]) => Err("the shared secret is empty".into()),
        Some(s) if s.contains(&0) => {
            Err("the shared secret holds a NUL byte (Tsunami secrets are C strings)".into())
        }
        Some(s) => Ok(s),
    }
}

/// Equal proofs, compared without an early exit.
pub fn same_proof(a: &[u8; PROOF_LEN], b: &[u8; PROOF_LEN]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Expected digests computed independently, with Python:
    /// `hashlib.md5(bytes(c ^ s[i % len(s)] for i, c in enumerate(ch))).hexdigest()`.
    #[test]
    fn the_proof_matches_digests_computed_elsewhere() {
        let counting: [u8; 64] = std::array::from_fn(|i| i as u8);
        assert_eq!(hex(&proof(&counting, b"kitten")), "2ef1fa32913c8c342201761df3e1873e");
        assert_eq!(hex(&proof(&counting, b"a")), "73f951208795584e6b0616d8f61f0355");
        // A secret longer than the challenge: only its first 64 bytes count.
        let long = [b"0123456789".repeat(7).as_slice(), b"XYZ"].concat();
        assert_eq!(hex(&proof(&counting, &long)), "c8ce28efbad911579575220607e5dd57");
        let mixed: [u8; 64] = std::array::from_fn(|i| ((i * 37 + 11) % 256) as u8);
        assert_eq!(hex(&proof(&mixed, b"correct horse")), "ef3c80c7237790d6b947decedc4c3b8d");
    }

    #[test]
    fn a_different_secret_or_challenge_gives_a_different_proof() {
        let ch = [7u8; 64];
        let p = proof(&ch, b"secret");
        assert!(same_proof(&p, &proof(&ch, b"secret")));
        assert!(!same_proof(&p, &proof(&ch, b"secreT")));
        assert!(!same_proof(&p, &proof(&[8u8; 64], b"secret")));
    }

    #[test]
    fn missing_empty_and_nul_secrets_are_refused() {
        assert!(check_secret(None).unwrap_err().contains("kitten"));
        assert!(check_secret(Some(b"")).unwrap_err().contains("empty"));
        assert!(check_secret(Some(b"ab\0c")).unwrap_err().contains("NUL"));
        assert_eq!(check_secret(Some(REFERENCE_DEFAULT_SECRET)), Ok(&b"kitten"[..]));
    }
}
