//! `udt cc list`: the congestion controls `--cc` accepts, with their parameters.
//!
//! The list is `udt-cc`'s catalog and parameter table itself, so it cannot drift from what
//! `--cc` parses.

use anyhow::Result;
use serde::Serialize;
use udt::cc::{catalog, CcInfo, DEFAULT_CC};

/// Arguments of `udt cc`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// What to do.
    #[command(subcommand)]
    pub action: Action,
}

/// `udt cc list`.
#[derive(clap::Subcommand, Debug)]
pub enum Action {
    /// Describe every algorithm, its aliases and parameters.
    List {
        /// One JSON array instead of text.
        #[arg(long, conflicts_with = "markdown")]
        json: bool,
        /// The parameter tables as Markdown (those of docs/congestion-control.md).
        #[arg(long)]
        markdown: bool,
    },
}

#[derive(Serialize)]
struct Param {
    key: &'static str,
    default: String,
    values: String,
    unit: &'static str,
    doc: &'static str,
}

#[derive(Serialize)]
struct Entry {
    name: &'static str,
    aliases: &'static [&'static str],
    summary: &'static str,
    reference: &'static str,
    both_ends: bool,
    params: Vec<Param>,
}

fn entry(info: &CcInfo) -> Entry {
    Entry {
        name: info.name,
        aliases: info.aliases,
        summary: info.summary,
        reference: info.reference,
        both_ends: info.both_ends,
        params: info
            .params
            .iter()
            .map(|p| Param {
                key: p.key,
                default: p.default_text(),
                values: p.range_text(),
                unit: p.unit,
                doc: p.doc,
            })
            .collect(),
    }
}

/// Run `udt cc`.
pub fn run(args: &Args) -> Result<()> {
    let Action::List { json, markdown } = args.action;
    if markdown {
        print!("{}", udt::cc::registry::markdown());
        return Ok(());
    }
    let entries: Vec<Entry> = catalog().iter().map(entry).collect();
    if json {
        println!("{}", serde_json::to_string_pretty(&entries)?);
        return Ok(());
    }
    println!("Congestion controls for --cc NAME[:key=value,...] (default: {DEFAULT_CC})\n");
    for e in &entries {
        let aliases =
            if e.aliases.is_empty() { String::new() } else { format!(" (also {})", e.aliases.join(", ")) };
        println!("{}{aliases}", e.name);
        println!("    {}", e.summary);
        println!("    from: {}", e.reference);
        if e.both_ends {
            println!("    run it at both ends: the receiving end's controller answers its messages");
        }
        for p in &e.params {
            let unit = if p.unit.is_empty() { String::new() } else { format!(", {}", p.unit) };
            println!(
                "    {:<18} {} ({}{unit}; default {})",
                format!("{}=", p.key),
                p.doc,
                p.values,
                p.default
            );
        }
        println!();
    }
    println!("Example: udt perf --self --cc cubic:beta=0.7   udt send --cc newreno:ack=1 FILE HOST:PORT");
    Ok(())
}
