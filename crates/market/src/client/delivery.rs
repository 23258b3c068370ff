//! After a purchase: where each redeem request stands, waiting for the deliveries (by the
//! requests' deadline, not forever), opening the sealed reservations, and taking back the
//! assets of a request that was not delivered in time.
//!
//! A request the AS answered with a blob that passes the contract's cheap checks (length,
//! non-zero key) but does not open with the buyer's key is reported as [`Outcome::Unopenable`]:
//! a failed delivery, kept apart from the ones that opened, never a panic or a silent loss of
//! the others.

use std::fmt;
use std::time::{Duration, Instant};

use alloy_primitives::{Address, B256, U256};
use aviary_hummingbird::{BuyerKey, Reservation, SealContext, SealError};

use super::ClientError;
use crate::contracts::{request_status, Deployment, RedeemRequest};
use crate::{Account, Ledger, LedgerError};

/// Where a redeem request stands, as its requester sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestState {
    /// No such request.
    Unknown,
    /// Waiting for the AS, which may deliver until `deadline` (Unix s).
    Pending { deadline: u64 },
    /// The deadline passed without a delivery: the requester may reclaim the assets.
    Expired { deadline: u64 },
    /// Undelivered, and the AS is no longer registered (its certificate revoked or expired, or
    /// deregistered): nobody can deliver, and the requester may reclaim the assets at once.
    Orphaned,
    /// The AS delivered a sealed reservation.
    Delivered,
    /// The requester took the assets back after the deadline.
    Reclaimed,
}

impl RequestState {
    /// A short label: `pending`, `expired-reclaimable`, `orphaned-reclaimable`, `delivered`,
    /// `reclaimed`, `unknown`.
    pub fn label(&self) -> &'static str {
        match self {
            RequestState::Unknown => "unknown",
            RequestState::Pending { .. } => "pending",
            RequestState::Expired { .. } => "expired-reclaimable",
            RequestState::Orphaned => "orphaned-reclaimable",
            RequestState::Delivered => "delivered",
            RequestState::Reclaimed => "reclaimed",
        }
    }

    /// Whether waiting longer could still bring a delivery.
    pub fn is_pending(&self) -> bool {
        matches!(self, RequestState::Pending { .. })
    }
}

impl fmt::Display for RequestState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestState::Pending { deadline } | RequestState::Expired { deadline } => {
                write!(f, "{} (deadline {deadline})", self.label())
            }
            _ => f.write_str(self.label()),
        }
    }
}

/// The state of `req` for a transaction mined at `now` ([`Ledger::pending_timestamp`]; a
/// delivery at the deadline itself still counts).
pub fn request_state(req: &RedeemRequest, now: u64) -> RequestState {
    match req.status {
        request_status::PENDING if now > req.deadline => RequestState::Expired { deadline: req.deadline },
        request_status::PENDING => RequestState::Pending { deadline: req.deadline },
        request_status::DELIVERED => RequestState::Delivered,
        request_status::RECLAIMED => RequestState::Reclaimed,
        _ => RequestState::Unknown,
    }
}

/// The state of `req` as the chain has it at `now`: [`request_state`], except that a pending
/// request of an AS that is no longer registered is [`RequestState::Orphaned`].
pub fn current_state<L: Ledger + ?Sized>(
    l: &L,
    d: &Deployment,
    req: &RedeemRequest,
    now: u64,
) -> Result<RequestState, LedgerError> {
    let state = request_state(req, now);
    if state.is_pending() && d.account_of(l, req.isdAs)? == Address::ZERO {
        return Ok(RequestState::Orphaned);
    }
    Ok(state)
}

/// What became of one request of a purchase.
#[derive(Debug)]
pub enum Outcome {
    /// Delivered and opened with the buyer's key.
    Opened { isd_as: u64, reservation: Reservation },
    /// Delivered, but the blob does not open with the buyer's key: a failed delivery.
    Unopenable { isd_as: u64, error: SealError },
    /// Nothing delivered (yet): still pending when the wait ended, expired, or reclaimed.
    Undelivered { isd_as: u64, state: RequestState },
}

