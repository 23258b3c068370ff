//! `aviary glwp`: GLWP allocations for a host (see docs/glwp.md).

use std::path::PathBuf;

use anyhow::{Context, Result};
use aviary_node::api::{glwp_discover, GlwpAllocationWire, GlwpDiscoverRequest};
use aviary_node::config::HostConfig;
use aviary_scion::IsdAsn;
use clap::Subcommand;

#[derive(Subcommand)]
pub enum GlwpCommand {
    /// Discovers the GLWP allocation of one of the host's paths: the host's AS's GLWP service
    /// runs the discovery with the GLWP services of every AS on the path and hands back AID, β,
    /// expiry and the hop keys.
    Discover {
        /// Host config (TOML), e.g. aviary-run/hosts/h111.toml.
        #[arg(long)]
        host: PathBuf,
        /// The destination AS.
        #[arg(long)]
        dst: IsdAsn,
        /// Which of the control service's paths to the destination (as `/v1/paths` lists them).
        #[arg(long, default_value_t = 0)]
        path_index: usize,
        /// τ: fail if the guarantee falls below this many bit/s, naming the AS where it does.
        #[arg(long, default_value_t = 0)]
        min_bps: u64,
        /// Write the allocation (AID, β, expiry, path, hop keys) as JSON to this file (mode 0600:
        /// the hop keys let anyone send under the allocation).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Print the allocation as one JSON object instead of a table (without the hop keys).
        #[arg(long)]
        json: bool,
    },
}

pub fn run(command: GlwpCommand) -> Result<()> {
    match command {
        GlwpCommand::Discover { host, dst, path_index, min_bps, out, json } => {
            let cfg = HostConfig::load(&host)?;
            let alloc = glwp_discover(cfg.control, &GlwpDiscoverRequest { dst, path_index, min_bps })?;
            if let Some(file) = &out {
                let text = serde_json::to_string_pretty(&alloc)? + "\n";
                aviary_node::files::write_secret(file, text.as_bytes())
                    .with_context(|| format!("cannot write {}", file.display()))?;
            }
            if json {
                let mut shown = alloc.clone();
                shown.hops.iter_mut().for_each(|h| h.hop_key = None);
                println!("{}", serde_json::to_string(&shown)?);
            } else {
                print!("{}", table(&alloc));
                if let Some(file) = &out {
                    println!("allocation with hop keys written to {}", file.display());
                }
            }
        }
    }
    Ok(())
}

fn table(a: &GlwpAllocationWire) -> String {
    let mut s = format!(
        "GLWP allocation from {}\n  AID        {}\n  β          {} bit/s ({} kbit/s in the header)\n  expires    {} (Unix s)\n\n",
        a.src, a.aid, a.guarantee_bps, a.beta_kbps, a.ts_exp
    );
    s += &format!(
        "  {:<16} {:>4} {:>4} {:>14} {:>14} {:>14}  hop key\n",
        "AS", "in", "out", "DIV bit/s", "M bit/s", "CON bit/s"
    );
    for h in &a.hops {
        let key = if h.hop_key.is_some() { "received" } else { "-" };
        s += &format!(
            "  {:<16} {:>4} {:>4} {:>14} {:>14} {:>14}  {key}\n",
            h.ia.to_string(),
            h.ingress,
            h.egress,
            h.div_bps,
            h.m_bps,
            h.con_bps
        );
    }
    s
}
