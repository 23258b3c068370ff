//! The network of `aviary lab zlane`: `two-isd.toml` (ISD 1: cores 110 and 120, leaf 111; ISD 2:
//! cores 210 and 220, leaf 211), extended in code so that the file the other commands' tests run
//! against stays as it is. [`topology`] is everything the scenario adds, in one place:
//!
//! - the attackers' ASes, each on a new interface of 110: 1-ff00:0:112 (an AS of ISD 1
//!   overusing its guarantee), 1-ff00:0:113 (authenticated and unauthenticated floods) and
//!   3-ff00:0:310 (a third ISD overusing its per-ISD guarantee), with room for the whole attack
//!   on their links;
//! - 10 Mbit/s on the core link 110#3 → 210#3, the congested egress: every route to the sink in
//!   210 that the control services hand out first crosses it (the fewest ASes: 111, 112 and 113
//!   go up to 110 only, 310 is linked to 110 only);
//! - a Z-Lane router in every AS (only those forward per-AS EPIC), and at 110 Table 2's classes
//!   as the table `zlane`, the same classes in one queue as `fifo`, and half of μ_G for 111;
//! - a gateway in each AS whose flow is sent through one (111, 112, 310), flagging that flow's
//!   whole rate: at its guarantee for 111, far above it for 112 and 310;
//! - a host per flow in its AS, and the sink in 210.

use std::collections::BTreeMap;

use anyhow::{bail, Context};
use aviary_node::router::classes::{BoundConfig, ClassConfig, ClassTableConfig, DisciplineConfig, PolicyConfig};
use aviary_node::topology::{AsEntry, Host, IfRef, Link, LinkKind, RouterSettings, Topology};
use aviary_scion::IsdAsn;
use aviary_zlane::classes::table::TABLE_2;
use aviary_zlane::classes::{RateConfig, ZlaneConfig, DEFAULT_BURST_BYTES};
use aviary_zlane::gateway::config::HostRateConfig;
use aviary_zlane::gateway::{GatewayConfig, OverRatePolicy};

use super::flows::{Sending, ATTACK, PROTECTED};
use super::Policy;

/// The topology the scenario starts from (not changed: the lab writes its derived copy).
pub const TWO_ISD: &str = include_str!("../../../../testdata/topologies/two-isd.toml");

/// The congested router, and its egress interface towards the sink's AS (two-isd's core link
/// 110#3 → 210#3).
pub const CONGESTED_AS: &str = "1-ff00:0:110";
pub const CONGESTED_INTERFACE: u16 = 3;
/// The congested link's capacity: what loopback processes on a small machine carry four times
/// over without becoming the bottleneck themselves.
pub const CONGESTED_BPS: u64 = 10_000_000;
/// The protected AS, two-isd's leaf of ISD 1, and its share of μ_G at 110 (the other origins
/// share the rest equally).
pub const PROTECTED_AS: &str = "1-ff00:0:111";
const PROTECTED_SHARE_OF_G: &str = "50%";
/// The sink's host and AS.
pub const SINK_HOST: &str = "sink";
pub const SINK_AS: &str = "2-ff00:0:210";

/// The ASes the scenario adds: ISD-AS, core or not, and its interface at 110.
pub const ADDED_ASES: [(&str, bool, u16); 3] =
    [("1-ff00:0:112", false, 4), ("1-ff00:0:113", false, 5), ("3-ff00:0:310", true, 6)];
/// The capacity of the added links: room for all of the attack.
const ADDED_LINK_BPS: u64 = 200_000_000;

/// The DRKey protocol the ASes' EPIC keys are derived for (routers and gateways alike).
const DRKEY_PROTOCOL: u16 = 42;
/// The queues of 110's classes: R, N and G (bounded), A and U.
const PREFERENTIAL_QUEUE_BYTES: usize = 262_144;
const BEST_EFFORT_QUEUE_BYTES: usize = 131_072;

