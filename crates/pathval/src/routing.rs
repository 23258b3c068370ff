//! Dynamic next-hop choice (the paper's §II-A: routers pick among allowed next hops per
//! packet, from the network's state, and no router knows the path length).
//!
//! A pathval router forwards by destination ISD-AS: its table lists, per destination, the
//! egress interfaces it may use and a [`Policy`] for choosing among them. The choice reads
//! only the [`LinkState`]s the router's floor hands every processor, so it stays sans-IO.

use aviary_qos::LinkState;
use aviary_scion::IsdAsn;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// How a router picks among the live alternatives of a route.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    /// Each live alternative in turn.
    #[default]
    RoundRobin,
    /// The live alternative whose egress queue is least full ([`LinkState::fill_ppm`]); ties
    /// go round robin, so that equally idle links share the traffic.
    LeastLoaded,
}

/// One entry of a routing table: packets for `dst` leave on one of `via`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Route {
    pub dst: IsdAsn,
    /// Egress interface ids, in the order round robin visits them.
    pub via: Vec<u16>,
    #[serde(default)]
    pub policy: Policy,
}

/// Why a routing table cannot be used; `route` is the index of the offending entry.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum RouteError {
    #[error("route[{route}].dst: {dst} has two routes")]
    DestinationTwice { route: usize, dst: IsdAsn },
    #[error("route[{route}].via: names no interface")]
    NoAlternative { route: usize },
    #[error("route[{route}].via: interface {ifid} is listed twice")]
    InterfaceTwice { route: usize, ifid: u16 },
    #[error("route[{route}].via: {ifid} is not an interface of this router")]
    NotAnInterface { route: usize, ifid: u16 },
}

impl RouteError {
    /// The config field at fault, relative to the routing table's owner.
    pub fn field(&self) -> String {
        match self {
            RouteError::DestinationTwice { route, .. } => format!("route[{route}].dst"),
            RouteError::NoAlternative { route }
            | RouteError::InterfaceTwice { route, .. }
            | RouteError::NotAnInterface { route, .. } => format!("route[{route}].via"),
        }
    }
}

/// Why no next hop was chosen for a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoNextHop {
    /// The table has no route to the packet's destination.
    UnknownDestination,
    /// Every alternative's link is down or unknown.
    NoLiveAlternative,
}

struct Entry {
    dst: IsdAsn,
    via: Vec<u16>,
    policy: Policy,
    /// Where round robin (and the tie-break of least loaded) starts next.
    cursor: usize,
}

/// A router's routing table with the state of its policies.
pub struct NextHops {
    entries: Vec<Entry>,
}

impl NextHops {
    /// Checks `routes` against the router's `interfaces`.
    pub fn new(routes: &[Route], interfaces: &[u16]) -> Result<Self, RouteError> {
        let mut entries: Vec<Entry> = Vec::with_capacity(routes.len());
        for (i, r) in routes.iter().enumerate() {
            if entries.iter().any(|e| e.dst == r.dst) {
                return Err(RouteError::DestinationTwice { route: i, dst: r.dst });
            }
            if r.via.is_empty() {
                return Err(RouteError::NoAlternative { route: i });
            }
            for (j, &ifid) in r.via.iter().enumerate() {
                if r.via[..j].contains(&ifid) {
                    return Err(RouteError::InterfaceTwice { route: i, ifid });
                }
                if !interfaces.contains(&ifid) {
                    return Err(RouteError::NotAnInterface { route: i, ifid });
                }
            }
            entries.push(Entry { dst: r.dst, via: r.via.clone(), policy: r.policy, cursor: 0 });
        }
        Ok(Self { entries })
    }

