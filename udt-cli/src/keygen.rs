//! `udt keygen FILE`: write a fresh random key file for `--key-file`.
//!
//! Invariants: the key is 32 bytes from the operating system's generator, written as 64
//! lowercase hexadecimal digits and a newline (so it survives copy and paste); the file is
//! created with mode 0600 and never replaces an existing file unless `--force`; nothing is
//! left behind when writing fails.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

use anyhow::{Context, Result};
use rand_core::{OsRng, RngCore};

/// Arguments of `udt keygen`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Where to write the key (readable by its owner only).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Replace the file if it exists.
    #[arg(short, long)]
    pub force: bool,
}

/// Run `udt keygen`.
pub fn run(args: &Args, quiet: bool) -> Result<()> {
    let mut key = zeroize::Zeroizing::new([0u8; 32]);
    OsRng
        .try_fill_bytes(&mut *key)
        .map_err(|e| anyhow::anyhow!("no randomness from the operating system: {e}"))?;
    let mut text = zeroize::Zeroizing::new(String::with_capacity(65));
    for b in key.iter() {
        text.push_str(&format!("{b:02x}"));
    }
    text.push('\n');
    let path = &args.file;
    let mut options = OpenOptions::new();
    options.write(true).mode(0o600);
    if args.force {
        options.create(true).truncate(true);
    } else {
        options.create_new(true);
    }
    let mut file = options.open(path).with_context(|| {
        if path.exists() && !args.force {
            format!("{} exists (use --force to replace it)", path.display())
        } else {
            format!("cannot create {}", path.display())
        }
    })?;
    // An existing file opened with --force keeps its mode: make it the owner's only.
    use std::os::unix::fs::PermissionsExt;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))
        .with_context(|| format!("cannot make {} readable by its owner only", path.display()))?;
    if let Err(e) = file.write_all(text.as_bytes()).and_then(|()| file.sync_all()) {
        drop(file);
        let _ = std::fs::remove_file(path);
        return Err(e).with_context(|| format!("cannot write {}", path.display()));
    }
    if !quiet {
        eprintln!(
            "udt keygen: wrote a random key to {} (mode 600); copy it to the other end over a \
             safe channel (scp) and give both ends --key-file",
            path.display()
        );
    }
    Ok(())
}
