//! What the examples share: the controller's events on standard error under `RUST_LOG`
//! (`udt::cc=debug`), and a usage error as exit status 2.

use std::process::ExitCode;

/// Print `tracing` events on standard error, filtered by `RUST_LOG`.
pub fn init_logs() {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .without_time()
        .init();
}

/// The parsed arguments, or the parser's message on standard error and exit status 2.
pub fn args_or_usage<T>(parsed: Result<T, String>) -> Result<T, ExitCode> {
    parsed.map_err(|e| {
        eprintln!("{e}");
        ExitCode::from(2)
    })
}
