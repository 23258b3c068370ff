//! The network and the traffic of `aviary lab glwp`: `two-isd.toml` with allocation matrices
//! on the four ASes of the path 111 > 110 > 210 > 211, its last link the bottleneck, and the
//! flows that meet there.

use aviary_node::control::glwp::config::GlwpConfig;
use aviary_node::topology::{Host, Topology};
use aviary_scion::IsdAsn;

/// The topology the scenario starts from (not changed: the lab writes its derived copy).
pub const TWO_ISD: &str = include_str!("../../../../testdata/topologies/two-isd.toml");

/// The bottleneck: 2-ff00:0:210's egress towards 2-ff00:0:211, every flow's last link.
pub const BOTTLENECK_AS: &str = "2-ff00:0:210";
pub const BOTTLENECK_INTERFACE: u16 = 1;
/// Its capacity in the derived topology: low enough that a flood of five times it stays
/// within what loopback processes on a small machine can move.
pub const BOTTLENECK_BPS: u64 = 8_000_000;

/// The sink's host, in 2-ff00:0:211.
pub const SINK_HOST: &str = "h211";

/// The allocation matrices, `[in, out, bit/s]`. Every path into 211 leaves 210 at interface 1
/// and shares 211's `(1, 0)`; GMA gives each of the three paths below 2 Mbit/s, and their sum,
/// 6 Mbit/s, is 210's convergent at interface 1, below the bottleneck's 8 Mbit/s.
pub const MATRICES: [(&str, &[[u64; 3]]); 4] = [
    ("1-ff00:0:111", &[[0, 1, 4_000_000], [1, 0, 4_000_000]]),
    // 1: to 111, 3: to 210.
    ("1-ff00:0:110", &[[1, 3, 4_000_000], [0, 3, 4_000_000], [3, 1, 4_000_000], [3, 0, 4_000_000]]),
    // 3: to 110, 1: to 211.
    ("2-ff00:0:210", &[[3, 1, 4_000_000], [0, 1, 2_000_000], [1, 3, 4_000_000], [1, 0, 2_000_000]]),
    ("2-ff00:0:211", &[[1, 0, 6_000_000], [0, 1, 6_000_000]]),
];

/// How a flow is sent.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Sending {
    /// Under its source's GLWP allocation at `times` its β; `replays` copies of every packet
    /// right behind it (an adversary replaying the source's packets, F8).
    Glwp { times: f64, replays: u32 },
    /// Best-effort SCION at `times` the bottleneck's capacity.
    BestEffort { times: f64 },
}

/// One flow to the sink.
#[derive(Clone, Copy, Debug)]
pub struct Flow {
    /// Flow and host name (the derived topology has a host of this name).
    pub name: &'static str,
    pub ia: &'static str,
    /// The ASes of its path, source first (a GLWP flow's allocation is on this path).
    pub path: &'static [&'static str],
    pub role: &'static str,
    pub sending: Sending,
}

pub const GUARANTEED: Flow = Flow {
    name: "guaranteed",
    ia: "1-ff00:0:111",
    path: &["1-ff00:0:111", "1-ff00:0:110", "2-ff00:0:210", "2-ff00:0:211"],
    role: "at its β, each packet replayed once",
    sending: Sending::Glwp { times: 1.0, replays: 1 },
};

pub const OTHERS: [Flow; 3] = [
    Flow {
        name: "overuse-110",
        ia: "1-ff00:0:110",
        path: &["1-ff00:0:110", "2-ff00:0:210", "2-ff00:0:211"],
        role: "GLWP at 3x its β",
        sending: Sending::Glwp { times: 3.0, replays: 0 },
    },
    Flow {
        name: "overuse-210",
        ia: "2-ff00:0:210",
        path: &["2-ff00:0:210", "2-ff00:0:211"],
        role: "GLWP at 2x its β",
        sending: Sending::Glwp { times: 2.0, replays: 0 },
    },
    Flow {
        name: "flood",
        ia: "2-ff00:0:210",
        path: &["2-ff00:0:210", "2-ff00:0:211"],
        role: "best effort at 5x the bottleneck",
        sending: Sending::BestEffort { times: 5.0 },
    },
];

