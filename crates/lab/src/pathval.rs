//! `aviary lab pathval`: the sampling figures and tables of the paper *Hummingbird: Dynamic
//! Path Validation with Hidden Equal-Probability Sampling*, measured by sending packets
//! through [`aviary_pathval::Chain`] (the real source, router and destination processing),
//! not computed from the paper's closed forms.
//!
//! - Fig. 4: for `N` = 2..12 nodes (source and destination included), how many of the packets
//!   each sampling node (source first; the destination never samples) was the last to sample.
//! - Fig. 10: the mean number of samples per packet, beside the paper's `ln N + 0.5772` and
//!   the exact expectation `H_{N-1}` (the destination does not sample).
//! - Table V: how many packets it takes until every segment of the path (node `i` to node
//!   `i + 1`) has been covered by a sample, measured on consecutive packets, beside the
//!   paper's `N / (ln N + 0.5772)`.
//! - Table IV: the time of each of the paper's functions on this machine, 1000-byte payloads.
//! - Detection: each attack against pathval and its references ([`crate::pathval_attack`]).

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Instant;

use aviary_pathval::functions::{self, HeaderMut};
use aviary_pathval::header::{emit_extension, EXTENSION_LEN};
use aviary_pathval::{Chain, EndToEndKey, Freshness, LinkKey, PathvalView, SamplingKey, Verdict};
use aviary_qos::SeededRandom;
use aviary_scion::drkey::Epoch;
use serde::Serialize;

use crate::pathval_attack::{self, Detection};

/// Euler-Mascheroni constant, as the paper rounds it.
pub const GAMMA: f64 = 0.5772;
/// Path lengths measured (nodes, source and destination included).
pub const NODES: std::ops::RangeInclusive<usize> = 2..=12;
const NOW: u64 = 1_700_000_000;
const TIMING_PAYLOAD: usize = 1000;

/// How much to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Effort {
    /// Packets per path length (the paper sends 10 000).
    pub packets: u64,
    /// Calls per function for Table IV.
    pub timing_calls: u32,
    /// Packets per cell of the detection table (attack × scheme × path length).
    pub attack_packets: u64,
}

impl Effort {
    pub const FULL: Self = Self { packets: 10_000, timing_calls: 20_000, attack_packets: 2_000 };
    pub const QUICK: Self = Self { packets: 2_000, timing_calls: 2_000, attack_packets: 200 };
}

/// Fig. 4 and Fig. 10 for one path length.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PathLength {
    pub packets: u64,
    /// Per sampling node, source first: packets it sampled with no later node sampling.
    pub fig4_counts: Vec<u64>,
    /// The paper's expectation of every count, `packets / (N - 1)`.
    pub fig4_expected: f64,
    pub fig10_mean_samples: f64,
    /// The paper's closed form `ln N + 0.5772`.
    pub fig10_paper: f64,
    /// The exact expectation `H_{N-1} = 1 + 1/2 + ... + 1/(N-1)`.
    pub fig10_exact: f64,
}

/// Table V for one path length.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Coverage {
    /// Times the path was covered in a row of consecutive packets.
    pub covers: u64,
    /// Mean packets per cover.
    pub mean_packets: f64,
    /// The paper's closed form `N / (ln N + 0.5772)` (its Table V prints it rounded, and for
    /// N = 2 as 1).
    pub paper: f64,
}

/// Everything `aviary lab pathval` reports.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PathvalReport {
    #[serde(rename = "by_N")]
    pub by_n: BTreeMap<String, PathLength>,
    pub table5: BTreeMap<String, Coverage>,
    /// Table IV: ns per call of each function.
    pub timing_ns: BTreeMap<&'static str, f64>,
    pub detection: Detection,
}

fn harmonic(n: usize) -> f64 {
    (1..=n).map(|k| 1.0 / k as f64).sum()
}

