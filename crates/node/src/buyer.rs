//! The buyer's agent: buys reservations on the market for the transit ASes of the path a
//! host will use, in one atomic transaction, waits for the ASes to deliver, opens the sealed
//! reservations and returns the reservation file the host agent sends with. With `reverse`,
//! the same transaction also buys the reverse direction (the Hummingbird paper, Appendix C) for the
//! destination to answer on.

use std::time::{Duration, Instant};

use anyhow::Context;
use aviary_hummingbird::{BuyerKey, BwCodec};
use aviary_market::client::{self, HopWant, Plan, Window};
use aviary_market::{Account, Address, Deployment, Ledger};
use aviary_scion::IsdAsn;

use crate::api::PathWire;
use crate::host::{HopReservation, ReservationFile};

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
}

impl Purchase {
    fn window(&self) -> Window {
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

/// Plans the cheapest purchase, waiting up to `wait_for_offers` for listings to cover it. With
/// a `buyer`, only what it can pay (the tokens it holds enough of); without, any offer.
pub fn plan(
    ledger: &dyn Ledger,
    d: &Deployment,
    buyer: Option<Address>,
    wants: &[HopWant],
    p: &Purchase,
) -> anyhow::Result<Plan> {
    let deadline = Instant::now() + p.wait_for_offers;
    loop {
        let offers = client::open_offers(ledger, d)?;
        let planned = match buyer {
            Some(b) => {
                let funds = client::funds_of(ledger, b, offers.iter().map(|o| o.payment_token))?;
                client::plan_affordable(&offers, wants, p.window(), &funds)
            }
            None => client::plan_cheapest(&offers, wants, p.window()),
        };
        match planned {
            Ok(plan) => return Ok(plan),
            Err(e) if Instant::now() >= deadline => return Err(e.into()),
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

/// Buys `plan` (re-planning if it reverts, see [`client::buy_cheapest`]), waits for every
/// delivery and opens it. Returns the forward reservation file (to `dst`) and, for a purchase
/// with `reverse`, the reverse one (to `src`).
pub fn buy(
    ledger: &mut dyn Ledger,
    d: &Deployment,
    buyer: &Account,
    plan: &Plan,
    (src, dst): (IsdAsn, IsdAsn),
    p: &Purchase,
) -> anyhow::Result<(ReservationFile, Option<ReservationFile>)> {
    let key = BuyerKey::from_os_rng()?;
    let wants: Vec<HopWant> = plan.hops.iter().map(|h| h.want).collect();
    let (_, requests) = client::buy_cheapest(ledger, d, buyer, &wants, p.window(), Some(plan.clone()), &key)?;
    let opened = client::await_deliveries(ledger, d, &requests, &key, p.wait_for_delivery)
        .context("the reservations were paid for; an AS did not deliver")?;
    // Each AS decodes its own BW field; every AS here uses the paper's codec.
    let codec = BwCodec::Paper;
    let mut hops: Vec<HopReservation> = opened
        .into_iter()
        .map(|(isd_as, reservation)| HopReservation {
            ia: IsdAsn::from_u64(isd_as),
            bandwidth_bps: codec.decode_bps(reservation.info.bw),
            reservation,
        })
        .collect();
    let reverse = p.reverse.then(|| {
        let back = hops.split_off(hops.len() / 2);
        ReservationFile { dst: src, reservations: back }
    });
    Ok((ReservationFile { dst, reservations: hops }, reverse))
}
