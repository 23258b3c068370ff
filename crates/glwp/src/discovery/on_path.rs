//! The GLWP service of an on-path AS (Alg. 1 lines 8-40). It processes a message in place
//! and says where it goes next; it keeps no state per allocation, only its neighbours' token
//! buckets and announcements.

use aviary_scion::IsdAsn;

use crate::allocation::{guarantee, prefix_guarantees};
use crate::discovery::crypto::{hop_values_mac, seal, xor_into};
use crate::discovery::keys::DiscoveryKeys;
use crate::discovery::ledger::Neighbourhood;
use crate::discovery::rate::{NeighbourLimiter, RateLimit};
use crate::discovery::verify::{
    auth_eq, check_aid, check_neighbours, checked_hop_values, expected_aggregate, seal_context,
};
use crate::discovery::wire::{message_len, Announced, Kind, Message, MAX_ASES};
use crate::discovery::{beta_kbps, AsConfig, ConfigError, DiscoveryDrop, DiscoveryStats};
use crate::hop_key::{hop_key, HopKeyInput};
use crate::matrix::InterfaceId;

/// Where a processed message goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The request, on to the next on-path AS `to`, over the link at interface `via`.
    Forward { to: IsdAsn, via: InterfaceId },
    /// The response, back to `to` (the source when it is position 0) over `via`.
    Respond { to: IsdAsn, via: InterfaceId },
    /// The refusal, straight to the source: the preliminary guarantee fell below τ here.
    Refuse { to: IsdAsn },
}

/// The discovery part of an on-path AS's GLWP service.
#[derive(Debug)]
pub struct OnPathAs<K> {
    config: AsConfig,
    keys: K,
    limiter: NeighbourLimiter,
    /// The AS's matrix schedule and its neighbours' announcements; an AS's [`crate::discovery::Source`]
    /// uses the same one.
    pub neighbourhood: Neighbourhood,
    pub stats: DiscoveryStats,
}

impl<K: DiscoveryKeys> OnPathAs<K> {
    pub fn new(config: AsConfig, rate_limit: RateLimit, keys: K) -> Result<Self, ConfigError> {
        config.check()?;
        let needed = message_len(MAX_ASES);
        if usize::from(rate_limit.burst_bytes) < needed {
            return Err(ConfigError::BurstBelowMessage { burst: rate_limit.burst_bytes, needed });
        }
        // Its rates follow the schedule from the first request on.
        let limiter = NeighbourLimiter::new(rate_limit, &config.matrix, config.neighbours.keys().copied());
        let neighbourhood = config.neighbourhood();
        Ok(Self { config, keys, limiter, neighbourhood, stats: DiscoveryStats::default() })
    }

    /// A request that came from the GLWP service of `from` at `now_ns`: checked, this AS's hop
    /// values and authenticators added; at the destination turned into the response.
    pub fn forward(&mut self, msg: &mut [u8], from: IsdAsn, now_ns: u64) -> Result<Outcome, DiscoveryDrop> {
        let out = self.forward_unc(msg, from, now_ns);
        self.tally(out)
    }

    /// A response that came from the GLWP service of `from` at `now_ns`: checked, this AS's
    /// hop key sealed to the source.
    pub fn backward(&mut self, msg: &mut [u8], from: IsdAsn, now_ns: u64) -> Result<Outcome, DiscoveryDrop> {
        let out = self.backward_unc(msg, from, now_ns);
        self.tally(out)
    }

    fn tally(&mut self, out: Result<Outcome, DiscoveryDrop>) -> Result<Outcome, DiscoveryDrop> {
        match out {
            Ok(Outcome::Forward { .. }) => self.stats.forwarded += 1,
            Ok(Outcome::Respond { .. }) => self.stats.responded += 1,
            Ok(Outcome::Refuse { .. }) => self.stats.refused += 1,
            Err(d) => self.stats.count(d),
        }
        out
    }

    /// Lines 9-13 for a message of `kind` at this AS, which must be at its hop pointer k ≥ 1
    /// and have come from `from`, the neighbour on the side it travels from. Returns k.
    fn check_arrival(&self, m: &Message<&mut [u8]>, kind: Kind, from: IsdAsn) -> Result<usize, DiscoveryDrop> {
        if m.kind() != kind {
            return Err(DiscoveryDrop::WrongKind);
        }
        let (k, l) = (m.hop_pointer(), usize::from(m.ases()));
        if k == 0 || m.nid(k) != self.config.ia {
            return Err(DiscoveryDrop::NotOnPath);
        }
        let next = (k + 1 < l).then(|| m.nid(k + 1));
        let sender = if kind == Kind::Request { Some(m.nid(k - 1)) } else { next };
        if sender != Some(from) {
            return Err(DiscoveryDrop::WrongNeighbour);
        }
        self.config.check_neighbours(k, l, m.pair(k), Some(m.nid(k - 1)), next)?;
        Ok(k)
    }

