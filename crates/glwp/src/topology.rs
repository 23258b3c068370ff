//! ASes with their allocation matrices, the links between their interfaces, and paths over
//! them: which paths are valid, their hop values, allocations and the load they put on each
//! interface pair.

use std::collections::BTreeMap;

use aviary_scion::IsdAsn;
use thiserror::Error;

use crate::allocation::{prefix_guarantees, HopValues};
use crate::matrix::{AllocationMatrix, InterfaceId, LOCAL_INTERFACE};

/// An inter-AS link between interface `a_interface` of `a` and `b_interface` of `b`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Link {
    pub a: IsdAsn,
    pub a_interface: InterfaceId,
    pub b: IsdAsn,
    pub b_interface: InterfaceId,
}

/// One AS of a path: where the path enters it and where it leaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Hop {
    pub ia: IsdAsn,
    pub ingress: InterfaceId,
    pub egress: InterfaceId,
}

/// Why ASes and links make no topology; `link` is the link's position in the list.
#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum TopologyError {
    #[error("AS {ia} is listed twice")]
    DuplicateAs { ia: IsdAsn },
    #[error("unknown AS {ia}")]
    UnknownAs { link: usize, ia: IsdAsn },
    #[error("{ia} interface 0 is the local interface, not a link's")]
    LocalInterfaceInLink { link: usize, ia: IsdAsn },
    #[error("links {ia} to itself")]
    SelfLink { link: usize, ia: IsdAsn },
    #[error("{ia} interface {interface} is already in link {other}")]
    InterfaceInUse { link: usize, ia: IsdAsn, interface: InterfaceId, other: usize },
    #[error("the allocation matrix of {ia} names interface {interface}, which is in no link")]
    UnlinkedInterface { ia: IsdAsn, interface: InterfaceId },
}

/// Why a sequence of hops is no path of the topology; `hop` is the offending hop's position.
#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum PathError {
    #[error("a path needs at least two ASes, a source and a destination")]
    TooShort,
    #[error("unknown AS {ia}")]
    UnknownAs { hop: usize, ia: IsdAsn },
    #[error("a path enters its source AS at the local interface 0, not at {interface}")]
    SourceNotLocal { hop: usize, interface: InterfaceId },
    #[error("a path leaves its destination AS at the local interface 0, not at {interface}")]
    DestinationNotLocal { hop: usize, interface: InterfaceId },
    #[error("only a path's source and destination use the local interface 0")]
    LocalInterfaceInTransit { hop: usize },
    #[error("{ia} interface {interface} is in no link")]
    NoLink { hop: usize, ia: IsdAsn, interface: InterfaceId },
    #[error("{ia} interface {egress} links to {peer} interface {peer_interface}, not to the next hop {next} interface {next_ingress}")]
    WrongLink {
        hop: usize,
        ia: IsdAsn,
        egress: InterfaceId,
        peer: IsdAsn,
        peer_interface: InterfaceId,
        next: IsdAsn,
        next_ingress: InterfaceId,
    },
    #[error("{ia} is visited twice (first at hop {first}): paths are loop-free")]
    Loop { hop: usize, ia: IsdAsn, first: usize },
}

impl PathError {
    /// The position of the offending hop, if one hop is at fault.
    pub fn hop(&self) -> Option<usize> {
        match *self {
            PathError::TooShort => None,
            PathError::UnknownAs { hop, .. }
            | PathError::SourceNotLocal { hop, .. }
            | PathError::DestinationNotLocal { hop, .. }
            | PathError::LocalInterfaceInTransit { hop }
            | PathError::NoLink { hop, .. }
            | PathError::WrongLink { hop, .. }
            | PathError::Loop { hop, .. } => Some(hop),
        }
    }
}

/// The allocation of one path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathAllocation {
    /// What each AS announces for the path (discovery carries these).
    pub hop_values: Vec<HopValues>,
    /// The preliminary guarantee of each prefix: element `k` covers hops `0..=k`.
    pub prelim_bps: Vec<u64>,
    /// `G(π)`, the last preliminary guarantee.
    pub guarantee_bps: u64,
}

/// What the allocations of a set of paths add up to on one interface pair of one AS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PairLoad {
    pub ia: IsdAsn,
    pub ingress: InterfaceId,
    pub egress: InterfaceId,
    /// The summed allocations of the paths through the pair.
    pub load_bps: u64,
    /// The matrix entry `M_ij`, which the load of distinct loop-free paths never exceeds.
    pub entry_bps: u64,
}

/// ASes, their allocation matrices and the links between them.
#[derive(Clone, Debug, Default)]
pub struct Topology {
    pub(crate) nodes: BTreeMap<IsdAsn, AllocationMatrix>,
    /// Both ends of every link: (AS, interface) to the (AS, interface) at the other end.
    pub(crate) peers: BTreeMap<(IsdAsn, InterfaceId), (IsdAsn, InterfaceId)>,
}

