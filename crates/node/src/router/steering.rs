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
//! - any other packet: its source AS (Z-Lane's guarantees and EPIC's duplicate filter are keyed
//!   by the source AS and finer), or, on a router that keeps no per-source state (no Z-Lane,
//!   no pathval), its source AS and host, which spreads the hosts of one AS too.
//!
//! Every packet of one flow has the same key, so no flow is reordered by the spreading.

use aviary_hummingbird::HbirdPathView;
use aviary_scion::wire::header::path_type;
use aviary_scion::{HostAddr, ScionView};

/// What the key of a packet without a flyover is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spread {
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
    let key = match (flyover_res_id(&v), glwp_aid(&v)) {
        (Some(res_id), _) => (1 << 63) | (u64::from(ingress) << 32) | u64::from(res_id),
        (None, Some(aid)) => aid,
        (None, None) => {
            let ia = u64::from_be_bytes(v.src_ia().to_bytes());
            match (spread, v.src_host()) {
                (Spread::BySourceHost, HostAddr::V4(a)) => ia ^ u64::from(u32::from(a)).rotate_left(17),
                (Spread::BySourceHost, HostAddr::V6(a)) => ia ^ (u128::from(a) as u64).rotate_left(17),
                _ => ia,
            }
        }
    };
    Some(bucket(key, workers))
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
