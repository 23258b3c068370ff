//! Admission at issuance: an issued asset is a promise (a buyer may redeem any piece of it at
//! any time until it expires), so the AS service books the asset's bandwidth in the AS's store
//! *before* it issues the asset. Operator grants made afterwards see that bandwidth as taken,
//! and a redeem request is never refused for lack of bandwidth: the buyer's payment is never
//! stranded by a grant made between the purchase and the delivery.
//!
//! A period is listed with what is left of its offer's bandwidth after the grants already held
//! (in whole kbit/s); with less than the offer's minimum piece left it is not listed at all.

use crate::config::ConfigError;
use crate::resid_store::{AdmissionError, Leg, Limits, ResIdStore, StoreError};

use super::{AsServiceConfig, OfferConfig};

/// The store key of the listing of offer `index` for the period from `start`.
pub fn listing_key(index: usize, start: u64) -> String {
    format!("offer {index} period {start}")
}

/// Books the asset of offer `index` (`o`) for the period from `start` at `now`; the kbit/s to
/// issue, at most the offer's.
pub fn book_listing(
    store: &ResIdStore,
    limits: &Limits,
    index: usize,
    o: &OfferConfig,
    start: u64,
    now: u64,
) -> Result<u64, StoreError<AdmissionError>> {
    let leg = Leg {
        interface: o.interface,
        direction: o.direction,
        bps: o.bandwidth_kbps.saturating_mul(1000),
        start,
        end: start + o.period_s,
    };
    let min_bps = u64::from(o.min_bandwidth_kbps) * 1000;
    store
        .transact(|s| {
            s.expire(now);
            s.bandwidth.admit_listing(limits, &listing_key(index, start), leg, min_bps)
        })
        .map(|bps| bps / 1000)
}

/// The static half of the rule, at start-up: the offers on one side of an interface together
/// must fit its reservable bandwidth (assuming their periods overlap), so that a config that
/// could never be sold in full is refused rather than silently listed short.
pub fn check_offers(file: &str, cfg: &AsServiceConfig, limits: &Limits) -> Result<(), ConfigError> {
    let mut sums = std::collections::BTreeMap::new();
    for (i, o) in cfg.offers.iter().enumerate() {
        let Some(limit) = limits.get(o.interface) else {
            let msg =
                format!("no [[hummingbird.interface]] gives the reservable bandwidth of interface {}", o.interface);
            return Err(ConfigError::new(file, format!("offer[{i}].interface"), msg));
        };
        let sum = sums.entry((o.interface, o.direction)).or_insert(0u128);
        *sum += u128::from(o.bandwidth_kbps) * 1000;
        if *sum > u128::from(limit) {
            let msg = format!(
                "the offers on interface {} ({}) sell {} kbit/s, more than its {} reservable",
                o.interface,
                o.direction,
                *sum / 1000,
                crate::resid_store::admission::fmt_bps(limit)
            );
            return Err(ConfigError::new(file, format!("offer[{i}].bandwidth_kbps"), msg));
        }
    }
    Ok(())
}
