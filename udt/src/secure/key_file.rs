//! A shared secret from the bytes of a key file, derived the same way by every user of the
//! library (the `udt` tool's `--key-file`, the Python package's `key=`), so the same file gives
//! the same key everywhere.
//!
//! Invariants: trailing ASCII whitespace is dropped (a line written with `echo` works); the
//! secret holds [`KEY_FILE_MIN`] to [`KEY_FILE_MAX`] bytes; text (UTF-8 without control
//! characters, a typed passphrase) must be estimated at [`KEY_FILE_TEXT_MIN_BITS`] or more;
//! the key is BLAKE3's key derivation over the bytes, so passphrases and random bytes alike
//! give a uniform 32-byte key. The caller's bytes are wiped when it drops them (`Zeroizing`).

use zeroize::Zeroizing;

use super::Credential;

/// The fewest bytes of a key file's secret.
pub const KEY_FILE_MIN: usize = 16;
/// The most bytes of a key file: more is not a key file.
pub const KEY_FILE_MAX: usize = 64 * 1024;
/// The least estimated strength of a key file that holds text (a passphrase). A key file
/// serves any number of connections, so an attacker may guess online, one guess per key
/// agreement (a PAKE: nothing recorded can be tested offline). At 10^4 agreements a second for
/// ten years (about 2^42 guesses) the chance to hit stays under 2^-10.
pub const KEY_FILE_TEXT_MIN_BITS: f64 = 52.0;
/// The key derivation's context.
const KEY_CONTEXT: &str = "udt 2026 key file";

/// Why a key file's bytes are no key.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum KeyFileError {
    /// More than [`KEY_FILE_MAX`] bytes.
    #[error("is larger than {KEY_FILE_MAX} bytes: is it the right file?")]
    TooLarge,
    /// Fewer than [`KEY_FILE_MIN`] bytes once trailing whitespace is dropped.
    #[error("holds {0} bytes; a shared secret needs at least {KEY_FILE_MIN}")]
    TooShort(usize),
    /// A passphrase estimated below [`KEY_FILE_TEXT_MIN_BITS`].
    #[error("holds a passphrase that is too easy to guess (about {0:.0} bits; at least {KEY_FILE_TEXT_MIN_BITS:.0})")]
    TooWeak(f64),
}

/// The credential of a key file's `bytes` (see the module documentation).
pub fn key_from_secret(mut bytes: Zeroizing<Vec<u8>>) -> Result<Credential, KeyFileError> {
    if bytes.len() > KEY_FILE_MAX {
        return Err(KeyFileError::TooLarge);
    }
    while bytes.last().is_some_and(u8::is_ascii_whitespace) {
        bytes.pop();
    }
    if bytes.len() < KEY_FILE_MIN {
        return Err(KeyFileError::TooShort(bytes.len()));
    }
    if let Some(bits) = text_strength_bits(&bytes).filter(|&bits| bits < KEY_FILE_TEXT_MIN_BITS) {
        return Err(KeyFileError::TooWeak(bits));
    }
    Ok(Credential::Key(blake3::derive_key(KEY_CONTEXT, &bytes)))
}

/// The estimated strength in bits of a secret that is text (a typed passphrase: UTF-8 without
/// control characters); `None` for other bytes (random keys).
fn text_strength_bits(bytes: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(bytes).ok()?;
    if text.chars().any(char::is_control) {
        return None;
    }
    Some(zxcvbn::zxcvbn(text, &[]).guesses_log10() * std::f64::consts::LOG2_10)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(bytes: &[u8]) -> Result<Credential, KeyFileError> {
        key_from_secret(Zeroizing::new(bytes.to_vec()))
    }

    #[test]
    fn the_same_secret_gives_the_same_key_whatever_its_trailing_whitespace() {
        let random = [7u8, 200, 3, 99, 0, 1, 2, 250, 17, 18, 19, 20, 21, 22, 23, 24, 25];
        let mut line = random.to_vec();
        line.extend_from_slice(b" \n");
        match (key(&random), key(&line)) {
            (Ok(Credential::Key(a)), Ok(Credential::Key(b))) => assert_eq!(a, b),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn short_large_and_guessable_secrets_are_refused() {
        assert_eq!(key(b"0123456789abcde\n").err(), Some(KeyFileError::TooShort(15)));
        assert_eq!(key(&vec![1u8; KEY_FILE_MAX + 1]).err(), Some(KeyFileError::TooLarge));
        assert!(matches!(key(b"passwordpassword"), Err(KeyFileError::TooWeak(_))));
        assert!(key(b"correct horse battery staple, nineteen ninety-seven").is_ok());
    }
}
