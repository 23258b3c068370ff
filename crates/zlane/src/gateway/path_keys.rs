//! Which AS owns each hop field of a path, and that AS's key for the gateway.
//!
//! Hop fields do not name their AS. The topology is public, so the gateway walks it: hop
//! field 0 is the source AS's; a hop field whose egress (in the direction of travel) is an
//! interface leads to the AS at the other end of that link, and one with egress 0 ends a
//! segment inside its AS, so the next hop field (the next segment's first) is the same AS's.
//! A path that leaves the known topology has no keys, and the gateway cannot authorize it.
//!
//! The keys are the Level-1 keys `K_{A_i→A_0}` that each AS A_i issued to the gateway's AS
//! A_0, expanded once ([`GatewayKey`]).

use std::collections::HashMap;

use aviary_scion::drkey::Level1Key;
use aviary_scion::epic::per_as::GatewayKey;
use aviary_scion::wire::path::MAX_HOPS;
use aviary_scion::{IsdAsn, StandardPathView};
use foldhash::fast::RandomState;

/// Index of an AS in the table.
type AsIndex = u32;

/// The known ASes, their links and their keys.
#[derive(Clone, Debug, Default)]
pub struct PathKeys {
    index: HashMap<IsdAsn, AsIndex, RandomState>,
    keys: Vec<Option<GatewayKey>>,
    /// (AS, egress interface) → the AS at the other end.
    links: HashMap<(AsIndex, u16), AsIndex, RandomState>,
}

/// Why a path's hop fields have no keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathKeyError {
    /// The source AS, or an interface on the path, is not in the topology.
    UnknownLink,
    /// An AS on the path issued the gateway no key (yet).
    NoKey(IsdAsn),
}

impl PathKeys {
    pub fn new() -> Self {
        Self::default()
    }

    fn intern(&mut self, ia: IsdAsn) -> AsIndex {
        let next = self.keys.len() as AsIndex;
        *self.index.entry(ia).or_insert_with(|| {
            self.keys.push(None);
            next
        })
    }

    /// The link from `from`'s interface `egress` to `to`.
    pub fn add_link(&mut self, from: IsdAsn, egress: u16, to: IsdAsn) {
        let (f, t) = (self.intern(from), self.intern(to));
        self.links.insert((f, egress), t);
    }

    /// `K_{ia→A_0}`, replacing the AS's previous key.
    pub fn set_key(&mut self, ia: IsdAsn, key: &Level1Key) {
        let i = self.intern(ia);
        self.keys[i as usize] = Some(GatewayKey::new(key));
    }

    /// Forgets every AS's key (the links stay): at a DRKey epoch change, so that a path
    /// through an AS whose new key is not there yet goes unflagged instead of carrying fields
    /// under last epoch's key, which its routers would drop.
    pub fn clear_keys(&mut self) {
        self.keys.iter_mut().for_each(|k| *k = None);
    }

    /// Number of ASes with a key.
    pub fn keyed_ases(&self) -> usize {
        self.keys.iter().filter(|k| k.is_some()).count()
    }

    /// The key of every hop field of `path` (leaving `src`, at its first hop field) into
    /// `out[..n]`, `n` the path's hop fields.
    pub fn resolve<'a>(
        &'a self,
        src: IsdAsn,
        path: &StandardPathView<&[u8]>,
        out: &mut [Option<&'a GatewayKey>; MAX_HOPS],
    ) -> Result<(), PathKeyError> {
        let mut at = *self.index.get(&src).ok_or(PathKeyError::UnknownLink)?;
        let seg_len = path.meta().seg_len;
        let mut hop = 0;
        for (info_index, len) in seg_len.iter().enumerate().take(path.num_info_fields()) {
            let cons_dir = path.info(info_index).cons_dir;
            for _ in 0..usize::from(*len) {
                let key = self.keys[at as usize].as_ref();
                out[hop] = Some(key.ok_or_else(|| PathKeyError::NoKey(self.ia_of(at)))?);
                let h = path.hop(hop);
                let egress = if cons_dir { h.cons_egress } else { h.cons_ingress };
                let last = hop + 1 == path.num_hops();
                if egress != 0 && !last {
                    at = *self.links.get(&(at, egress)).ok_or(PathKeyError::UnknownLink)?;
                }
                hop += 1;
            }
        }
        Ok(())
    }

    fn ia_of(&self, at: AsIndex) -> IsdAsn {
        self.index.iter().find(|(_, i)| **i == at).map(|(ia, _)| *ia).expect("interned")
    }
}
