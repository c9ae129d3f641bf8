//! Run a named scenario of the simulator and print its table of measures.
//!
//! ```text
//! cargo run --release -p udt-lab --example sim -- <scenario> [--json] [--svg out.svg] [--seed N]
//!     [--full] [--flows-table] [--jobs N] [--pcap out.pcap]
//!     [--bw MBPS] [--rtt MS] [--loss P] [--burst PKTS] [--queue PKTS] [--red] [--udt4-receiver]
//!     [--flows N] [--time S] [--warmup S] [--sample S] [--cc SPEC]
//! cargo run --release -p udt-lab --example sim -- --list
//! ```
//!
//! `--cc SPEC` takes any specification of the `udt-proto` catalog (`udt cc list`), default
//! `udt_cc::DEFAULT_CC`.
//!
//! `--json` prints the JSON report on stdout and the table on stderr. The seed also comes from
//! `UDT_SIM_SEED`; it is printed with the results, and the same seed gives the same numbers.

use std::path::PathBuf;
use std::process::ExitCode;

use udt_lab::scenario::{self, Params, SCENARIOS};
use udt_sim::rng::seed_from_env;

struct Args {
    scenario: String,
    json: bool,
    svg: Option<PathBuf>,
    flows_table: bool,
    params: Params,
}

fn usage() -> String {
    let mut s = String::from(
        "usage: sim <scenario> [--json] [--svg FILE] [--seed N] [--full] [--flows-table] [--jobs N] [--pcap FILE]\n\
         \x20          [--bw MBPS] [--rtt MS] [--loss P] [--burst PKTS] [--queue PKTS] [--red] [--udt4-receiver] [--flows N]\n\
         \x20          [--time S] [--warmup S] [--sample S] [--cc SPEC]\n\
         scenarios:\n",
    );
    for sc in SCENARIOS {
        s.push_str(&format!("  {:<12} {}\n", sc.name, sc.about));
    }
    s
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        scenario: String::new(),
        json: false,
        svg: None,
        flows_table: false,
        params: Params { seed: seed_from_env(1), ..Params::default() },
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--json" => a.json = true,
            "--flows-table" => a.flows_table = true,
            "--full" => a.params.full = true,
            "--red" => a.params.red = true,
            "--udt4-receiver" => a.params.udt4_receivers = true,
            "--svg" => a.svg = Some(PathBuf::from(it.next().ok_or("--svg needs a file")?)),
            flag if flag.starts_with("--") => {
                let key = &flag[2..];
                let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
                a.params.set(key, &value)?;
            }
            name if a.scenario.is_empty() => a.scenario = name.to_string(),
            other => return Err(format!("unexpected argument {other:?}\n{}", usage())),
        }
    }
    if a.scenario.is_empty() {
        return Err(usage());
    }
    Ok(a)
}

fn main() -> ExitCode {
    if std::env::args().skip(1).any(|a| matches!(a.as_str(), "-h" | "--help" | "--list")) {
        print!("{}", usage());
        return ExitCode::SUCCESS;
    }
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let seed = args.params.seed;
    let report = match scenario::run(&args.scenario, &args.params) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("sim: {e} (seed {seed}; replay with UDT_SIM_SEED={seed})");
            return ExitCode::FAILURE;
        }
    };
    let mut table = report.table();
    if args.flows_table {
        table.push_str(&report.flow_table());
    }
    if args.json {
        eprint!("{table}");
        println!("{}", report.to_json());
    } else {
        print!("{table}");
    }
    if let Some(path) = &args.svg {
        if let Err(e) = udt_lab::plot::svg(&report, path) {
            eprintln!("sim: plot: {e}");
            return ExitCode::FAILURE;
        }
        eprintln!("plot written to {}", path.display());
    }
    ExitCode::SUCCESS
}
