//! Answering the redeem requests addressed to the AS: every request seen on chain is recorded
//! as open before anything else happens to it, then taken through the stages of
//! [`super::delivery`] until its reservation is on chain. A failed attempt is logged, counted
//! and retried with backoff; the state file is written after every step.
//!
//! A request carries a delivery deadline: once it has passed the contract refuses the delivery
//! (`DeliveryTooLate`) and the buyer may reclaim the assets, so a request past its deadline is
//! closed (refused as `deadline_passed`, logged and counted) instead of sealed or sent, and a
//! delivery that reverts for lateness is closed the same way rather than retried.

use std::str::FromStr;

use aviary_hummingbird::RedeemRequest;
use aviary_market::{Bytes, LedgerError, Submitted, U256};

use super::delivery::{Delivery, Refusal, Stage};
use super::metrics::OpenRequest;
use super::AsService;
use crate::resid_store::StoreError;

/// The environment variable that arms a [`FaultPoint`] (tests only).
pub const FAULT_ENV: &str = "AVIARY_AS_SERVICE_FAULT";

/// A point at which a test makes the service process die, where a crash is hardest to
/// recover from. Armed by [`FAULT_ENV`]; never set in a deployment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultPoint {
    /// After the sealed reservation is persisted, before its delivery is sent.
    AfterSeal,
    /// After the delivery transaction was handed to the chain, before the service recorded
    /// that it was.
    AfterSend,
}

impl FromStr for FaultPoint {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "after-seal" => Ok(FaultPoint::AfterSeal),
            "after-send" => Ok(FaultPoint::AfterSend),
            _ => Err(format!("{FAULT_ENV}={s}: expected after-seal or after-send")),
        }
    }
}

/// Wait this long for a transaction the chain accepted before sending the delivery again.
const RESEND_AFTER_S: u64 = 60;

/// Why one attempt failed: a counter label and the error.
struct Failure {
    reason: &'static str,
    error: anyhow::Error,
}

fn failure(reason: &'static str) -> impl FnOnce(anyhow::Error) -> Failure {
    move |error| Failure { reason, error }
}

fn ledger(e: aviary_market::LedgerError) -> Failure {
    Failure { reason: "ledger", error: e.into() }
}

/// What the chain holds for a request.
enum OnChain {
    /// No reservation yet: the request is pending.
    Nothing,
    /// This service's sealed reservation.
    Ours,
    /// A reservation this service did not seal.
    Foreign,
}

fn request_key(id: u64) -> [u8; 32] {
    U256::from(id).to_be_bytes::<32>()
}

impl AsService {
    /// Takes every new redeem request addressed to this AS, then every open one that is due,
    /// as far as it goes; returns how many were delivered.
    pub fn answer_requests(&mut self, now: u64) -> anyhow::Result<usize> {
        self.take_new_requests(now)?;
        let due: Vec<u64> = self.deliveries.iter().filter(|(_, d)| d.due(now)).map(|(id, _)| *id).collect();
        let mut delivered = 0;
        for id in due {
            if self.deliveries[&id].failures > 0 {
                self.count(|s| s.delivery_retries += 1);
            }
            match self.advance(id, now) {
                Ok(true) => delivered += 1,
                Ok(false) => {}
                Err(f) => {
                    self.count(|s| *s.delivery_failures.entry(f.reason).or_default() += 1);
                    if let Some(d) = self.deliveries.get_mut(&id) {
                        d.failed(now, self.backoff, format!("{:#}", f.error));
                        tracing::warn!(
                            request = id,
                            stage = d.stage.label(),
                            failures = d.failures,
                            retry_in_s = d.next_attempt_s - now,
                            reason = f.reason,
                            "delivery attempt failed: {:#}",
                            f.error
                        );
                    }
                    self.persist()?;
                }
            }
        }
        self.show_open_requests(now);
        Ok(delivered)
    }

    /// Records the requests filed since the last look that are addressed to this AS.
    fn take_new_requests(&mut self, now: u64) -> anyhow::Result<()> {
        let d = self.deployment.deployment();
        let next: u64 = d.next_request_id(&*self.ledger)?.try_into().unwrap_or(u64::MAX);
        while self.next_request < next {
            let id = self.next_request;
            let req = d.request_of(&*self.ledger, U256::from(id))?;
            let closed = self.service.is_delivered(&request_key(id)) || self.refused.contains_key(&id);
            if req.isdAs == self.cfg.ia.to_u64() && !closed && !self.deliveries.contains_key(&id) {
                self.count(|s| s.redeem_requests_seen += 1);
                self.deliveries.insert(id, Delivery::new(now));
            }
            self.next_request += 1;
            self.persist()?;
        }
        Ok(())
    }

