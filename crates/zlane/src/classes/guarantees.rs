//! The per-AS and per-ISD rate limits of one router (the Z-Lane paper, §4.5): for every egress
//! link, one 8-byte token bucket per origin with a guarantee, in a [`TokenBucketBank`].
//!
//! The guarantees are rates at an egress interface (the paper's `r_O^(R,Y)`), so every link has
//! its own bank; an origin has the same slot in all of them. A rate relative to μ_G follows the
//! link: when a link's capacity changes, its bank's rates are resolved again before the next
//! packet is charged.

use std::collections::HashMap;

use aviary_qos::{Rate, RateBound, TokenBucketBank};
use aviary_scion::IsdAsn;

use super::config::{GuaranteePlan, GuaranteedRate, Origin};

/// The guarantees of one router.
#[derive(Clone, Debug)]
pub struct Guarantees {
    own_isd: u16,
    burst_bytes: u16,
    slot: HashMap<Origin, usize>,
    /// The configured rate of each slot.
    rates: Vec<(Origin, GuaranteedRate)>,
    links: Vec<LinkBuckets>,
}

#[derive(Clone, Debug)]
struct LinkBuckets {
    id: u16,
    /// The guaranteed class's bound on this link.
    mu_g: RateBound,
    /// The link capacity the bank's rates were resolved for (`None`: not yet).
    resolved_for_bps: Option<u64>,
    bank: TokenBucketBank,
}

impl LinkBuckets {
    fn new(id: u16, mu_g: RateBound, burst: u16, n: usize) -> Self {
        let mut bank = TokenBucketBank::with_capacity(burst, n);
        for _ in 0..n {
            bank.push(Rate::ZERO);
        }
        Self { id, mu_g, resolved_for_bps: None, bank }
    }

    fn resolve(&mut self, rates: &[(Origin, GuaranteedRate)], capacity_bps: u64, now_ns: u64) {
        if self.resolved_for_bps == Some(capacity_bps) {
            return;
        }
        let mu_g = self.mu_g.resolve(capacity_bps);
        for (i, (_, r)) in rates.iter().enumerate() {
            self.bank.set_rate(i, r.resolve(mu_g), now_ns);
        }
        self.resolved_for_bps = Some(capacity_bps);
    }
}

impl Guarantees {
    /// The guarantees of `plan` on the router's egress links, each given as its id and the
    /// bound of its guaranteed class (μ_G).
    pub fn new(plan: &GuaranteePlan, links: impl IntoIterator<Item = (u16, RateBound)>) -> Self {
        let n = plan.origins.len();
        Self {
            own_isd: plan.own_isd,
            burst_bytes: plan.burst_bytes,
            slot: plan.origins.iter().enumerate().map(|(i, (o, _))| (*o, i)).collect(),
            rates: plan.origins.clone(),
            links: links.into_iter().map(|(id, mu_g)| LinkBuckets::new(id, mu_g, plan.burst_bytes, n)).collect(),
        }
    }

    /// Whether a gateway-authorized packet of `len` bytes from `src`, leaving on `egress` (whose
    /// capacity is `capacity_bps` now), is within its origin's guarantee; charges it if so.
    /// An origin without a guarantee, or an unknown link, is never within it.
    #[inline]
    pub fn admit(&mut self, src: IsdAsn, egress: u16, capacity_bps: u64, len: usize, now_ns: u64) -> bool {
        let Some(&slot) = self.slot.get(&Origin::of(src, self.own_isd)) else { return false };
        let Some(link) = self.links.iter_mut().find(|l| l.id == egress) else { return false };
        link.resolve(&self.rates, capacity_bps, now_ns);
        link.bank.admit(slot, u32::try_from(len).unwrap_or(u32::MAX), now_ns)
    }

    /// Replaces the guarantees by `plan` at `now_ns`. An origin that keeps a guarantee keeps
    /// its bucket's tokens (a change of rate counts from now); a new origin starts full. The
    /// router applies this between batches, so no packet is dropped or misclassified by it.
    pub fn replace(&mut self, plan: &GuaranteePlan, now_ns: u64) {
        let mut next = Self::new(plan, self.links.iter().map(|l| (l.id, l.mu_g)));
        if plan.burst_bytes == self.burst_bytes {
            for (old, new) in self.links.iter_mut().zip(&mut next.links) {
                for (o, old_slot) in &self.slot {
                    if let Some(&new_slot) = next.slot.get(o) {
                        if let Some(tokens) = old.bank.tokens(*old_slot, now_ns) {
                            new.bank.set_tokens(new_slot, tokens, now_ns);
                        }
                    }
                }
            }
        }
        *self = next;
    }

    /// The configured guarantees, by origin, in the plan's order.
    pub fn rates(&self) -> &[(Origin, GuaranteedRate)] {
        &self.rates
    }

    pub fn burst_bytes(&self) -> u16 {
        self.burst_bytes
    }

    /// Memory of the buckets of every link (8 bytes per origin and link, plus constants).
    pub fn bucket_memory_bytes(&self) -> usize {
        self.links.iter().map(|l| l.bank.memory_bytes()).sum()
    }
}

#[cfg(test)]
mod tests;
