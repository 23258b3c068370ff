//! A line of ASes running discovery in memory, for tests, benchmarks and fuzzing: the source
//! and on-path ASes 1 … ℓ−1 with their matrices, secrets and DRKey keys (every AS has fetched
//! every other's Level-1 key), and the loop that carries a message between them as the
//! network would.

use std::collections::BTreeMap;

use aviary_scion::drkey::Epoch;
use aviary_scion::IsdAsn;

use crate::discovery::rate::RateLimit;
use crate::discovery::wire::{message_len, MAX_ASES};
use crate::discovery::{
    AnnouncementLimit, AsConfig, DiscoveryDrop, DiscoveryParams, DrkeyKeys, Neighbourhood, OnPathAs, Outcome, Source,
    SourceError,
};
use crate::matrix::{AllocationMatrix, InterfaceId, MatrixEntry, MatrixError};
use crate::packet::SourceAllocation;
use crate::router::Freshness;
use crate::HopValues;

const S: u64 = 1_000_000_000;
/// The freshness window of every AS: L = 0.5 s, ε = 1 s.
pub const FRESHNESS: Freshness = Freshness { lifetime_ns: S / 2, skew_ns: S };
/// ΔT of every AS: a day, as the paper proposes.
pub const VALIDITY_S: u32 = 86_400;
/// Each neighbour may send requests at 0.1 % of its interface's divergent, with a burst of
/// one request of the longest path.
pub const RATE: RateLimit = RateLimit { share_ppm: 1_000, burst_bytes: message_len(MAX_ASES) as u16 };
/// Each neighbour may announce 4 times at once, then once a second.
pub const ANNOUNCEMENTS: AnnouncementLimit = AnnouncementLimit { burst: 4, refill_ns: S };
/// When the chain's ASes join and announce their matrices to each other.
pub const JOINED_NS: u64 = 1_700_000_000 * S;
/// Interface of a transit AS's link off the path, for the entries that make its divergents
/// and convergents exceed the path's entries.
const OFF_PATH: InterfaceId = 99;

/// What AS k announces for the chain: its entry and how much its divergent and convergent
/// exceed it (through other interface pairs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HopSpec {
    pub m_bps: u64,
    pub extra_div_bps: u64,
    pub extra_con_bps: u64,
}

/// AS k of the chain.
pub fn ia(k: usize) -> IsdAsn {
    IsdAsn::new(1, 0xff00_0000_0110 + k as u64)
}

/// AS k enters at 10 + k and leaves at 20 + k; the source enters and the destination leaves
/// at the local interface 0.
pub fn pair(k: usize, l: usize) -> (InterfaceId, InterfaceId) {
    let i = if k == 0 { 0 } else { 10 + k as InterfaceId };
    let j = if k + 1 == l { 0 } else { 20 + k as InterfaceId };
    (i, j)
}

/// AS k's secret `K_k`.
pub fn secret(k: usize) -> [u8; 16] {
    [0x10 + k as u8; 16]
}

/// The matrix of an AS with `spec` on a path through `(i, j)`.
pub fn matrix(spec: HopSpec, (i, j): (InterfaceId, InterfaceId)) -> Result<AllocationMatrix, MatrixError> {
    let e = |ingress, egress, bps| MatrixEntry { ingress, egress, bps };
    AllocationMatrix::new([e(i, j, spec.m_bps), e(i, OFF_PATH, spec.extra_div_bps), e(OFF_PATH, j, spec.extra_con_bps)])
}

/// The DRKey keys of AS k in a chain of `l` ASes: its own, and every other AS's Level-1 key to
/// it, as if fetched.
pub fn keys(k: usize, l: usize) -> DrkeyKeys {
    let epoch = Epoch::new(1_600_000_000, 1_900_000_000).unwrap_or_else(|_| unreachable!("begin < end"));
    let issuer = |m: usize| {
        DrkeyKeys::new(format!("master {m}").as_bytes(), epoch)
            .unwrap_or_else(|_| unreachable!("the master secret is not empty"))
    };
    let mut keys = issuer(k);
    for m in (0..l).filter(|&m| m != k) {
        keys.insert_fetched(ia(m), issuer(m).issue(ia(k)));
    }
    keys
}

/// Where a discovery ended without an allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// On-path AS `position` dropped the message.
    Dropped { position: usize, drop: DiscoveryDrop },
    /// An AS sent the message to an AS that is not on the chain.
    Misrouted { to: IsdAsn },
    /// The source refused the response, or got a refusal.
    Source(SourceError),
}

/// The ASes of a chain and their GLWP services.
pub struct Chain {
    pub specs: Vec<HopSpec>,
    pub source: Source<DrkeyKeys>,
    /// The source AS's schedule and announcements (an on-path AS's are in its `OnPathAs`).
    pub source_neighbourhood: Neighbourhood,
    /// On-path AS k at index k − 1.
    pub on_path: Vec<OnPathAs<DrkeyKeys>>,
}

