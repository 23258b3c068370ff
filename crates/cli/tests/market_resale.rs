//! Resale from the command line ("Market under attack", items 4 and 5), against a run
//! directory's market and the AS reservation service as a real process: the run's registry
//! owner is an account of its own (a 0600 key file, none of the dev accounts); a buyer lists
//! what it owns (`aviary market assets`), resells a piece it bought (`sell`), sees it among
//! the offers as a resale, cannot sell what it does not own, and takes it back (`delist`).

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use aviary_market::bindings::AsRegistry;
use aviary_market::client;
use aviary_market::contracts::view;
use aviary_market::{Account, U256};
use aviary_scion::IsdAsn;

mod market_common;

use market_common::{text, Run, C};

#[test]
fn a_buyer_resells_what_it_bought_from_the_command_line() {
    let run = Run::new("market-resale", 53000);
    let d = run.market.deployment.deployment();

    // The registry owner: its own key, 0600, not a dev account.
    let owner_key = run.dir.join("market").join("registry-owner.key");
    assert_eq!(std::fs::metadata(&owner_key).unwrap().permissions().mode() & 0o777, 0o600);
    let owner = Account::from_hex(std::fs::read_to_string(&owner_key).unwrap().trim()).unwrap();
    let ledger = run.market.ledger().unwrap();
    assert_eq!(view(&ledger, d.registry, &AsRegistry::ownerCall {}).unwrap(), owner.address());
    assert!((0..10).all(|i| Account::dev(i).address() != owner.address()));
    drop(ledger);

    // C lists its assets; the buyer takes 10 minutes of an ingress listing, all its bandwidth.
    let _service = run.start_service();
    let c = C.parse::<IsdAsn>().unwrap().to_u64();
    let t0 = Instant::now();
    let offer = loop {
        let ledger = run.market.ledger().unwrap();
        let now = aviary_node::clock::unix_s();
        let found = client::open_offers(&ledger, &d).unwrap().into_iter().find(|o| {
            o.asset.isdAs == c && o.asset.isIngress && o.asset.startTime <= now && o.asset.expiryTime > now + 1200
        });
        if let Some(o) = found {
            break o;
        }
        assert!(t0.elapsed() < Duration::from_secs(90), "C's listings within 90 s:\n{}", run.log());
        std::thread::sleep(Duration::from_millis(200));
    };
    let buyer = run.market.buyer().unwrap();
    let start = aviary_node::clock::unix_s() / 60 * 60 + 60;
    let (bw, expiry) = (offer.asset.bandwidth, start + 600);
    let price = offer.price(start, expiry, bw);
    let mut ledger = run.market.ledger().unwrap();
    let (asset, _) = d.buy(&mut ledger, &buyer, offer.listing_id, start, expiry, bw, price, price).unwrap();
    drop(ledger);

    let assets = run.market(&["assets"]);
    assert!(assets.status.success(), "{}", text(&assets));
    let row = text(&assets).lines().find(|l| l.split_whitespace().next() == Some(&asset.to_string())).map(String::from);
    let row = row.unwrap_or_else(|| panic!("asset {asset} listed:\n{}", text(&assets)));
    assert!(row.contains(C) && row.contains("ingress") && row.contains("live"), "{row}");

    // Selling something it does not own fails and says why.
    let not_mine = U256::from(offer.listing.assetId).to_string();
    let refused = run.market(&["sell", "--asset", &not_mine, "--price-per-unit", "5"]);
    assert!(!refused.status.success());
    assert!(text(&refused).contains("NotAssetOwner"), "{}", text(&refused));

    // Resold: a listing of the buyer's, shown as a resale among C's listings.
    let sold = run.market(&["sell", "--asset", &asset.to_string(), "--price-per-unit", "5"]);
    assert!(sold.status.success(), "{}", text(&sold));
    let listing = text(&sold).split_whitespace().nth(4).unwrap().to_string();
    let offers = run.market(&["offers", "--ia", C]);
    let line = text(&offers).lines().find(|l| l.split_whitespace().next() == Some(listing.as_str())).map(String::from);
    let line = line.unwrap_or_else(|| panic!("listing {listing} offered:\n{}", text(&offers)));
    assert!(line.trim_end().ends_with("resale"), "{line}");
    assert!(text(&offers).lines().any(|l| l.trim_end().ends_with(" AS")), "C's own listings:\n{}", text(&offers));
    let owned = text(&run.market(&["assets"]));
    let first_words: Vec<&str> = owned.lines().filter_map(|l| l.split_whitespace().next()).collect();
    assert!(!first_words.contains(&asset.to_string().as_str()), "listed, so the market holds it:\n{owned}");

    // Delisted: the asset is the buyer's again.
    let delisted = run.market(&["delist", "--listing", &listing]);
    assert!(delisted.status.success(), "{}", text(&delisted));
    let ledger = run.market.ledger().unwrap();
    assert_eq!(d.owner_of(&ledger, asset).unwrap(), buyer.address());
}
