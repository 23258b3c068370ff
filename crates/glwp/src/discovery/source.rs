//! The GLWP service of the source AS (Alg. 1 lines 1-7 and 41-47): it builds the request and
//! checks the response, keeping nothing in between; every value it needs comes back in the
//! authenticated response.

use aviary_scion::IsdAsn;
use thiserror::Error;

use crate::allocation::{guarantee, prefix_guarantees};
use crate::discovery::crypto::{aid, hop_values_mac, open, xor_into};
use crate::discovery::keys::DiscoveryKeys;
use crate::discovery::ledger::Neighbourhood;
use crate::discovery::verify::{
    auth_eq, check_aid, check_neighbours, checked_hop_values, expected_aggregate, seal_context,
};
use crate::discovery::wire::{Announced, Kind, Message, MessageRepr, MAX_ASES};
use crate::discovery::{beta_kbps, AsConfig, ConfigError, DiscoveryDrop, DiscoveryStats};
use crate::matrix::InterfaceId;
use crate::packet::SourceAllocation;

/// Why the source cannot ask for a path.
#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum RequestError {
    #[error("{ases} ASes and {pairs} interface pairs: a path has 2 to {MAX_ASES} ASes, one pair each")]
    Shape { ases: usize, pairs: usize },
    #[error("the path starts at {0}, not at this AS")]
    NotSource(IsdAsn),
    #[error("the path does not leave this AS towards its next AS, or does not start and end at local interfaces")]
    BadPath,
    #[error("the first hop {0} is held down for repeated blame")]
    HeldDown(IsdAsn),
}

/// Why a response gives the source no allocation.
#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum SourceError {
    #[error("dropped: {}", .0.label())]
    Drop(DiscoveryDrop),
    #[error("{ia} (position {position}) refused: the preliminary guarantee is {preliminary_bps} bit/s")]
    Refused { position: usize, ia: IsdAsn, preliminary_bps: u64 },
}

impl From<DiscoveryDrop> for SourceError {
    fn from(d: DiscoveryDrop) -> Self {
        SourceError::Drop(d)
    }
}

/// The discovery part of a source AS's GLWP service.
#[derive(Debug)]
pub struct Source<K> {
    config: AsConfig,
    keys: K,
    pub stats: DiscoveryStats,
}

impl<K: DiscoveryKeys> Source<K> {
    pub fn new(config: AsConfig, keys: K) -> Result<Self, ConfigError> {
        config.check()?;
        Ok(Self { config, keys, stats: DiscoveryStats::default() })
    }

    /// Lines 2-7: the request for the path through `ases` (this AS first) with interface pairs
    /// `path`, at `now_ns`, with this AS's values from `nb`'s schedule; to be sent to `ases[1]`.
    pub fn request(
        &self,
        nb: &Neighbourhood,
        ases: &[IsdAsn],
        path: &[(InterfaceId, InterfaceId)],
        now_ns: u64,
    ) -> Result<Vec<u8>, RequestError> {
        let l = ases.len();
        if !(2..=MAX_ASES).contains(&l) || path.len() != l {
            return Err(RequestError::Shape { ases: l, pairs: path.len() });
        }
        if ases[0] != self.config.ia {
            return Err(RequestError::NotSource(ases[0]));
        }
        self.config.check_neighbours(0, l, path[0], None, Some(ases[1])).map_err(|_| RequestError::BadPath)?;
        if path[l - 1].1 != 0 || path[1..].iter().any(|&(i, _)| i == 0) {
            return Err(RequestError::BadPath);
        }
        if nb.held_down(ases[1], now_ns) {
            return Err(RequestError::HeldDown(ases[1]));
        }
        let aid = aid(ases, path);
        let own = Announced::from(nb.schedule().hop_values(path[0].0, path[0].1, now_ns));
        let auths = (0..l)
            .map(|m| match m {
                0 => [0; 16],
                _ => hop_values_mac(&self.keys.key_to(ases[m]), ases[0], now_ns, aid, own),
            })
            .collect();
        let mut hop_values = vec![Announced::default(); l];
        hop_values[0] = own;
        let repr = MessageRepr {
            kind: Kind::Request,
            hop_pointer: 1,
            ts_pkt: now_ns,
            aid,
            ases: ases.to_vec(),
            path: path.to_vec(),
            auths,
            hop_values,
            sealed: vec![[0; 16]; l - 1],
        };
        // The shape is checked above.
        repr.to_bytes().map_err(|_| RequestError::Shape { ases: l, pairs: path.len() })
    }

