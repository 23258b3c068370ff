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
//!
//! Which AS owns each hop field depends only on the source, the segments' directions and the
//! hop fields' egress interfaces, and a gateway's packets follow few paths, so walks are
//! remembered (a bounded direct-mapped table keyed by the segments' lengths and directions and
//! every hop field's two interfaces as they are on the wire, one word each): a remembered path
//! costs one hash of those words and one compare, without decoding a hop field, instead of a
//! hash lookup per AS. [`PathKeys::resolve`] lends the keys of the walk in place ([`HopKeys`]),
//! so nothing per hop field is copied. A walk names ASes by their index, and their keys are
//! read afresh for every packet, so a key that changes (a new DRKey epoch, a key withdrawn)
//! takes effect at once; a link that changes forgets every walk.

use std::collections::HashMap;
use std::ops::Range;

use aviary_scion::drkey::Level1Key;
use aviary_scion::epic::per_as::GatewayKey;
use aviary_scion::wire::path::{field, HOP_LEN, MAX_HOPS};
use aviary_scion::{IsdAsn, StandardPathView};
use foldhash::fast::RandomState;

/// Index of an AS in the table.
type AsIndex = u32;

/// Walks remembered (few in tests, so that paths share slots).
const CACHED_WALKS: usize = if cfg!(test) { 8 } else { 1024 };
/// Hop fields of the longest path whose walk is remembered (longer ones are walked each time).
const CACHED_HOPS: usize = 16;

/// A hop field's construction ingress and egress interfaces, adjacent: one word to key a walk on.
const INTERFACES: Range<usize> = field::hop::CONS_INGRESS.start..field::hop::CONS_EGRESS.end;

/// A remembered walk: the AS of each hop field of the paths leaving `src` with segments of
/// `shape` over hop fields of `interfaces`.
#[derive(Clone, Copy, Debug, Default)]
struct Walk {
    /// The segments' lengths and directions ([`shape`]); 0 for a slot not in use (a path has
    /// a first segment).
    shape: u32,
    src: AsIndex,
    /// Each hop field's [`INTERFACES`] as on the wire (0 beyond the path).
    interfaces: [u32; CACHED_HOPS],
    ases: [AsIndex; CACHED_HOPS],
    /// The [`PathKeys::key_generation`] at which every AS of the walk was found keyed (0:
    /// not yet), so that a remembered walk is not checked hop by hop for every packet.
    keyed_at: u64,
}

/// The segment lengths of `path` and, in the high byte, one bit per segment: whether it is in
/// construction direction (which of a hop field's interfaces is its egress).
fn shape(path: &StandardPathView<&[u8]>) -> u32 {
    let b = path.bytes();
    let dirs = (0..path.num_info_fields()).fold(0u8, |d, i| {
        let cons_dir = b[path.info_offset(i) + field::info::FLAGS] & field::info::CONS_DIR != 0;
        d | u8::from(cons_dir) << i
    });
    let [a, b, c] = path.meta().seg_len;
    u32::from_le_bytes([a, b, c, dirs])
}

/// The key of every hop field of a path, as [`PathKeys::resolve`] found them: borrowed from
/// the table, in hop-field order.
#[derive(Clone, Copy, Debug)]
pub struct HopKeys<'a> {
    keys: &'a [GatewayKey],
    ases: &'a [AsIndex],
}

impl<'a> HopKeys<'a> {
    pub fn iter(&self) -> impl Iterator<Item = &'a GatewayKey> + '_ {
        let keys = self.keys;
        self.ases.iter().map(move |at| {
            let at = *at as usize;
            debug_assert!(at < keys.len(), "AS {at} of {}", keys.len());
            // SAFETY: `resolve`, the only maker of a `HopKeys`, returns its walk only once
            // `all_keyed` has indexed `keyed` (as long as `keys`: both grow together in
            // `intern` and never shrink) with every AS of it, now or at the same key
            // generation, so every index is below `keys.len()`. Unchecked: the bounds check
            // per hop field was about 2 of the 5-AS packet's instructions per hop.
            unsafe { keys.get_unchecked(at) }
        })
    }
}

/// The known ASes, their links and their keys.
#[derive(Clone, Debug)]
pub struct PathKeys {
    index: HashMap<IsdAsn, AsIndex, RandomState>,
    /// Every AS's key; an AS without one (`keyed` false) has a placeholder that no path
    /// resolves to.
    keys: Vec<GatewayKey>,
    keyed: Vec<bool>,
    /// (AS, egress interface) → the AS at the other end.
    links: HashMap<(AsIndex, u16), AsIndex, RandomState>,
    walks: Box<[Walk; CACHED_WALKS]>,
    /// Counts the changes to `keys` and `keyed`: a walk checked at another count is checked
    /// again (a key withdrawn by [`PathKeys::clear_keys`] takes effect at once). From 1.
    key_generation: u64,
    /// The ASes of the last path too long to remember.
    long_walk: Box<[AsIndex; MAX_HOPS]>,
    /// The index of the last source looked up: a gateway's paths all leave its own AS, so
    /// this saves a hash lookup per packet (an AS keeps its index once interned).
    last_src: Option<(IsdAsn, AsIndex)>,
}

