//! `aviary lab zlane-model`: Fig. 4 of the Z-Lane paper from its §5 model
//! ([`aviary_zlane::model`]): the source AS's throughput at each of the eight attacked routers
//! of its path, for each source rate `F` and each router implementation, beside what the paper's
//! text states about the figure.

mod html;

use std::path::{Path, PathBuf};

use anyhow::Context;
use aviary_zlane::model::{Mechanism, Model, ParamError, Params, Position, FIG4_OFFERED_RATES_GBPS};
use serde::ser::{Serialize, SerializeMap, Serializer};

pub use aviary_zlane::model::DEFAULT_ROUTERS_IN_SOURCE_ISD;
pub use html::html;

/// The model's parameters under the paper's symbols (the keys of `--json`).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ReportParams {
    #[serde(rename = "C")]
    pub capacity_gbps: f64,
    #[serde(rename = "mu_A")]
    pub share_authenticated: f64,
    #[serde(rename = "mu_G")]
    pub share_guaranteed: f64,
    #[serde(rename = "T")]
    pub isd_other_traffic_gbps: f64,
    #[serde(rename = "r_S")]
    pub source_as_rate_gbps: f64,
    #[serde(rename = "r_I")]
    pub source_isd_rate_gbps: f64,
    #[serde(rename = "D")]
    pub attack_gbps: f64,
    pub j: usize,
    pub n_routers: usize,
    #[serde(rename = "F")]
    pub offered_rates_gbps: Vec<f64>,
}

/// One curve of Fig. 4: S's throughput at routers 1..=n_routers for one `F`.
#[derive(Clone, Debug, PartialEq)]
pub struct Curve {
    pub offered_gbps: f64,
    pub throughput_gbps: Vec<f64>,
}

/// All curves of one mechanism, in the order of `F`.
#[derive(Clone, Debug, PartialEq)]
pub struct MechanismCurves {
    pub mechanism: Mechanism,
    pub curves: Vec<Curve>,
}

/// What `aviary lab zlane-model` prints, as a table or (`--json`) as one object
/// `{"params": {...}, "curves": {"zlane": {"0.5": [t_1, ...], ...}, ...}}`.
/// Built only by [`run`], so every mechanism has a curve for every `F`.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ZlaneModelReport {
    params: ReportParams,
    #[serde(serialize_with = "serialize_curves")]
    curves: Vec<MechanismCurves>,
}

/// `F` as a JSON number prints it (`1`, not `1.0`), which Rust's `Display` of `f64` matches.
fn rate_key(offered: f64) -> String {
    offered.to_string()
}

fn serialize_curves<S: Serializer>(curves: &[MechanismCurves], s: S) -> Result<S::Ok, S::Error> {
    struct ByRate<'a>(&'a [Curve]);
    impl Serialize for ByRate<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.collect_map(self.0.iter().map(|c| (rate_key(c.offered_gbps), &c.throughput_gbps)))
        }
    }
    let mut map = s.serialize_map(Some(curves.len()))?;
    for m in curves {
        map.serialize_entry(m.mechanism.key(), &ByRate(&m.curves))?;
    }
    map.end()
}

/// Fig. 4's instance with `j` routers inside the source's ISD.
pub fn run(j: usize) -> Result<ZlaneModelReport, ParamError> {
    let params = Params::fig4(j);
    let model = Model::new(params)?;
    let mut curves = Vec::new();
    for mechanism in Mechanism::ALL {
        let mut per_rate = Vec::new();
        for offered in FIG4_OFFERED_RATES_GBPS {
            per_rate.push(Curve { offered_gbps: offered, throughput_gbps: model.path_throughput(mechanism, offered)? });
        }
        curves.push(MechanismCurves { mechanism, curves: per_rate });
    }
    let params = ReportParams {
        capacity_gbps: params.capacity_gbps,
        share_authenticated: params.share_authenticated,
        share_guaranteed: params.share_guaranteed,
        isd_other_traffic_gbps: params.isd_other_traffic_gbps,
        source_as_rate_gbps: params.source_as_rate_gbps,
        source_isd_rate_gbps: params.source_isd_rate_gbps,
        attack_gbps: params.attack_gbps,
        j: params.routers_in_source_isd,
        n_routers: params.routers,
        offered_rates_gbps: FIG4_OFFERED_RATES_GBPS.to_vec(),
    };
    Ok(ZlaneModelReport { params, curves })
}

impl ZlaneModelReport {
    pub fn params(&self) -> &ReportParams {
        &self.params
    }

    pub fn curves(&self) -> &[MechanismCurves] {
        &self.curves
    }

    /// S's throughput under `mechanism` at router `n` (1-based) for the `index`-th `F`.
    pub fn at(&self, mechanism: Mechanism, index: usize, n: usize) -> f64 {
        let m = self.curves.iter().find(|m| m.mechanism == mechanism).expect("run() computes every mechanism");
        m.curves[index].throughput_gbps[n - 1]
    }

    fn position(&self, n: usize) -> Position {
        if n <= self.params.j {
            Position::InsideSourceIsd
        } else {
            Position::OutsideSourceIsd
        }
    }
}

/// What the paper's text (§5.3, "Results" and "Congestion Control") says a point of Fig. 4 is.
/// The figure itself is not read off: only statements of the text.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PaperValue {
    Equal(f64),
    AtLeast(f64),
}

impl std::fmt::Display for PaperValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PaperValue::Equal(v) => write!(f, "= {v}"),
            PaperValue::AtLeast(v) => write!(f, ">= {v}"),
        }
    }
}