    /// Takes request `id` as far as it goes now; true once it is delivered.
    fn advance(&mut self, id: u64, now: u64) -> Result<bool, Failure> {
        if self.deliveries[&id].stage == Stage::Pending {
            if self.closed_for_lateness(id, now)? {
                return Ok(false);
            }
            if !self.seal(id, now)? {
                return Ok(false);
            }
            self.die_at(FaultPoint::AfterSeal);
        }
        let stage = self.deliveries[&id].stage.clone();
        let Some((sealed, res_id)) = stage.sealed() else { return Ok(false) };
        // The chain first: a delivery that went out before a crash is not sent again.
        match self.on_chain(id, sealed)? {
            OnChain::Ours => return self.delivered(id, res_id, "found on chain"),
            OnChain::Foreign => return self.foreign(id, now),
            OnChain::Nothing => {}
        }
        if self.closed_for_lateness(id, now)? {
            return Ok(false);
        }
        if let Stage::Sent { tx: hash, at_s, .. } = &stage {
            match self.ledger.receipt(*hash).map_err(ledger)? {
                Some(r) if r.status => return self.delivered(id, res_id, "mined"),
                // Failed: the next attempt sends it again.
                Some(_) => {
                    self.set_stage(id, Stage::Sealed { sealed: sealed.clone(), res_id })?;
                    return Err(failure("reverted")(anyhow::anyhow!("delivery transaction {hash} failed")));
                }
                // Still waiting to be mined: leave it a while before sending again.
                None if now < at_s + RESEND_AFTER_S => return Ok(false),
                None => {
                    tracing::warn!(request = id, tx = %hash, "delivery not mined in {RESEND_AFTER_S} s: sending it again")
                }
            }
        }
        self.send(id, sealed.clone(), res_id, now)
    }

    /// Seals the reservation of a pending request (false: refused for good).
    fn seal(&mut self, id: u64, now: u64) -> Result<bool, Failure> {
        let rr = self.redeem_request(id).map_err(ledger)?;
        let mut ikm = [0u8; 32];
        getrandom::getrandom(&mut ikm).map_err(|e| failure("randomness")(anyhow::anyhow!("no randomness: {e}")))?;
        match self.resids.update(|a| self.service.fulfil(&rr, now, &ikm, a)) {
            Ok(f) => {
                let res_id = f.reservation.info.res_id;
                self.set_stage(id, Stage::Sealed { sealed: f.sealed.into(), res_id })?;
                self.count(|s| s.redeem_requests_answered += 1);
                tracing::info!(request = id, res_id, "reservation sealed");
                Ok(true)
            }
            Err(StoreError::Refused(e)) if e.is_transient() => Err(failure(e.label())(e.into())),
            Err(StoreError::Refused(e)) => {
                self.refuse(id, e.label(), e.to_string(), now)?;
                Ok(false)
            }
            // The store cannot be read or written: try again later.
            Err(e) => Err(failure("resid_store")(e.into())),
        }
    }

    /// Sends the delivery of a sealed request.
    fn send(&mut self, id: u64, sealed: Bytes, res_id: u32, now: u64) -> Result<bool, Failure> {
        let d = self.deployment.deployment();
        let submitted =
            d.submit_delivery(&mut *self.ledger, &self.account, U256::from(id), sealed.clone()).map_err(ledger)?;
        self.die_at(FaultPoint::AfterSend);
        let receipt = match submitted {
            Submitted::Mined(r) => r,
            // Recorded, so that the next attempt, in this process or after a restart, waits
            // for this transaction rather than sending another.
            Submitted::Pending(hash) => {
                self.set_stage(id, Stage::Sent { sealed, res_id, tx: hash, at_s: now })?;
                return Ok(false);
            }
        };
        match receipt.into_result() {
            Ok(_) => self.delivered(id, res_id, "mined"),
            // Reverted: perhaps because it was delivered in the meantime.
            Err(e) => match self.on_chain(id, &sealed)? {
                OnChain::Ours => self.delivered(id, res_id, "found on chain"),
                OnChain::Foreign => self.foreign(id, now),
                OnChain::Nothing => match &e {
                    // The chain's clock passed the deadline before ours did: retrying cannot help.
                    LedgerError::Revert(rv) if rv.name == "DeliveryTooLate" => {
                        self.refuse(id, "deadline_passed", format!("the delivery reverted: {rv}"), now)?;
                        Ok(false)
                    }
                    _ => Err(failure("reverted")(e.into())),
                },
            },
        }
    }

