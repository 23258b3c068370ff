//! The AS reservation service's logic (the Hummingbird paper, §4.2, "Asset Redemption"), sans-IO: a redeem
//! request seen on the ledger goes in, the reservation sealed to the buyer comes out, ready
//! to be delivered on chain. The daemon around it (ledger access, issuing and listing
//! assets) lives in `aviary-node`.
//!
//! For each request the service checks the interval, assigns a ResID on the ingress
//! interface (First Fit, [`ResIdAllocator`]), encodes the bandwidth with the AS's codec
//! (rounded up: the buyer gets at least what it paid for), derives A_K from the AS's secret
//! value and seals `(ResInfo, A_K)` to the buyer's ephemeral key, bound to the chain, the
//! AS and the request. Its state (requests delivered) is serialisable so that it survives a
//! restart: a delivered request is never answered again. A request sealed but not yet known to
//! be delivered may be sealed again (the caller lost the first blob in a crash): it gets the
//! ResID it was assigned the first time, so a ResID is never handed out twice for overlapping
//! intervals, nor twice for one request.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::bw::BwCodec;
use crate::crypto::{ResInfo, SecretValue};
use crate::reservation::Reservation;
use crate::resid::{ResIdAllocator, ResIdError};
use crate::seal::{self, SealContext, SealError};

/// A redeem request addressed to this AS, as the ledger records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedeemRequest {
    /// The request id on chain (u256, big-endian).
    pub request_id: [u8; 32],
    /// Interfaces of the redeemed ingress and egress assets.
    pub ingress: u16,
    pub egress: u16,
    pub bandwidth_kbps: u64,
    /// Unix seconds, `[start, expiry)`.
    pub start: u64,
    pub expiry: u64,
    /// The buyer's ephemeral X25519 public key.
    pub buyer_key: [u8; 32],
}

#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum ServiceError {
    #[error("request already answered")]
    AlreadyDelivered,
    #[error("the interval [{start}, {expiry}) is empty or over")]
    IntervalOver { start: u64, expiry: u64 },
    #[error("the interval is longer than a reservation can be (65535 s)")]
    TooLong,
    #[error("start {0} does not fit a 32-bit timestamp")]
    StartOutOfRange(u64),
    #[error("{0} kbit/s is more than the bandwidth codec expresses")]
    Bandwidth(u64),
    #[error(transparent)]
    ResId(#[from] ResIdError),
    #[error(transparent)]
    Seal(#[from] SealError),
}

impl ServiceError {
    /// A short name for counters and logs.
    pub fn label(&self) -> &'static str {
        match self {
            ServiceError::AlreadyDelivered => "already_delivered",
            ServiceError::IntervalOver { .. } => "interval_over",
            ServiceError::TooLong => "too_long",
            ServiceError::StartOutOfRange(_) => "start_out_of_range",
            ServiceError::Bandwidth(_) => "bandwidth",
            ServiceError::ResId(ResIdError::Exhausted(_)) => "no_resid",
            ServiceError::ResId(ResIdError::EmptyInterval) => "interval_over",
            ServiceError::Seal(_) => "bad_buyer_key",
        }
    }

    /// Whether asking again later may succeed: every ResID is taken now, but reservations end
    /// and free theirs. Everything else is a property of the request itself.
    pub fn is_transient(&self) -> bool {
        matches!(self, ServiceError::ResId(ResIdError::Exhausted(_)))
    }
}

/// What the service remembers across restarts. The ResIDs are not in it: an AS has one
/// allocator, shared with its operator's grants, which the caller owns and passes to
/// [`ReservationService::fulfil`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceState {
    /// The largest ResID this service hands out (its share of the routers' policing array).
    #[serde(default = "no_cap")]
    pub res_id_cap: u32,
    /// Request ids whose reservation is on chain (hex).
    pub delivered: BTreeSet<String>,
    /// ResIDs a state written before the shared allocator held; the caller moves them into the
    /// shared allocator once.
    #[serde(default, rename = "resids", skip_serializing_if = "Option::is_none")]
    pub legacy_resids: Option<ResIdAllocator>,
}

fn no_cap() -> u32 {
    u32::MAX
}

impl ServiceState {
    /// A fresh state; ResIDs up to `res_id_cap`.
    pub fn new(res_id_cap: u32) -> Self {
        Self { res_id_cap, delivered: BTreeSet::new(), legacy_resids: None }
    }
}

/// A reservation ready for delivery: the sealed blob, and what it contains (for logs and
/// the operator, never published).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fulfilment {
    pub sealed: Vec<u8>,
    pub reservation: Reservation,
}

