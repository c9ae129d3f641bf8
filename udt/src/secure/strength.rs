//! How hard a code phrase is to guess, and the least a listener takes.
//!
//! A code-phrase listener gives an attacker one online guess (`acceptor.rs`), so the phrase
//! only has to make one guess hopeless, but a phrase a person picks ("secret", "password123",
//! a date) is among the first anyone tries. The estimate is zxcvbn's (Wheeler, USENIX
//! Security 2016): the number of guesses a cracker ordering its tries by dictionaries, common
//! passwords, keyboard patterns, repeats and sequences needs, in bits. The minimum is about
//! what the `udt` tool's own phrases carry (four digits and three words of 256: 37 bits).

/// The least estimated strength, in bits, of a code phrase a listener takes.
pub const MIN_CODE_BITS: f64 = 36.0;

/// The estimated strength of `code` (as both ends compare it: case and separators do not
/// count), in bits of guesses.
pub fn code_strength_bits(code: &str) -> f64 {
    let normalized = super::handshake::normalize_code(code);
    if normalized.is_empty() {
        return 0.0;
    }
    zxcvbn::zxcvbn(&normalized, &[]).guesses_log10() * std::f64::consts::LOG2_10
}

/// `Ok` if a listener may use `code`; otherwise why not, for the user.
pub fn check_code_strength(code: &str) -> Result<(), String> {
    let bits = code_strength_bits(code);
    if bits >= MIN_CODE_BITS {
        return Ok(());
    }
    Err(format!(
        "the code phrase is too easy to guess (about {bits:.0} bits; at least {MIN_CODE_BITS:.0}): \
         use a longer one of unrelated words, or let the listening end make one up"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guessable_phrases_are_refused_and_random_ones_taken() {
        for weak in ["secret", "password123", "7-amber-fox", "0000-acid-acid-acid", "", "aaaaaaaaaaaaaaaaaa"]
        {
            assert!(check_code_strength(weak).is_err(), "{weak}: {}", code_strength_bits(weak));
        }
        for strong in
            ["4821-orbit-maple-tunnel", "1234-gold-fox-ink", "x9k2-qq7z-m3", "correct horse battery staple"]
        {
            assert!(check_code_strength(strong).is_ok(), "{strong}: {}", code_strength_bits(strong));
        }
        assert_eq!(
            code_strength_bits("4821 Orbit MAPLE tunnel"),
            code_strength_bits("4821-orbit-maple-tunnel")
        );
    }
}
