//! AS-level routes from a topology: which segments a path between two ASes combines and
//! which interfaces each AS uses on them. This replaces beaconing's discovery (the
//! topology is public); the hop fields themselves are still made by each AS with its own
//! key (see `control`).
//!
//! Segments follow SCION: an up segment (core down to the source, used against its
//! construction direction), a core segment (built from the destination's core towards the
//! source's core, used against construction) and a down segment (core down to the
//! destination, used in construction direction).

use aviary_scion::IsdAsn;
use serde::{Deserialize, Serialize};

use crate::topology::{Neighbor, Topology};

/// Longest up/down segment and core segment considered, in ASes.
const MAX_SEGMENT_ASES: usize = 8;
const MAX_CORE_ASES: usize = 5;

/// One AS's entry on a segment, in construction order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Hash)]
pub struct HopPlan {
    pub ia: IsdAsn,
    pub cons_ingress: u16,
    pub cons_egress: u16,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Hash)]
#[serde(rename_all = "lowercase")]
pub enum SegmentKind {
    Up,
    Core,
    Down,
}

/// A segment to build, in construction order, and the direction it is used in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Hash)]
pub struct SegmentPlan {
    pub kind: SegmentKind,
    pub hops: Vec<HopPlan>,
    /// The path uses the hops from this construction index on (0: all; more: a shortcut
    /// that turns at `hops[from]` instead of going up to the core).
    pub from: usize,
}

impl SegmentPlan {
    pub fn cons_dir(&self) -> bool {
        self.kind == SegmentKind::Down
    }
}

/// An AS on a route with its interfaces in the direction of travel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AsOnRoute {
    pub ia: IsdAsn,
    pub ingress: u16,
    pub egress: u16,
}

/// Segments combined into one end-to-end route.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    pub segments: Vec<SegmentPlan>,
}

impl Route {
    /// The ASes in travel order; at a segment crossover the AS appears once, with the
    /// ingress of the first segment and the egress of the next.
    pub fn ases(&self) -> Vec<AsOnRoute> {
        let mut out: Vec<AsOnRoute> = Vec::new();
        for seg in &self.segments {
            let mut hops = seg.hops[seg.from.min(seg.hops.len())..].to_vec();
            if !seg.cons_dir() {
                hops.reverse();
            }
            for (j, h) in hops.iter().enumerate() {
                let (ingress, egress) =
                    if seg.cons_dir() { (h.cons_ingress, h.cons_egress) } else { (h.cons_egress, h.cons_ingress) };
                match out.last_mut() {
                    Some(last) if j == 0 && last.ia == h.ia => last.egress = egress,
                    _ => out.push(AsOnRoute { ia: h.ia, ingress, egress }),
                }
            }
        }
        // A path starts and ends inside its end ASes, also when a shortcut cuts a segment
        // whose hop fields there name a link.
        if let Some(first) = out.first_mut() {
            first.ingress = 0;
        }
        if let Some(last) = out.last_mut() {
            last.egress = 0;
        }
        out
    }
}

/// Up to `limit` loop-free routes from `src` to `dst`, fewest ASes first. An empty
/// route (no segments) means source and destination are the same AS.
pub fn routes(topo: &Topology, src: IsdAsn, dst: IsdAsn, limit: usize) -> Vec<Route> {
    if src == dst {
        return vec![Route { segments: Vec::new() }];
    }
    let ups: Vec<Option<SegmentPlan>> = if topo.is_core(src) {
        vec![None]
    } else {
        leaf_segments(topo, src, SegmentKind::Up).into_iter().map(Some).collect()
    };
    let downs: Vec<Option<SegmentPlan>> = if topo.is_core(dst) {
        vec![None]
    } else {
        leaf_segments(topo, dst, SegmentKind::Down).into_iter().map(Some).collect()
    };
    let mut out = Vec::new();
    for (up, down) in ups.iter().flatten().flat_map(|u| downs.iter().flatten().map(move |d| (u, d))) {
        if let Some(route) = shortcut(topo, up, down) {
            out.push(route);
        }
    }
    for up in &ups {
        let from_core = up.as_ref().map_or(src, |u| u.hops[0].ia);
        for down in &downs {
            let to_core = down.as_ref().map_or(dst, |d| d.hops[0].ia);
            let cores = if from_core == to_core { vec![None] } else { core_segments(topo, from_core, to_core) };
            for core in cores {
                let segments: Vec<SegmentPlan> = [up.clone(), core, down.clone()].into_iter().flatten().collect();
                let route = Route { segments };
                if loop_free(&route) {
                    out.push(route);
                }
            }
        }
    }
    out.sort_by_key(|r| r.ases().len());
    out.truncate(limit);
    out
}

