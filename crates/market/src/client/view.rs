//! The buyer's view of the market, for people: times as UTC dates and durations, bandwidths
//! in kbit/s, Mbit/s or Gbit/s, amounts in a token's units ("0.0036 ETH"), and the open offers
//! as table rows sorted by price. Only formatting: the offers and the tokens' symbols and
//! decimals come from the caller (see [`super::open_offers`] and [`super::token_infos`]).

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt::Write;

use alloy_primitives::{Address, U256};

use super::{ia_text, Offer, Plan};

/// A payment token as people read amounts in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenInfo {
    pub symbol: String,
    /// Digits of the smallest unit (ERC-20 `decimals()`; 18 for the native currency).
    pub decimals: u8,
}

impl TokenInfo {
    /// The chain's native currency (wei, 18 decimals).
    pub fn native() -> Self {
        Self { symbol: "ETH".into(), decimals: 18 }
    }

    /// A token whose symbol and decimals are not known: amounts in its smallest units.
    pub fn unknown(token: Address) -> Self {
        Self { symbol: format!("units of {token}"), decimals: 0 }
    }
}

/// What is known of each payment token (zero: the native currency).
pub type TokenBook = BTreeMap<Address, TokenInfo>;

fn info(book: &TokenBook, token: Address) -> TokenInfo {
    match book.get(&token) {
        Some(i) => i.clone(),
        None if token == Address::ZERO => TokenInfo::native(),
        None => TokenInfo::unknown(token),
    }
}

/// `amount` smallest units as a decimal in the token's units: `12.5 TST`, `0.000001 ETH`.
pub fn format_amount(amount: U256, token: &TokenInfo) -> String {
    let Some(scale) = U256::from(10).checked_pow(U256::from(token.decimals)) else {
        return format!("{amount} (x 10^-{}) {}", token.decimals, token.symbol);
    };
    let (whole, frac) = amount.div_rem(scale);
    let frac = format!("{frac:0>width$}", width = usize::from(token.decimals));
    match frac.trim_end_matches('0') {
        "" => format!("{whole} {}", token.symbol),
        digits => format!("{whole}.{digits} {}", token.symbol),
    }
}

/// Unix seconds as an ISO-8601 UTC date: `2026-11-25T18:30:00Z`.
pub fn format_utc(unix_s: u64) -> String {
    let (days, secs) = (unix_s / 86_400, unix_s % 86_400);
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", secs / 3600, secs / 60 % 60, secs % 60)
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (H. Hinnant's civil_from_days:
/// eras of 400 years, 146 097 days each, counted from 0000-03-01).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let (era, doe) = (z / 146_097, z % 146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (era * 400 + yoe + u64::from(m <= 2), m, d)
}

/// A duration in seconds in days, hours, minutes and seconds: `10 min`, `1 h 30 min`, `0 s`.
pub fn format_duration(secs: u64) -> String {
    let mut parts = Vec::new();
    let mut rest = secs;
    for (unit, name) in [(86_400, "d"), (3600, "h"), (60, "min"), (1, "s")] {
        if rest >= unit {
            parts.push(format!("{} {name}", rest / unit));
            rest %= unit;
        }
    }
    if parts.is_empty() {
        "0 s".into()
    } else {
        parts.join(" ")
    }
}

/// A bandwidth given in kbit/s, in the largest unit it has at most three decimals in:
/// `500 kbit/s`, `1.5 Mbit/s`, `2 Gbit/s`.
pub fn format_bandwidth(kbps: u64) -> String {
    let (scale, unit) = match kbps {
        1_000_000.. => (1_000_000, "Gbit/s"),
        1_000.. => (1_000, "Mbit/s"),
        _ => return format!("{kbps} kbit/s"),
    };
    let frac = format!("{:0>width$}", kbps % scale, width = if scale == 1_000 { 3 } else { 6 });
    match frac.trim_end_matches('0') {
        "" => format!("{} {unit}", kbps / scale),
        digits if digits.len() <= 3 => format!("{}.{digits} {unit}", kbps / scale),
        _ => format!("{kbps} kbit/s"),
    }
}

/// One open offer as the buyer reads it (every field formatted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OfferRow {
    pub listing: String,
    pub isd_as: String,
    pub interface: String,
    pub direction: &'static str,
    pub start: String,
    pub duration: String,
    pub grid: String,
    pub bandwidth: String,
    pub min_bandwidth: String,
    /// The posted price per Mbit/s reserved for one second, in the token's units.
    pub price_per_mbps_s: String,
    pub marketplace: String,
    /// `AS` when the issuing AS sells, `resale` when an account resells what it bought.
    pub seller: &'static str,
}