/// Z-Lane: "For F < 1 Gbps there is no packet loss", at F = 1 "communication is still possible
/// at 1 Gbps", and for F > 1 "it never drops below 1 Gbps". Local isolation "can fully protect
/// traffic at the first hop".
pub fn paper_value(mechanism: Mechanism, offered: f64, n: usize) -> Option<PaperValue> {
    match mechanism {
        Mechanism::ZLane if offered <= 1.0 => Some(PaperValue::Equal(offered)),
        Mechanism::ZLane => Some(PaperValue::AtLeast(1.0)),
        Mechanism::LocalIsolation if n == 1 => Some(PaperValue::Equal(offered)),
        _ => None,
    }
}

/// The router of the paper's "Even for only three attacked border routers, Z-Lane provides up
/// to 30 times higher throughput than the baseline".
pub const PAPER_RATIO_ROUTER: usize = 3;
pub const PAPER_RATIO: f64 = 30.0;

/// Z-Lane's throughput over FIFO's at router [`PAPER_RATIO_ROUTER`], per `F`.
pub fn ratios_at_third_router(r: &ZlaneModelReport) -> Vec<(f64, f64)> {
    (r.params.offered_rates_gbps.iter().enumerate())
        .map(|(i, &f)| {
            let n = PAPER_RATIO_ROUTER;
            (f, r.at(Mechanism::ZLane, i, n) / r.at(Mechanism::Fifo, i, n))
        })
        .collect()
}

/// Which routers are inside the source's ISD, for a person.
fn inside_source_isd(j: usize) -> String {
    match j {
        0 => "no router inside the source's ISD".to_string(),
        1 => "router 1 inside the source's ISD".to_string(),
        _ => format!("routers 1-{j} inside the source's ISD"),
    }
}

/// Gbit/s with three decimals, or in scientific notation once that would show only zeros.
pub fn gbps(v: f64) -> String {
    if v == 0.0 || v >= 0.01 {
        format!("{v:.3}")
    } else {
        format!("{v:.2e}")
    }
}

fn paper_cell(mechanism: Mechanism, offered: f64, n: usize) -> String {
    paper_value(mechanism, offered, n).map_or("-".to_string(), |v| v.to_string())
}

/// The table a person reads: one block per `F`, one row per router.
pub fn table(r: &ZlaneModelReport) -> String {
    let p = &r.params;
    let mut out = format!(
        "Z-Lane paper, Fig. 4 from the model of §5: C = {} Gbit/s, mu_A = {}, mu_G = {}, T = {}, r_S = {}, r_I = {}, \
         D = {} Gbit/s; {} (j = {}) of {}. Throughput of the source AS in Gbit/s.\n",
        p.capacity_gbps,
        p.share_authenticated,
        p.share_guaranteed,
        p.isd_other_traffic_gbps,
        p.source_as_rate_gbps,
        p.source_isd_rate_gbps,
        p.attack_gbps,
        inside_source_isd(p.j),
        p.j,
        p.n_routers
    );
    for (i, &f) in p.offered_rates_gbps.iter().enumerate() {
        out += &format!(
            "\nF = {f} Gbit/s\n{:<7} {:<8} {:>9} {:>7} {:>9} {:>9} {:>10} {:>7}\n",
            "router", "ISD", "Z-Lane", "paper", "FIFO", "per-flow", "local iso", "paper"
        );
        for n in 1..=p.n_routers {
            let isd = match r.position(n) {
                Position::InsideSourceIsd => "inside",
                Position::OutsideSourceIsd => "outside",
            };
            out += &format!(
                "{n:<7} {isd:<8} {:>9} {:>7} {:>9} {:>9} {:>10} {:>7}\n",
                gbps(r.at(Mechanism::ZLane, i, n)),
                paper_cell(Mechanism::ZLane, f, n),
                gbps(r.at(Mechanism::Fifo, i, n)),
                gbps(r.at(Mechanism::PerFlowFairness, i, n)),
                gbps(r.at(Mechanism::LocalIsolation, i, n)),
                paper_cell(Mechanism::LocalIsolation, f, n),
            );
        }
    }
    let ratios: Vec<String> = ratios_at_third_router(r).iter().map(|(f, x)| format!("{x:.1}x (F = {f})")).collect();
    out += &format!(
        "\nZ-Lane over FIFO at router {PAPER_RATIO_ROUTER}: {}; the paper: \"up to {PAPER_RATIO} times\".\n",
        ratios.join(", ")
    );
    out += "paper = what §5.3's text states about Fig. 4 (no value is estimated from the figure); \
            docs/zlane.md compares and lists the model's choices.\n";
    out
}

/// Writes `report.html` into `dir` (created if missing) and returns its path.
pub fn write_report(r: &ZlaneModelReport, dir: &Path) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let path = dir.join("report.html");
    std::fs::write(&path, html(r)).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_keys_rates_as_json_numbers_print_them() {
        let v = serde_json::to_value(run(DEFAULT_ROUTERS_IN_SOURCE_ISD).unwrap()).unwrap();
        let keys: Vec<&String> = v["curves"]["per_flow"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["0.5", "1", "1.5", "2"]);
        assert_eq!(v["params"]["j"], 4);
        assert_eq!(v["params"]["mu_G"], 0.2);
        assert_eq!(v["curves"]["local_isolation"]["1.5"][0], 1.5);
    }

    #[test]
    fn report_shows_every_panel_and_the_paper_beside_ours() {
        let r = run(0).unwrap();
        let page = html(&r);
        assert_eq!(page.matches("<polyline").count(), 16);
        assert!(page.contains("no router inside the source's ISD"));
        let t = table(&r);
        assert!(t.contains(">= 1") && t.contains("= 0.5"), "{t}");
        assert_eq!(t.lines().filter(|l| l.starts_with("8 ")).count(), 4);
    }
}