pub fn flows() -> impl Iterator<Item = Flow> {
    std::iter::once(GUARANTEED).chain(OTHERS)
}

/// The AS the scenario leaves out: no flow crosses it, and five ASes fit the 500 ports the
/// integration test has.
pub const LEFT_OUT: &str = "2-ff00:0:220";

/// `two-isd.toml` without [`LEFT_OUT`], with the matrices, the bottleneck's capacity and a
/// host per flow.
pub fn topology() -> anyhow::Result<Topology> {
    let mut t: Topology = toml::from_str(TWO_ISD)?;
    t.name = "glwp-two-isd".into();
    t.description = "two-isd.toml without 220, GLWP matrices on 111, 110, 210 and 211 (aviary lab glwp)".into();
    let left_out: IsdAsn = LEFT_OUT.parse()?;
    t.ases.retain(|a| a.ia != left_out);
    t.links.retain(|l| l.a.ia != left_out && l.b.ia != left_out);
    t.hosts.retain(|h| h.ia != left_out);
    for (ia, matrix) in MATRICES {
        let ia: IsdAsn = ia.parse()?;
        let entry =
            t.ases.iter_mut().find(|a| a.ia == ia).ok_or_else(|| anyhow::anyhow!("two-isd.toml has no {ia}"))?;
        entry.glwp = Some(GlwpConfig::with_matrix(matrix.to_vec()));
    }
    let (bottleneck, ifid): (IsdAsn, u16) = (BOTTLENECK_AS.parse()?, BOTTLENECK_INTERFACE);
    let link = t
        .links
        .iter_mut()
        .find(|l| (l.a.ia, l.a.ifid) == (bottleneck, ifid) || (l.b.ia, l.b.ifid) == (bottleneck, ifid))
        .ok_or_else(|| anyhow::anyhow!("two-isd.toml has no link at {bottleneck}#{ifid}"))?;
    link.capacity_bps = BOTTLENECK_BPS;
    for f in flows() {
        if t.host(f.name).is_none() {
            t.hosts.push(Host { name: f.name.into(), ia: f.ia.parse()? });
        }
    }
    t.validate("glwp-two-isd.toml")?;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use aviary_glwp::{guarantee, AllocationMatrix, HopValues, MatrixEntry};

    fn matrix(ia: &str) -> AllocationMatrix {
        let (_, m) = MATRICES.iter().find(|(a, _)| *a == ia).unwrap();
        AllocationMatrix::new(m.iter().map(|&[i, j, bps]| MatrixEntry { ingress: i as u16, egress: j as u16, bps }))
            .unwrap()
    }

    fn hop(ia: &str, i: u16, j: u16) -> HopValues {
        matrix(ia).hop_values(i, j)
    }

    #[test]
    fn every_allocation_is_2_mbits_and_all_fit_the_bottleneck() {
        let t = topology().unwrap();
        assert_eq!(t.hosts.iter().filter(|h| flows().any(|f| f.name == h.name)).count(), 4);
        assert_eq!(t.ases.len(), 5, "five ASes: 500 ports");
        let g = guarantee(&[
            hop("1-ff00:0:111", 0, 1),
            hop("1-ff00:0:110", 1, 3),
            hop("2-ff00:0:210", 3, 1),
            hop("2-ff00:0:211", 1, 0),
        ]);
        let o110 = guarantee(&[hop("1-ff00:0:110", 0, 3), hop("2-ff00:0:210", 3, 1), hop("2-ff00:0:211", 1, 0)]);
        let o210 = guarantee(&[hop("2-ff00:0:210", 0, 1), hop("2-ff00:0:211", 1, 0)]);
        assert_eq!((g, o110, o210), (2_000_000, 2_000_000, 2_000_000));
        assert!(g + o110 + o210 <= BOTTLENECK_BPS);
        // The two-isd.toml the tests of other commands use is untouched.
        let original: Topology = toml::from_str(TWO_ISD).unwrap();
        assert!(original.ases.iter().all(|a| a.glwp.is_none()));
    }
}