/// Sends `effort.packets` packets through a chain of `nodes` nodes.
fn measure_path(nodes: usize, packets: u64) -> (PathLength, Coverage) {
    let epoch = Epoch::new(1_699_990_000, 1_700_090_000).expect("a valid epoch");
    let fresh = Freshness { max_age_s: 3, max_future_s: 1 };
    let mut chain = Chain::new(nodes, 0x7076 + nodes as u64, epoch, fresh).expect("the chain's keys derive");
    let mut random = SeededRandom::new(nodes as u64);
    let mut counts = vec![0u64; nodes - 1];
    let (mut samples, mut covers, mut in_cover, mut packets_in_covers) = (0u64, 0u64, 0u64, 0u64);
    let mut covered = vec![false; nodes - 1];
    for i in 0..packets {
        let mut pkt = chain.packet(&i.to_be_bytes());
        let trip = chain.run(&mut pkt, NOW as u32, NOW, &mut random);
        assert_eq!(trip.verdict, Verdict::Deliver, "an honest packet is delivered");
        let last = trip.sampled.iter().rposition(|s| *s).expect("the source samples");
        counts[last] += 1;
        samples += trip.sampled.iter().filter(|s| **s).count() as u64;
        in_cover += 1;
        covered.iter_mut().zip(&trip.sampled).for_each(|(c, s)| *c |= *s);
        if covered.iter().all(|c| *c) {
            covers += 1;
            packets_in_covers += in_cover;
            in_cover = 0;
            covered.fill(false);
        }
    }
    let n = nodes as f64;
    let length = PathLength {
        packets,
        fig4_counts: counts,
        fig4_expected: packets as f64 / (n - 1.0),
        fig10_mean_samples: samples as f64 / packets as f64,
        fig10_paper: n.ln() + GAMMA,
        fig10_exact: harmonic(nodes - 1),
    };
    let coverage = Coverage {
        covers,
        mean_packets: if covers == 0 { f64::NAN } else { packets_in_covers as f64 / covers as f64 },
        paper: n / (n.ln() + GAMMA),
    };
    (length, coverage)
}

/// Mean ns per call of `f` over `calls` calls.
fn time(calls: u32, mut f: impl FnMut()) -> f64 {
    for _ in 0..calls / 10 {
        f();
    }
    let t = Instant::now();
    for _ in 0..calls {
        f();
    }
    t.elapsed().as_nanos() as f64 / f64::from(calls)
}

/// Table IV: each function on a 1000-byte payload, keys expanded once as a router holds them.
pub(crate) fn timings(calls: u32) -> BTreeMap<&'static str, f64> {
    let (k_prev, k_next) = (LinkKey::new([1; 16]), LinkKey::new([2; 16]));
    let (k0n, sampling) = (EndToEndKey::new([3; 16]), SamplingKey::new([4; 16]));
    let payload = vec![0x5a; TIMING_PAYLOAD];
    let mut ext = [0u8; EXTENSION_LEN];
    let at = emit_extension(17, &mut ext);
    let mut random = SeededRandom::new(1);
    let mut base = ext[at].to_vec();
    let mut hdr: HeaderMut<'_> = PathvalView::new_checked(&mut base[..]).expect("101 bytes");
    functions::src_initialization(&mut hdr, &payload, &[9; 16], NOW as u32, &k0n);
    functions::construction(&mut hdr, &k_prev).expect("hop count 0");
    let sampled = base.clone();
    let mut unsampled = sampled.clone();
    functions::update(&mut PathvalView::new_checked(&mut unsampled[..]).expect("101 bytes"), &k_prev, &mut random)
        .expect("hop count 1");
    let mut work = sampled.clone();
    let mut out = BTreeMap::new();
    let mut measure = |name, from: &[u8], f: &mut dyn FnMut(&mut HeaderMut<'_>)| {
        let ns = time(calls, || {
            work.copy_from_slice(from);
            f(&mut PathvalView::new_checked(&mut work[..]).expect("101 bytes"));
        });
        out.insert(name, ns);
    };
    measure("src_initialization", &sampled, &mut |h| {
        functions::src_initialization(h, black_box(&payload), &[9; 16], NOW as u32, &k0n)
    });
    measure("ep_sampling", &sampled, &mut |h| {
        black_box(functions::ep_sampling(h, &sampling));
    });
    measure("construction", &sampled, &mut |h| functions::construction(h, &k_next).expect("hop count 1"));
    measure("verification_hidden_sample", &unsampled, &mut |h| {
        black_box(functions::verify_hidden_sample(h, &k_prev));
    });
    measure("verification_validation_proof", &sampled, &mut |h| {
        functions::verify_validation_proof(h, black_box(&payload), &k_prev).expect("a valid proof")
    });
    measure("update", &unsampled, &mut |h| functions::update(h, &k_next, &mut random).expect("hop count 2"));
    measure("dst_verification", &sampled, &mut |h| {
        functions::dst_verification(h, black_box(&payload), &k0n).expect("a valid concealment")
    });
    out.insert("copy_header_baseline", time(calls, || work.copy_from_slice(black_box(&sampled))));
    out
}

