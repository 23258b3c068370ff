//! The detection table of `aviary lab pathval`: each attack of [`aviary_pathval::attack`]
//! against pathval and the paper's references (Baseline, PPV, EPIC-style) on paths of 3 to 12
//! nodes, measured by running packets through the chain with an untrusted router on it, beside
//! the rate the analysis predicts.

use std::collections::BTreeMap;

use aviary_pathval::attack::{self, attacker_position, sampled_at, Attack};
use aviary_pathval::{Chain, Freshness, SchemeKind};
use aviary_qos::SeededRandom;
use aviary_scion::drkey::Epoch;
use serde::Serialize;

/// Path lengths of the detection table: the attacker needs a router after it to bypass.
pub const NODES: std::ops::RangeInclusive<usize> = 3..=12;
const NOW: u64 = 1_700_000_000;

/// One attack against one scheme on one path length.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cell {
    /// Packets the attacker acted on.
    pub attacked: u64,
    /// Of those, dropped by a trusted node.
    pub detected: u64,
    /// Of those, delivered: the attack succeeded undetected.
    pub undetected: u64,
    /// `detected / attacked` (`null` when the attacker acted on no packet: the selective
    /// attacker under PPV on 3 nodes, where every mark names node `a` or `a + 1`).
    pub rate: Option<f64>,
    pub predicted: f64,
}

/// The selective attacker's guesses on one path length.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Guess {
    /// Of the packets it guessed sampled, the fraction that were (`null` if it guessed none).
    pub precision: Option<f64>,
    /// The fraction of all packets that were sampled: what guessing at chance achieves.
    pub sampled_rate: f64,
    /// `1/(a + 1)` for pathval, `1/(N - 1)` for PPV, 1 for Baseline and EPIC.
    pub predicted_sampled_rate: f64,
}

/// The `"detection"` object of `--json`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Detection {
    /// Packets per cell.
    pub packets: u64,
    /// Per path length: the node after which the attacker sits (the source is node 0).
    pub attacker_after_node: BTreeMap<String, usize>,
    /// scheme → attack → N → cell.
    pub rates: BTreeMap<&'static str, BTreeMap<&'static str, BTreeMap<String, Cell>>>,
    /// scheme → N → the selective attacker's guesses.
    pub selective_guess: BTreeMap<&'static str, BTreeMap<String, Guess>>,
}

pub fn run(packets: u64) -> Detection {
    let epoch = Epoch::new(1_699_990_000, 1_700_090_000).expect("a valid epoch");
    let fresh = Freshness { max_age_s: 3, max_future_s: 1 };
    let mut rates: BTreeMap<_, BTreeMap<_, BTreeMap<_, _>>> = BTreeMap::new();
    let mut selective_guess: BTreeMap<_, BTreeMap<_, _>> = BTreeMap::new();
    for scheme in SchemeKind::ALL {
        for nodes in NODES {
            let mut chain = Chain::with_scheme(scheme, nodes, 0xa77ac + nodes as u64, epoch, fresh)
                .expect("the chain's keys derive");
            for a in Attack::ALL {
                let mut random = SeededRandom::new(nodes as u64 * 64 + a as u64);
                let o = attack::measure(&mut chain, a, packets, NOW, &mut random);
                let cell = Cell {
                    attacked: o.attacked,
                    detected: o.detected,
                    undetected: o.undetected(),
                    rate: (o.attacked > 0).then(|| o.detection_rate()),
                    predicted: a.predicted_detection(scheme, nodes),
                };
                rates.entry(scheme.label()).or_default().entry(a.label()).or_default().insert(nodes.to_string(), cell);
                if a == Attack::SelectiveMisroute {
                    let guess = Guess {
                        precision: (o.guessed_sampled > 0).then(|| o.guess_precision()),
                        sampled_rate: o.sampled_rate(),
                        predicted_sampled_rate: sampled_at(scheme, attacker_position(nodes), nodes),
                    };
                    selective_guess.entry(scheme.label()).or_default().insert(nodes.to_string(), guess);
                }
            }
        }
    }
    let attacker_after_node = NODES.map(|n| (n.to_string(), attacker_position(n))).collect();
    Detection { packets, attacker_after_node, rates, selective_guess }
}

/// The detection table for a person: one row per scheme and attack, one column per N.
pub fn table(d: &Detection) -> String {
    let mut out = format!(
        "Detection rate per attack ({} packets per cell; attacker after node floor((N-3)/2), source = 0; \
         predicted in brackets where not 1)\n",
        d.packets
    );
    out += &format!("  {:<9} {:<19}", "scheme", "attack");
    for n in NODES {
        out += &format!(" {:>11}", format!("N={n}"));
    }
    out += "\n";
    for (scheme, attacks) in &d.rates {
        for (attack, by_n) in attacks {
            out += &format!("  {scheme:<9} {attack:<19}");
            for n in NODES {
                let c = &by_n[&n.to_string()];
                let cell = if c.attacked == 0 {
                    "-".to_string()
                } else if c.predicted == 1.0 {
                    format!("{:.3}", c.rate.unwrap_or_default())
                } else {
                    format!("{:.3}({:.2})", c.rate.unwrap_or_default(), c.predicted)
                };
                out += &format!(" {cell:>11}");
            }
            out += "\n";
        }
    }
    out += "\nSelective attacker: precision of its 'sampled' guesses / rate of sampled packets (chance)\n";
    for (scheme, by_n) in &d.selective_guess {
        out += &format!("  {scheme:<9}");
        for n in NODES {
            let g = &by_n[&n.to_string()];
            let p = g.precision.map_or("-".to_string(), |p| format!("{p:.2}"));
            out += &format!(" {:>11}", format!("{p}/{:.2}", g.sampled_rate));
        }
        out += "\n";
    }
    out
}

/// The detection table as HTML rows of one table.
pub fn html_table(d: &Detection) -> String {
    let mut s = String::from("<table><tr><th>scheme</th><th>attack</th>");
    for n in NODES {
        s += &format!("<th>N={n}</th>");
    }
    s += "</tr>";
    for (scheme, attacks) in &d.rates {
        for (attack, by_n) in attacks {
            s += &format!("<tr><td>{scheme}</td><td>{attack}</td>");
            for n in NODES {
                let c = &by_n[&n.to_string()];
                let rate = c.rate.map_or("-".to_string(), |r| format!("{r:.3}"));
                s += &format!(
                    "<td title=\"{} of {} detected; predicted {:.3}\">{rate}</td>",
                    c.detected, c.attacked, c.predicted
                );
            }
            s += "</tr>";
        }
    }
    s + "</table>"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_run_fills_every_cell_and_ppv_misses_the_selective_bypasses() {
        let d = run(20);
        assert_eq!(d.rates.len(), 4);
        for attacks in d.rates.values() {
            assert_eq!(attacks.len(), Attack::ALL.len());
            assert!(attacks.values().all(|by_n| by_n.len() == NODES.count()));
        }
        let ppv = &d.rates["ppv"]["selective_misroute"]["12"];
        assert_eq!((ppv.detected, ppv.predicted), (0, 0.0));
        assert_eq!(d.rates["pathval"]["deviation"]["7"].undetected, 0);
        assert_eq!(d.rates["ppv"]["selective_misroute"]["3"].rate, None, "marks 0 and 1 are both spared");
        assert!(table(&d).contains("selective_misroute") && html_table(&d).contains("<td>epic</td>"));
    }
}
