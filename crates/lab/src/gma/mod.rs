//! `aviary lab gma`: GMA allocations (the GLWP paper, Eq. 1 and 2) on a topology read from a
//! JSON file: per path its allocation `G` and the preliminary guarantee of each prefix, and per
//! AS and interface pair the allocations of all the paths summed, beside the matrix entry.
//!
//! ```json
//! {"nodes": {"<AS>": {"M": [[in, out, value], ...]}},
//!  "links": [["<AS>", iface, "<AS>", iface], ...],
//!  "paths": [{"id": "...", "hops": [["<AS>", in, out], ...]}, ...]}
//! ```
//!
//! Values are in bit/s; interface 0 is an AS's local interface, where paths start and end.
//! Without `paths`, every loop-free path between every pair of ASes along pairs with a positive
//! entry, up to [`ENUMERATION_LIMIT`] path prefixes.

mod input;

use std::path::{Path, PathBuf};

use aviary_glwp::{EnumerationError, Hop, PathError};
use aviary_scion::IsdAsn;
use serde::Serialize;
use thiserror::Error;

pub use input::{parse, FieldError, GmaInput, InputError, Problem};

/// The most path prefixes the walk over a topology without `paths` visits before it gives up:
/// the number of loop-free paths grows exponentially with a topology's density.
pub const ENUMERATION_LIMIT: usize = 100_000;

/// Why `aviary lab gma` cannot report on a file; every variant names the file. The message
/// is whole (no `source` chain), so that it is printed once as `file: field: problem`.
#[derive(Debug, Error)]
pub enum GmaError {
    #[error("{}: {error}", file.display())]
    Read { file: PathBuf, error: std::io::Error },
    #[error("{}: {error}", file.display())]
    Input { file: PathBuf, error: InputError },
    #[error("{}: {error}", file.display())]
    Run { file: PathBuf, error: RunError },
}

/// One path: its hops as `[AS, in, out]`, `G` and the preliminary guarantee of each prefix.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PathRow {
    pub id: String,
    pub hops: Vec<(IsdAsn, u16, u16)>,
    #[serde(rename = "G")]
    pub g: u64,
    pub prelim: Vec<u64>,
}

/// The summed allocations of all paths through one interface pair of one AS.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PairLoadRow {
    pub node: IsdAsn,
    #[serde(rename = "in")]
    pub ingress: u16,
    pub out: u16,
    pub load: u64,
    #[serde(rename = "M")]
    pub m: u64,
}

/// The whole report; `--json` prints it as one object.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GmaReport {
    pub paths: Vec<PathRow>,
    pub pair_load: Vec<PairLoadRow>,
}

/// Reads, checks and allocates the file.
pub fn run_file(file: &Path) -> Result<GmaReport, GmaError> {
    let text = std::fs::read_to_string(file).map_err(|error| GmaError::Read { file: file.into(), error })?;
    let input = parse(&text).map_err(|error| GmaError::Input { file: file.into(), error })?;
    run(&input).map_err(|error| GmaError::Run { file: file.into(), error })
}

/// Ids of enumerated paths: `<source>><destination>#<n>`, n counting the paths of the pair.
fn enumerated(input: &GmaInput) -> Result<Vec<(String, Vec<Hop>)>, EnumerationError> {
    let mut count: std::collections::BTreeMap<(IsdAsn, IsdAsn), usize> = Default::default();
    Ok(input
        .topology
        .loop_free_paths(ENUMERATION_LIMIT)?
        .into_iter()
        .map(|hops| {
            let (src, dst) = (hops[0].ia, hops[hops.len() - 1].ia);
            let n = count.entry((src, dst)).or_default();
            *n += 1;
            (format!("{src}>{dst}#{n}"), hops)
        })
        .collect())
}

/// Why [`run`] cannot allocate. `parse` checks the listed paths and the walk builds valid ones,
/// so only an input built by hand meets `Path`.
#[derive(Debug, Error)]
pub enum RunError {
    #[error(transparent)]
    Enumeration(#[from] EnumerationError),
    #[error("path {id:?}: {error}")]
    Path { id: String, error: PathError },
}

/// Allocates the input's paths (or every loop-free path).
pub fn run(input: &GmaInput) -> Result<GmaReport, RunError> {
    let paths = match &input.paths {
        Some(p) => p.clone(),
        None => enumerated(input)?,
    };
    let mut rows = Vec::with_capacity(paths.len());
    for (id, hops) in &paths {
        let a = input.topology.allocate(hops).map_err(|error| RunError::Path { id: id.clone(), error })?;
        rows.push(PathRow {
            id: id.clone(),
            hops: hops.iter().map(|h| (h.ia, h.ingress, h.egress)).collect(),
            g: a.guarantee_bps,
            prelim: a.prelim_bps,
        });
    }
    let pair_load = input
        .topology
        .pair_loads(paths.iter().zip(&rows).map(|((_, hops), row)| (hops.as_slice(), row.g)))
        .into_iter()
        .map(|l| PairLoadRow { node: l.ia, ingress: l.ingress, out: l.egress, load: l.load_bps, m: l.entry_bps })
        .collect();
    Ok(GmaReport { paths: rows, pair_load })
}

/// The report for a person.
pub fn table(r: &GmaReport) -> String {
    let mut out = format!("{:<40} {:>14}  {:<40} hops (AS in>out)\n", "path", "G bit/s", "preliminary guarantees");
    for p in &r.paths {
        let prelim: Vec<String> = p.prelim.iter().map(u64::to_string).collect();
        let hops: Vec<String> = p.hops.iter().map(|(ia, i, o)| format!("{ia} {i}>{o}")).collect();
        out += &format!("{:<40} {:>14}  {:<40} {}\n", p.id, p.g, prelim.join(" "), hops.join(", "));
    }
    out += &format!("\n{:<20} {:>5} {:>5} {:>14} {:>14} {:>7}\n", "AS", "in", "out", "load bit/s", "M bit/s", "load/M");
    for l in &r.pair_load {
        let share = if l.m == 0 { "-".to_string() } else { format!("{:.1}%", 100.0 * l.load as f64 / l.m as f64) };
        out += &format!(
            "{:<20} {:>5} {:>5} {:>14} {:>14} {:>7}\n",
            l.node.to_string(),
            l.ingress,
            l.out,
            l.load,
            l.m,
            share
        );
    }
    out += "G: the GMA allocation of the path; preliminary guarantees: of each prefix, the last is G.\n";
    out += "load: the allocations of all listed paths through the pair; GMA keeps it within M.\n";
    out
}

#[cfg(test)]
mod tests;