/// The derived topology, validated, with 110's links on `zlane`'s class table.
pub fn topology() -> anyhow::Result<Topology> {
    let mut t: Topology = toml::from_str(TWO_ISD).context("two-isd.toml")?;
    t.name = "zlane-two-isd".into();
    t.description = "two-isd.toml with attackers' ASes, Z-Lane routers and gateways, and a congested \
                     110 -> 210 (aviary lab zlane)"
        .into();
    let congested: IsdAsn = CONGESTED_AS.parse()?;
    for (ia, core, ifid) in ADDED_ASES {
        let ia: IsdAsn = ia.parse()?;
        t.ases.push(AsEntry {
            ia,
            core,
            router: RouterSettings::default(),
            zlane_gateway: None,
            glwp: None,
            drkey: Default::default(),
        });
        t.links.push(Link {
            a: IfRef { ia: congested, ifid },
            b: IfRef { ia, ifid: 1 },
            kind: if core { LinkKind::Core } else { LinkKind::Parent },
            capacity_bps: ADDED_LINK_BPS,
            delay_ms: 0.0,
        });
    }
    let out = IfRef { ia: congested, ifid: CONGESTED_INTERFACE };
    let link = t
        .links
        .iter_mut()
        .find(|l| l.a == out || l.b == out)
        .with_context(|| format!("two-isd.toml has no link at {out}"))?;
    link.capacity_bps = CONGESTED_BPS;
    for entry in &mut t.ases {
        entry.router.zlane = Some(zlane_router(BTreeMap::new()));
    }
    let router = &mut as_entry(&mut t, CONGESTED_AS)?.router;
    router.zlane =
        Some(zlane_router([(PROTECTED_AS.to_owned(), RateConfig::Share(PROTECTED_SHARE_OF_G.into()))].into()));
    for policy in Policy::ALL {
        router.class_table.insert(policy.name().to_owned(), class_table(policy));
    }
    router.link_class_table = Some(Policy::Zlane.name().to_owned());
    for f in std::iter::once(PROTECTED).chain(ATTACK) {
        if f.sending == Sending::Gateway {
            // The gateway flags the flow's whole rate: whether that is within the AS's
            // guarantee is 110's to decide (111's is, 112's and 310's are far above theirs).
            let rate = f.rate_bps(CONGESTED_BPS);
            let entry = as_entry(&mut t, f.ia)?;
            if entry.zlane_gateway.is_some() {
                bail!("two gateway flows in {}: one gateway per AS", f.ia);
            }
            entry.zlane_gateway = Some(GatewayConfig {
                guarantee_bps: rate,
                burst_bytes: DEFAULT_BURST_BYTES,
                over_rate: OverRatePolicy::Unflagged,
                drkey_protocol: DRKEY_PROTOCOL,
                suppress_duplicates: true,
                hosts: vec![HostRateConfig { prefix: f.name.into(), rate_bps: Some(rate) }],
            });
        }
        t.hosts.push(Host { name: f.name.into(), ia: f.ia.parse()? });
    }
    t.hosts.push(Host { name: SINK_HOST.into(), ia: SINK_AS.parse()? });
    t.validate("zlane-two-isd.toml")?;
    Ok(t)
}

fn as_entry<'a>(t: &'a mut Topology, ia: &str) -> anyhow::Result<&'a mut AsEntry> {
    let ia: IsdAsn = ia.parse()?;
    t.ases.iter_mut().find(|a| a.ia == ia).with_context(|| format!("the scenario has no AS {ia}"))
}

/// A Z-Lane router's `[zlane]`: guarantees for every AS of its ISD and every other ISD (the
/// runner lists them), `rates` explicit.
fn zlane_router(rates: BTreeMap<String, RateConfig>) -> ZlaneConfig {
    ZlaneConfig {
        ases: Vec::new(),
        isds: Vec::new(),
        rates,
        burst_bytes: DEFAULT_BURST_BYTES,
        drkey_protocol: DRKEY_PROTOCOL,
    }
}

