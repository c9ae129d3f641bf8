//! `udt completions SHELL` and `udt man [--out DIR]`: shell completion scripts and man pages,
//! generated from the tool's own clap definitions, so they always match `udt --help`.
//!
//! `completions` prints the script for bash, zsh, fish, elvish or PowerShell on standard
//! output (`clap_complete`). `man` prints `udt.1` on standard output, or with `--out DIR`
//! writes `udt.1` and one page per subcommand (`udt-send.1`, `udt-perf-server.1`, ...) into
//! DIR, creating it if needed, and lists the files it wrote (`clap_mangen`). See
//! `docs/install-extras.md` for where to put them.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap_complete::Shell;
use clap_mangen::Man;

/// Arguments of `udt completions`.
#[derive(clap::Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to write the completion script for.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Arguments of `udt man`.
#[derive(clap::Args, Debug)]
pub struct ManArgs {
    /// Write udt.1 and one page per subcommand (udt-send.1, ...) into this directory instead of
    /// printing udt.1 on standard output.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// `udt completions SHELL`: the completion script of `cmd` (the whole tool) on standard output.
pub fn completions(args: &CompletionsArgs, mut cmd: clap::Command) -> Result<()> {
    let name = cmd.get_name().to_owned();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, name, &mut script);
    print(&script).context("writing the completion script")
}

/// `udt man [--out DIR]`: `cmd`'s page on standard output, or every page into DIR.
pub fn man(args: &ManArgs, cmd: clap::Command) -> Result<()> {
    let cmd = cmd.disable_help_subcommand(true);
    match &args.out {
        None => {
            let mut page = Vec::new();
            Man::new(cmd).render(&mut page).context("rendering the man page")?;
            print(&page).context("writing the man page")
        }
        Some(dir) => {
            fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            let mut cmd = cmd;
            cmd.build();
            let mut written = Vec::new();
            write_pages(cmd, dir, &mut written)?;
            let mut list = String::new();
            for path in &written {
                list.push_str(&format!("{}\n", path.display()));
            }
            print(list.as_bytes()).context("listing the pages")
        }
    }
}

/// Writes `bytes` to standard output; a reader that went away (`udt man | head`) is no error.
fn print(bytes: &[u8]) -> io::Result<()> {
    let mut out = io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// Writes `cmd`'s page and those of its visible subcommands, depth first, into `dir`; `cmd` is
/// built, so each subcommand's page is named after its full path (`udt-perf-server.1`).
fn write_pages(cmd: clap::Command, dir: &Path, written: &mut Vec<PathBuf>) -> Result<()> {
    let man = Man::new(cmd.clone());
    let path = man
        .generate_to(dir)
        .with_context(|| format!("writing {}", dir.join(man.get_filename()).display()))?;
    written.push(path);
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub.clone(), dir, written)?;
    }
    Ok(())
}
