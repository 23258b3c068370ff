//! `aviary`: the command of the suite.

use anyhow::Result;
use clap::{Parser, Subcommand};

use aviary_lab::{bench, demo, machine};

#[derive(Parser)]
#[command(name = "aviary", version, about = "Inter-domain QoS for SCION: Hummingbird reservations and friends")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Data-plane demo: reserved, best-effort and attack flows through five ASes.
    Demo {
        /// Print the summary as one JSON object.
        #[arg(long)]
        json: bool,
        /// Simulated duration in milliseconds.
        #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..=600_000))]
        duration_ms: u64,
    },
    /// Per-packet cost on one core, beside the figures of seed 000.
    Bench {
        /// Print one JSON object per row.
        #[arg(long)]
        json: bool,
        /// A short run (smoke test); the figures are rough.
        #[arg(long)]
        quick: bool,
    },
}

fn main() -> Result<()> {
    match Cli::parse().command {
        Command::Demo { json, duration_ms } => {
            let report = demo::run(duration_ms);
            if json {
                println!("{}", serde_json::to_string(&report)?);
            } else {
                println!("aviary demo: {} for {:.1} s of simulated time\n", report.topology, report.duration_s);
                print!("{}", demo::table(&report));
            }
        }
        Command::Bench { json, quick } => {
            let effort = if quick { bench::Effort::QUICK } else { bench::Effort::FULL };
            if !json {
                eprintln!("measuring on {} (one core) ...", machine::describe());
            }
            let rows = bench::run(effort);
            if json {
                for r in &rows {
                    println!("{}", serde_json::to_string(r)?);
                }
            } else {
                print!("{}", bench::table(&rows));
                println!("\npaper: seed 000, DPDK on a 2.1 GHz Xeon (Tables 3 and 4); ours: {}", machine::describe());
            }
        }
    }
    Ok(())
}
