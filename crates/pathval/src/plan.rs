//! The routing plan of a pathval network, checked as a whole before any router starts.
//!
//! Each router's table is local config, but two facts are network-wide: whether every
//! destination is reachable without a loop from every router that may carry its packets,
//! and, for a trusted router, which trusted node a packet meets next on each alternative
//! (whose key it must prove itself to) and which trusted node sent what arrives on each
//! interface (whose key it verifies with). Untrusted routers in between forward by their
//! own tables, so the plan follows their alternatives too; a trusted router's next trusted
//! node must be the same on every branch, else no single key would do. [`plan`] works this
//! out, or names the AS and field where the tables fail.

use std::collections::{BTreeMap, BTreeSet};

use aviary_scion::IsdAsn;
use serde::{Deserialize, Serialize};

use crate::routing::{NextHops, Route};

/// Whether a router runs pathval's checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Verifies, samples and proves (the source and destination ASes' routers are trusted).
    Trusted,
    /// Forwards by its table without touching the header, or attacks.
    Untrusted,
}

/// The trusted node packets arriving on `ingress` come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Upstream {
    pub ingress: u16,
    pub node: IsdAsn,
}

/// The trusted node packets for `dst` leaving on `egress` meet next (`dst` itself at the end).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NextTrusted {
    pub dst: IsdAsn,
    pub egress: u16,
    pub node: IsdAsn,
}

/// One AS of the network as the plan sees it.
#[derive(Clone, Debug)]
pub struct PlanAs<'a> {
    pub ia: IsdAsn,
    pub role: Role,
    pub routes: &'a [Route],
    /// `(interface, neighbour AS, neighbour's interface)`.
    pub links: Vec<(u16, IsdAsn, u16)>,
}

/// What a trusted router needs beyond its table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrustedPlan {
    pub upstream: Vec<Upstream>,
    pub next: Vec<NextTrusted>,
}

/// Where the tables fail: the AS, the field of its pathval table, and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{ia}: {field}: {message}")]
pub struct PlanError {
    pub ia: IsdAsn,
    pub field: String,
    pub message: String,
}

fn err(ia: IsdAsn, field: impl Into<String>, message: impl Into<String>) -> PlanError {
    PlanError { ia, field: field.into(), message: message.into() }
}

fn route_index(a: &PlanAs<'_>, dst: IsdAsn) -> Option<usize> {
    a.routes.iter().position(|r| r.dst == dst)
}

/// The trusted nodes (with the interface they receive on) that packets for `dst` leaving
/// `from` on `egress` can meet first; `seen` is the untrusted part of the walk so far.
fn first_trusted(
    ases: &BTreeMap<IsdAsn, &PlanAs<'_>>,
    from: &PlanAs<'_>,
    egress: u16,
    dst: IsdAsn,
    seen: &mut Vec<IsdAsn>,
) -> Result<BTreeSet<(IsdAsn, u16)>, PlanError> {
    let &(_, nbr, nbr_if) = from.links.iter().find(|l| l.0 == egress).ok_or_else(|| {
        let j = route_index(from, dst).unwrap_or(0);
        err(from.ia, format!("route[{j}].via"), format!("{egress} is not an interface"))
    })?;
    let Some(n) = ases.get(&nbr) else {
        let j = route_index(from, dst).unwrap_or(0);
        return Err(err(
            from.ia,
            format!("route[{j}].via"),
            format!("interface {egress} leads to {nbr}, which runs no pathval"),
        ));
    };
    if nbr == dst || n.role == Role::Trusted {
        return Ok(BTreeSet::from([(nbr, nbr_if)]));
    }
    if seen.contains(&nbr) || nbr == from.ia {
        return Err(err(nbr, "route", format!("packets for {dst} loop through {nbr}")));
    }
    let j = route_index(n, dst)
        .ok_or_else(|| err(nbr, "route", format!("no route to {dst}, which packets reach it for")))?;
    seen.push(nbr);
    let mut out = BTreeSet::new();
    for &e in &n.routes[j].via {
        out.extend(first_trusted(ases, n, e, dst, seen)?);
    }
    seen.pop();
    Ok(out)
}

