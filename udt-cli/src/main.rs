//! `udt`: move data over UDT (UDP-based Data Transfer).
//!
//! - `udt send FILE... HOST:PORT` and `udt recv [--listen ADDR:PORT] [--out DIR]`: file
//!   transfer, verified end to end with BLAKE3 (see `udt-transfer/PROTOCOL.md`);
//!   `udt send FILE... [USER@]HOST:[DIR]` and `udt recv [USER@]HOST:PATH... [DIR]` start the
//!   other end through ssh.
//! - `udt serve --protocol tsunami|rbudp|fobs PATH` and `udt fetch --protocol ... HOST NAME...`:
//!   the seed papers' other protocols (Tsunami UDP, RBUDP, FOBS), which pull: the end with the
//!   data listens (see docs/protocols.md).
//! - `udt cat HOST:PORT` and `udt cat --listen ADDR:PORT`: netcat over a raw UDT stream.
//! - `udt perf server`, `udt perf client HOST:PORT`, `udt perf --self`: iperf3-style tests.
//! - `udt sim list`, `udt sim SCENARIO`: the thesis' experiments in the simulator.
//! - `udt cc list`: the congestion controls `--cc NAME[:key=value,...]` accepts.
//! - `udt keygen FILE`: a random key file for `--key-file`.
//! - `udt netem`: a WAN emulator between two network namespaces (root).
//! - `udt bench`: UDT against UDT4, kernel TCP and UDP across that emulator (root).
//! - `udt completions SHELL`, `udt man [--out DIR]`: shell completions and man pages.
//!
//! Exit status: 0 on success, 1 when a transfer or the network failed, 2 on a usage error, 130
//! when interrupted (Ctrl-C, SIGTERM, SIGHUP).

mod bench;
mod bulk;
mod cat;
mod cc;
mod closed_stdout;
mod cpu;
mod fetch;
mod interrupt;
mod keygen;
mod link;
mod manual;
mod net;
mod observe;
mod perf;
mod progress;
mod recv;
mod remote;
mod report;
mod security;
mod send;
mod serve;
mod sim;
mod sim_args;
mod sim_seeds;
mod units;

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::{ArgAction, CommandFactory, Parser, Subcommand};
use tracing_subscriber::EnvFilter;
/// The file protocol's wire format and name rules, which `perf`, `serve` and `fetch` share.
use udt_transfer::protocol;

/// The exit-status section of `udt --help`.
const EXIT_STATUS: &str = "\
Exit status:
  0  success
  1  a transfer or the network failed (refused or corrupt file, no answer, connection lost)
  2  usage error (bad arguments)
  130  interrupted (Ctrl-C, SIGTERM or SIGHUP; send, recv, serve, fetch, cat, perf)
  141  standard output closed by its reader (`udt cc list | head`)

Logs go to standard error: -v for info, -vv for debug, -vvv for trace; RUST_LOG overrides.";

