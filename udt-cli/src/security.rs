//! The `udt` tool's security options: every transfer between two `udt` ends is encrypted and
//! mutually authenticated unless `--insecure` says otherwise (docs/security.md).
//!
//! The listening end (`udt recv`, `udt cat --listen`) shows a one-time code phrase, which the
//! connecting end is given with `--code` (or `UDT_CODE`); scripts and servers share a key file
//! instead (`--key-file`, both ends). A code phrase is four digits and three words from a list
//! of 256 (37 bits): the key agreement (SPAKE2) lets an attacker test one guess per connection,
//! and the listening end stops after a wrong one. A phrase given to a listening end, and a
//! passphrase in a key file, must be hard enough to guess (zxcvbn's estimate); `udt keygen`
//! writes random key files.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use rand_core::{OsRng, RngCore};
use udt::secure::key_file::KEY_FILE_MAX;
use udt::secure::{Credential, KeyFileError};
use udt::Options;

/// The security arguments every transfer command takes.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct SecurityArgs {
    /// The code phrase the listening end showed (`udt recv` prints one when it starts); the
    /// listening end may also be given one to use instead of a fresh one. Also from the
    /// environment variable UDT_CODE, which other users cannot read in the process list.
    #[arg(long, value_name = "CODE", env = "UDT_CODE", hide_env_values = true)]
    pub code: Option<String>,
    /// A file holding a secret both ends share (at least 16 bytes; `udt keygen FILE` writes a
    /// random one), instead of a one-time code phrase: for scripts and
    /// servers that take many transfers.
    #[arg(long, value_name = "FILE", conflicts_with = "code")]
    pub key_file: Option<PathBuf>,
    /// No encryption and no authentication: plain UDT4, for UDT4 peers and trusted networks.
    /// Anyone who can reach the port can then send, and every byte crosses the network in
    /// clear.
    #[arg(long, conflicts_with_all = ["code", "key_file"])]
    pub insecure: bool,
}

/// The words of a code phrase.
const WORDS: [&str; 256] = [
    "acid", "acorn", "actor", "adobe", "agent", "alarm", "album", "alert", "algae", "alley", "alpha",
    "amber", "ample", "angle", "ankle", "apple", "apron", "arena", "argue", "armor", "arrow", "aspen",
    "atlas", "attic", "audio", "autumn", "avenue", "bacon", "badge", "bagel", "baker", "banjo", "barge",
    "basil", "beach", "beard", "bench", "berry", "bingo", "birch", "bison", "blade", "blank", "blaze",
    "bloom", "board", "boat", "bonus", "boots", "brain", "brass", "bread", "brick", "bride", "brush",
    "bucket", "buddy", "bugle", "bunny", "cabin", "cable", "cactus", "camel", "candy", "canoe", "canyon",
    "cargo", "carrot", "castle", "cedar", "chalk", "charm", "cheek", "chess", "chief", "chili", "cider",
    "cinema", "circus", "citrus", "clay", "cliff", "clock", "cloud", "clover", "coast", "cobra", "cocoa",
    "comet", "coral", "cotton", "couch", "cowboy", "crane", "crater", "crown", "cube", "curry", "dairy",
    "daisy", "dance", "delta", "denim", "desert", "diary", "dingo", "disco", "dodge", "dolphin", "donkey",
    "dragon", "drum", "eagle", "easel", "echo", "elbow", "ember", "engine", "epoch", "fable", "falcon",
    "fancy", "farm", "feast", "fern", "ferry", "fiber", "fiddle", "field", "finch", "flame", "flint",
    "flute", "focus", "forest", "fossil", "fox", "frost", "fudge", "galaxy", "garden", "garlic", "gecko",
    "giant", "ginger", "glacier", "globe", "goat", "gold", "gorilla", "grape", "gravel", "guitar", "gulf",
    "habit", "hammer", "harbor", "hazel", "helmet", "heron", "hill", "honey", "hotel", "husky", "igloo",
    "index", "ink", "iris", "island", "ivory", "jacket", "jade", "jaguar", "jazz", "jelly", "jewel",
    "jungle", "kayak", "kettle", "kiwi", "koala", "ladder", "lagoon", "lamp", "lava", "lemon", "lens",
    "lily", "lime", "linen", "lion", "llama", "lobster", "locket", "lotus", "lunar", "magnet", "mango",
    "maple", "marble", "meadow", "melon", "mint", "mirror", "mocha", "moose", "mosaic", "motor", "mural",
    "nectar", "needle", "nickel", "noodle", "north", "nutmeg", "oasis", "ocean", "olive", "onion", "opal",
    "orbit", "orchid", "otter", "owl", "paddle", "panda", "paper", "parrot", "peach", "pearl", "pebble",
    "pencil", "pepper", "piano", "pilot", "pine", "pixel", "planet", "plum", "polar", "pony", "poppy",
    "prism", "pumpkin", "puzzle", "quartz", "quill", "rabbit", "radar", "radio", "raven", "reef", "ribbon",
    "river", "robin", "rocket",
];

