//! The buyer's commands against a run directory's market and the AS reservation service as a
//! real process ("Market under attack", item 2): a purchase the AS does not answer (its
//! service is stopped) past a short deadline is listed as expired, not written, and reclaimed
//! with `aviary market reclaim`; a purchase whose buyer died after paying (the record written,
//! nobody waiting) is resumed by `aviary market wait`, which writes its reservation file.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use aviary_market::client::{self, HopWant};
use aviary_market::Ledger;
use aviary_node::buyer::{self, NewPurchase, Purchase};
use aviary_node::host::ReservationFile;
use aviary_scion::IsdAsn;

mod market_common;

use market_common::{text, Run, C};

/// Buys 10 minutes at 1 Mbit/s across C as `aviary market buy` does, to be delivered within
/// `window_s`, and returns without waiting (a buyer killed after paying); the record's path.
fn buy_and_die(run: &Run, window_s: u32, out: &Path) -> PathBuf {
    let mut ledger = run.market.ledger().unwrap();
    let d = run.market.deployment.deployment();
    let account = run.market.buyer().unwrap();
    let start = aviary_node::clock::unix_s() / 60 * 60;
    let purchase = Purchase {
        start,
        expiry: start + 600,
        bandwidth_kbps: 1000,
        reverse: false,
        wait_for_offers: Duration::from_secs(90),
        wait_for_delivery: Duration::ZERO,
        delivery_window_s: window_s,
        payment_token: aviary_market::Address::ZERO,
    };
    let wants = [HopWant { isd_as: C.parse::<IsdAsn>().unwrap().to_u64(), ingress: 1, egress: 2 }];
    let plan = buyer::plan(&ledger, &d, Some(account.address()), &wants, &purchase).unwrap();
    let ends = ("1-ff00:0:111".parse().unwrap(), "1-ff00:0:112".parse().unwrap());
    let new = NewPurchase {
        buyer: account.address(),
        ends,
        reverse: false,
        hops: 1,
        window: purchase.window(),
        out: Some(out.to_path_buf()),
        reverse_out: None,
    };
    buyer::buy(&mut ledger, &d, &account, &plan, new, &purchase, &run.market.purchases_dir()).unwrap()
}

