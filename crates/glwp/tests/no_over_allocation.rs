//! GMA's no-over-allocation property with the crate's rounding: on random topologies with
//! random matrices, the allocations of all loop-free paths (each from a source's local
//! interface 0 to a destination's local interface 0) never add up to more than any matrix
//! entry, nor to more than any link's capacity; and the rounding only ever lowers an
//! allocation, by less than one bit/s per hop. With matrix updates (§V-C), the allocations
//! valid at once (old and temporary, then temporary and new) stay within the matrices and links.

use std::collections::BTreeMap;

use aviary_glwp::{
    guarantee, prefix_guarantees, AllocationMatrix, Hop, HopValues, Link, MatrixEntry, MatrixSchedule, Topology,
    LOCAL_INTERFACE,
};
use aviary_scion::IsdAsn;
use proptest::prelude::*;

/// A random topology: `n` ASes, links between random pairs (parallel links allowed), a
/// capacity per link, and per AS a matrix over its interfaces whose divergents and convergents
/// stay within the capacity of each interface's link, as an AS configures them.
#[derive(Debug)]
struct RandomNetwork {
    topology: Topology,
    /// The same ASes and links with other matrices within the same capacities: what every AS
    /// changes to.
    changed: Topology,
    /// Per direction of each link: (AS, egress interface) → capacity in bit/s.
    capacity: BTreeMap<(IsdAsn, u16), u64>,
}

fn network() -> impl Strategy<Value = RandomNetwork> {
    (2usize..=6, prop::collection::vec((0usize..6, 0usize..6, 0u32..3), 1..12), any::<u64>()).prop_map(
        |(n, link_specs, seed)| {
            let mut rng = Rng(seed | 1);
            let ases: Vec<IsdAsn> = (0..n).map(|k| IsdAsn::new(1, 0xff00_0000_0110 + k as u64)).collect();
            let mut next_interface = vec![1u16; n];
            let mut interface_capacity: BTreeMap<(IsdAsn, u16), u64> = BTreeMap::new();
            let mut links = Vec::new();
            for (a, b, scale) in link_specs {
                let (a, b) = (a % n, b % n);
                if a == b {
                    continue;
                }
                // Tiny capacities make rounding matter; large ones check overflow-free math.
                let capacity = match scale {
                    0 => 1 + rng.below(50),
                    1 => 1 + rng.below(1_000_000_000),
                    _ => 1 + rng.below(u64::MAX / 8),
                };
                let (ai, bi) = (next_interface[a], next_interface[b]);
                next_interface[a] += 1;
                next_interface[b] += 1;
                interface_capacity.insert((ases[a], ai), capacity);
                interface_capacity.insert((ases[b], bi), capacity);
                links.push(Link { a: ases[a], a_interface: ai, b: ases[b], b_interface: bi });
            }
            let fill = |rng: &mut Rng| -> Vec<(IsdAsn, AllocationMatrix)> {
                ases.iter()
                    .enumerate()
                    .map(|(k, &ia)| {
                        let interfaces: Vec<u16> = (0..next_interface[k]).collect();
                        // The local interface has no link; give it a capacity of its own.
                        let cap = |i: u16| interface_capacity.get(&(ia, i)).copied().unwrap_or(u64::MAX / 8);
                        let share = interfaces.len() as u64;
                        let mut entries = Vec::new();
                        for &i in &interfaces {
                            for &j in &interfaces {
                                // Some pairs are not allowed: left out or listed as 0.
                                if i == j || rng.below(5) == 0 {
                                    continue;
                                }
                                let bps = rng.below(cap(i).min(cap(j)) / share + 1);
                                entries.push(MatrixEntry { ingress: i, egress: j, bps });
                            }
                        }
                        (ia, AllocationMatrix::new(entries).unwrap())
                    })
                    .collect()
            };
            let (nodes, changed_nodes) = (fill(&mut rng), fill(&mut rng));
            // Interfaces a matrix happened to leave out are still linked: no UnlinkedInterface.
            let topology = Topology::new(nodes, links.clone()).unwrap();
            let changed = Topology::new(changed_nodes, links).unwrap();
            let capacity = interface_capacity;
            RandomNetwork { topology, changed, capacity }
        },
    )
}