pub fn run(effort: Effort) -> PathvalReport {
    let mut by_n = BTreeMap::new();
    let mut table5 = BTreeMap::new();
    for nodes in NODES {
        let (length, coverage) = measure_path(nodes, effort.packets);
        by_n.insert(nodes.to_string(), length);
        table5.insert(nodes.to_string(), coverage);
    }
    PathvalReport {
        by_n,
        table5,
        timing_ns: timings(effort.timing_calls),
        detection: pathval_attack::run(effort.attack_packets),
    }
}

/// Path lengths in numeric order (the maps sort their keys as text).
pub fn ordered<T>(m: &BTreeMap<String, T>) -> Vec<(usize, &T)> {
    let mut v: Vec<_> = m.iter().map(|(k, t)| (k.parse().expect("numeric keys"), t)).collect();
    v.sort_by_key(|(n, _)| *n);
    v
}

/// The tables for a person.
pub fn table(r: &PathvalReport) -> String {
    let mut out = String::from("Fig. 4: packets whose last sample was at each node (source first)\n");
    for (n, l) in ordered(&r.by_n) {
        let counts: Vec<String> = l.fig4_counts.iter().map(u64::to_string).collect();
        out += &format!("  N={n:<3} expected {:>7.1}: {}\n", l.fig4_expected, counts.join(" "));
    }
    out += "\nFig. 10: samples per packet\n";
    out += &format!("  {:<4} {:>9} {:>14} {:>12}\n", "N", "measured", "ln N + 0.5772", "H(N-1)");
    for (n, l) in ordered(&r.by_n) {
        out += &format!("  {n:<4} {:>9.3} {:>14.3} {:>12.3}\n", l.fig10_mean_samples, l.fig10_paper, l.fig10_exact);
    }
    out += "\nTable V: packets until every segment of the path is covered by a sample\n";
    out += &format!("  {:<4} {:>8} {:>10} {:>14}\n", "N", "covers", "measured", "paper N/(lnN+γ)");
    for (n, c) in ordered(&r.table5) {
        out += &format!("  {n:<4} {:>8} {:>10.2} {:>14.2}\n", c.covers, c.mean_packets, c.paper);
    }
    out += "\nTable IV: ns per call, 1000-byte payload (this machine, this build)\n";
    for (name, ns) in &r.timing_ns {
        out += &format!("  {name:<32} {ns:>10.0}\n");
    }
    out += "\n";
    out += &pathval_attack::table(&r.detection);
    out += "The closed forms and the measurements differ where docs/pathval.md explains why.\n";
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_run_is_consistent() {
        let (l, c) = measure_path(5, 400);
        assert_eq!(l.fig4_counts.iter().sum::<u64>(), 400);
        assert_eq!(l.fig4_counts.len(), 4);
        assert!((l.fig10_mean_samples - harmonic(4)).abs() < 0.2, "{l:?}");
        assert!(c.covers > 10 && c.mean_packets >= 4.0, "{c:?}");
        assert!((c.paper - 2.287).abs() < 0.001, "{c:?}");
        let t = timings(20);
        assert_eq!(t.len(), 8);
        assert!(t.values().all(|ns| *ns > 0.0));
    }
}