    /// Lines 42-47: the response (or refusal) `msg` at `now_ns`, checked (AS 1's values
    /// against its announcement in `nb`); the allocation with the opened hop keys.
    pub fn finish(&mut self, nb: &mut Neighbourhood, msg: &[u8], now_ns: u64) -> Result<SourceAllocation, SourceError> {
        let out = self.finish_unc(nb, msg, now_ns);
        match &out {
            Ok(_) => self.stats.finished += 1,
            Err(SourceError::Drop(d)) => self.stats.count(*d),
            Err(SourceError::Refused { .. }) => self.stats.refused += 1,
        }
        out
    }

    fn finish_unc(&mut self, nb: &mut Neighbourhood, msg: &[u8], now_ns: u64) -> Result<SourceAllocation, SourceError> {
        let m = Message::new_checked(msg).map_err(DiscoveryDrop::from)?;
        let (l, k) = (usize::from(m.ases()), m.hop_pointer());
        if m.src() != self.config.ia {
            return Err(DiscoveryDrop::NotOnPath.into());
        }
        match (m.kind(), k) {
            (Kind::Response, 0) | (Kind::Refusal, 1..) => {}
            (Kind::Response, _) => return Err(DiscoveryDrop::BadHopPointer.into()),
            _ => return Err(DiscoveryDrop::WrongKind.into()),
        }
        self.config.params.check_fresh(m.ts_pkt(), now_ns)?;
        check_aid(&m)?;
        let (i, j) = m.pair(0);
        if m.hop_values(0) != Announced::from(nb.schedule().hop_values(i, j, m.ts_pkt())) {
            return Err(DiscoveryDrop::OwnValuesChanged.into());
        }
        if m.kind() == Kind::Refusal {
            // Every AS up to the refusing one added its MAC to the source's slot.
            if !auth_eq(&expected_aggregate(&self.keys, &m, 1..=k)?, &m.auth(0)) {
                return Err(DiscoveryDrop::BadAuthenticator.into());
            }
            let hop_values = checked_hop_values(&m, k + 1)?;
            let preliminary_bps = prefix_guarantees(&hop_values).last().copied().unwrap_or(0);
            return Err(SourceError::Refused { position: k, ia: m.nid(k), preliminary_bps });
        }
        let hop_values = checked_hop_values(&m, l)?;
        let beta = beta_kbps(guarantee(&hop_values));
        let ts_exp = self.config.params.ts_exp(m.ts_pkt());
        // Lines 43-45: the aggregate holds every AS's MAC and the tag of its sealed hop key.
        let mut want = expected_aggregate(&self.keys, &m, 1..l)?;
        let mut hop_keys = Vec::with_capacity(l - 1);
        for a in 1..l {
            let key = self.keys.key_from(m.nid(a)).ok_or(DiscoveryDrop::NoKey)?;
            let (hk, tag) = open(&key, &seal_context(&m, a, beta, ts_exp), &m.sealed(a));
            xor_into(&mut want, &tag);
            hop_keys.push(hk);
        }
        if !auth_eq(&want, &m.auth(0)) {
            return Err(DiscoveryDrop::BadAuthenticator.into());
        }
        check_neighbours(nb, &m, 0, &hop_values, now_ns)?;
        Ok(SourceAllocation { path: m.path(), aid: m.aid(), beta, ts_exp, hop_keys })
    }
}
