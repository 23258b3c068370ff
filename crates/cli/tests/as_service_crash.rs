//! The AS reservation service as a real process (`aviary as-service`) against the embedded
//! ledger of a run directory, killed at the worst moments: while a request is filed, after it
//! sealed the reservation, and after its delivery went out but before it recorded that. Every
//! paid request is delivered exactly once, with one ResID.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use aviary_hummingbird::BuyerKey;
use aviary_market::client::{self, HopWant};
use aviary_market::{Bytes, U256};
use aviary_node::as_service::FAULT_ENV;
use aviary_node::runner::market_setup::MarketLayout;
use aviary_node::runner::RunLayout;
use aviary_scratch::ScratchDir;

/// Core AS C of line5: transit from interface 1 to 2.
const C: &str = "1-ff00:0:110";

struct Run {
    market: MarketLayout,
    cfg: PathBuf,
    log: PathBuf,
    /// Last, so that it goes after what uses it.
    _dir: ScratchDir,
}

impl Run {
    fn new(name: &str) -> Self {
        let dir = ScratchDir::new(&format!("it-{name}"));
        let topo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/topologies/line5.toml");
        let mut layout = RunLayout::write(&topo, &dir, 48500).unwrap();
        layout.enable_market().unwrap();
        let market = layout.market.unwrap();
        let cfg = market.as_services[&C.parse().unwrap()].clone();
        let log = dir.join("as-service.log");
        Self { market, cfg, log, _dir: dir }
    }