/// A random key, for ends in one process (`udt perf --self`).
pub fn random_key() -> Credential {
    let mut key = [0u8; 32];
    OsRng.fill_bytes(&mut key);
    Credential::Key(key)
}

/// Whether an `accept` error is one peer's (it failed the key agreement, went silent, or
/// closed), not the listener's: the next peer may still be served. (An accept timeout is one
/// too: nobody came.)
pub fn is_peer_failure(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        PermissionDenied
            | InvalidData
            | TimedOut
            | WouldBlock
            | UnexpectedEof
            | ConnectionReset
            | ConnectionAborted
    )
}

/// A fresh code phrase: `NNNN-word-word-word`. The rare draw a listener would refuse as too
/// easy to guess (a word three times, `0000` with common words: well under 1% of draws) is
/// drawn again, which costs a negligible part of the 37 bits.
pub fn new_code_phrase() -> String {
    let mut rng = OsRng;
    loop {
        let number = rng.next_u32() % 10_000;
        let mut pick = [0u8; 3];
        rng.fill_bytes(&mut pick);
        let [a, b, c] = pick.map(|i| WORDS[usize::from(i)]);
        let code = format!("{number:04}-{a}-{b}-{c}");
        if udt::secure::check_code_strength(&code).is_ok() {
            return code;
        }
    }
}

/// The credential in a key file ([`udt::secure::key_file`]: the same derivation as every user
/// of the library's).
pub fn read_key_file(path: &Path) -> Result<Credential> {
    let file =
        std::fs::File::open(path).with_context(|| format!("cannot read the key file {}", path.display()))?;
    // The secret's bytes are wiped when this returns.
    let mut bytes = zeroize::Zeroizing::new(Vec::new());
    file.take(KEY_FILE_MAX as u64 + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read the key file {}", path.display()))?;
    let credential = udt::secure::key_from_secret(bytes).map_err(|e| {
        let fix = match e {
            KeyFileError::TooLarge => String::new(),
            KeyFileError::TooShort(_) => format!(" (for example: udt keygen {})", path.display()),
            KeyFileError::TooWeak(_) => format!(": write a random key with `udt keygen {}`", path.display()),
        };
        anyhow::anyhow!("the key file {} {e}{fix}", path.display())
    })?;
    if let Ok(meta) = std::fs::metadata(path) {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o077 != 0 {
            eprintln!(
                "udt: warning: the key file {} can be read by other users (chmod 600 {})",
                path.display(),
                path.display()
            );
        }
    }
    Ok(credential)
}

/// Which end of the connection the command is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// It connects: it must be given the credential.
    Connects,
    /// It listens: without a credential it makes up a code phrase.
    Listens,
}

/// What the command's security comes to.
#[derive(Clone, Debug)]
pub enum Security {
    /// `--insecure`.
    Plain,
    /// A key file.
    Key(Credential),
    /// A code phrase (given, or made up by a listening end: then `shown` to the user).
    Code {
        /// The credential.
        credential: Credential,
        /// The phrase, to print when this end made it up.
        shown: Option<String>,
    },
}

impl Security {
    /// Set `options` to use it.
    pub fn apply(&self, options: &mut Options) {
        options.security = match self {
            Security::Plain => None,
            Security::Key(c) | Security::Code { credential: c, .. } => Some(c.clone()),
        };
    }

    /// Whether it is a one-time code phrase (spent by one transfer or one wrong guess).
    pub fn is_code(&self) -> bool {
        matches!(self, Security::Code { .. })
    }
}

/// Print the code phrase a listening end made up (even with `--quiet`: the other end cannot
/// connect without it), with the command the other end runs (`example`, given the code in
/// `UDT_CODE`, which other users cannot read in the process list as they can a `--code`); with
/// `json`, also as a JSON line on standard output (`{"type":"code","code_phrase":...}`).
pub fn show_code(security: &Security, command: &str, example: &str, json: bool) {
    if let Security::Code { shown: Some(code), .. } = security {
        let other_end = format!("UDT_CODE={code} {example}");
        eprintln!("udt {command}: code phrase {code}; on the other end:\n  {other_end}");
        if json {
            let line = serde_json::json!({ "type": "code", "code_phrase": code, "command": other_end });
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{line}").and_then(|()| out.flush());
        }
    }
}

/// The usage error in a `--code` given to `command`, if any: a connecting end's phrase must
/// have at least 6 characters, a listening end's must be hard to guess.
pub fn check_code(args: &SecurityArgs, connects: bool, command: &str) -> Result<(), String> {
    let Some(code) = &args.code else { return Ok(()) };
    let normalized = udt::secure::handshake::normalize_code(code);
    if !connects {
        return udt::secure::check_code_strength(&normalized)
            .map_err(|why| format!("{why} (or omit --code: `udt {command}` makes one up)"));
    }
    if normalized.len() < 6 {
        return Err(format!(
            "the code phrase `{code}` is too short to protect anything (at least 6 characters)"
        ));
    }
    Ok(())
}