/// SplitMix64, to derive many values from one proptest seed.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn all_paths_together_stay_within_every_entry_and_link(net in network()) {
        let topo = &net.topology;
        let paths = topo.loop_free_paths(1_000_000).unwrap();
        let mut allocated = Vec::with_capacity(paths.len());
        let mut link_load: BTreeMap<(IsdAsn, u16), u128> = BTreeMap::new();
        for path in &paths {
            prop_assert_eq!(path[0].ingress, LOCAL_INTERFACE);
            prop_assert_eq!(path.last().unwrap().egress, LOCAL_INTERFACE);
            let a = topo.allocate(path).unwrap();
            prop_assert_eq!(a.guarantee_bps, guarantee(&a.hop_values));
            prop_assert!(a.prelim_bps.windows(2).all(|w| w[0] >= w[1]), "prelims increase: {:?}", a.prelim_bps);
            prop_assert_eq!(a.prelim_bps.last().copied(), Some(a.guarantee_bps));
            for h in &path[..path.len() - 1] {
                *link_load.entry((h.ia, h.egress)).or_default() += u128::from(a.guarantee_bps);
            }
            allocated.push((path.as_slice(), a.guarantee_bps));
        }
        for l in topo.pair_loads(allocated) {
            prop_assert!(l.load_bps <= l.entry_bps, "over-allocated pair: {:?}", l);
        }
        for (end, load) in link_load {
            prop_assert!(load <= u128::from(net.capacity[&end]), "link at {:?} carries {} > {}", end, load, net.capacity[&end]);
        }
    }

    /// Rounded against exact: with values below 2^16 and at most 6 hops, the exact terms of
    /// Eq. 2 are fractions whose numerators and denominators fit in a u128.
    #[test]
    fn rounding_only_lowers_by_less_than_one_bit_per_hop(
        raw in prop::collection::vec((1u64..1 << 16, 0u64..1 << 16, 1u64..1 << 16), 1..=6)
    ) {
        // Clamp so that M ≤ DIV and M ≤ CON.
        let hops: Vec<HopValues> = raw
            .iter()
            .map(|&(d, m, c)| HopValues::new(d.max(m), m, c.max(m)).unwrap())
            .collect();
        let prelim = prefix_guarantees(&hops);
        for (k, &rounded) in prelim.iter().enumerate() {
            let prefix = &hops[..=k];
            // T_x = num / den exactly.
            let terms: Vec<(u128, u128)> = (0..prefix.len())
                .map(|x| {
                    let (mut num, mut den) = (u128::from(prefix[x].entry_bps()), 1u128);
                    for (y, h) in prefix.iter().enumerate() {
                        if y != x {
                            num *= u128::from(h.entry_bps());
                            den *= u128::from(if y < x { h.convergent_bps() } else { h.divergent_bps() });
                        }
                    }
                    (num, den)
                })
                .collect();
            let r = u128::from(rounded);
            prop_assert!(terms.iter().all(|&(n, d)| r * d <= n), "rounded {} above an exact term {:?}", r, terms);
            let slack = k as u128; // ℓ − 1 floors
            prop_assert!(terms.iter().any(|&(n, d)| (r + slack + 1) * d > n), "lost too much: {} vs {:?}", r, terms);
        }
    }

    /// §V-C: temporary hop values allocate no more than the old matrix nor the new one.
    #[test]
    fn temporary_values_allocate_no_more_than_old_or_new(
        raw in prop::collection::vec(((1u64..1 << 40, 0u64..1 << 40, 1u64..1 << 40), (1u64..1 << 40, 0u64..1 << 40, 1u64..1 << 40)), 2..=8)
    ) {
        let v = |(d, m, c): (u64, u64, u64)| HopValues::new(d.max(m), m, c.max(m)).unwrap();
        let old: Vec<HopValues> = raw.iter().map(|&(o, _)| v(o)).collect();
        let new: Vec<HopValues> = raw.iter().map(|&(_, n)| v(n)).collect();
        let temp: Vec<HopValues> = old.iter().zip(&new).map(|(&o, &n)| HopValues::during_update(o, n)).collect();
        let (g_old, g_new, g_temp) = (prefix_guarantees(&old), prefix_guarantees(&new), prefix_guarantees(&temp));
        for k in 0..raw.len() {
            prop_assert!(g_temp[k] <= g_old[k].min(g_new[k]), "prefix {}: {} > min({}, {})", k, g_temp[k], g_old[k], g_new[k]);
        }
    }

    /// §V-C on whole networks: every AS changes its matrix at t_1; the temporary allocations
    /// (from every AS's [`MatrixSchedule`] in [t_1, t_2)) are at most the old and the new ones
    /// on every path, and neither the allocations valid in [t_1, t_2) (old and temporary) nor
    /// those valid in [t_2, t_2 + ΔT) (temporary and new) exceed any entry or link. One path's
    /// allocations share its AID and so one monitor bucket, which lets through the larger of
    /// them: a path loads the network with the larger of its two allocations.
    #[test]
    fn updates_never_over_allocate(net in network()) {
        let (old_topo, new_topo) = (&net.topology, &net.changed);
        let (t1, dt) = (1_000u64, 500u64);
        let schedules: BTreeMap<IsdAsn, MatrixSchedule> = old_topo
            .ases()
            .map(|ia| {
                let mut s = MatrixSchedule::new(old_topo.matrix(ia).unwrap().clone());
                s.change(new_topo.matrix(ia).unwrap().clone(), t1, dt).unwrap();
                (ia, s)
            })
            .collect();
        let mut paths = old_topo.loop_free_paths(1_000_000).unwrap();
        paths.extend(new_topo.loop_free_paths(1_000_000).unwrap());
        paths.sort_by_key(|p| p.iter().map(|h| (h.ia, h.ingress, h.egress)).collect::<Vec<_>>());
        paths.dedup();
        let at = |hops: &[Hop], t: u64| -> Vec<HopValues> {
            hops.iter().map(|h| schedules[&h.ia].hop_values(h.ingress, h.egress, t)).collect()
        };
        let mut overlap1 = Vec::new();
        let mut overlap2 = Vec::new();
        for path in &paths {
            let g_old = guarantee(&old_topo.hop_values(path).unwrap());
            let g_new = guarantee(&new_topo.hop_values(path).unwrap());
            prop_assert_eq!(guarantee(&at(path, t1 - 1)), g_old);
            prop_assert_eq!(guarantee(&at(path, t1 + dt)), g_new);
            let g_temp = guarantee(&at(path, t1));
            prop_assert_eq!(guarantee(&at(path, t1 + dt - 1)), g_temp);
            prop_assert!(g_temp <= g_old.min(g_new), "temporary {} above min({}, {})", g_temp, g_old, g_new);
            overlap1.push((path.as_slice(), g_old.max(g_temp)));
            overlap2.push((path.as_slice(), g_temp.max(g_new)));
        }
        for (topo, loads) in [(old_topo, overlap1), (new_topo, overlap2)] {
            let mut link_load: BTreeMap<(IsdAsn, u16), u128> = BTreeMap::new();
            for (path, g) in &loads {
                for h in &path[..path.len() - 1] {
                    *link_load.entry((h.ia, h.egress)).or_default() += u128::from(*g);
                }
            }
            for l in topo.pair_loads(loads) {
                prop_assert!(l.load_bps <= l.entry_bps, "over-allocated pair: {:?}", l);
            }
            for (end, load) in link_load {
                prop_assert!(load <= u128::from(net.capacity[&end]), "link at {:?} carries {}", end, load);
            }
        }
    }
}
