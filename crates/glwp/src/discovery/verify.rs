//! The checks the source and the on-path ASes share (Alg. 1 lines 12-15, 28-34, 45-46).

use crate::allocation::HopValues;
use crate::discovery::crypto::{aid, hop_values_mac, xor_into, SealContext};
use crate::discovery::keys::DiscoveryKeys;
use crate::discovery::ledger::{Neighbourhood, Promoted};
use crate::discovery::wire::Message;
use crate::discovery::DiscoveryDrop;

/// Lines 12-13: the AID is the hash of the path the message names.
pub(super) fn check_aid<T: AsRef<[u8]>>(m: &Message<T>) -> Result<(), DiscoveryDrop> {
    if aid(&m.ases_list(), &m.path()) != m.aid() {
        return Err(DiscoveryDrop::BadAid);
    }
    Ok(())
}

/// `⊕_{a ∈ from} MAC_{K_{a→self}}(Src, ts_pkt, AID, HV_a)`: the aggregate this AS expects in
/// its own slot from the ASes at positions `from`.
pub(super) fn expected_aggregate<T: AsRef<[u8]>, K: DiscoveryKeys>(
    keys: &K,
    m: &Message<T>,
    from: impl Iterator<Item = usize>,
) -> Result<[u8; 16], DiscoveryDrop> {
    let mut acc = [0u8; 16];
    for a in from {
        let key = keys.key_from(m.nid(a)).ok_or(DiscoveryDrop::NoKey)?;
        xor_into(&mut acc, &hop_values_mac(&key, m.src(), m.ts_pkt(), m.aid(), m.hop_values(a)));
    }
    Ok(acc)
}

/// Constant-time equality of two authenticators.
pub(super) fn auth_eq(a: &[u8; 16], b: &[u8; 16]) -> bool {
    a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// Line 31 for positions `0 … upto−1`: no entry above its divergent or convergent.
pub(super) fn checked_hop_values<T: AsRef<[u8]>>(m: &Message<T>, upto: usize) -> Result<Vec<HopValues>, DiscoveryDrop> {
    (0..upto)
        .map(|k| {
            let a = m.hop_values(k);
            HopValues::new(a.div_bps, a.m_bps, a.con_bps).map_err(|_| DiscoveryDrop::ImpossibleHopValues)
        })
        .collect()
}

/// What the hop key of the AS at position `k` is sealed under.
pub(super) fn seal_context<T: AsRef<[u8]>>(m: &Message<T>, k: usize, beta: u32, ts_exp: u32) -> SealContext {
    let (ingress, egress) = m.pair(k);
    SealContext {
        src: m.src(),
        aid: m.aid(),
        ts_pkt: m.ts_pkt(),
        beta,
        ts_exp,
        // k < ℓ ≤ MAX_ASES.
        position: k as u8,
        ingress,
        egress,
    }
}

/// Line 33 with §V-C step 4: the hop values of the neighbours of the AS at position `k`,
/// checked against what they announced for the message's `ts_pkt`.
pub(super) fn check_neighbours<T: AsRef<[u8]>>(
    nb: &mut Neighbourhood,
    m: &Message<T>,
    k: usize,
    hop_values: &[HopValues],
    now_ns: u64,
) -> Result<(), DiscoveryDrop> {
    let (i, j) = m.pair(k);
    let promoted = |n: usize, ours, facing: fn((u16, u16)) -> u16| Promoted {
        neighbour: m.nid(n),
        ours,
        pair: m.pair(n),
        facing: facing(m.pair(n)),
        values: hop_values[n],
        ts_pkt: m.ts_pkt(),
    };
    if k > 0 {
        nb.check_promoted(&promoted(k - 1, i, |p| p.1), now_ns)?;
    }
    if k + 1 < hop_values.len() {
        nb.check_promoted(&promoted(k + 1, j, |p| p.0), now_ns)?;
    }
    Ok(())
}