/// Checks the tables of a whole network and works out every trusted router's upstream and
/// next trusted nodes.
pub fn plan(network: &[PlanAs<'_>]) -> Result<BTreeMap<IsdAsn, TrustedPlan>, PlanError> {
    let ases: BTreeMap<IsdAsn, &PlanAs<'_>> = network.iter().map(|a| (a.ia, a)).collect();
    for a in network {
        let ifids: Vec<u16> = a.links.iter().map(|l| l.0).collect();
        NextHops::new(a.routes, &ifids).map_err(|e| err(a.ia, e.field(), e.to_string()))?;
    }
    let mut plans: BTreeMap<IsdAsn, TrustedPlan> =
        network.iter().filter(|a| a.role == Role::Trusted).map(|a| (a.ia, TrustedPlan::default())).collect();
    // Per destination, which trusted node hands packets to which: must have no cycle.
    let mut edges: BTreeMap<IsdAsn, BTreeSet<(IsdAsn, IsdAsn)>> = BTreeMap::new();
    for a in network.iter().filter(|a| a.role == Role::Trusted) {
        for (j, r) in a.routes.iter().enumerate() {
            match ases.get(&r.dst) {
                None => return Err(err(a.ia, format!("route[{j}].dst"), format!("{} runs no pathval", r.dst))),
                Some(d) if d.role != Role::Trusted => {
                    let msg = format!("{} is untrusted; a destination must be trusted to verify", r.dst);
                    return Err(err(a.ia, format!("route[{j}].dst"), msg));
                }
                Some(_) if r.dst == a.ia => {
                    return Err(err(a.ia, format!("route[{j}].dst"), "a route to the router's own AS"));
                }
                Some(_) => {}
            }
            for &e in &r.via {
                let found = first_trusted(&ases, a, e, r.dst, &mut Vec::new())?;
                let mut it = found.iter();
                let (Some(&(next, ingress)), None) = (it.next(), it.next()) else {
                    let names: Vec<String> = found.iter().map(|(n, _)| n.to_string()).collect();
                    let msg = format!(
                        "packets for {} leaving on {e} can meet different trusted nodes first ({}): the next trusted node must be one",
                        r.dst,
                        names.join(", ")
                    );
                    return Err(err(a.ia, format!("route[{j}].via"), msg));
                };
                if next != r.dst && route_index(ases[&next], r.dst).is_none() {
                    return Err(err(next, "route", format!("no route to {}, which packets reach it for", r.dst)));
                }
                plans.get_mut(&a.ia).expect("trusted").next.push(NextTrusted { dst: r.dst, egress: e, node: next });
                let up = &mut plans.get_mut(&next).expect("trusted").upstream;
                match up.iter().find(|u| u.ingress == ingress) {
                    Some(u) if u.node != a.ia => {
                        let msg = format!(
                            "interface {ingress} receives from trusted {} and {}: one upstream per interface",
                            u.node, a.ia
                        );
                        return Err(err(next, "upstream", msg));
                    }
                    Some(_) => {}
                    None => up.push(Upstream { ingress, node: a.ia }),
                }
                edges.entry(r.dst).or_default().insert((a.ia, next));
            }
        }
    }
    for (dst, e) in &edges {
        if let Some(at) = cycle(e) {
            return Err(err(at, "route", format!("packets for {dst} loop back to {at} through trusted routers")));
        }
    }
    Ok(plans)
}

/// A node on a cycle of the directed graph `edges`, if it has one.
fn cycle(edges: &BTreeSet<(IsdAsn, IsdAsn)>) -> Option<IsdAsn> {
    // 0 unvisited, 1 on the stack, 2 done.
    fn visit(n: IsdAsn, edges: &BTreeSet<(IsdAsn, IsdAsn)>, state: &mut BTreeMap<IsdAsn, u8>) -> Option<IsdAsn> {
        match state.get(&n) {
            Some(1) => return Some(n),
            Some(2) => return None,
            _ => {}
        }
        state.insert(n, 1);
        for &(_, m) in edges.iter().filter(|(a, _)| *a == n) {
            if let Some(c) = visit(m, edges, state) {
                return Some(c);
            }
        }
        state.insert(n, 2);
        None
    }
    let mut state = BTreeMap::new();
    edges.iter().find_map(|&(a, _)| visit(a, edges, &mut state))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routing::Policy;

    fn ia(n: u64) -> IsdAsn {
        IsdAsn::new(1, 0xff00_0000_0000 | n)
    }

    fn route(dst: u64, via: &[u16]) -> Route {
        Route { dst: ia(dst), via: via.to_vec(), policy: Policy::RoundRobin }
    }

    /// S(1) - T(2) -#2- U(3, untrusted) - D(5); T -#3- V(4) - D: the diamond of the test
    /// topology.
    fn diamond(t_routes: &[Route], u_routes: &[Route], v_routes: &[Route]) -> BTreeMap<IsdAsn, TrustedPlan> {
        try_diamond(t_routes, u_routes, v_routes, Role::Untrusted).unwrap()
    }

    fn try_diamond(
        t_routes: &[Route],
        u_routes: &[Route],
        v_routes: &[Route],
        v_role: Role,
    ) -> Result<BTreeMap<IsdAsn, TrustedPlan>, PlanError> {
        let s_routes = [route(5, &[1])];
        let net = [
            PlanAs { ia: ia(1), role: Role::Trusted, routes: &s_routes, links: vec![(1, ia(2), 1)] },
            PlanAs {
                ia: ia(2),
                role: Role::Trusted,
                routes: t_routes,
                links: vec![(1, ia(1), 1), (2, ia(3), 1), (3, ia(4), 1)],
            },
            PlanAs { ia: ia(3), role: Role::Untrusted, routes: u_routes, links: vec![(1, ia(2), 2), (2, ia(5), 1)] },
            PlanAs { ia: ia(4), role: v_role, routes: v_routes, links: vec![(1, ia(2), 3), (2, ia(5), 2)] },
            PlanAs { ia: ia(5), role: Role::Trusted, routes: &[], links: vec![(1, ia(3), 2), (2, ia(4), 2)] },
        ];
        plan(&net)
    }

    #[test]
    fn the_diamond_has_one_next_trusted_node_per_alternative() {
        let p = try_diamond(&[route(5, &[2, 3])], &[route(5, &[2])], &[route(5, &[2])], Role::Trusted).unwrap();
        let t = &p[&ia(2)];
        assert_eq!(
            t.next,
            [NextTrusted { dst: ia(5), egress: 2, node: ia(5) }, NextTrusted { dst: ia(5), egress: 3, node: ia(4) }]
        );
        assert_eq!(t.upstream, [Upstream { ingress: 1, node: ia(1) }]);
        // D hears T through the untrusted U on interface 1, and V on interface 2.
        assert_eq!(p[&ia(5)].upstream, [Upstream { ingress: 1, node: ia(2) }, Upstream { ingress: 2, node: ia(4) }]);
        assert_eq!(p[&ia(4)].upstream, [Upstream { ingress: 1, node: ia(2) }]);
        assert!(!p.contains_key(&ia(3)));
    }

    #[test]
    fn unreachable_destinations_and_loops_are_refused() {
        // U has no route to D.
        let e = try_diamond(&[route(5, &[2])], &[], &[], Role::Untrusted).unwrap_err();
        assert_eq!((e.ia, e.field.as_str()), (ia(3), "route"));
        // U sends D's packets back to T, which is trusted: T -> T through U is a loop.
        let e = try_diamond(&[route(5, &[2])], &[route(5, &[1])], &[], Role::Trusted).unwrap_err();
        assert!(e.message.contains("loop"), "{e}");
        // Two untrusted routers sending to each other.
        let s = [route(5, &[1])];
        let (a, b) = ([route(5, &[2])], [route(5, &[1])]);
        let net = [
            PlanAs { ia: ia(1), role: Role::Trusted, routes: &s, links: vec![(1, ia(2), 1)] },
            PlanAs { ia: ia(2), role: Role::Untrusted, routes: &a, links: vec![(1, ia(1), 1), (2, ia(3), 1)] },
            PlanAs { ia: ia(3), role: Role::Untrusted, routes: &b, links: vec![(1, ia(2), 2), (2, ia(5), 1)] },
            PlanAs { ia: ia(5), role: Role::Trusted, routes: &[], links: vec![(1, ia(3), 2)] },
        ];
        let e = plan(&net).unwrap_err();
        assert!(e.message.contains("loop"), "{e}");
        // An interface the AS does not have.
        let e = try_diamond(&[route(5, &[7])], &[], &[], Role::Trusted).unwrap_err();
        assert_eq!((e.ia, e.field.as_str()), (ia(2), "route[0].via"));
    }

    #[test]
    fn an_untrusted_fork_to_two_trusted_nodes_is_ambiguous() {
        // S -1- U (untrusted), which may send D's packets to D (#2) or to the trusted V (#3):
        // S cannot know whose key to prove itself to.
        let (s, u, v) = ([route(5, &[1])], [route(5, &[2, 3])], [route(5, &[2])]);
        let net = [
            PlanAs { ia: ia(1), role: Role::Trusted, routes: &s, links: vec![(1, ia(3), 1)] },
            PlanAs {
                ia: ia(3),
                role: Role::Untrusted,
                routes: &u,
                links: vec![(1, ia(1), 1), (2, ia(5), 1), (3, ia(4), 1)],
            },
            PlanAs { ia: ia(4), role: Role::Trusted, routes: &v, links: vec![(1, ia(3), 3), (2, ia(5), 2)] },
            PlanAs { ia: ia(5), role: Role::Trusted, routes: &[], links: vec![(1, ia(3), 2), (2, ia(4), 2)] },
        ];
        let e = plan(&net).unwrap_err();
        assert_eq!((e.ia, e.field.as_str()), (ia(1), "route[0].via"));
        assert!(e.message.contains("different trusted nodes"), "{e}");
        let d = diamond(&[route(5, &[2])], &[route(5, &[2])], &[]);
        assert_eq!(d[&ia(2)].next, [NextTrusted { dst: ia(5), egress: 2, node: ia(5) }]);
    }

    #[test]
    fn an_untrusted_destination_is_refused() {
        let s = [route(4, &[1])];
        let net = [
            PlanAs { ia: ia(1), role: Role::Trusted, routes: &s, links: vec![(1, ia(4), 1)] },
            PlanAs { ia: ia(4), role: Role::Untrusted, routes: &[], links: vec![(1, ia(1), 1)] },
        ];
        let e = plan(&net).unwrap_err();
        assert_eq!((e.ia, e.field.as_str()), (ia(1), "route[0].dst"));
    }
}