/// The security `args` ask for, for a command that is `side` (`command` names it in errors).
pub fn resolve(args: &SecurityArgs, side: Side, command: &str) -> Result<Security> {
    if args.insecure {
        return Ok(Security::Plain);
    }
    if let Some(path) = &args.key_file {
        return Ok(Security::Key(read_key_file(path)?));
    }
    if let Some(code) = &args.code {
        let normalized = udt::secure::handshake::normalize_code(code);
        if side == Side::Listens {
            // The listening end's phrase is the one guessed at: it must be hard to guess.
            if let Err(why) = udt::secure::check_code_strength(&normalized) {
                bail!("{why} (or omit --code: `udt {command}` makes one up)");
            }
        } else if normalized.len() < 6 {
            bail!("the code phrase `{code}` is too short to protect anything (at least 6 characters)");
        }
        return Ok(Security::Code { credential: Credential::CodePhrase(normalized), shown: None });
    }
    match side {
        Side::Listens => {
            let code = new_code_phrase();
            Ok(Security::Code { credential: Credential::CodePhrase(code.clone()), shown: Some(code) })
        }
        Side::Connects => bail!(
            "`udt {command}` needs the code phrase the other end showed: --code CODE (or UDT_CODE=CODE), \
             or a shared --key-file FILE, or --insecure for a plain UDT peer"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_phrases_are_four_digits_and_three_listed_words() {
        let code = new_code_phrase();
        let parts: Vec<&str> = code.split('-').collect();
        assert_eq!(parts.len(), 4, "{code}");
        assert!(parts[0].len() == 4 && parts[0].bytes().all(|b| b.is_ascii_digit()), "{code}");
        assert!(parts[1..].iter().all(|w| WORDS.contains(w)), "{code}");
        let mut sorted = WORDS.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 256, "the words are distinct");
    }

    #[test]
    fn key_files_need_enough_secret_and_ignore_a_trailing_newline() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, short) = (dir.path().join("a"), dir.path().join("b"), dir.path().join("short"));
        std::fs::write(&a, "correct horse battery staple\n").unwrap();
        std::fs::write(&b, "correct horse battery staple").unwrap();
        std::fs::write(&short, "hunter2\n").unwrap();
        let key = |p: &Path| match read_key_file(p).unwrap() {
            Credential::Key(k) => k,
            Credential::CodePhrase(_) => unreachable!(),
        };
        assert_eq!(key(&a), key(&b));
        let e = read_key_file(&short).unwrap_err().to_string();
        assert!(e.contains("at least 16"), "{e}");
        assert!(read_key_file(&dir.path().join("missing")).is_err());
    }

    #[test]
    fn a_connecting_end_needs_a_credential_and_a_listening_one_makes_a_code() {
        let none = SecurityArgs::default();
        let e = resolve(&none, Side::Connects, "send").unwrap_err().to_string();
        assert!(e.contains("--code") && e.contains("--insecure"), "{e}");
        assert!(matches!(
            resolve(&none, Side::Listens, "recv").unwrap(),
            Security::Code { shown: Some(_), .. }
        ));
        let plain = SecurityArgs { insecure: true, ..SecurityArgs::default() };
        assert!(matches!(resolve(&plain, Side::Connects, "send").unwrap(), Security::Plain));
        let short = SecurityArgs { code: Some("ab".into()), ..SecurityArgs::default() };
        assert!(resolve(&short, Side::Connects, "send").is_err());
    }

    #[test]
    fn a_listening_end_refuses_a_guessable_code_and_makes_strong_ones() {
        for weak in ["secret", "123456", "7-amber-fox", "password123"] {
            let args = SecurityArgs { code: Some(weak.into()), ..SecurityArgs::default() };
            let e = resolve(&args, Side::Listens, "recv").unwrap_err().to_string();
            assert!(e.contains("too easy to guess"), "{weak}: {e}");
        }
        let strong = SecurityArgs { code: Some("4821-orbit-maple-tunnel".into()), ..SecurityArgs::default() };
        assert!(resolve(&strong, Side::Listens, "recv").is_ok());
        for _ in 0..2000 {
            let code = new_code_phrase();
            assert!(udt::secure::check_code_strength(&code).is_ok(), "{code}");
        }
    }

    #[test]
    fn a_guessable_passphrase_in_a_key_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let weak = dir.path().join("weak");
        std::fs::write(&weak, "passwordpassword123\n").unwrap();
        let e = read_key_file(&weak).unwrap_err().to_string();
        assert!(e.contains("too easy to guess") && e.contains("udt keygen"), "{e}");
        let random = dir.path().join("random");
        let mut bytes = [0u8; 32];
        OsRng.fill_bytes(&mut bytes);
        bytes[0] = 0xFF; // not UTF-8: a random key, whatever its bytes
        std::fs::write(&random, bytes).unwrap();
        assert!(read_key_file(&random).is_ok());
    }
}
