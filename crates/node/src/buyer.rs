//! The buyer's agent: buys reservations on the market for the transit ASes of the path a
//! host will use, in one atomic transaction, waits for the ASes to deliver, opens the sealed
//! reservations and returns the reservation file the host agent sends with. With `reverse`,
//! the same transaction also buys the reverse direction (the Hummingbird paper, Appendix C) for the
//! destination to answer on.
//!
//! Nothing is lost if the buyer dies after paying: the purchase's [`PurchaseRecord`] (with its
//! ephemeral key) is on disk before the transaction is sent, so [`wait`] resumes waiting for,
//! opening and writing the reservations, and a request an AS did not deliver by its deadline
//! is reclaimed (its assets return to the buyer).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use aviary_hummingbird::{BuyerKey, BwCodec};
use aviary_market::client::{self, DeliveryTerms, HopWant, Outcome, Plan, StartFrom, Window};
use aviary_market::{Account, Address, Deployment, Ledger, U256};
use aviary_scion::IsdAsn;

use crate::api::PathWire;
use crate::host::{HopReservation, ReservationFile};

mod record;
pub use record::{NewPurchase, PurchaseRecord};

/// What to buy.
#[derive(Clone, Copy, Debug)]
pub struct Purchase {
    /// Unix s, on the assets' time grid.
    pub start: u64,
    pub expiry: u64,
    pub bandwidth_kbps: u64,
    /// Also buy the reverse direction.
    pub reverse: bool,
    /// How long to wait for listings to appear (AS services starting up).
    pub wait_for_offers: Duration,
    /// How long to wait for the deliveries.
    pub wait_for_delivery: Duration,
    /// How long the ASes have to deliver (s): the requests' deadline, after which the buyer
    /// may reclaim what was not delivered.
    pub delivery_window_s: u32,
    /// What to pay in: zero for the native currency (the default), or an ERC-20 token. Only
    /// offers in it are planned; prices in different tokens are never compared.
    pub payment_token: Address,
}

impl Purchase {
    pub fn window(&self) -> Window {
        Window { start: self.start, expiry: self.expiry, bandwidth: self.bandwidth_kbps }
    }
}

/// The transit ASes of `path` as hops to buy (forward, then reverse if asked).
pub fn wants(path: &PathWire, reverse: bool) -> Vec<HopWant> {
    let transit = &path.ases[1..path.ases.len().saturating_sub(1)];
    let mut out: Vec<HopWant> =
        transit.iter().map(|h| HopWant { isd_as: h.ia.to_u64(), ingress: h.ingress, egress: h.egress }).collect();
    if reverse {
        out.extend(transit.iter().rev().map(|h| HopWant {
            isd_as: h.ia.to_u64(),
            ingress: h.egress,
            egress: h.ingress,
        }));
    }
    out
}