pub struct ReservationService {
    isd_as: u64,
    chain_id: u64,
    sv: SecretValue,
    codec: BwCodec,
    state: ServiceState,
}

impl ReservationService {
    pub fn new(isd_as: u64, chain_id: u64, master_secret: &[u8], codec: BwCodec, state: ServiceState) -> Self {
        Self { isd_as, chain_id, sv: SecretValue::from_master_secret(master_secret), codec, state }
    }

    pub fn state(&self) -> &ServiceState {
        &self.state
    }

    pub fn is_delivered(&self, request_id: &[u8; 32]) -> bool {
        self.state.delivered.contains(&hex::encode(request_id))
    }

    /// Records that the reservation of `request_id` is on chain: it is never answered again.
    pub fn mark_delivered(&mut self, request_id: &[u8; 32]) {
        self.state.delivered.insert(hex::encode(request_id));
    }

    /// Answers a request at `now` (Unix s) with a ResID from the AS's allocator `resids`; `ikm` is
    /// 32 bytes of fresh randomness for the HPKE ephemeral key. On error nothing changes. The
    /// request stays answerable until [`Self::mark_delivered`]; answering it again gives the
    /// same ResID (the allocator knows it by the request id), sealed afresh.
    pub fn fulfil(
        &mut self,
        req: &RedeemRequest,
        now: u64,
        ikm: &[u8; 32],
        resids: &mut ResIdAllocator,
    ) -> Result<Fulfilment, ServiceError> {
        if self.is_delivered(&req.request_id) {
            return Err(ServiceError::AlreadyDelivered);
        }
        if req.expiry <= req.start || req.expiry <= now {
            return Err(ServiceError::IntervalOver { start: req.start, expiry: req.expiry });
        }
        let duration = u16::try_from(req.expiry - req.start).map_err(|_| ServiceError::TooLong)?;
        let start = u32::try_from(req.start).map_err(|_| ServiceError::StartOutOfRange(req.start))?;
        let bps = req.bandwidth_kbps.checked_mul(1000).ok_or(ServiceError::Bandwidth(req.bandwidth_kbps))?;
        let bw = self.codec.encode_ceil(bps).ok_or(ServiceError::Bandwidth(req.bandwidth_kbps))?;
        // Work on a copy of the ResIDs so that a failure below leaves them untouched.
        let mut updated = resids.clone();
        updated.expire(now);
        let holder = hex::encode(req.request_id);
        let res_id = updated.assign_for(&holder, req.ingress, req.start, req.expiry, self.state.res_id_cap)?;
        let info = ResInfo { ingress: req.ingress, egress: req.egress, res_id, bw, start, duration };
        let reservation = Reservation { info, ak: self.sv.auth_key(&info) };
        let context = SealContext::new(self.chain_id, self.isd_as, req.request_id);
        let sealed = seal::seal_with_ephemeral_ikm(&reservation, &context, &req.buyer_key, ikm)?;
        *resids = updated;
        Ok(Fulfilment { sealed, reservation })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seal::BuyerKey;

    const NOW: u64 = 1_800_000_000;

    fn request(id: u8, buyer: &BuyerKey) -> RedeemRequest {
        RedeemRequest {
            request_id: [id; 32],
            ingress: 1,
            egress: 2,
            bandwidth_kbps: 4000,
            start: NOW,
            expiry: NOW + 600,
            buyer_key: buyer.public(),
        }
    }

    fn service() -> ReservationService {
        ReservationService::new(0x0001_ff00_0000_0110, 31337, &[7; 32], BwCodec::Paper, ServiceState::new(1000))
    }

    #[test]
    fn buyer_opens_a_reservation_the_as_router_accepts() {
        let buyer = BuyerKey::derive(b"buyer");
        let mut s = service();
        let mut resids = ResIdAllocator::new(100_000);
        let f = s.fulfil(&request(1, &buyer), NOW, &[9; 32], &mut resids).unwrap();
        let ctx = SealContext::new(31337, 0x0001_ff00_0000_0110, [1; 32]);
        let opened = seal::open(&f.sealed, &ctx, &buyer).unwrap();
        assert_eq!(opened, f.reservation);
        // A_K is the one the AS's routers derive from the same master secret.
        assert_eq!(opened.ak, SecretValue::from_master_secret(&[7; 32]).auth_key(&opened.info));
        assert!(BwCodec::Paper.decode_bps(opened.info.bw) >= 4_000_000);
        assert_eq!((opened.info.start, opened.info.duration), (NOW as u32, 600));
        assert!(seal::open(&f.sealed, &ctx, &BuyerKey::derive(b"someone else")).is_err());
    }

    #[test]
    fn requests_are_answered_once_with_distinct_resids() {
        let buyer = BuyerKey::derive(b"buyer");
        let mut s = service();
        let mut resids = ResIdAllocator::new(100_000);
        let a = s.fulfil(&request(1, &buyer), NOW, &[1; 32], &mut resids).unwrap();
        let b = s.fulfil(&request(2, &buyer), NOW, &[2; 32], &mut resids).unwrap();
        assert_ne!(a.reservation.info.res_id, b.reservation.info.res_id);
        // Until it is delivered, a request sealed again (its blob lost) keeps its ResID.
        let again = s.fulfil(&request(1, &buyer), NOW, &[7; 32], &mut resids).unwrap();
        assert_eq!(again.reservation, a.reservation);
        assert_ne!(again.sealed, a.sealed, "sealed afresh");
        assert_eq!(resids.held(1).len(), 2);
        s.mark_delivered(&[1; 32]);
        s.mark_delivered(&[2; 32]);
        assert_eq!(s.fulfil(&request(1, &buyer), NOW, &[3; 32], &mut resids), Err(ServiceError::AlreadyDelivered));
        // The state survives a restart.
        let state: ServiceState = serde_json::from_str(&serde_json::to_string(s.state()).unwrap()).unwrap();
        let mut again = ReservationService::new(0x0001_ff00_0000_0110, 31337, &[7; 32], BwCodec::Paper, state);
        assert_eq!(again.fulfil(&request(2, &buyer), NOW, &[3; 32], &mut resids), Err(ServiceError::AlreadyDelivered));
        let c = again.fulfil(&request(3, &buyer), NOW, &[4; 32], &mut resids).unwrap();
        assert!(![a.reservation.info.res_id, b.reservation.info.res_id].contains(&c.reservation.info.res_id));
        // The service's own cap bounds what it hands out, below the shared allocator's bound.
        let mut capped =
            ReservationService::new(0x0001_ff00_0000_0110, 31337, &[7; 32], BwCodec::Paper, ServiceState::new(2));
        assert!(matches!(capped.fulfil(&request(9, &buyer), NOW, &[5; 32], &mut resids), Err(ServiceError::ResId(_))));
    }

    #[test]
    fn bad_requests_change_nothing() {
        let buyer = BuyerKey::derive(b"buyer");
        let mut s = service();
        let mut resids = ResIdAllocator::new(100_000);
        let before = s.state().clone();
        let over = RedeemRequest { expiry: NOW, ..request(1, &buyer) };
        assert!(matches!(s.fulfil(&over, NOW, &[1; 32], &mut resids), Err(ServiceError::IntervalOver { .. })));
        let long = RedeemRequest { expiry: NOW + 70_000, ..request(1, &buyer) };
        assert_eq!(s.fulfil(&long, NOW, &[1; 32], &mut resids), Err(ServiceError::TooLong));
        let huge = RedeemRequest { bandwidth_kbps: u64::MAX / 10, ..request(1, &buyer) };
        assert!(matches!(s.fulfil(&huge, NOW, &[1; 32], &mut resids), Err(ServiceError::Bandwidth(_))));
        let bad_key = RedeemRequest { buyer_key: [0; 32], ..request(1, &buyer) };
        assert!(matches!(s.fulfil(&bad_key, NOW, &[1; 32], &mut resids), Err(ServiceError::Seal(_))));
        assert_eq!(s.state(), &before);
        assert_eq!(resids, ResIdAllocator::new(100_000));
    }

    #[test]
    fn a_state_with_its_own_allocator_hands_it_over() {
        // The format written before the AS had one shared allocator.
        let mut old = ResIdAllocator::new(100);
        old.assign(1, 10, 20).unwrap();
        let text = serde_json::json!({ "resids": old, "delivered": ["00"] }).to_string();
        let state: ServiceState = serde_json::from_str(&text).unwrap();
        assert_eq!(state.res_id_cap, u32::MAX);
        let legacy = state.legacy_resids.clone().unwrap();
        let mut shared = ResIdAllocator::new(100);
        shared.assign(1, 15, 30).unwrap();
        shared.absorb(&legacy);
        shared.absorb(&legacy);
        assert_eq!(shared.held(1).len(), 2);
        // Both ResID 0 reservations are known: the next overlapping one gets 1.
        assert_eq!(shared.assign(1, 12, 18), Ok(1));
        assert!(!serde_json::to_string(&ServiceState { legacy_resids: None, ..state }).unwrap().contains("resids"));
    }
}