/// The shortcut of an up and a down segment that share a non-core AS: up to that AS, then
/// down from it, without visiting the core (SCION's shortcut paths). When the shared AS is
/// the destination (or the source) the path is the up (or down) segment alone, cut there.
fn shortcut(topo: &Topology, up: &SegmentPlan, down: &SegmentPlan) -> Option<Route> {
    // The shared AS nearest the source: the highest construction index on the up segment.
    let (ku, kd) = up
        .hops
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, h)| !topo.is_core(h.ia))
        .find_map(|(ku, h)| down.hops.iter().position(|d| d.ia == h.ia).map(|kd| (ku, kd)))?;
    let up_part = SegmentPlan { from: ku, ..up.clone() };
    let down_part = SegmentPlan { from: kd, ..down.clone() };
    let segments = if kd + 1 == down.hops.len() {
        vec![up_part]
    } else if ku + 1 == up.hops.len() {
        vec![down_part]
    } else {
        vec![up_part, down_part]
    };
    let route = Route { segments };
    loop_free(&route).then_some(route)
}

fn loop_free(route: &Route) -> bool {
    let ases = route.ases();
    let mut seen: Vec<IsdAsn> = ases.iter().map(|a| a.ia).collect();
    seen.sort();
    seen.dedup();
    seen.len() == ases.len()
}

/// Segments between `leaf` and every core AS above it, in construction order (core first).
fn leaf_segments(topo: &Topology, leaf: IsdAsn, kind: SegmentKind) -> Vec<SegmentPlan> {
    // Walk upwards; `chain` holds (AS, interface towards the child we came from).
    let mut out = Vec::new();
    let mut stack = vec![vec![(leaf, 0u16, 0u16)]]; // (ia, iface to parent, iface to child)
    while let Some(chain) = stack.pop() {
        let &(ia, _, _) = chain.last().expect("chains are never empty");
        if topo.is_core(ia) {
            let hops =
                chain.iter().rev().map(|&(ia, up, down)| HopPlan { ia, cons_ingress: up, cons_egress: down }).collect();
            out.push(SegmentPlan { kind, hops, from: 0 });
            continue;
        }
        if chain.len() >= MAX_SEGMENT_ASES {
            continue;
        }
        for (local, remote, n, _) in topo.links_of(ia) {
            if n != Neighbor::Parent || chain.iter().any(|c| c.0 == remote.ia) {
                continue;
            }
            let mut next = chain.clone();
            next.last_mut().expect("non-empty").1 = local.ifid;
            next.push((remote.ia, 0, remote.ifid));
            stack.push(next);
        }
    }
    out
}