/// Table 2's classes under `policy`: its shares with `zlane`, only counted in one queue with
/// `fifo`.
fn class_table(policy: Policy) -> ClassTableConfig {
    let share = |ppm: u32| BoundConfig::Share(format!("{}%", f64::from(ppm) / 10_000.0));
    let class = TABLE_2
        .iter()
        .map(|&(class, ppm, bounded)| ClassConfig {
            name: class.name().to_owned(),
            queue_bytes: if bounded { PREFERENTIAL_QUEUE_BYTES } else { BEST_EFFORT_QUEUE_BYTES },
            lower: Some(share(ppm)),
            upper: bounded.then(|| share(ppm)),
            discipline: DisciplineConfig::Fifo,
        })
        .collect();
    let policy = match policy {
        Policy::Zlane => PolicyConfig::BoundedShares,
        Policy::Fifo => PolicyConfig::Fifo,
    };
    ClassTableConfig { policy, class }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aviary_node::routes::routes;

    #[test]
    fn every_flows_first_route_to_the_sink_leaves_110_on_the_congested_link() {
        let t = topology().unwrap();
        let sink: IsdAsn = SINK_AS.parse().unwrap();
        let congested: IsdAsn = CONGESTED_AS.parse().unwrap();
        for f in std::iter::once(PROTECTED).chain(ATTACK) {
            let first = &routes(&t, f.ia.parse().unwrap(), sink, 8)[0];
            let ases = first.ases();
            assert!(ases.iter().any(|a| a.ia == congested && a.egress == CONGESTED_INTERFACE), "{}: {ases:?}", f.name);
            assert_eq!(ases.len(), 3, "{}: one route of three ASes, no tie to break", f.name);
            let same_length = routes(&t, f.ia.parse().unwrap(), sink, 8).iter().filter(|r| r.ases().len() == 3).count();
            assert_eq!(same_length, 1, "{}", f.name);
        }
    }

    #[test]
    fn two_isd_is_kept_and_only_extended() {
        let original: Topology = toml::from_str(TWO_ISD).unwrap();
        let t = topology().unwrap();
        for a in &original.ases {
            assert!(t.as_entry(a.ia).is_some_and(|b| b.core == a.core), "{}", a.ia);
        }
        for l in &original.links {
            let kept = t.links.iter().find(|k| k.a == l.a && k.b == l.b).unwrap();
            let congested = IfRef { ia: CONGESTED_AS.parse().unwrap(), ifid: CONGESTED_INTERFACE };
            let capacity = if l.a == congested || l.b == congested { CONGESTED_BPS } else { l.capacity_bps };
            assert_eq!((kept.kind, kept.capacity_bps, kept.delay_ms), (l.kind, capacity, l.delay_ms));
        }
        assert!(original.hosts.iter().all(|h| t.host(&h.name) == Some(h)));
        assert_eq!(t.ases.len(), original.ases.len() + ADDED_ASES.len());
        assert!(t.ases.iter().all(|a| a.router.zlane.is_some()), "a Z-Lane router in every AS");
        // The two-isd.toml the tests of other commands use has none of it.
        assert!(original.ases.iter().all(|a| a.router.zlane.is_none() && a.zlane_gateway.is_none()));
    }

    #[test]
    fn the_tables_are_table_2_as_the_router_parses_them() {
        for policy in Policy::ALL {
            let text = toml::to_string(&class_table(policy)).unwrap();
            let back: ClassTableConfig = toml::from_str(&text).unwrap();
            let built = back.build("t", "class_table").unwrap();
            let names: Vec<_> = built.classes().iter().map(|c| c.name.as_str()).collect();
            assert_eq!(names, ["R", "N", "G", "A", "U"]);
            let g = &built.classes()[2];
            assert_eq!(g.lower, Some(aviary_qos::RateBound::Ppm(TABLE_2[2].1)));
            assert_eq!(g.upper, g.lower);
        }
    }
}
