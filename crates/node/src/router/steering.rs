//! Which worker processes a packet. One inter-AS interface is one UDP 4-tuple, so the kernel
//! cannot spread its packets over cores; the worker that receives a batch steers each packet
//! to its owner by a key that covers every piece of per-packet state a mechanism keeps:
//!
//! - a packet with a flyover on its current hop field: the policing slot it is charged to,
//!   (ingress, ResID). The Hummingbird policer and its duplicate filter are keyed by exactly
//!   that, so one worker owns each slot and a reservation's rate is enforced once.
//! - a GLWP packet: its AID, the key of GLWP's traffic monitor, so that one worker owns each
//!   allocation's bucket and β is enforced once, however many hosts of the source AS (or
//!   source addresses one host writes) share the allocation. A copy of a packet, which the
//!   duplicate filter must catch, has its AID.
//! - any other packet, on a router with Z-Lane: its origin, the key of Z-Lane's guarantees
//!   (its source AS inside the router's ISD, its source ISD outside it: every AS of a foreign
//!   ISD draws on one bucket); EPIC's duplicate filter is keyed by the source AS and finer.
//! - any other packet, on a router with pathval but no Z-Lane: its source AS (pathval keeps
//!   its keys per source AS); on a router that keeps no per-source state, its source AS and
//!   host, which spreads the hosts of one AS too.
//!
//! Every packet of one flow has the same key, so no flow is reordered by the spreading.

use aviary_hummingbird::HbirdPathView;
use aviary_scion::wire::header::path_type;
use aviary_scion::{HostAddr, IsdAsn, ScionView};
use aviary_zlane::classes::Origin;

/// What the key of a packet without a flyover or an AID is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spread {
    /// Its Z-Lane origin at a router of ISD `own_isd` ([`Origin::of`]).
    ByZlaneOrigin { own_isd: u16 },
    /// Its source AS: some mechanism keeps state per source AS.
    BySourceAs,
    /// Its source AS and host.
    BySourceHost,
}

/// The worker (of `workers`) that owns a packet that arrived on `ingress`. A packet too
/// malformed to have a key stays with the worker that received it (it is dropped, and the drop
/// is counted there).
pub fn owner(pkt: &[u8], ingress: u16, spread: Spread, workers: usize) -> Option<usize> {
    let v = ScionView::new_checked(pkt).ok()?;
    let key = flyover_res_id(&v)
        .map(|res_id| (1 << 63) | (u64::from(ingress) << 32) | u64::from(res_id))
        .or_else(|| glwp_aid(&v))
        .unwrap_or_else(|| source_key(&v, spread));
    Some(bucket(key, workers))
}

/// The key of a packet without a flyover or an AID: its source as `spread` says.
fn source_key(v: &ScionView<&[u8]>, spread: Spread) -> u64 {
    let ia = match spread {
        Spread::ByZlaneOrigin { own_isd } => match Origin::of(v.src_ia(), own_isd) {
            Origin::As(ia) => ia,
            Origin::Isd(isd) => IsdAsn::new(isd, 0),
        },
        Spread::BySourceAs | Spread::BySourceHost => v.src_ia(),
    };
    let ia = u64::from_be_bytes(ia.to_bytes());
    match (spread, v.src_host()) {
        (Spread::BySourceHost, HostAddr::V4(a)) => ia ^ u64::from(u32::from(a)).rotate_left(17),
        (Spread::BySourceHost, HostAddr::V6(a)) => ia ^ (u128::from(a) as u64).rotate_left(17),
        _ => ia,
    }
}

/// The ResID of the flyover on the current hop field of a Hummingbird packet.
fn flyover_res_id(v: &ScionView<&[u8]>) -> Option<u32> {
    if v.path_type() != path_type::HUMMINGBIRD {
        return None;
    }
    let path = HbirdPathView::new_checked(v.path()).ok()?;
    path.flyover(usize::from(path.meta().curr_hf)).map(|f| f.res_id)
}

/// The AID of a GLWP packet.
fn glwp_aid(v: &ScionView<&[u8]>) -> Option<u64> {
    if v.path_type() != aviary_glwp::PATH_TYPE {
        return None;
    }
    aviary_glwp::Header::new_checked(v.path()).ok().map(|h| h.aid())
}

/// `key` mixed (so that consecutive ResIDs spread) and mapped to `0..workers`.
fn bucket(key: u64, workers: usize) -> usize {
    let mut z = key.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    ((u128::from(z) * workers as u128) >> 64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use aviary_scion::{path_type, ScionHeader, ScionPacket};
    use proptest::prelude::*;

    /// A packet from host `host` of `src` with an empty path.
    fn from(src: IsdAsn, host: u32) -> Vec<u8> {
        let header = ScionHeader {
            traffic_class: 0,
            flow_id: 1,
            next_hdr: 17,
            path_type: path_type::EMPTY,
            dst_ia: IsdAsn::new(1, 0xff00_0000_0110),
            src_ia: src,
            dst_host: HostAddr::V4([10, 0, 0, 1].into()),
            src_host: HostAddr::V4(host.into()),
            path: Vec::new(),
        };
        ScionPacket { header, payload: vec![0; 8] }.to_bytes().unwrap()
    }

    proptest! {
        /// Z-Lane guarantees every AS of a foreign ISD one bucket, so one worker must own all
        /// their packets; the ASes of the router's own ISD have buckets of their own.
        #[test]
        fn one_worker_owns_each_zlane_origin(
            foreign_isd in 2u16..100,
            ases in proptest::collection::vec((1u64..1 << 48, any::<u32>()), 2..16),
            workers in 2usize..9,
        ) {
            let spread = Spread::ByZlaneOrigin { own_isd: 1 };
            let owner_of = |isd, (asn, host)| owner(&from(IsdAsn::new(isd, asn), host), 1, spread, workers).unwrap();
            let foreign: Vec<usize> = ases.iter().map(|&a| owner_of(foreign_isd, a)).collect();
            prop_assert!(foreign.iter().all(|&w| w == foreign[0]), "{foreign:?}");
            for &(asn, host) in &ases {
                // The router's own ISD: by source AS alone, whatever the host.
                prop_assert_eq!(owner_of(1, (asn, host)), owner_of(1, (asn, host ^ 1)));
            }
        }
    }

    #[test]
    fn the_ases_of_the_routers_own_isd_are_spread() {
        let spread = Spread::ByZlaneOrigin { own_isd: 1 };
        let owners: std::collections::HashSet<usize> =
            (0..64).map(|asn| owner(&from(IsdAsn::new(1, asn), 1), 1, spread, 4).unwrap()).collect();
        assert_eq!(owners.len(), 4);
    }

    #[test]
    fn buckets_cover_every_worker_and_stay_in_range() {
        for workers in 1..=16 {
            let mut seen = vec![false; workers];
            for key in 0..1000u64 {
                let b = bucket(key, workers);
                assert!(b < workers);
                seen[b] = true;
            }
            assert!(seen.iter().all(|s| *s), "{workers} workers: {seen:?}");
        }
    }
}
