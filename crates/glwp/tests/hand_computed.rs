//! A three-AS line whose allocations are computed by hand, path errors, and the bound on
//! path enumeration.

use aviary_glwp::{AllocationMatrix, EnumerationError, Hop, Link, MatrixEntry, PathError, Topology, TopologyError};
use aviary_scion::IsdAsn;

fn ia(s: &str) -> IsdAsn {
    s.parse().unwrap()
}

fn matrix(entries: &[(u16, u16, u64)]) -> AllocationMatrix {
    AllocationMatrix::new(entries.iter().map(|&(ingress, egress, bps)| MatrixEntry { ingress, egress, bps })).unwrap()
}

fn hop(a: &str, ingress: u16, egress: u16) -> Hop {
    Hop { ia: ia(a), ingress, egress }
}

const A: &str = "1-ff00:0:110";
const B: &str = "1-ff00:0:111";
const C: &str = "1-ff00:0:112";

/// A(1) — (1)B(2) — (1)C, the same as testdata/gma/example.json.
///
/// ```text
/// A: M_01 = 100, M_10 = 100            DIV_0 = 100, DIV_1 = 100, CON_0 = 100, CON_1 = 100
/// B: M_01 = 20, M_02 = 20, M_10 = 30,  DIV_0 = 40, DIV_1 = 80, DIV_2 = 80
///    M_12 = 50, M_20 = 30, M_21 = 50   CON_0 = 60, CON_1 = 70, CON_2 = 70
/// C: M_01 = 60, M_10 = 60              DIV_0 = DIV_1 = CON_0 = CON_1 = 60
/// ```
fn line() -> Topology {
    Topology::new(
        [
            (ia(A), matrix(&[(0, 1, 100), (1, 0, 100)])),
            (ia(B), matrix(&[(0, 1, 20), (0, 2, 20), (1, 0, 30), (1, 2, 50), (2, 0, 30), (2, 1, 50)])),
            (ia(C), matrix(&[(0, 1, 60), (1, 0, 60)])),
        ],
        [
            Link { a: ia(A), a_interface: 1, b: ia(B), b_interface: 1 },
            Link { a: ia(B), a_interface: 2, b: ia(C), b_interface: 1 },
        ],
    )
    .unwrap()
}

#[test]
fn allocations_of_the_line_by_hand() {
    let topo = line();
    // (path, preliminary guarantees, G), each worked out below.
    let cases: [(Vec<Hop>, Vec<u64>, u64); 6] = [
        // A→B: T_1 = 100 · 30/80 = 37.5, T_2 = 100/100 · 30 = 30.
        (vec![hop(A, 0, 1), hop(B, 1, 0)], vec![100, 30], 30),
        // A→C: T_1 = ⌊⌊100 · 50/80⌋ · 60/60⌋ = 62, T_2 = 50, T_3 = ⌊⌊60 · 100/100⌋ · 50/70⌋ = 42
        // (exactly 42.86). Prefix A,B: min(⌊100 · 50/80⌋, 50) = 50.
        (vec![hop(A, 0, 1), hop(B, 1, 2), hop(C, 1, 0)], vec![100, 50, 42], 42),
        // B→A: T_1 = 20 · 100/100 = 20, T_2 = 20/70 · 100 = 28.6.
        (vec![hop(B, 0, 1), hop(A, 1, 0)], vec![20, 20], 20),
        // B→C: T_1 = 20, T_2 = ⌊60 · 20/70⌋ = 17.
        (vec![hop(B, 0, 2), hop(C, 1, 0)], vec![20, 17], 17),
        // C→B: T_1 = ⌊60 · 30/80⌋ = 22, T_2 = 30.
        (vec![hop(C, 0, 1), hop(B, 2, 0)], vec![60, 22], 22),
        // C→A: T_1 = ⌊60 · 50/80⌋ = 37, T_2 = 50, T_3 = ⌊100 · 50/70⌋ = 71.
        (vec![hop(C, 0, 1), hop(B, 2, 1), hop(A, 1, 0)], vec![60, 37, 37], 37),
    ];
    for (path, prelim, g) in &cases {
        let a = topo.allocate(path).unwrap();
        assert_eq!((&a.prelim_bps, a.guarantee_bps), (prelim, *g), "{path:?}");
    }
    let hv = topo.allocate(&cases[1].0).unwrap().hop_values[1];
    assert_eq!((hv.divergent_bps(), hv.entry_bps(), hv.convergent_bps()), (80, 50, 70));

    let mut all = topo.loop_free_paths(100).unwrap();
    all.sort();
    let mut want: Vec<Vec<Hop>> = cases.iter().map(|c| c.0.clone()).collect();
    want.sort();
    assert_eq!(all, want, "the six loop-free paths of the line");

    let loads = topo.pair_loads(cases.iter().map(|c| (c.0.as_slice(), c.2)));
    let got: Vec<(IsdAsn, u16, u16, u64, u64)> =
        loads.iter().map(|l| (l.ia, l.ingress, l.egress, l.load_bps, l.entry_bps)).collect();
    assert_eq!(
        got,
        vec![
            (ia(A), 0, 1, 30 + 42, 100),
            (ia(A), 1, 0, 20 + 37, 100),
            (ia(B), 0, 1, 20, 20),
            (ia(B), 0, 2, 17, 20),
            (ia(B), 1, 0, 30, 30),
            (ia(B), 1, 2, 42, 50),
            (ia(B), 2, 0, 22, 30),
            (ia(B), 2, 1, 37, 50),
            (ia(C), 0, 1, 22 + 37, 60),
            (ia(C), 1, 0, 17 + 42, 60),
        ]
    );
}