/// Move data over UDT: file transfer, netcat and throughput tests.
#[derive(Parser, Debug)]
#[command(name = "udt", version, after_help = EXIT_STATUS, propagate_version = true)]
struct Cli {
    /// More log output on standard error (repeat for more).
    #[arg(short, long, action = ArgAction::Count, global = true)]
    verbose: u8,
    /// No progress display, interval lines or "listening on" lines (summaries and errors still
    /// print).
    #[arg(short, long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
enum Command {
    /// Send files to `udt recv`, each verified with BLAKE3.
    #[command(after_help = EXIT_STATUS)]
    Send(send::Args),
    /// Receive files from `udt send` into a directory.
    #[command(after_help = EXIT_STATUS)]
    Recv(recv::Args),
    /// Serve files over Tsunami, RBUDP or FOBS (these protocols pull: `udt fetch` connects here).
    #[command(after_help = EXIT_STATUS)]
    Serve(serve::Args),
    /// Fetch files from a Tsunami, RBUDP or FOBS server (`udt serve`, `tsunamid`, RBUDP `sendfile`).
    #[command(after_help = EXIT_STATUS)]
    Fetch(fetch::Args),
    /// Netcat over UDT: standard input to the peer, the peer to standard output.
    #[command(after_help = EXIT_STATUS)]
    Cat(cat::Args),
    /// Throughput test (iperf3 style): `perf server`, `perf client HOST:PORT`, `perf --self`.
    #[command(after_help = EXIT_STATUS)]
    Perf(perf::Args),
    /// Run a simulator scenario (the thesis' chapter 4 experiments) in virtual time.
    #[command(after_help = EXIT_STATUS)]
    Sim(sim::Args),
    /// Write a random key file for --key-file (mode 600).
    #[command(after_help = EXIT_STATUS)]
    Keygen(keygen::Args),
    /// Congestion controls: `cc list` describes what `--cc` accepts.
    #[command(after_help = EXIT_STATUS)]
    Cc(cc::Args),
    /// WAN emulator (root): two network namespaces joined through TUN devices with rate, delay,
    /// loss, reordering, duplication and corruption applied in user space.
    #[command(after_help = EXIT_STATUS)]
    Netem(udt_netem::cli::Args),
    /// WAN benchmark (root): our UDT against UDT4, kernel TCP (CUBIC, BBR) and raw UDP through
    /// the same emulated paths (rate x RTT x loss), with shared-link runs.
    #[command(after_help = EXIT_STATUS)]
    Bench(bench::Args),
    /// Print the shell completion script for bash, zsh, fish, elvish or powershell.
    Completions(manual::CompletionsArgs),
    /// Print the man page udt.1, or write it and one page per subcommand with --out DIR.
    Man(manual::ManArgs),
}

/// Exit 2 with `message` and the usage of the subcommand `name` (`"perf client"` for a nested
/// one), as clap does for the errors it finds itself.
fn usage_error(name: &str, kind: clap::error::ErrorKind, message: impl std::fmt::Display) -> ! {
    let mut command = Cli::command();
    command.build();
    for word in name.split_whitespace() {
        match command.find_subcommand(word) {
            Some(sub) => command = sub.clone(),
            None => break,
        }
    }
    command.error(kind, message).exit()
}

fn main() -> ExitCode {
    closed_stdout::install();
    let cli = Cli::parse();
    if let Command::Send(a) = &cli.command {
        if let Err(why) = send::check_usage(a) {
            usage_error("send", clap::error::ErrorKind::InvalidValue, why);
        }
    }
    if let Command::Recv(a) = &cli.command {
        if let Err(why) = recv::check_usage(a) {
            usage_error("recv", clap::error::ErrorKind::InvalidValue, why);
        }
    }
    if let Command::Sim(a) = &cli.command {
        if let Err(why) = sim::check_usage(a) {
            usage_error("sim", clap::error::ErrorKind::InvalidValue, why);
        }
    }
    // A transfer between `udt` ends is secured unless --insecure: the connecting end must be
    // given the credential (usage errors, exit 2).
    let (connects, listens_for_many, security, name) = match &cli.command {
        // A transfer started through ssh is secured with a fresh key of its own.
        Command::Send(a) if !send::connects_directly(a) => (false, false, None, ""),
        Command::Recv(a) if !recv::listens(a) => (false, false, None, ""),
        Command::Send(a) => (true, false, Some(&a.security), "send"),
        Command::Cat(a) => (a.target.is_some(), a.keep_listening, Some(&a.security), "cat"),
        Command::Recv(a) => (false, a.keep_listening, Some(&a.security), "recv"),
        Command::Perf(perf::Args { mode: Some(perf::Mode::Client(c)), .. }) => {
            (true, false, Some(&c.test.security), "perf client")
        }
        _ => (false, false, None, ""),
    };
    if let Some(s) = security {
        let given = s.insecure || s.code.is_some() || s.key_file.is_some();
        if connects && !given {
            usage_error(
                name,
                clap::error::ErrorKind::MissingRequiredArgument,
                format!(
                    "`udt {name}` needs the code phrase the other end showed: --code CODE (or \
                     UDT_CODE=CODE), or a shared --key-file FILE, or --insecure for a plain UDT peer"
                ),
            );
        }
        if let Err(why) = security::check_code(s, connects, name) {
            usage_error(name, clap::error::ErrorKind::InvalidValue, why);
        }
        if listens_for_many && !(s.insecure || s.key_file.is_some()) {
            usage_error(
                name,
                clap::error::ErrorKind::ArgumentConflict,
                "a code phrase serves one transfer; --keep-listening takes many: give both ends a \
                 shared --key-file FILE (or --insecure on a trusted network)",
            );
        }
    }
    // The seed protocols: the acknowledgement that they run in clear, RBUDP's rate and
    // Tsunami's secret are usage errors when missing (exit 2), before any socket is opened.
    let seed = match &cli.command {
        Command::Serve(a) => Some((a.protocol, &a.tuning, bulk::Side::Serves, "serve")),
        Command::Fetch(a) => Some((a.protocol, &a.tuning, bulk::Side::Fetches, "fetch")),
        _ => None,
    };
    if let Some((protocol, tuning, side, name)) = seed {
        if let Err(why) = bulk::check_usage(protocol, tuning, side) {
            usage_error(name, clap::error::ErrorKind::MissingRequiredArgument, why);
        }
    }
    init_logging(cli.verbose);
    if matches!(
        cli.command,
        Command::Send(_)
            | Command::Recv(_)
            | Command::Serve(_)
            | Command::Fetch(_)
            | Command::Cat(_)
            | Command::Perf(_)
    ) {
        if let Err(e) = interrupt::install() {
            eprintln!("udt: {e:#}");
            return ExitCode::from(1);
        }
    }
    let result = match &cli.command {
        Command::Send(a) => send::run(a, cli.quiet),
        Command::Recv(a) => recv::run(a, cli.quiet),
        Command::Serve(a) => serve::run(a, cli.quiet),
        Command::Fetch(a) => fetch::run(a, cli.quiet),
        Command::Cat(a) => cat::run(a, cli.quiet),
        Command::Perf(a) => perf::run(a, cli.quiet),
        Command::Sim(a) => sim::run(a),
        Command::Cc(a) => cc::run(a),
        Command::Keygen(a) => keygen::run(a, cli.quiet),
        Command::Netem(a) => udt_netem::cli::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Completions(a) => manual::completions(a, Cli::command()),
        Command::Man(a) => manual::man(a, Cli::command()),
    };
    if interrupt::requested() {
        let name = match cli.command {
            Command::Send(_) => "send",
            Command::Recv(_) => "recv",
            Command::Serve(_) => "serve",
            Command::Fetch(_) => "fetch",
            Command::Cat(_) => "cat",
            Command::Bench(_) => "bench",
            _ => "perf",
        };
        eprintln!("udt {name}: interrupted");
        return ExitCode::from(interrupt::EXIT_STATUS);
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let name = match cli.command {
                Command::Send(_) => "send",
                Command::Recv(_) => "recv",
                Command::Serve(_) => "serve",
                Command::Fetch(_) => "fetch",
                Command::Cat(_) => "cat",
                Command::Perf(_) => "perf",
                Command::Sim(_) => "sim",
                Command::Cc(_) => "cc",
                Command::Keygen(_) => "keygen",
                Command::Netem(_) => "netem",
                Command::Bench(_) => "bench",
                Command::Completions(_) => "completions",
                Command::Man(_) => "man",
            };
            eprintln!("udt {name}: error: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// Logs to standard error; `RUST_LOG` wins over `-v`.
fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false)
        .init();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn send_takes_files_then_target() {
        let cli = Cli::try_parse_from(["udt", "send", "a", "b/c.txt", "host:9000"]).unwrap();
        match cli.command {
            Command::Send(a) => {
                assert_eq!(a.files().len(), 2);
                assert_eq!(a.target(), Ok(remote::spec::SendTarget::Udt("host:9000".into())));
                assert!(send::connects_directly(&a));
            }
            other => panic!("{other:?}"),
        }
        let usage = |args: &[&str]| match Cli::try_parse_from(args) {
            Ok(Cli { command: Command::Send(a), .. }) => send::check_usage(&a),
            Ok(other) => panic!("{other:?}"),
            Err(e) => Err(e.to_string()),
        };
        assert!(usage(&["udt", "send", "host:9000"]).is_err());
        assert!(usage(&["udt", "send", "a", "host"]).is_err());
        assert!(usage(&["udt", "send", "a", "b", "host:1", "--as", "c"]).is_err());
        assert!(usage(&["udt", "send", "a", "me@host:dir"]).is_ok());
        let cli = Cli::try_parse_from(["udt", "send", "a", "host:1", "--as", "b", "--json"]).unwrap();
        match cli.command {
            Command::Send(a) => assert_eq!(a.rename.as_deref(), Some(std::ffi::OsStr::new("b"))),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn recv_pulls_from_one_host_into_a_directory() {
        let pull = |args: &[&str]| match Cli::try_parse_from(args).unwrap().command {
            Command::Recv(a) => recv::pull(&a),
            other => panic!("{other:?}"),
        };
        let p = pull(&["udt", "recv", "me@h:a", "h2:b"]);
        assert!(p.is_err(), "two hosts: {p:?}");
        let p = pull(&["udt", "recv", "me@h:a", "me@h:b c", "dest"]).unwrap().unwrap();
        assert_eq!((p.remote.destination.as_str(), p.paths.len()), ("me@h", 2));
        assert_eq!(p.out, std::path::Path::new("dest"));
        let p = pull(&["udt", "recv", "h:a", "-o", "x"]).unwrap().unwrap();
        assert_eq!(p.out, std::path::Path::new("x"));
        assert!(pull(&["udt", "recv", "h:a", "dest", "-o", "x"]).is_err());
        assert!(pull(&["udt", "recv", "h:", "dest"]).is_err());
        assert!(pull(&["udt", "recv", "dest"]).is_err());
        assert!(pull(&["udt", "recv", "-o", "x"]).unwrap().is_none());
    }

    #[test]
    fn perf_forms() {
        assert!(Cli::try_parse_from(["udt", "perf", "--self", "--time", "2", "--json"]).is_ok());
        assert!(Cli::try_parse_from(["udt", "perf", "client", "h:1", "-P", "4", "-t", "3"]).is_ok());
        assert!(Cli::try_parse_from(["udt", "perf", "server", "-1"]).is_ok());
        assert!(Cli::try_parse_from(["udt", "perf", "--time", "2"]).is_err());
        assert!(Cli::try_parse_from(["udt", "perf", "--self", "--time", "0"]).is_err());
        assert!(Cli::try_parse_from(["udt", "cat"]).is_err());
        assert!(Cli::try_parse_from(["udt", "cat", "--listen", ":9000"]).is_ok());
    }

    #[test]
    fn quantities_follow_one_grammar() {
        let max_size = |v: &str| match Cli::try_parse_from(["udt", "recv", "--max-size", v]).unwrap().command
        {
            Command::Recv(a) => a.max_size,
            other => panic!("{other:?}"),
        };
        assert_eq!(max_size("1M"), Some(1_000_000));
        assert_eq!(max_size("1MiB"), Some(1 << 20));
        for flag in ["--rate", "-b", "--bandwidth"] {
            let cli = Cli::try_parse_from(["udt", "perf", "--self", flag, "10mbps", "-t", "500ms"]).unwrap();
            match cli.command {
                Command::Perf(a) => {
                    assert_eq!(a.test.bandwidth, Some(10_000_000), "{flag}");
                    assert_eq!(a.test.time, std::time::Duration::from_millis(500));
                }
                other => panic!("{other:?}"),
            }
        }
        for flag in ["--rate", "--bw"] {
            match Cli::try_parse_from(["udt", "sim", "fig4-3", flag, "1gbit", "--loss", "1%"])
                .unwrap()
                .command
            {
                Command::Sim(a) => assert_eq!((a.bw, a.loss), (Some(1000.0), Some(0.01)), "{flag}"),
                other => panic!("{other:?}"),
            }
        }
        assert!(Cli::try_parse_from(["udt", "sim", "fig4-3", "--loss", "5"]).is_err());
        match Cli::try_parse_from(["udt", "cat", "h:1", "--rate", "1MB/s"]).unwrap().command {
            Command::Cat(a) => assert_eq!(a.rate, Some(8_000_000)),
            other => panic!("{other:?}"),
        }
    }
}