impl Default for PathKeys {
    fn default() -> Self {
        let (index, keys, keyed, links) = Default::default();
        let (walks, long_walk) = (Box::new([Walk::default(); CACHED_WALKS]), Box::new([0; MAX_HOPS]));
        Self { index, keys, keyed, links, walks, long_walk, key_generation: 1, last_src: None }
    }
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
            self.keys.push(GatewayKey::new(&Level1Key::from_bytes([0; 16])));
            self.keyed.push(false);
            next
        })
    }

    /// The link from `from`'s interface `egress` to `to`.
    pub fn add_link(&mut self, from: IsdAsn, egress: u16, to: IsdAsn) {
        let (f, t) = (self.intern(from), self.intern(to));
        if self.links.insert((f, egress), t) != Some(t) {
            self.forget_walks();
        }
    }

    /// `K_{ia→A_0}`, replacing the AS's previous key.
    pub fn set_key(&mut self, ia: IsdAsn, key: &Level1Key) {
        let i = self.intern(ia);
        self.keys[i as usize] = GatewayKey::new(key);
        self.keyed[i as usize] = true;
        self.key_generation += 1;
    }

    /// Forgets every AS's key (the links stay): at a DRKey epoch change, so that a path
    /// through an AS whose new key is not there yet goes unflagged instead of carrying fields
    /// under last epoch's key, which its routers would drop.
    pub fn clear_keys(&mut self) {
        self.keyed.fill(false);
        self.key_generation += 1;
    }

    /// Number of ASes with a key.
    pub fn keyed_ases(&self) -> usize {
        self.keyed.iter().filter(|k| **k).count()
    }

    fn forget_walks(&mut self) {
        self.walks.iter_mut().for_each(|w| w.shape = 0);
    }

    /// The key of every hop field of `path` (leaving `src`, at its first hop field).
    pub fn resolve(&mut self, src: IsdAsn, path: &StandardPathView<&[u8]>) -> Result<HopKeys<'_>, PathKeyError> {
        let n = path.num_hops();
        if n > CACHED_HOPS {
            let mut egress = [0u16; MAX_HOPS];
            travel_egresses(path, &mut egress);
            let mut ases = [0; MAX_HOPS];
            self.walk(src, &egress[..n], &mut ases)?;
            *self.long_walk = ases;
            self.all_keyed(&self.long_walk[..n])?;
            return Ok(HopKeys { keys: &self.keys, ases: &self.long_walk[..n] });
        }
        let slot = self.walk_cached(src, path)?;
        if self.walks[slot].keyed_at != self.key_generation {
            self.all_keyed(&self.walks[slot].ases[..n])?;
            self.walks[slot].keyed_at = self.key_generation;
        }
        Ok(HopKeys { keys: &self.keys, ases: &self.walks[slot].ases[..n] })
    }

    /// Whether every AS of `ases` has a key.
    fn all_keyed(&self, ases: &[AsIndex]) -> Result<(), PathKeyError> {
        match ases.iter().find(|at| !self.keyed[**at as usize]) {
            Some(at) => Err(PathKeyError::NoKey(self.ia_of(*at))),
            None => Ok(()),
        }
    }

    /// The index of `src`, remembered: a gateway's paths all leave its own AS, so this saves a
    /// hash lookup per packet (an AS keeps its index once interned).
    fn source(&mut self, src: IsdAsn) -> Result<AsIndex, PathKeyError> {
        match self.last_src {
            Some((ia, at)) if ia == src => Ok(at),
            _ => {
                let at = *self.index.get(&src).ok_or(PathKeyError::UnknownLink)?;
                self.last_src = Some((src, at));
                Ok(at)
            }
        }
    }

    /// The slot of [`PathKeys::walks`] that remembers the walk of `path` (of at most
    /// [`CACHED_HOPS`] hop fields) leaving `src`, walked now if it was not.
    fn walk_cached(&mut self, src: IsdAsn, path: &StandardPathView<&[u8]>) -> Result<usize, PathKeyError> {
        let at = self.source(src)?;
        let shape = shape(path);
        let (first, n) = (path.hop_offset(0), path.num_hops());
        let hops = &path.bytes()[first..first + n * HOP_LEN];
        let mut interfaces = [0u32; CACHED_HOPS];
        let mut hash = u64::from(at) ^ u64::from(shape) << 32;
        for (word, hop) in interfaces.iter_mut().zip(hops.chunks_exact(HOP_LEN)) {
            *word = u32::from_ne_bytes(hop[INTERFACES].try_into().expect("two adjacent 2-byte interfaces"));
            hash = (hash ^ u64::from(*word)).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29);
        }
        let slot = (hash.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as usize % CACHED_WALKS;
        let w = &self.walks[slot];
        // Every word compared, without a call (the arrays are short and fixed).
        let differ = w.interfaces.iter().zip(&interfaces).fold(0, |d, (a, b)| d | (a ^ b));
        if w.shape == shape && w.src == at && differ == 0 {
            return Ok(slot);
        }
        let (mut egress, mut ases) = ([0u16; MAX_HOPS], [0; MAX_HOPS]);
        travel_egresses(path, &mut egress);
        self.walk(src, &egress[..n], &mut ases)?;
        let mut walk = Walk { shape, src: at, interfaces, ases: [0; CACHED_HOPS], keyed_at: 0 };
        walk.ases.copy_from_slice(&ases[..CACHED_HOPS]);
        self.walks[slot] = walk;
        Ok(slot)
    }

    /// The AS of every hop field of a path leaving `src` through `egress` (one per hop field)
    /// into `ases`, walking the links.
    fn walk(&self, src: IsdAsn, egress: &[u16], ases: &mut [AsIndex; MAX_HOPS]) -> Result<(), PathKeyError> {
        let mut at = *self.index.get(&src).ok_or(PathKeyError::UnknownLink)?;
        for (hop, (slot, e)) in ases.iter_mut().zip(egress).enumerate() {
            *slot = at;
            if *e != 0 && hop + 1 < egress.len() {
                at = *self.links.get(&(at, *e)).ok_or(PathKeyError::UnknownLink)?;
            }
        }
        Ok(())
    }

    fn ia_of(&self, at: AsIndex) -> IsdAsn {
        self.index.iter().find(|(_, i)| **i == at).map(|(ia, _)| *ia).expect("interned")
    }
}

