//! `udt netem` without the `udt` binary: `cargo run -p udt-netem --example netem -- --help`.

use clap::Parser;

/// Emulate a WAN link between two network namespaces.
#[derive(Parser, Debug)]
#[command(name = "netem")]
struct Cli {
    #[command(flatten)]
    args: udt_netem::cli::Args,
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    match udt_netem::cli::run(&cli.args) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("netem: error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