impl Topology {
    pub fn new(
        nodes: impl IntoIterator<Item = (IsdAsn, AllocationMatrix)>,
        links: impl IntoIterator<Item = Link>,
    ) -> Result<Self, TopologyError> {
        let mut topo = Topology::default();
        for (ia, matrix) in nodes {
            if topo.nodes.insert(ia, matrix).is_some() {
                return Err(TopologyError::DuplicateAs { ia });
            }
        }
        let mut link_of = BTreeMap::new();
        for (link, l) in links.into_iter().enumerate() {
            for (ia, interface) in [(l.a, l.a_interface), (l.b, l.b_interface)] {
                if !topo.nodes.contains_key(&ia) {
                    return Err(TopologyError::UnknownAs { link, ia });
                }
                if interface == LOCAL_INTERFACE {
                    return Err(TopologyError::LocalInterfaceInLink { link, ia });
                }
                if let Some(&other) = link_of.get(&(ia, interface)) {
                    return Err(TopologyError::InterfaceInUse { link, ia, interface, other });
                }
                link_of.insert((ia, interface), link);
            }
            if l.a == l.b {
                return Err(TopologyError::SelfLink { link, ia: l.a });
            }
            topo.peers.insert((l.a, l.a_interface), (l.b, l.b_interface));
            topo.peers.insert((l.b, l.b_interface), (l.a, l.a_interface));
        }
        for (&ia, matrix) in &topo.nodes {
            if let Some(interface) =
                matrix.interfaces().find(|&i| i != LOCAL_INTERFACE && !topo.peers.contains_key(&(ia, i)))
            {
                return Err(TopologyError::UnlinkedInterface { ia, interface });
            }
        }
        Ok(topo)
    }

    /// The ASes, in order.
    pub fn ases(&self) -> impl Iterator<Item = IsdAsn> + '_ {
        self.nodes.keys().copied()
    }

    pub fn matrix(&self, ia: IsdAsn) -> Option<&AllocationMatrix> {
        self.nodes.get(&ia)
    }

    /// The (AS, interface) at the other end of the link at `interface` of `ia`.
    pub fn peer(&self, ia: IsdAsn, interface: InterfaceId) -> Option<(IsdAsn, InterfaceId)> {
        self.peers.get(&(ia, interface)).copied()
    }

    /// Checks that `hops` is a loop-free path from a source's local interface to a different
    /// destination's local interface along links, and returns each AS's hop values.
    pub fn hop_values(&self, hops: &[Hop]) -> Result<Vec<HopValues>, PathError> {
        if hops.len() < 2 {
            return Err(PathError::TooShort);
        }
        let last = hops.len() - 1;
        let mut seen = BTreeMap::new();
        // Every AS first, so that a mistyped AS is named as such, not as a wrong link to it.
        let matrices = hops
            .iter()
            .enumerate()
            .map(|(hop, h)| self.nodes.get(&h.ia).ok_or(PathError::UnknownAs { hop, ia: h.ia }))
            .collect::<Result<Vec<_>, _>>()?;
        let mut values = Vec::with_capacity(hops.len());
        for ((hop, h), matrix) in hops.iter().enumerate().zip(matrices) {
            if let Some(&first) = seen.get(&h.ia) {
                return Err(PathError::Loop { hop, ia: h.ia, first });
            }
            seen.insert(h.ia, hop);
            if hop == 0 && h.ingress != LOCAL_INTERFACE {
                return Err(PathError::SourceNotLocal { hop, interface: h.ingress });
            }
            if hop == last && h.egress != LOCAL_INTERFACE {
                return Err(PathError::DestinationNotLocal { hop, interface: h.egress });
            }
            if (hop > 0 && h.ingress == LOCAL_INTERFACE) || (hop < last && h.egress == LOCAL_INTERFACE) {
                return Err(PathError::LocalInterfaceInTransit { hop });
            }
            if let Some(next) = hops.get(hop + 1) {
                let (peer, peer_interface) =
                    self.peer(h.ia, h.egress).ok_or(PathError::NoLink { hop, ia: h.ia, interface: h.egress })?;
                if (peer, peer_interface) != (next.ia, next.ingress) {
                    return Err(PathError::WrongLink {
                        hop,
                        ia: h.ia,
                        egress: h.egress,
                        peer,
                        peer_interface,
                        next: next.ia,
                        next_ingress: next.ingress,
                    });
                }
            }
            values.push(matrix.hop_values(h.ingress, h.egress));
        }
        Ok(values)
    }

    /// The allocation of a path and the preliminary guarantees of its prefixes.
    pub fn allocate(&self, hops: &[Hop]) -> Result<PathAllocation, PathError> {
        let hop_values = self.hop_values(hops)?;
        let prelim_bps = prefix_guarantees(&hop_values);
        let guarantee_bps = prelim_bps.last().copied().unwrap_or(0);
        Ok(PathAllocation { hop_values, prelim_bps, guarantee_bps })
    }

    /// The load on every listed interface pair of every AS when each path uses its allocation,
    /// ordered by AS, ingress, egress. GMA bounds the load of distinct loop-free paths by the
    /// pair's entry; a path listed twice counts twice.
    pub fn pair_loads<'a>(&self, allocated: impl IntoIterator<Item = (&'a [Hop], u64)>) -> Vec<PairLoad> {
        let mut load: BTreeMap<(IsdAsn, InterfaceId, InterfaceId), u64> = BTreeMap::new();
        for (hops, bps) in allocated {
            for h in hops {
                let l = load.entry((h.ia, h.ingress, h.egress)).or_default();
                // Saturation needs 2^64 bit/s in one pair, far beyond any matrix entry.
                *l = l.saturating_add(bps);
            }
        }
        self.nodes
            .iter()
            .flat_map(|(&ia, matrix)| {
                let load = &load;
                matrix.entries().map(move |e| PairLoad {
                    ia,
                    ingress: e.ingress,
                    egress: e.egress,
                    load_bps: load.get(&(ia, e.ingress, e.egress)).copied().unwrap_or(0),
                    entry_bps: e.bps,
                })
            })
            .collect()
    }
}