/// Plans the cheapest purchase in `p.payment_token`, waiting up to `wait_for_offers` for
/// listings to cover it. With a `buyer`, only what its balance of that token pays for.
pub fn plan(
    ledger: &dyn Ledger,
    d: &Deployment,
    buyer: Option<Address>,
    wants: &[HopWant],
    p: &Purchase,
) -> anyhow::Result<Plan> {
    let deadline = Instant::now() + p.wait_for_offers;
    loop {
        let offers = client::open_offers_on(ledger, d, &client::sides_of(wants))?;
        let planned = match buyer {
            Some(b) => {
                let funds = client::funds_of(ledger, b, p.payment_token)?;
                client::plan_affordable(&offers, wants, p.window(), p.payment_token, funds)
            }
            None => client::plan_cheapest(&offers, wants, p.window(), p.payment_token),
        };
        match planned {
            Ok(plan) => return Ok(plan),
            Err(e) if Instant::now() >= deadline => return Err(readable(ledger, e)),
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

/// `e` for people: a shortfall in the token's units (`0.0036 ETH`, `12.5 TST`), not in its
/// smallest ones, where the token tells its symbol and decimals.
fn readable(ledger: &dyn Ledger, e: client::ClientError) -> anyhow::Error {
    let client::ClientError::Unaffordable { token, needed, available } = e else { return e.into() };
    let Ok(book) = client::token_infos(ledger, [token]) else { return e.into() };
    let Some(info) = book.get(&token) else { return e.into() };
    anyhow::anyhow!(
        "the cheapest plan needs {} ({needed} of the smallest unit), the buyer has {} ({available}): \
         fund the buyer's account or wait for cheaper offers",
        client::view::format_amount(needed, info),
        client::view::format_amount(available, info),
    )
}

/// Buys `plan` (re-planning if it reverts, see [`client::buy_cheapest`]). The purchase's
/// record, with a fresh ephemeral key, is written to `records_dir` (0600) before anything is
/// sent, and again with the request ids once the purchase is mined; returns its path.
pub fn buy(
    ledger: &mut dyn Ledger,
    d: &Deployment,
    buyer: &Account,
    plan: &Plan,
    new: NewPurchase,
    p: &Purchase,
    records_dir: &Path,
) -> anyhow::Result<PathBuf> {
    let key = BuyerKey::from_os_rng()?;
    let mut record = PurchaseRecord::new(new, &key, d.next_request_id(ledger)?);
    std::fs::create_dir_all(records_dir).with_context(|| format!("cannot create {}", records_dir.display()))?;
    let record_path = records_dir.join(record.file_name());
    record.save(&record_path)?;
    let wants: Vec<HopWant> = plan.hops.iter().map(|h| h.want).collect();
    let terms = DeliveryTerms { key: &key, window_s: p.delivery_window_s };
    let (_, requests) =
        client::buy_cheapest(ledger, d, buyer, &wants, p.window(), StartFrom::Plan(plan.clone()), terms)
            .map_err(|e| readable(ledger, e))?;
    record.requests = requests;
    record.save(&record_path)?;
    Ok(record_path)
}

/// What a wait brought: the reservation files of what arrived (forward, and reverse for a
/// purchase with `reverse`), and the requests that did not (with why).
#[derive(Debug)]
pub struct Collected {
    pub forward: Option<ReservationFile>,
    pub reverse: Option<ReservationFile>,
    pub missing: Vec<Missing>,
}

impl Collected {
    /// The reservation files, if every reservation arrived; else an error naming what did not.
    pub fn complete(self) -> anyhow::Result<(ReservationFile, Option<ReservationFile>)> {
        if !self.missing.is_empty() {
            let what: Vec<String> =
                self.missing.iter().map(|m| format!("request {} ({}): {}", m.request, m.ia, m.why)).collect();
            anyhow::bail!("the reservations were paid for; not delivered: {}", what.join("; "));
        }
        let forward = self.forward.ok_or_else(|| anyhow::anyhow!("no reservation in the purchase"))?;
        Ok((forward, self.reverse))
    }
}

/// A request whose reservation is not in the files.
#[derive(Debug)]
pub struct Missing {
    pub request: U256,
    pub ia: IsdAsn,
    /// Where the request stands (delivered: the blob does not open).
    pub state: client::RequestState,
    /// The state, or why the delivery does not open.
    pub why: String,
}

/// Waits up to `timeout` for the reservations of the purchase recorded at `record_path` (the
/// request ids found on chain if the buyer died before recording them), opens what arrived,
/// writes the record's reservation files with what arrived (a partial delivery writes the hops
/// that did), and marks the record complete once everything did.
pub fn wait(ledger: &dyn Ledger, d: &Deployment, record_path: &Path, timeout: Duration) -> anyhow::Result<Collected> {
    let mut record = PurchaseRecord::load(record_path)?;
    let requests = record.resolve_requests(ledger, d)?;
    if requests.len() != record.hops {
        anyhow::bail!(
            "{}: {} of {} requests on chain: the purchase was not mined (nothing was paid)",
            record_path.display(),
            requests.len(),
            record.hops
        );
    }
    let outcomes = client::await_outcomes(ledger, d, &requests, &record.key(), timeout)?;
    // Each AS decodes its own BW field; every AS here uses the paper's codec.
    let codec = BwCodec::Paper;
    let mut hops: Vec<Option<HopReservation>> = Vec::new();
    let mut missing = Vec::new();
    for (request, outcome) in outcomes {
        let (isd_as, state, why) = match outcome {
            Outcome::Opened { isd_as, reservation } => {
                let bandwidth_bps = codec.decode_bps(reservation.info.bw);
                hops.push(Some(HopReservation { ia: IsdAsn::from_u64(isd_as), bandwidth_bps, reservation }));
                continue;
            }
            Outcome::Unopenable { isd_as, error } => {
                (isd_as, client::RequestState::Delivered, format!("delivered but does not open: {error}"))
            }
            Outcome::Undelivered { isd_as, state } => (isd_as, state, state.to_string()),
        };
        hops.push(None);
        missing.push(Missing { request, ia: IsdAsn::from_u64(isd_as), state, why });
    }
    let back = if record.reverse { hops.split_off(hops.len() / 2) } else { Vec::new() };
    let file = |dst: IsdAsn, hops: Vec<Option<HopReservation>>| {
        let reservations: Vec<HopReservation> = hops.into_iter().flatten().collect();
        (!reservations.is_empty()).then_some(ReservationFile { dst, reservations })
    };
    let forward = file(record.dst, hops);
    let reverse = file(record.src, back);
    for (f, out) in [(&forward, &record.out), (&reverse, &record.reverse_out)] {
        if let (Some(f), Some(out)) = (f, out) {
            f.save(out)?;
        }
    }
    record.complete = missing.is_empty();
    record.save(record_path)?;
    Ok(Collected { forward, reverse, missing })
}

#[cfg(test)]
mod tests {
    use super::*;
    use aviary_market::contracts::deploy_test_token;
    use aviary_market::EmbeddedLedger;

    /// A shortfall reads in the token's own units, read from the token contract on the chain.
    #[test]
    fn a_shortfall_is_told_in_the_tokens_units() {
        let mut l = EmbeddedLedger::in_memory();
        let owner = l.accounts()[0].clone();
        let token = deploy_test_token(&mut l, &owner, "Test", "TST").unwrap();
        let e = client::ClientError::Unaffordable {
            token,
            needed: U256::from(12_500_000_000_000_000_000u128),
            available: U256::from(3u64),
        };
        let text = readable(&l, e).to_string();
        assert!(text.contains("needs 12.5 TST"), "{text}");
        assert!(text.contains("the buyer has 0.000000000000000003 TST (3)"), "{text}");
        let native = client::ClientError::Unaffordable {
            token: Address::ZERO,
            needed: U256::from(3_600_000_000_000_000u64),
            available: U256::ZERO,
        };
        assert!(readable(&l, native).to_string().contains("needs 0.0036 ETH"));
        // Anything else is passed on as it is.
        let other = client::ClientError::TimeOverflow { start: 1, duration: 2 };
        assert_eq!(readable(&l, other).to_string(), "1 + 2 s is past the largest time a uint64 holds");
    }
}