#[test]
fn invalid_paths_name_the_hop() {
    let topo = line();
    let err = |hops: &[Hop]| topo.allocate(hops).unwrap_err();
    assert_eq!(err(&[hop(A, 0, 0)]), PathError::TooShort);
    assert_eq!(
        err(&[hop(A, 0, 1), hop("1-ff00:0:999", 1, 0)]),
        PathError::UnknownAs { hop: 1, ia: ia("1-ff00:0:999") }
    );
    assert_eq!(err(&[hop(A, 1, 1), hop(B, 1, 0)]), PathError::SourceNotLocal { hop: 0, interface: 1 });
    assert_eq!(err(&[hop(A, 0, 1), hop(B, 1, 2)]), PathError::DestinationNotLocal { hop: 1, interface: 2 });
    assert_eq!(err(&[hop(A, 0, 1), hop(B, 1, 0), hop(C, 1, 0)]), PathError::LocalInterfaceInTransit { hop: 1 });
    assert_eq!(
        err(&[hop(A, 0, 1), hop(B, 2, 0)]),
        PathError::WrongLink {
            hop: 0,
            ia: ia(A),
            egress: 1,
            peer: ia(B),
            peer_interface: 1,
            next: ia(B),
            next_ingress: 2
        }
    );
    assert_eq!(err(&[hop(A, 0, 7), hop(B, 1, 0)]), PathError::NoLink { hop: 0, ia: ia(A), interface: 7 });
    assert_eq!(err(&[hop(A, 0, 1), hop(B, 1, 1), hop(A, 1, 0)]), PathError::Loop { hop: 2, ia: ia(A), first: 0 });
    assert_eq!(err(&[hop(A, 0, 1), hop(B, 1, 1), hop(A, 1, 0)]).hop(), Some(2));
}

#[test]
fn invalid_topologies_name_the_link_or_interface() {
    let m = || matrix(&[(0, 1, 1)]);
    let nodes = || [(ia(A), m()), (ia(B), m())];
    let link = |a: &str, ai, b: &str, bi| Link { a: ia(a), a_interface: ai, b: ia(b), b_interface: bi };
    assert_eq!(Topology::new([(ia(A), m()), (ia(A), m())], []).unwrap_err(), TopologyError::DuplicateAs { ia: ia(A) });
    assert_eq!(
        Topology::new(nodes(), [link(A, 1, C, 1)]).unwrap_err(),
        TopologyError::UnknownAs { link: 0, ia: ia(C) }
    );
    assert_eq!(
        Topology::new(nodes(), [link(A, 0, B, 1)]).unwrap_err(),
        TopologyError::LocalInterfaceInLink { link: 0, ia: ia(A) }
    );
    assert_eq!(Topology::new(nodes(), [link(A, 1, A, 2)]).unwrap_err(), TopologyError::SelfLink { link: 0, ia: ia(A) });
    assert_eq!(
        Topology::new(nodes(), [link(A, 1, B, 1), link(B, 2, A, 1)]).unwrap_err(),
        TopologyError::InterfaceInUse { link: 1, ia: ia(A), interface: 1, other: 0 }
    );
    assert_eq!(
        Topology::new(nodes(), [link(A, 1, B, 2)]).unwrap_err(),
        TopologyError::UnlinkedInterface { ia: ia(B), interface: 1 }
    );
}

/// A full mesh of n ASes has Σ_{k=2..n} n!/(n−k)! loop-free paths: 1_950 for n = 6 (without
/// counting interface choices); the walk refuses before building them once past the limit.
#[test]
fn enumeration_is_bounded() {
    let n = 6u16;
    let ases: Vec<IsdAsn> = (0..n).map(|k| IsdAsn::new(1, 0xff00_0000_0110 + u64::from(k))).collect();
    // AS k reaches AS m over its interface m + 1.
    let nodes = ases.iter().enumerate().map(|(k, &a)| {
        let ifaces: Vec<u16> = (0..n).filter(|&m| m as usize != k).map(|m| m + 1).collect();
        let mut entries = Vec::new();
        for &i in ifaces.iter().chain([&0]) {
            for &j in ifaces.iter().chain([&0]) {
                if i != j {
                    entries.push(MatrixEntry { ingress: i, egress: j, bps: 1_000 });
                }
            }
        }
        (a, AllocationMatrix::new(entries).unwrap())
    });
    let mut links = Vec::new();
    for k in 0..n {
        for m in k + 1..n {
            links.push(Link { a: ases[k as usize], a_interface: m + 1, b: ases[m as usize], b_interface: k + 1 });
        }
    }
    let topo = Topology::new(nodes, links).unwrap();
    let paths = topo.loop_free_paths(10_000).unwrap();
    assert_eq!(paths.len(), 30 + 120 + 360 + 720 + 720);
    assert_eq!(topo.loop_free_paths(1_000), Err(EnumerationError::TooManyPrefixes { limit: 1_000 }));
}
