//! A line of ASes running discovery in memory: the source, on-path ASes 1 … ℓ−1, their
//! matrices, secrets and DRKey keys, and the loop that carries the message between them.

use std::collections::BTreeMap;

use aviary_glwp::discovery::rate::RateLimit;
use aviary_glwp::discovery::wire::{message_len, MAX_ASES};
use aviary_glwp::discovery::{
    AsConfig, DiscoveryDrop, DiscoveryParams, DrkeyKeys, OnPathAs, Outcome, Source, SourceError,
};
use aviary_glwp::{AidMonitor, AllocationMatrix, Freshness, HopValues, MatrixEntry, Router, SourceAllocation};
use aviary_qos::{DuplicateFilter, DuplicateFilterConfig};
use aviary_scion::drkey::Epoch;
use aviary_scion::IsdAsn;

pub const S: u64 = 1_000_000_000;
pub const NOW: u64 = 1_700_000_000 * S;
pub const FRESH: Freshness = Freshness { lifetime_ns: S / 2, skew_ns: S };
/// Interface of a transit AS's link to an AS off the path, for the entries that make its
/// divergents and convergents exceed the path's entries.
const OFF_PATH: u16 = 99;

/// What AS k announces for the chain: its entry and how much its divergent and convergent
/// exceed it (through other interface pairs).
#[derive(Clone, Copy, Debug)]
pub struct HopSpec {
    pub m_bps: u64,
    pub extra_div_bps: u64,
    pub extra_con_bps: u64,
}

pub fn ia(k: usize) -> IsdAsn {
    IsdAsn::new(1, 0xff00_0000_0110 + k as u64)
}

/// AS k enters at 10 + k and leaves at 20 + k; the source enters and the destination leaves
/// at the local interface 0.
pub fn pair(k: usize, l: usize) -> (u16, u16) {
    let i = if k == 0 { 0 } else { 10 + k as u16 };
    let j = if k + 1 == l { 0 } else { 20 + k as u16 };
    (i, j)
}

pub fn matrix(spec: HopSpec, (i, j): (u16, u16)) -> AllocationMatrix {
    let e = |ingress, egress, bps| MatrixEntry { ingress, egress, bps };
    AllocationMatrix::new([e(i, j, spec.m_bps), e(i, OFF_PATH, spec.extra_div_bps), e(OFF_PATH, j, spec.extra_con_bps)])
        .unwrap()
}

pub fn secret(k: usize) -> [u8; 16] {
    [0x10 + k as u8; 16]
}

pub fn params(min_guarantee_bps: u64) -> DiscoveryParams {
    DiscoveryParams { freshness: FRESH, validity_s: 86_400, min_guarantee_bps }
}

pub const RATE: RateLimit = RateLimit { share_ppm: 1_000, burst_bytes: message_len(MAX_ASES) as u16 };

/// Where a discovery ended without an allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    Dropped { position: usize, drop: DiscoveryDrop },
    Source(SourceError),
}

pub struct Chain {
    pub specs: Vec<HopSpec>,
    pub source: Source<DrkeyKeys>,
    /// On-path AS k at index k − 1.
    pub on_path: Vec<OnPathAs<DrkeyKeys>>,
}

impl Chain {
    pub fn new(specs: &[HopSpec], min_guarantee_bps: u64) -> Self {
        let l = specs.len();
        let epoch = Epoch::new(1_600_000_000, 1_800_000_000).unwrap();
        let issued: Vec<DrkeyKeys> =
            (0..l).map(|k| DrkeyKeys::new(format!("master {k}").as_bytes(), epoch).unwrap()).collect();
        let configs = (0..l).map(|k| {
            let (i, j) = pair(k, l);
            let mut neighbours = BTreeMap::new();
            if k > 0 {
                neighbours.insert(i, ia(k - 1));
            }
            if k + 1 < l {
                neighbours.insert(j, ia(k + 1));
            }
            let mut keys = issued[k].clone();
            for (m, other) in issued.iter().enumerate().filter(|&(m, _)| m != k) {
                keys.insert_fetched(ia(m), other.issue(ia(k)));
            }
            let config = AsConfig {
                ia: ia(k),
                secret: secret(k),
                matrix: matrix(specs[k], (i, j)),
                neighbours,
                params: params(min_guarantee_bps),
                remembered_pairs: 64,
            };
            (config, keys)
        });
        let mut source = None;
        let mut on_path = Vec::new();
        for (k, (config, keys)) in configs.enumerate() {
            if k == 0 {
                source = Some(Source::new(config, keys).unwrap());
            } else {
                on_path.push(OnPathAs::new(config, RATE, keys).unwrap());
            }
        }
        Chain { specs: specs.to_vec(), source: source.unwrap(), on_path }
    }

    pub fn ases(&self) -> Vec<IsdAsn> {
        (0..self.specs.len()).map(ia).collect()
    }

    pub fn path(&self) -> Vec<(u16, u16)> {
        (0..self.specs.len()).map(|k| pair(k, self.specs.len())).collect()
    }

    pub fn hop_values(&self) -> Vec<HopValues> {
        let l = self.specs.len();
        (0..l)
            .map(|k| {
                let p = pair(k, l);
                matrix(self.specs[k], p).hop_values(p.0, p.1)
            })
            .collect()
    }

    pub fn request(&self, now: u64) -> Vec<u8> {
        self.source.request(&self.ases(), &self.path(), now).unwrap()
    }

    /// Carries `msg` (a request from the source) along the chain until the source has the
    /// response or someone drops it. Before each delivery, `tamper(step, msg)` may change it.
    pub fn carry(
        &mut self,
        mut msg: Vec<u8>,
        now: u64,
        tamper: &mut dyn FnMut(usize, &mut Vec<u8>),
    ) -> Result<SourceAllocation, Failure> {
        let (mut position, mut from, mut forward) = (1, ia(0), true);
        for step in 0.. {
            tamper(step, &mut msg);
            let at = &mut self.on_path[position - 1];
            let outcome = if forward { at.forward(&mut msg, from, now) } else { at.backward(&mut msg, from, now) };
            let outcome = outcome.map_err(|drop| Failure::Dropped { position, drop })?;
            match outcome {
                Outcome::Forward { to, .. } => {
                    assert_eq!(to, ia(position + 1));
                    (from, position) = (ia(position), position + 1);
                }
                Outcome::Respond { to, .. } if position == 1 => {
                    assert_eq!(to, ia(0));
                    tamper(step + 1, &mut msg);
                    return self.source.finish(&msg, now).map_err(Failure::Source);
                }
                Outcome::Respond { to, .. } => {
                    assert_eq!(to, ia(position - 1));
                    (from, position, forward) = (ia(position), position - 1, false);
                }
                Outcome::Refuse { to } => {
                    assert_eq!(to, ia(0));
                    tamper(step + 1, &mut msg);
                    return self.source.finish(&msg, now).map_err(Failure::Source);
                }
            }
        }
        unreachable!()
    }

    pub fn discover(&mut self, now: u64) -> Result<SourceAllocation, Failure> {
        let msg = self.request(now);
        self.carry(msg, now, &mut |_, _| {})
    }
}

/// The border router of on-path AS k.
pub fn router(k: usize) -> Router {
    let dups = DuplicateFilter::new(
        DuplicateFilterConfig {
            window_ns: FRESH.lifetime_ns + 2 * FRESH.skew_ns,
            expected_per_window: 10_000,
            false_positive_rate: 1e-9,
        },
        [9; 16],
    )
    .unwrap();
    Router::new(&secret(k), FRESH, AidMonitor::new(64, 9000, 0x1234_5678_9abc_def1), dups)
}