#[test]
fn a_missed_deadline_is_reclaimed_and_a_killed_purchase_is_resumed_by_wait() {
    let run = Run::new("market-buyer", 50500);
    // The service registers C and lists its assets; then it stops answering.
    let service = run.start_service();
    let ledger = run.market.ledger().unwrap();
    let d = run.market.deployment.deployment();
    let t0 = Instant::now();
    let hop = HopWant { isd_as: C.parse::<IsdAsn>().unwrap().to_u64(), ingress: 1, egress: 2 };
    let now = aviary_node::clock::unix_s() / 60 * 60;
    let window = client::Window { start: now, expiry: now + 600, bandwidth: 1000 };
    while client::plan_cheapest(
        &client::open_offers(&ledger, &d).unwrap(),
        &[hop],
        window,
        aviary_market::Address::ZERO,
    )
    .is_err()
    {
        assert!(t0.elapsed() < Duration::from_secs(90), "C's listings within 90 s:\n{}", run.log());
        std::thread::sleep(Duration::from_millis(200));
    }
    // The offers as the buyer reads them: dates, durations, the grid, prices in ETH.
    let offers = run.market(&["offers", "--ia", C]);
    assert!(offers.status.success(), "{}", text(&offers));
    let shown = text(&offers);
    for part in ["price per Mbit/s·s", "ingress", "egress", " 1 min ", " 1 h ", " ETH ", "1 (ETH)", "Z "] {
        assert!(shown.contains(part), "{part:?} in\n{shown}");
    }
    drop(service);

    let unanswered_out = run.dir.join("unanswered.json");
    let unanswered = buy_and_die(&run, 2, &unanswered_out);
    let listed = run.market(&["requests"]);
    assert!(listed.status.success(), "{}", text(&listed));
    let deadline = Instant::now() + Duration::from_secs(30);
    while !text(&run.market(&["requests"])).contains("expired-reclaimable") {
        assert!(Instant::now() < deadline, "the 2 s deadline passes");
        std::thread::sleep(Duration::from_millis(500));
    }
    // Waiting says what is missing and that it can be reclaimed; nothing is written.
    let waited = run.market(&["wait", "--timeout-s", "1"]);
    assert!(!waited.status.success());
    assert!(
        text(&waited).contains("expired-reclaimable") && text(&waited).contains("market reclaim"),
        "{}",
        text(&waited)
    );
    assert!(!unanswered_out.exists());
    let reclaimed = run.market(&["reclaim"]);
    assert!(reclaimed.status.success(), "{}", text(&reclaimed));
    assert!(text(&reclaimed).contains("1 request(s) reclaimed"), "{}", text(&reclaimed));
    let record = buyer::PurchaseRecord::load(&unanswered).unwrap();
    let req = d.request_of(&ledger, record.requests[0]).unwrap();
    for asset in [req.ingressId, req.egressId] {
        let owner = d.owner_of(&ledger, aviary_market::U256::from(asset)).unwrap();
        assert_eq!(owner, run.market.buyer().unwrap().address(), "the assets are the buyer's again");
    }
    assert!(text(&run.market(&["requests"])).contains("reclaimed"));
    assert!(text(&run.market(&["reclaim"])).contains("0 request(s) reclaimed"), "once");

    // A buyer killed after paying: the service answers, `wait` opens and writes it.
    let _service = run.start_service();
    let out = run.dir.join("resumed.json");
    let record = buy_and_die(&run, 600, &out);
    assert_eq!(std::fs::metadata(&record).unwrap().permissions().mode() & 0o777, 0o600);
    let name = record.file_name().unwrap().to_str().unwrap();
    let waited = run.market(&["wait", "--purchase", name, "--timeout-s", "60"]);
    assert!(waited.status.success(), "{}\n{}", text(&waited), run.log());
    let file = ReservationFile::load(&out).unwrap();
    assert_eq!(file.reservations.len(), 1);
    assert_eq!(file.reservations[0].ia, C.parse::<IsdAsn>().unwrap());
    assert_eq!(std::fs::metadata(&out).unwrap().permissions().mode() & 0o777, 0o600);
    assert!(text(&run.market(&["requests"])).contains("delivered"));
}

#[test]
fn the_dry_run_rejects_past_off_grid_too_long_and_overflowing_windows_before_anything_else() {
    let run = Run::new("market-window", 50500);
    let now = run.market.ledger().unwrap().pending_timestamp().unwrap();
    // No host config exists: the window is refused before the path is asked for.
    let host = run.dir.join("no-such-host.toml");
    let buy = |start: u64| {
        let start = start.to_string();
        let args = ["buy", "--host", host.to_str().unwrap(), "--dst", "1-ff00:0:112", "--bandwidth-bps", "1000000"];
        run.market(&[&args[..], &["--start", &start, "--dry-run"]].concat())
    };
    let past = buy(now / 60 * 60 - 60);
    assert!(!past.status.success());
    assert!(
        text(&past).contains("before the chain's time") && text(&past).contains("next grid point"),
        "{}",
        text(&past)
    );
    let off = buy(now / 60 * 60 + 150);
    assert!(!off.status.success());
    assert!(text(&off).contains("is not on the time grid of 1 min"), "{}", text(&off));
    let huge = buy(u64::MAX - 59);
    assert!(!huge.status.success());
    assert!(text(&huge).contains("past the largest time"), "{}", text(&huge));
    // Longer than a reservation's 16-bit ResDuration: the AS could not redeem it.
    let start = (now / 60 * 60 + 120).to_string();
    let args = ["buy", "--host", host.to_str().unwrap(), "--dst", "1-ff00:0:112", "--bandwidth-bps", "1000000"];
    let long = run.market(&[&args[..], &["--start", &start, "--duration-s", "86400", "--dry-run"]].concat());
    assert!(!long.status.success());
    assert!(text(&long).contains("longer than a reservation can be (65535 s"), "{}", text(&long));
    // A window on the grid and ahead gets past the check (to the missing host config).
    let ahead = buy(now / 60 * 60 + 120);
    assert!(text(&ahead).contains("no-such-host.toml"), "{}", text(&ahead));
}