const HEADER: [&str; 12] = [
    "listing",
    "ISD-AS",
    "if",
    "dir",
    "start (UTC)",
    "for",
    "grid",
    "bandwidth",
    "min",
    "price per Mbit/s·s",
    "market",
    "seller",
];

impl OfferRow {
    fn cells(&self) -> [&str; 12] {
        [
            &self.listing,
            &self.isd_as,
            &self.interface,
            self.direction,
            &self.start,
            &self.duration,
            &self.grid,
            &self.bandwidth,
            &self.min_bandwidth,
            &self.price_per_mbps_s,
            &self.marketplace,
            self.seller,
        ]
    }
}

/// The offers not expired at `now` as rows, cheapest first: by the posted price per unit in
/// the token's units (tokens of other decimals compared as decimals), then by listing id.
pub fn offer_rows(offers: &[Offer], tokens: &TokenBook, now: u64) -> Vec<OfferRow> {
    let mut open: Vec<&Offer> = offers.iter().filter(|o| o.asset.expiryTime > now).collect();
    open.sort_by(|a, b| cheaper(a, b, tokens));
    open.into_iter()
        .map(|o| {
            let a = &o.asset;
            let token = info(tokens, o.payment_token);
            let per_mbps_s = U256::from(o.listing.pricePerUnit) * U256::from(1000);
            OfferRow {
                listing: o.listing_id.to_string(),
                isd_as: ia_text(a.isdAs),
                interface: a.interfaceId.to_string(),
                direction: if a.isIngress { "ingress" } else { "egress" },
                start: format_utc(a.startTime),
                duration: format_duration(a.expiryTime.saturating_sub(a.startTime)),
                grid: format_duration(a.timeGranularity.into()),
                bandwidth: format_bandwidth(a.bandwidth),
                min_bandwidth: format_bandwidth(a.minBandwidth.into()),
                price_per_mbps_s: format_amount(per_mbps_s, &token),
                marketplace: format!("{} ({})", o.listing.marketplaceId, token.symbol),
                seller: if o.resale { "resale" } else { "AS" },
            }
        })
        .collect()
}

/// `rows` as a text table with a header, columns as wide as their widest cell.
pub fn offers_table(rows: &[OfferRow]) -> String {
    let mut widths = HEADER.map(|h| h.chars().count());
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r.cells()) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    for cells in std::iter::once(HEADER).chain(rows.iter().map(OfferRow::cells)) {
        let line: Vec<String> = cells.iter().zip(widths).map(|(c, w)| pad(c, w)).collect();
        let _ = writeln!(out, "{}", line.join("  ").trim_end());
    }
    out
}

fn pad(cell: &str, width: usize) -> String {
    let n = cell.chars().count();
    format!("{cell}{}", " ".repeat(width.saturating_sub(n)))
}

/// The plan as lines: each hop's listings per side and price, then the window and the total.
pub fn plan_lines(plan: &Plan, tokens: &TokenBook) -> Vec<String> {
    let listings =
        |pieces: &[super::Piece]| pieces.iter().map(|p| p.offer.listing_id.to_string()).collect::<Vec<_>>().join("+");
    let mut lines: Vec<String> = plan
        .hops
        .iter()
        .map(|h| {
            format!(
                "{:<16} {:>3} -> {:<3} listings {} / {}  {}",
                ia_text(h.want.isd_as),
                h.want.ingress,
                h.want.egress,
                listings(&h.ingress),
                listings(&h.egress),
                format_amount(h.price, &info(tokens, plan.token))
            )
        })
        .collect();
    lines.push(format!(
        "total {} for {} from {} to {} at {}",
        format_amount(plan.total, &info(tokens, plan.token)),
        format_duration(plan.expiry.saturating_sub(plan.start)),
        format_utc(plan.start),
        format_utc(plan.expiry),
        format_bandwidth(plan.bandwidth)
    ));
    lines
}

