//! The market at scale: with 1 000 and 10 000 open listings on the interfaces of one hop, how
//! long the buyer's client takes to read the offers it needs (`offers`: the market's index of
//! open listings, page by page) and to buy (read the offers, plan the cheapest purchase, send
//! `buyAndRedeemPath`), on the in-memory embedded ledger. Beside them, reading the offers the
//! way the client did before the index: every listing ever created, three calls each.

use aviary_market::client::{self, HopWant, Window};

use super::world::World;
use super::*;

/// Open listings on the hop's two interfaces (half each) of the scale rows.
pub const OPEN_LISTINGS: [usize; 2] = [1_000, 10_000];
/// The same with `quick` (keeps `aviary lab gas --quick` and its test short).
pub const OPEN_LISTINGS_QUICK: [usize; 2] = [100, 1_000];
/// Repetitions of each scale row.
const SCALE_REPS: usize = 5;

/// Push the scale rows, on a copy of `world`'s chain.
pub(super) fn rows(world: &World, quick: bool, rows: &mut Vec<GasRow>) -> Result<()> {
    let counts = if quick { OPEN_LISTINGS_QUICK } else { OPEN_LISTINGS };
    let mut w = world.forked();
    let want = [HopWant { isd_as: w.seller_ia(0), ingress: IF_INGRESS, egress: IF_EGRESS }];
    // Each listing takes two blocks of one second: the listed hour starts after the last one
    // is listed, so that none has expired when it is read or bought.
    let blocks = 2 * counts.iter().max().copied().unwrap_or(0) as u64;
    let s = w.window()?.0 + blocks.div_ceil(3600) * 3600;
    let e = s + 3600;
    let mut open = 0;
    for n in counts {
        // Listings at prices that vary, so that the planner has to compare them.
        while open < n {
            let (ingress, interface) = if open % 2 == 0 { (true, IF_INGRESS) } else { (false, IF_EGRESS) };
            let (asset, _) = w.issue(0, ingress, interface, s, e)?;
            w.list(0, asset, 1 + (open as u128 * 7919) % 97)?;
            open += 1;
        }
        let sides = client::sides_of(&want);
        let times = timed(SCALE_REPS, || Ok(client::open_offers_on(&w.l, &w.dep, &sides)?.len()))?;
        rows.push(latency_row(format!("latency offers ({n} open listings, index)"), 0, times));
        let times = timed(SCALE_REPS, || scan_every_listing(&w))?;
        rows.push(latency_row(format!("latency offers ({n} open listings, scan of all)"), 0, times));

        let window = Window { start: s + 1200, expiry: s + 1800, bandwidth: PIECE_BW };
        let (mut times, mut gas) = (vec![], 0);
        for _ in 0..SCALE_REPS {
            let t = Instant::now();
            let offers = client::open_offers_on(&w.l, &w.dep, &sides)?;
            let funds = client::funds_of(&w.l, w.buyer.address(), Address::ZERO)?;
            let plan = client::plan_affordable(&offers, &want, window, Address::ZERO, funds)?;
            let (_, r) = w.dep.buy_and_redeem_path(
                &mut w.l,
                &w.buyer,
                plan.purchases(),
                B256::repeat_byte(0x44),
                DEFAULT_DELIVERY_WINDOW_S,
                plan.limits(),
                plan.total,
            )?;
            times.push(t.elapsed().as_secs_f64() * 1e3);
            gas = r.gas_used;
        }
        rows.push(latency_row(format!("latency purchase ({n} open listings)"), gas, times));
    }
    Ok(())
}

/// Run `f` `reps` times; the wall times in ms.
fn timed(reps: usize, mut f: impl FnMut() -> Result<usize>) -> Result<Vec<f64>> {
    let mut times = vec![];
    for _ in 0..reps {
        let t = Instant::now();
        f()?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    Ok(times)
}

fn latency_row(call: String, gas: u64, mut times: Vec<f64>) -> GasRow {
    times.sort_by(f64::total_cmp);
    let mut row = GasRow::new(call, Some(1), gas, None);
    row.latency_ms = Some(world::percentile(&times, 0.5));
    row.latency_p5_ms = Some(world::percentile(&times, 0.05));
    row.latency_p95_ms = Some(world::percentile(&times, 0.95));
    row.repetitions = Some(times.len() as u32);
    row
}

/// The open offers as the client found them before the market indexed them: every listing
/// ever created (`listingOf`), the asset of each open one (`assetOf`) and its token (`quote`).
fn scan_every_listing(w: &World) -> Result<usize> {
    let next = w.dep.next_listing_id(&w.l)?;
    let mut open = 0;
    let mut id = U256::from(1);
    while id < next {
        let listing = w.dep.listing_of(&w.l, id)?;
        if listing.seller != Address::ZERO {
            let a = w.dep.asset_of(&w.l, U256::from(listing.assetId))?;
            w.dep.quote(&w.l, id, a.startTime, a.expiryTime, a.bandwidth)?;
            open += 1;
        }
        id += U256::from(1);
    }
    Ok(open)
}