impl Chain {
    /// A chain of `specs.len()` ASes (2 to [`MAX_ASES`]) whose threshold is τ =
    /// `min_guarantee_bps`, which have announced their matrices to each other at
    /// [`JOINED_NS`].
    pub fn new(specs: &[HopSpec], min_guarantee_bps: u64) -> Result<Self, MatrixError> {
        let l = specs.len();
        let mut source = None;
        let mut source_neighbourhood = None;
        let mut on_path = Vec::with_capacity(l.saturating_sub(1));
        for (k, &spec) in specs.iter().enumerate() {
            let (i, j) = pair(k, l);
            let mut neighbours = BTreeMap::new();
            if k > 0 {
                neighbours.insert(i, ia(k - 1));
            }
            if k + 1 < l {
                neighbours.insert(j, ia(k + 1));
            }
            let keys = keys(k, l);
            let config = AsConfig {
                ia: ia(k),
                secret: secret(k),
                matrix: matrix(spec, (i, j))?,
                neighbours,
                params: DiscoveryParams { freshness: FRESHNESS, validity_s: VALIDITY_S, min_guarantee_bps },
                announcement_limit: ANNOUNCEMENTS,
            };
            // No neighbour at interface 0 and a burst of the longest message: both configs run.
            if k == 0 {
                source_neighbourhood = Some(config.neighbourhood());
                source = Some(Source::new(config, keys).unwrap_or_else(|_| unreachable!("a valid configuration")));
            } else {
                on_path
                    .push(OnPathAs::new(config, RATE, keys).unwrap_or_else(|_| unreachable!("a valid configuration")));
            }
        }
        let source = source.unwrap_or_else(|| unreachable!("a chain has a source"));
        let source_neighbourhood = source_neighbourhood.unwrap_or_else(|| unreachable!("a chain has a source"));
        let mut chain = Chain { specs: specs.to_vec(), source, source_neighbourhood, on_path };
        chain.announce(JOINED_NS);
        Ok(chain)
    }

    /// AS k's schedule and record of its neighbours.
    pub fn neighbourhood(&mut self, k: usize) -> &mut Neighbourhood {
        match k {
            0 => &mut self.source_neighbourhood,
            _ => &mut self.on_path[k - 1].neighbourhood,
        }
    }

    /// Every AS announces its schedule to its neighbours at `now`; the results of the
    /// neighbours' checks, per (sender, receiver).
    pub fn announce(&mut self, now: u64) -> Vec<(usize, usize, Result<(), DiscoveryDrop>)> {
        let l = self.specs.len();
        let mut results = Vec::new();
        for k in 0..l {
            let sent = self.neighbourhood(k).announcements(&keys(k, l), now);
            for (to, _, bytes) in sent {
                let Some(r) = (0..l).find(|&r| ia(r) == to) else { continue };
                results.push((k, r, self.neighbourhood(r).receive(&bytes, ia(k), &keys(r, l), now)));
            }
        }
        results
    }

    pub fn ases(&self) -> Vec<IsdAsn> {
        (0..self.specs.len()).map(ia).collect()
    }

    pub fn path(&self) -> Vec<(InterfaceId, InterfaceId)> {
        (0..self.specs.len()).map(|k| pair(k, self.specs.len())).collect()
    }

    /// What the ASes announce.
    pub fn hop_values(&self) -> Vec<HopValues> {
        let l = self.specs.len();
        (0..l)
            .map(|k| {
                let p = pair(k, l);
                let m = matrix(self.specs[k], p).unwrap_or_else(|_| unreachable!("checked by `new`"));
                m.hop_values(p.0, p.1)
            })
            .collect()
    }

    /// The source's request at `now`.
    pub fn request(&self, now: u64) -> Vec<u8> {
        self.source
            .request(&self.source_neighbourhood, &self.ases(), &self.path(), now)
            .unwrap_or_else(|_| unreachable!("the chain is a path"))
    }

    /// Carries the request `msg` through the on-path ASes at `now` and returns the message
    /// that reaches the source (response or refusal). Before each delivery, `tamper(step, msg)`
    /// may change it.
    pub fn through_on_path(
        &mut self,
        mut msg: Vec<u8>,
        now: u64,
        tamper: &mut dyn FnMut(usize, &mut Vec<u8>),
    ) -> Result<Vec<u8>, Failure> {
        let (mut position, mut from, mut forward) = (1, ia(0), true);
        let mut step = 0;
        loop {
            tamper(step, &mut msg);
            step += 1;
            let at = &mut self.on_path[position - 1];
            let outcome = if forward { at.forward(&mut msg, from, now) } else { at.backward(&mut msg, from, now) };
            let to = match outcome.map_err(|drop| Failure::Dropped { position, drop })? {
                Outcome::Refuse { .. } => break,
                Outcome::Forward { to, .. } => to,
                Outcome::Respond { to, .. } => {
                    forward = false;
                    to
                }
            };
            let next = (0..self.specs.len()).find(|&k| ia(k) == to).ok_or(Failure::Misrouted { to })?;
            if next == 0 {
                break;
            }
            (from, position) = (ia(position), next);
        }
        tamper(step, &mut msg);
        Ok(msg)
    }

    /// [`Self::through_on_path`], then the source's check.
    pub fn carry(
        &mut self,
        msg: Vec<u8>,
        now: u64,
        tamper: &mut dyn FnMut(usize, &mut Vec<u8>),
    ) -> Result<SourceAllocation, Failure> {
        let back = self.through_on_path(msg, now, tamper)?;
        self.source.finish(&mut self.source_neighbourhood, &back, now).map_err(Failure::Source)
    }

    /// A whole discovery at `now`, untampered.
    pub fn discover(&mut self, now: u64) -> Result<SourceAllocation, Failure> {
        let msg = self.request(now);
        self.carry(msg, now, &mut |_, _| {})
    }
}