    /// Closes request `id` if its delivery deadline has passed (true): the contract would
    /// refuse the delivery, and the buyer may take the assets back.
    fn closed_for_lateness(&mut self, id: u64, now: u64) -> Result<bool, Failure> {
        let d = self.deployment.deployment();
        let deadline = d.request_of(&*self.ledger, U256::from(id)).map_err(ledger)?.deadline;
        if now <= deadline {
            return Ok(false);
        }
        let late = now - deadline;
        self.refuse(id, "deadline_passed", format!("its delivery deadline {deadline} passed {late} s ago"), now)?;
        Ok(true)
    }

    fn set_stage(&mut self, id: u64, stage: Stage) -> Result<(), Failure> {
        if let Some(d) = self.deliveries.get_mut(&id) {
            d.stage = stage;
        }
        self.persist().map_err(failure("state_file"))
    }

    fn on_chain(&self, id: u64, sealed: &Bytes) -> Result<OnChain, Failure> {
        let d = self.deployment.deployment();
        let blob = d.reservation_of(&*self.ledger, U256::from(id)).map_err(ledger)?;
        Ok(match blob {
            b if b.is_empty() => OnChain::Nothing,
            b if &b == sealed => OnChain::Ours,
            _ => OnChain::Foreign,
        })
    }

    /// The request as the AS answers it: the interfaces, bandwidth and interval of its assets.
    fn redeem_request(&self, id: u64) -> Result<RedeemRequest, aviary_market::LedgerError> {
        let d = self.deployment.deployment();
        let req = d.request_of(&*self.ledger, U256::from(id))?;
        let ingress = d.asset_of(&*self.ledger, U256::from(req.ingressId))?;
        let egress = d.asset_of(&*self.ledger, U256::from(req.egressId))?;
        Ok(RedeemRequest {
            request_id: request_key(id),
            ingress: ingress.interfaceId,
            egress: egress.interfaceId,
            bandwidth_kbps: ingress.bandwidth.min(egress.bandwidth),
            start: ingress.startTime.max(egress.startTime),
            expiry: ingress.expiryTime.min(egress.expiryTime),
            buyer_key: req.ephemeralPubKey.0,
        })
    }

    fn delivered(&mut self, id: u64, res_id: u32, how: &'static str) -> Result<bool, Failure> {
        self.service.mark_delivered(&request_key(id));
        self.deliveries.remove(&id);
        self.persist().map_err(failure("state_file"))?;
        self.count(|s| s.deliveries += 1);
        tracing::info!(request = id, res_id, how, "reservation delivered");
        Ok(true)
    }

    /// The chain holds a reservation for the request that this service did not seal (another
    /// process with the AS's account delivered it): nothing left to do but say so.
    fn foreign(&mut self, id: u64, now: u64) -> Result<bool, Failure> {
        self.service.mark_delivered(&request_key(id));
        let msg = "the chain holds a reservation this service did not seal (another process uses the AS's account?)";
        tracing::error!(request = id, "{msg}");
        self.refuse(id, "foreign_blob", msg.into(), now)?;
        Ok(false)
    }

    /// Closes a request without a delivery; the assets stay escrowed on chain.
    fn refuse(&mut self, id: u64, reason: &'static str, message: String, now: u64) -> Result<(), Failure> {
        self.deliveries.remove(&id);
        tracing::warn!(request = id, reason, "request refused, not answered: {message}");
        self.refused.insert(id, Refusal { reason: reason.into(), message, at_s: now });
        self.persist().map_err(failure("state_file"))?;
        self.count(|s| *s.redeem_requests_failed.entry(reason).or_default() += 1);
        Ok(())
    }

    fn die_at(&self, point: FaultPoint) {
        if self.fault == Some(point) {
            tracing::error!("{FAULT_ENV}: dying at {point:?}");
            std::process::abort();
        }
    }

    /// The open requests, as the metrics endpoint shows them.
    fn show_open_requests(&self, now: u64) {
        let open: Vec<OpenRequest> = self
            .deliveries
            .iter()
            .map(|(id, d)| OpenRequest {
                request: *id,
                stage: d.stage.label(),
                seen_s: d.seen_s,
                failures: d.failures,
                next_attempt_s: d.next_attempt_s,
                last_error: d.last_error.clone(),
            })
            .collect();
        let refused = self.refused.len() as u64;
        self.count(|s| {
            s.open_requests = open;
            s.oldest_open_request_age_s =
                s.open_requests.iter().map(|r| now.saturating_sub(r.seen_s)).max().unwrap_or(0);
            s.refused_requests = refused;
        });
    }
}