    /// The egress for a packet to `dst`, given the router's egress links now.
    pub fn choose(&mut self, dst: IsdAsn, links: &[LinkState]) -> Result<u16, NoNextHop> {
        let e = self.entries.iter_mut().find(|e| e.dst == dst).ok_or(NoNextHop::UnknownDestination)?;
        let n = e.via.len();
        let mut best: Option<(usize, u32)> = None;
        for k in 0..n {
            let at = (e.cursor + k) % n;
            let Some(link) = links.iter().find(|l| l.id == e.via[at] && l.up) else { continue };
            match e.policy {
                Policy::RoundRobin => {
                    best = Some((at, 0));
                    break;
                }
                // Strictly less: among equal fills the first in round-robin order wins.
                Policy::LeastLoaded if best.is_none_or(|(_, fill)| link.fill_ppm() < fill) => {
                    best = Some((at, link.fill_ppm()));
                }
                Policy::LeastLoaded => {}
            }
        }
        let (at, _) = best.ok_or(NoNextHop::NoLiveAlternative)?;
        e.cursor = (at + 1) % n;
        Ok(e.via[at])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dst() -> IsdAsn {
        IsdAsn::new(1, 0xff00_0000_0115)
    }

    fn link(id: u16, queued: u64) -> LinkState {
        LinkState { id, up: true, rate_bps: 1_000_000, queued_bytes: queued, queue_limit_bytes: 1000 }
    }

    fn table(policy: Policy, via: &[u16]) -> NextHops {
        NextHops::new(&[Route { dst: dst(), via: via.to_vec(), policy }], &[1, 2, 3]).unwrap()
    }

    #[test]
    fn round_robin_alternates() {
        let mut t = table(Policy::RoundRobin, &[2, 3]);
        let links = [link(1, 0), link(2, 900), link(3, 0)];
        let got: Vec<u16> = (0..6).map(|_| t.choose(dst(), &links).unwrap()).collect();
        assert_eq!(got, [2, 3, 2, 3, 2, 3]);
    }

    #[test]
    fn least_loaded_picks_the_emptier_link_and_shares_ties() {
        let mut t = table(Policy::LeastLoaded, &[2, 3]);
        assert_eq!(t.choose(dst(), &[link(2, 500), link(3, 100)]), Ok(3));
        assert_eq!(t.choose(dst(), &[link(2, 100), link(3, 500)]), Ok(2));
        let idle = [link(2, 0), link(3, 0)];
        let got: Vec<u16> = (0..4).map(|_| t.choose(dst(), &idle).unwrap()).collect();
        assert_eq!(got, [3, 2, 3, 2]);
    }

    #[test]
    fn a_down_or_unknown_link_is_skipped() {
        for policy in [Policy::RoundRobin, Policy::LeastLoaded] {
            let mut t = table(policy, &[2, 3]);
            let links = [LinkState { up: false, ..link(2, 0) }, link(3, 800)];
            for _ in 0..3 {
                assert_eq!(t.choose(dst(), &links), Ok(3));
            }
            assert_eq!(t.choose(dst(), &[link(2, 0)]), Ok(2));
            assert_eq!(t.choose(dst(), &[LinkState { up: false, ..link(2, 0) }]), Err(NoNextHop::NoLiveAlternative));
        }
        let mut t = table(Policy::RoundRobin, &[2]);
        assert_eq!(t.choose(IsdAsn::new(1, 7), &[link(2, 0)]), Err(NoNextHop::UnknownDestination));
    }

    #[test]
    fn bad_tables_name_the_entry() {
        let r = |via: Vec<u16>| Route { dst: dst(), via, policy: Policy::RoundRobin };
        let e = NextHops::new(&[r(vec![2]), r(vec![3])], &[2, 3]).err().unwrap();
        assert_eq!(e, RouteError::DestinationTwice { route: 1, dst: dst() });
        assert_eq!(e.field(), "route[1].dst");
        assert_eq!(NextHops::new(&[r(vec![])], &[2]).err(), Some(RouteError::NoAlternative { route: 0 }));
        assert_eq!(NextHops::new(&[r(vec![2, 2])], &[2]).err(), Some(RouteError::InterfaceTwice { route: 0, ifid: 2 }));
        let e = NextHops::new(&[r(vec![9])], &[2]).err().unwrap();
        assert_eq!(e.to_string(), "route[0].via: 9 is not an interface of this router");
    }

    #[test]
    fn policies_read_as_snake_case() {
        let r: Route = serde_json::from_str(r#"{"dst":"1-ff00:0:115","via":[2,3],"policy":"least_loaded"}"#).unwrap();
        assert_eq!(r.policy, Policy::LeastLoaded);
        assert!(serde_json::from_str::<Route>(r#"{"dst":"1-ff00:0:115","via":[2],"policy":"random"}"#).is_err());
    }
}