/// Waits up to `timeout` for the requests to be delivered, or for their deadlines to pass,
/// and opens what arrived; one outcome per request, in request order. Returns early once no
/// request is pending any more.
pub fn await_outcomes<L: Ledger + ?Sized>(
    l: &L,
    d: &Deployment,
    requests: &[U256],
    key: &BuyerKey,
    timeout: Duration,
) -> Result<Vec<(U256, Outcome)>, LedgerError> {
    let give_up = Instant::now() + timeout;
    let mut outcomes: Vec<Option<Outcome>> = requests.iter().map(|_| None).collect();
    loop {
        let now = l.pending_timestamp()?;
        for (id, slot) in requests.iter().zip(outcomes.iter_mut()) {
            if matches!(slot, Some(Outcome::Opened { .. } | Outcome::Unopenable { .. })) {
                continue;
            }
            let req = d.request_of(l, *id)?;
            let isd_as = req.isdAs;
            *slot = Some(match current_state(l, d, &req, now)? {
                RequestState::Delivered => {
                    let sealed = d.reservation_of(l, *id)?;
                    let ctx = SealContext::new(l.chain_id(), isd_as, id.to_be_bytes::<32>());
                    match aviary_hummingbird::open(&sealed, &ctx, key) {
                        Ok(reservation) => Outcome::Opened { isd_as, reservation },
                        Err(error) => Outcome::Unopenable { isd_as, error },
                    }
                }
                state => Outcome::Undelivered { isd_as, state },
            });
        }
        let waiting = outcomes
            .iter()
            .any(|o| matches!(o, Some(Outcome::Undelivered { state: RequestState::Pending { .. }, .. })));
        if !waiting || Instant::now() >= give_up {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(requests.iter().copied().zip(outcomes.into_iter().flatten()).collect())
}

/// Waits until every request is delivered and opens the reservations (in request order); an
/// error names the first request that was not delivered in time or does not open.
pub fn await_deliveries<L: Ledger + ?Sized>(
    l: &L,
    d: &Deployment,
    requests: &[U256],
    key: &BuyerKey,
    timeout: Duration,
) -> Result<Vec<(u64, Reservation)>, ClientError> {
    await_outcomes(l, d, requests, key, timeout)?
        .into_iter()
        .map(|(id, o)| match o {
            Outcome::Opened { isd_as, reservation } => Ok((isd_as, reservation)),
            Outcome::Unopenable { error, .. } => Err(ClientError::Open(id, error)),
            Outcome::Undelivered { state: RequestState::Pending { .. }, .. } => Err(ClientError::Timeout(id, timeout)),
            Outcome::Undelivered { state, .. } => Err(ClientError::Undelivered(id, state)),
        })
        .collect()
}

/// The requests filed for `buyer` with the ephemeral key `key`, among those numbered from
/// `from` on (the chain's next request id before the purchase was sent): how a buyer that
/// crashed between sending a purchase and recording its request ids finds them again.
pub fn find_requests<L: Ledger + ?Sized>(
    l: &L,
    d: &Deployment,
    buyer: Address,
    key: B256,
    from: U256,
) -> Result<Vec<U256>, LedgerError> {
    let next = d.next_request_id(l)?;
    let mut out = Vec::new();
    let mut id = from.max(U256::from(1));
    while id < next {
        let req = d.request_of(l, id)?;
        if req.requester == buyer && req.ephemeralPubKey == key {
            out.push(id);
        }
        id += U256::from(1);
    }
    Ok(out)
}

/// Reclaims the assets of every one of `requests` whose deadline passed undelivered, or that
/// is pending for an ISD-AS nobody is registered for any more (deregistered, revoked or its
/// certificate expired: nobody can deliver it, and the asset contract lets the buyer reclaim
/// at once); returns the requests reclaimed. The others are left alone.
pub fn reclaim_expired<L: Ledger + ?Sized>(
    l: &mut L,
    d: &Deployment,
    requester: &Account,
    requests: &[U256],
) -> Result<Vec<U256>, LedgerError> {
    let now = l.pending_timestamp()?;
    let mut reclaimed = Vec::new();
    for id in requests {
        let req = d.request_of(l, *id)?;
        if matches!(current_state(l, d, &req, now)?, RequestState::Expired { .. } | RequestState::Orphaned) {
            d.reclaim(l, requester, *id)?;
            reclaimed.push(*id);
        }
    }
    Ok(reclaimed)
}