/// Cheaper first: the posted price per unit in whole token units (so tokens of other decimals
/// compare as amounts; an f64 is exact enough to order), then the listing id.
fn cheaper(a: &Offer, b: &Offer, tokens: &TokenBook) -> Ordering {
    let unit = |o: &Offer| o.listing.pricePerUnit as f64 / 10f64.powi(info(tokens, o.payment_token).decimals.into());
    unit(a).total_cmp(&unit(b)).then_with(|| a.listing_id.cmp(&b.listing_id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc_iso_8601() {
        assert_eq!(format_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(format_utc(1_800_003_661), "2027-01-15T09:01:01Z");
        assert_eq!(format_utc(4_102_444_799), "2099-12-31T23:59:59Z");
    }

    #[test]
    fn durations_bandwidths_and_amounts_read_as_people_write_them() {
        assert_eq!(format_duration(600), "10 min");
        assert_eq!(format_duration(5400), "1 h 30 min");
        assert_eq!(format_duration(90_061), "1 d 1 h 1 min 1 s");
        assert_eq!(format_duration(0), "0 s");
        assert_eq!(format_bandwidth(500), "500 kbit/s");
        assert_eq!(format_bandwidth(1000), "1 Mbit/s");
        assert_eq!(format_bandwidth(1500), "1.5 Mbit/s");
        assert_eq!(format_bandwidth(2_500_000), "2.5 Gbit/s");
        assert_eq!(format_bandwidth(1_000_001), "1000001 kbit/s");
        let tst = TokenInfo { symbol: "TST".into(), decimals: 18 };
        assert_eq!(format_amount(U256::from(125) * U256::from(10u64.pow(17)), &tst), "12.5 TST");
        assert_eq!(format_amount(U256::from(1), &tst), "0.000000000000000001 TST");
        assert_eq!(format_amount(U256::ZERO, &TokenInfo::native()), "0 ETH");
        let raw = TokenInfo { symbol: "X".into(), decimals: 0 };
        assert_eq!(format_amount(U256::MAX, &raw), format!("{} X", U256::MAX));
        let absurd = TokenInfo { symbol: "Y".into(), decimals: 200 };
        assert_eq!(format_amount(U256::from(7), &absurd), "7 (x 10^-200) Y");
    }

    fn offer(id: u64, token: Address, price: u128, expiry: u64) -> Offer {
        use crate::contracts::{Asset, Listing};
        Offer {
            listing_id: U256::from(id),
            listing: Listing {
                seller: Address::repeat_byte(1),
                marketplaceId: 2,
                openSlot: 1,
                pricePerUnit: price,
                assetId: 1,
            },
            asset: Asset {
                owner: Address::repeat_byte(1),
                isdAs: (1 << 48) | 0xff00_0000_0110,
                interfaceId: 2,
                isIngress: false,
                bandwidth: 1500,
                startTime: 0,
                expiryTime: expiry,
                timeGranularity: 60,
                minBandwidth: 100,
            },
            payment_token: token,
            issuer_registered: true,
            resale: false,
        }
    }

    #[test]
    fn rows_hide_expired_offers_and_put_the_cheapest_first_across_decimals() {
        let six = Address::repeat_byte(6);
        let tokens: TokenBook = [(six, TokenInfo { symbol: "SIX".into(), decimals: 6 })].into();
        // 10^9 wei (10^-9 ETH) < 1 SIX unit (10^-6 SIX) < 2 * 10^12 wei (2 * 10^-6 ETH).
        let offers = [
            offer(1, Address::ZERO, 2_000_000_000_000, 7200),
            offer(2, six, 1, 7200),
            offer(3, Address::ZERO, 1_000_000_000, 7200),
            offer(4, Address::ZERO, 1, 3600),
        ];
        let rows = offer_rows(&offers, &tokens, 3600);
        assert_eq!(rows.iter().map(|r| r.listing.as_str()).collect::<Vec<_>>(), ["3", "2", "1"]);
        assert_eq!(rows[1].price_per_mbps_s, "0.001 SIX");
        assert_eq!(rows[1].marketplace, "2 (SIX)");
        assert_eq!(rows[0].price_per_mbps_s, "0.000001 ETH");
        assert_eq!((rows[0].start.as_str(), rows[0].duration.as_str()), ("1970-01-01T00:00:00Z", "2 h"));
        assert_eq!((rows[0].grid.as_str(), rows[0].bandwidth.as_str()), ("1 min", "1.5 Mbit/s"));
        let table = offers_table(&rows);
        assert!(table.lines().next().unwrap().starts_with("listing  ISD-AS"), "{table}");
        assert_eq!(table.lines().count(), 4);
    }
}