    /// The blame policy refuses discoveries through a neighbour it holds down.
    fn check_not_held_down(&self, m: &Message<&mut [u8]>, k: usize, now_ns: u64) -> Result<(), DiscoveryDrop> {
        let next = (k + 1 < usize::from(m.ases())).then(|| m.nid(k + 1));
        let nb = &self.neighbourhood;
        if nb.held_down(m.nid(k - 1), now_ns) || next.is_some_and(|n| nb.held_down(n, now_ns)) {
            return Err(DiscoveryDrop::NeighbourHeldDown);
        }
        Ok(())
    }

    fn forward_unc(&mut self, msg: &mut [u8], from: IsdAsn, now_ns: u64) -> Result<Outcome, DiscoveryDrop> {
        let len = msg.len();
        let mut m = Message::new_checked(msg)?;
        let k = self.check_arrival(&m, Kind::Request, from)?;
        let (i, j) = m.pair(k);
        self.check_not_held_down(&m, k, now_ns)?;
        // Before any cryptography, so a flood costs little more than its bytes.
        self.limiter.follow(self.neighbourhood.schedule(), now_ns);
        if !self.limiter.admit(i, len, now_ns) {
            return Err(DiscoveryDrop::RateLimited);
        }
        self.config.params.check_fresh(m.ts_pkt(), now_ns)?;
        check_aid(&m)?;
        // Line 14: the ASes before this one have added their MACs to this AS's slot.
        if !auth_eq(&expected_aggregate(&self.keys, &m, 0..k)?, &m.auth(k)) {
            return Err(DiscoveryDrop::BadAuthenticator);
        }
        // Lines 16-18: this AS's values, authenticated to every other AS.
        let own = Announced::from(self.neighbourhood.schedule().hop_values(i, j, m.ts_pkt()));
        m.set_hop_values(k, own);
        let (src, ts_pkt, aid) = (m.src(), m.ts_pkt(), m.aid());
        for b in (0..usize::from(m.ases())).filter(|&b| b != k) {
            let mut auth = m.auth(b);
            xor_into(&mut auth, &hop_values_mac(&self.keys.key_to(m.nid(b)), src, ts_pkt, aid, own));
            m.set_auth(b, &auth);
        }
        // Lines 19-23.
        let hop_values = checked_hop_values(&m, k + 1)?;
        let prelim = prefix_guarantees(&hop_values).last().copied().unwrap_or(0);
        if prelim < self.config.params.min_guarantee_bps {
            m.set_kind(Kind::Refusal);
            return Ok(Outcome::Refuse { to: src });
        }
        if k + 1 < usize::from(m.ases()) {
            m.set_hop_pointer(k + 1);
            return Ok(Outcome::Forward { to: m.nid(k + 1), via: j });
        }
        // The destination turns the message around and is the first on the return path.
        m.set_kind(Kind::Response);
        self.issue_hop_key(&mut m, k, now_ns)
    }

    fn backward_unc(&mut self, msg: &mut [u8], from: IsdAsn, now_ns: u64) -> Result<Outcome, DiscoveryDrop> {
        let mut m = Message::new_checked(msg)?;
        let k = self.check_arrival(&m, Kind::Response, from)?;
        self.check_not_held_down(&m, k, now_ns)?;
        self.config.params.check_fresh(m.ts_pkt(), now_ns)?;
        check_aid(&m)?;
        self.issue_hop_key(&mut m, k, now_ns)
    }

    /// Lines 26-40 at position k of a checked response.
    fn issue_hop_key(&mut self, m: &mut Message<&mut [u8]>, k: usize, now_ns: u64) -> Result<Outcome, DiscoveryDrop> {
        let l = usize::from(m.ases());
        let (i, j) = m.pair(k);
        if m.hop_values(k) != Announced::from(self.neighbourhood.schedule().hop_values(i, j, m.ts_pkt())) {
            return Err(DiscoveryDrop::OwnValuesChanged);
        }
        let ts_exp = self.config.params.ts_exp(m.ts_pkt());
        if !auth_eq(&expected_aggregate(&self.keys, m, (0..l).filter(|&a| a != k))?, &m.auth(k)) {
            return Err(DiscoveryDrop::BadAuthenticator);
        }
        let hop_values = checked_hop_values(m, l)?;
        check_neighbours(&mut self.neighbourhood, m, k, &hop_values, now_ns)?;
        let beta = beta_kbps(guarantee(&hop_values));
        let src = m.src();
        let hk = hop_key(&self.config.secret, &HopKeyInput { src, aid: m.aid(), beta, ingress: i, egress: j, ts_exp });
        let (sealed, tag) = seal(&self.keys.key_to(src), &seal_context(m, k, beta, ts_exp), &hk);
        m.set_sealed(k, &sealed);
        let mut auth = m.auth(0);
        xor_into(&mut auth, &tag);
        m.set_auth(0, &auth);
        m.set_hop_pointer(k - 1);
        Ok(Outcome::Respond { to: m.nid(k - 1), via: i })
    }
}