/// Core segments between two core ASes, built from `to` (the origin) towards `from`.
fn core_segments(topo: &Topology, from: IsdAsn, to: IsdAsn) -> Vec<Option<SegmentPlan>> {
    let mut out = Vec::new();
    let mut stack = vec![vec![HopPlan { ia: to, cons_ingress: 0, cons_egress: 0 }]];
    while let Some(chain) = stack.pop() {
        let last = *chain.last().expect("chains are never empty");
        if last.ia == from {
            out.push(Some(SegmentPlan { kind: SegmentKind::Core, hops: chain, from: 0 }));
            continue;
        }
        if chain.len() >= MAX_CORE_ASES {
            continue;
        }
        for (local, remote, n, _) in topo.links_of(last.ia) {
            if n != Neighbor::Core || chain.iter().any(|c| c.ia == remote.ia) {
                continue;
            }
            let mut next = chain.clone();
            next.last_mut().expect("non-empty").cons_egress = local.ifid;
            next.push(HopPlan { ia: remote.ia, cons_ingress: remote.ifid, cons_egress: 0 });
            stack.push(next);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn topo(name: &str) -> Topology {
        Topology::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/topologies").join(name)).unwrap()
    }

    fn ia(s: &str) -> IsdAsn {
        s.parse().unwrap()
    }

    /// Every consecutive pair of ASes on a route is joined by a link at the interfaces
    /// the route names, and the route starts and ends inside the end ASes.
    fn assert_consistent(t: &Topology, r: &Route, src: IsdAsn, dst: IsdAsn) {
        let ases = r.ases();
        assert_eq!((ases[0].ia, ases[0].ingress), (src, 0));
        let last = ases.last().unwrap();
        assert_eq!((last.ia, last.egress), (dst, 0));
        for w in ases.windows(2) {
            let here = crate::topology::IfRef { ia: w[0].ia, ifid: w[0].egress };
            let (remote, _) = t.neighbor(here).unwrap_or_else(|| panic!("no link at {here}"));
            assert_eq!(remote, crate::topology::IfRef { ia: w[1].ia, ifid: w[1].ingress });
        }
    }

    #[test]
    fn line5_end_to_end_crosses_at_the_core() {
        let t = topo("line5.toml");
        let (a, e) = (ia("1-ff00:0:111"), ia("1-ff00:0:121"));
        let rs = routes(&t, a, e, 8);
        assert_eq!(rs.len(), 1);
        let r = &rs[0];
        assert_eq!(r.segments.iter().map(|s| s.kind).collect::<Vec<_>>(), [SegmentKind::Up, SegmentKind::Down]);
        let ases: Vec<String> = r.ases().iter().map(|a| a.ia.to_string()).collect();
        assert_eq!(ases, ["1-ff00:0:111", "1-ff00:0:112", "1-ff00:0:110", "1-ff00:0:120", "1-ff00:0:121"]);
        assert_consistent(&t, r, a, e);
    }

    #[test]
    fn two_isd_has_disjoint_routes() {
        let t = topo("two-isd.toml");
        let (s, d) = (ia("1-ff00:0:111"), ia("2-ff00:0:211"));
        let rs = routes(&t, s, d, 16);
        assert!(rs.len() >= 4, "{}", rs.len());
        for r in &rs {
            assert_consistent(&t, r, s, d);
            assert_eq!(r.segments.len(), 3);
        }
        let transit = |r: &Route| -> Vec<IsdAsn> {
            let a = r.ases();
            a[1..a.len() - 1].iter().map(|x| x.ia).collect()
        };
        let disjoint = rs.iter().any(|r1| rs.iter().any(|r2| transit(r1).iter().all(|x| !transit(r2).contains(x))));
        assert!(disjoint);
        assert!(rs.windows(2).all(|w| w[0].ases().len() <= w[1].ases().len()));
    }

    #[test]
    fn core_to_core_and_same_as() {
        let t = topo("two-isd.toml");
        let rs = routes(&t, ia("1-ff00:0:110"), ia("2-ff00:0:220"), 16);
        assert!(!rs.is_empty());
        for r in &rs {
            assert_eq!(r.segments.len(), 1);
            assert_consistent(&t, r, ia("1-ff00:0:110"), ia("2-ff00:0:220"));
        }
        assert!(routes(&t, ia("1-ff00:0:111"), ia("1-ff00:0:111"), 4)[0].segments.is_empty());
    }

    #[test]
    fn no_route_revisits_an_as() {
        let t = topo("line5.toml");
        let all: Vec<IsdAsn> = t.ases.iter().map(|a| a.ia).collect();
        for &s in &all {
            for &d in all.iter().filter(|d| **d != s) {
                let rs = routes(&t, s, d, 8);
                assert!(!rs.is_empty(), "{s} -> {d}");
                for r in rs {
                    assert!(loop_free(&r));
                    assert_consistent(&t, &r, s, d);
                }
            }
        }
    }

    #[test]
    fn shortcuts_turn_below_the_core() {
        let t = topo("line5.toml");
        // B to A (B is A's parent): the down segment from C, cut at B; C is not visited.
        let rs = routes(&t, ia("1-ff00:0:112"), ia("1-ff00:0:111"), 8);
        assert_eq!(rs.len(), 1);
        let ases: Vec<String> = rs[0].ases().iter().map(|a| a.ia.to_string()).collect();
        assert_eq!(ases, ["1-ff00:0:112", "1-ff00:0:111"]);
        assert_eq!(rs[0].segments.iter().map(|s| (s.kind, s.from)).collect::<Vec<_>>(), [(SegmentKind::Down, 1)]);
        // And back: A up to B, its parent, and no further.
        let back = routes(&t, ia("1-ff00:0:111"), ia("1-ff00:0:112"), 8);
        assert_eq!(
            back[0].ases().iter().map(|a| a.ia.to_string()).collect::<Vec<_>>(),
            ["1-ff00:0:111", "1-ff00:0:112"]
        );
        assert_eq!(back[0].segments.iter().map(|s| (s.kind, s.from)).collect::<Vec<_>>(), [(SegmentKind::Up, 1)]);
    }
}