/// The egress interface of every hop field but the last of `path` in the direction of travel
/// into `out[..n]` (the last one's is left 0: the walk ends there).
fn travel_egresses(path: &StandardPathView<&[u8]>, out: &mut [u16; MAX_HOPS]) {
    let n = path.num_hops();
    let mut hop = 0;
    for (info, len) in path.meta().seg_len.iter().enumerate().take(path.num_info_fields()) {
        let cons_dir = path.info(info).cons_dir;
        for _ in 0..usize::from(*len) {
            if hop + 1 < n {
                let (ingress, egress) = path.hop_interfaces(hop);
                out[hop] = if cons_dir { egress } else { ingress };
            }
            hop += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aviary_scion::wire::path::{HopField, InfoField};
    use aviary_scion::StandardPath;
    use proptest::prelude::*;

    fn ia(i: u64) -> IsdAsn {
        IsdAsn::new(1, 0xff00_0000_0100 + i)
    }

    fn level1(seed: u8) -> Level1Key {
        Level1Key::from_bytes([seed; 16])
    }

    /// A path of segments `(cons_dir, [(cons_ingress, cons_egress)])`, as bytes.
    fn path_bytes(segments: &[(bool, Vec<(u16, u16)>)]) -> Vec<u8> {
        let mut seg_len = [0u8; 3];
        let (mut info, mut hops) = (Vec::new(), Vec::new());
        for (s, (cons_dir, hs)) in segments.iter().enumerate() {
            seg_len[s] = hs.len() as u8;
            info.push(InfoField { peering: false, cons_dir: *cons_dir, seg_id: 0, timestamp: 0 });
            hops.extend(hs.iter().map(|(i, e)| HopField {
                ingress_alert: false,
                egress_alert: false,
                exp_time: 0,
                cons_ingress: *i,
                cons_egress: *e,
                mac: [0; 6],
            }));
        }
        StandardPath { curr_inf: 0, curr_hf: 0, seg_len, info, hops }.to_bytes().expect("a valid path")
    }

    /// The key of every hop field, as the address of the expanded key in the table.
    fn resolved(keys: &mut PathKeys, src: IsdAsn, bytes: &[u8]) -> Result<Vec<*const GatewayKey>, PathKeyError> {
        let path = StandardPathView::new_checked(bytes).expect("a valid path");
        Ok(keys.resolve(src, &path)?.iter().map(|k| k as *const _).collect())
    }

    /// The same without the remembered walks.
    fn walked(keys: &PathKeys, src: IsdAsn, bytes: &[u8]) -> Result<Vec<*const GatewayKey>, PathKeyError> {
        let path = StandardPathView::new_checked(bytes).expect("a valid path");
        // The egresses from fully decoded hop fields, apart from `travel_egresses`.
        let (mut egress, mut ases) = ([0; MAX_HOPS], [0; MAX_HOPS]);
        let mut hop = 0;
        for (info, len) in path.meta().seg_len.iter().enumerate().take(path.num_info_fields()) {
            for _ in 0..*len {
                egress[hop] = path.hop(hop).travel_interfaces(path.info(info).cons_dir).1;
                hop += 1;
            }
        }
        egress[path.num_hops() - 1] = 0;
        keys.walk(src, &egress[..path.num_hops()], &mut ases)?;
        ases[..path.num_hops()]
            .iter()
            .map(|at| {
                let key = &keys.keys[*at as usize] as *const _;
                keys.keyed[*at as usize].then_some(key).ok_or(PathKeyError::NoKey(keys.ia_of(*at)))
            })
            .collect()
    }

    /// The output of the key the gateway would write hop field `hop` with.
    fn field(keys: &mut PathKeys, src: IsdAsn, bytes: &[u8], hop: usize) -> [u8; 4] {
        let path = StandardPathView::new_checked(bytes).expect("a valid path");
        keys.resolve(src, &path).expect("keys").iter().nth(hop).expect("resolved").hvf(&[1, 2, 3, 4])
    }

    /// A chain 0 → 1 → 2 over interface 1, one down segment.
    fn chain() -> (PathKeys, Vec<u8>) {
        let mut keys = PathKeys::new();
        for i in 0..4 {
            keys.set_key(ia(i), &level1(i as u8));
        }
        keys.add_link(ia(0), 1, ia(1));
        keys.add_link(ia(1), 1, ia(2));
        (keys, path_bytes(&[(true, vec![(0, 1), (2, 1), (2, 0)])]))
    }

    #[test]
    fn a_key_that_changes_is_used_for_a_remembered_path() {
        let (mut keys, path) = chain();
        let old = field(&mut keys, ia(0), &path, 2);
        assert_eq!(old, GatewayKey::new(&level1(2)).hvf(&[1, 2, 3, 4]));
        keys.set_key(ia(2), &level1(99));
        assert_eq!(field(&mut keys, ia(0), &path, 2), GatewayKey::new(&level1(99)).hvf(&[1, 2, 3, 4]));
        keys.clear_keys();
        assert_eq!(resolved(&mut keys, ia(0), &path), Err(PathKeyError::NoKey(ia(0))));
    }

    #[test]
    fn a_link_that_changes_is_followed_for_a_remembered_path() {
        let (mut keys, path) = chain();
        assert_eq!(field(&mut keys, ia(0), &path, 2), GatewayKey::new(&level1(2)).hvf(&[1, 2, 3, 4]));
        keys.add_link(ia(1), 1, ia(3));
        assert_eq!(field(&mut keys, ia(0), &path, 2), GatewayKey::new(&level1(3)).hvf(&[1, 2, 3, 4]));
        assert_eq!(resolved(&mut keys, ia(0), &path), walked(&keys, ia(0), &path));
    }

    fn segment() -> impl Strategy<Value = (bool, Vec<(u16, u16)>)> {
        (any::<bool>(), prop::collection::vec((0u16..4, 0u16..4), 1..9))
    }

    proptest! {
        /// Remembered and fresh walks agree on every path, in any order, with colliding and
        /// overlong paths, unknown links and ASes without keys.
        #[test]
        fn remembered_walks_are_the_walks(
            links in prop::collection::vec((0u64..6, 1u16..4, 0u64..6), 0..24),
            unkeyed in 0u64..8,
            paths in prop::collection::vec((0u64..6, prop::collection::vec(segment(), 1..4)), 1..40),
            order in prop::collection::vec(any::<prop::sample::Index>(), 1..80),
        ) {
            let mut keys = PathKeys::new();
            for i in (0..6).filter(|i| *i != unkeyed) {
                keys.set_key(ia(i), &level1(i as u8));
            }
            for (from, egress, to) in links {
                keys.add_link(ia(from), egress, ia(to));
            }
            let paths: Vec<(IsdAsn, Vec<u8>)> = paths.iter().map(|(src, segs)| (ia(*src), path_bytes(segs))).collect();
            for (src, p) in paths.iter().chain(order.iter().map(|i| &paths[i.index(paths.len())])) {
                prop_assert_eq!(resolved(&mut keys, *src, p), walked(&keys, *src, p));
            }
        }
    }
}