    /// Starts C's AS service, armed to die at `fault` if given.
    fn start(&self, fault: Option<&str>) -> Service {
        let log = OpenOptions::new().create(true).append(true).open(&self.log).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_aviary"));
        cmd.args(["as-service", "--config"]).arg(&self.cfg);
        cmd.stdin(Stdio::null()).stdout(log.try_clone().unwrap()).stderr(log);
        match fault {
            Some(f) => cmd.env(FAULT_ENV, f),
            None => cmd.env_remove(FAULT_ENV),
        };
        Service(cmd.spawn().unwrap())
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn hop() -> HopWant {
        HopWant { isd_as: C.parse::<aviary_scion::IsdAsn>().unwrap().to_u64(), ingress: 1, egress: 2 }
    }

    /// Waits until C's listings are on sale.
    fn wait_for_listings(&self) {
        let ledger = self.market.ledger().unwrap();
        let d = self.market.deployment.deployment();
        let t0 = Instant::now();
        let now = aviary_node::clock::unix_s() / 60 * 60;
        while client::plan_cheapest(
            &client::open_offers(&ledger, &d).unwrap(),
            &[Self::hop()],
            window(now),
            aviary_market::Address::ZERO,
        )
        .is_err()
        {
            assert!(t0.elapsed() < Duration::from_secs(90), "C's listings within 90 s:\n{}", self.log());
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Buys 10 minutes at 1 Mbit/s across C from the start of this minute.
    fn buy(&self, who: &str) -> (U256, BuyerKey) {
        let mut ledger = self.market.ledger().unwrap();
        let d = self.market.deployment.deployment();
        let start = aviary_node::clock::unix_s() / 60 * 60;
        let offers = client::open_offers(&ledger, &d).unwrap();
        let plan = client::plan_cheapest(&offers, &[Self::hop()], window(start), aviary_market::Address::ZERO).unwrap();
        let key = BuyerKey::derive(who.as_bytes());
        let terms = client::DeliveryTerms { key: &key, window_s: client::DEFAULT_DELIVERY_WINDOW_S };
        let ids = client::buy_path(&mut ledger, &d, &self.market.buyer().unwrap(), &plan, terms).unwrap();
        (ids[0], key)
    }

    fn on_chain(&self, id: U256) -> Bytes {
        self.market.deployment.deployment().reservation_of(&self.market.ledger().unwrap(), id).unwrap()
    }

    /// Waits for the reservation of `id` and opens it; its ResID.
    fn delivered(&self, id: U256, key: &BuyerKey) -> u32 {
        let ledger = self.market.ledger().unwrap();
        let d = self.market.deployment.deployment();
        let opened = client::await_deliveries(&ledger, &d, &[id], key, Duration::from_secs(60))
            .unwrap_or_else(|e| panic!("{e}:\n{}", self.log()));
        opened[0].1.info.res_id
    }

    /// The service's state file.
    fn state(&self) -> serde_json::Value {
        let f = self.cfg.parent().unwrap().join("state/as-service.json");
        serde_json::from_slice(&std::fs::read(f).unwrap()).unwrap()
    }

    /// Waits until the service has recorded every delivery (no open request in its state), so
    /// that stopping it now interrupts nothing.
    fn wait_recorded(&self) {
        let t0 = Instant::now();
        while self.state()["deliveries"].as_object().is_none_or(|d| !d.is_empty()) {
            assert!(t0.elapsed() < Duration::from_secs(60), "deliveries recorded within 60 s:\n{}", self.log());
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The ResIDs held in C's store for request `id`.
    fn held_for(&self, id: U256) -> Vec<u64> {
        let f = self.cfg.parent().unwrap().join("state/resids.json");
        let store: serde_json::Value = serde_json::from_slice(&std::fs::read(f).unwrap()).unwrap();
        let holder: String = id.to_be_bytes::<32>().iter().map(|b| format!("{b:02x}")).collect();
        store["resids"]["held"]["1"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|h| h["holder"] == holder.as_str())
            .map(|h| h["res_id"].as_u64().unwrap())
            .collect()
    }
}

/// The service process; killed when dropped, so that a failing test leaves none behind.
struct Service(Child);

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait_exit(service: &mut Service, what: &str, log: impl Fn() -> String) -> ExitStatus {
    let t0 = Instant::now();
    loop {
        if let Some(status) = service.0.try_wait().unwrap() {
            return status;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "{what} within 60 s:\n{}", log());
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// SIGKILL, as a crash.
fn stop(service: Service) {
    drop(service);
}

#[test]
fn every_paid_request_is_delivered_once_however_the_service_dies() {
    let run = Run::new("asvc-crash");
    let service = run.start(None);
    run.wait_for_listings();
    // Killed (SIGKILL) before the request is filed; started again after: delivered.
    stop(service);
    let (first, first_key) = run.buy("first");
    let service = run.start(None);
    let first_res_id = run.delivered(first, &first_key);
    run.wait_recorded();
    stop(service);

    // Dies after sealing, before sending: the restarted service sends the blob it sealed.
    let (second, second_key) = run.buy("second");
    let mut service = run.start(Some("after-seal"));
    assert!(!wait_exit(&mut service, "death after sealing", || run.log()).success());
    assert!(run.on_chain(second).is_empty(), "nothing sent");
    let open = &run.state()["deliveries"][second.to_string()];
    assert_eq!(open["stage"], "sealed", "{open}");
    let sealed: Bytes = open["sealed"].as_str().unwrap().parse().unwrap();
    let service = run.start(None);
    let second_res_id = run.delivered(second, &second_key);
    assert_eq!(run.on_chain(second), sealed, "the reservation sealed before the crash");
    run.wait_recorded();
    stop(service);

    // Dies after its delivery went out, before recording it: the restarted service finds it
    // on chain and sends nothing more.
    let (third, third_key) = run.buy("third");
    let mut service = run.start(Some("after-send"));
    assert!(!wait_exit(&mut service, "death after sending", || run.log()).success());
    let sent = run.on_chain(third);
    assert!(!sent.is_empty(), "mined before the crash");
    assert_eq!(run.state()["deliveries"][third.to_string()]["stage"], "sealed");
    let service = run.start(None);
    run.wait_recorded();
    let third_res_id = run.delivered(third, &third_key);
    assert_eq!(run.on_chain(third), sent);
    stop(service);

    let log = run.log();
    assert_eq!(log.matches("reservation delivered").count(), 3, "each request delivered once:\n{log}");
    assert_eq!(log.matches("found on chain").count(), 1, "{log}");
    assert!(!log.contains("delivery attempt failed"), "no second delivery was tried:\n{log}");
    // One ResID per request, and the three overlapping reservations have distinct ones.
    for (id, res_id) in [(first, first_res_id), (second, second_res_id), (third, third_res_id)] {
        assert_eq!(run.held_for(id), [u64::from(res_id)], "request {id}");
    }
    let mut ids = [first_res_id, second_res_id, third_res_id];
    ids.sort_unstable();
    assert!(ids.windows(2).all(|w| w[0] != w[1]), "{ids:?}");
}

/// Ten minutes from `start` at 1 Mbit/s.
fn window(start: u64) -> client::Window {
    client::Window { start, expiry: start + 600, bandwidth: 1000 }
}
