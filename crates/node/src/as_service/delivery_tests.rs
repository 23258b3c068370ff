//! A paid request is never dropped: deliveries that fail are retried with the same sealed
//! reservation and ResID, across a restart; requests that cannot be answered are closed with
//! their reason, once. The AS service runs in this process against the embedded ledger of a
//! run directory, with time passed in.

use aviary_hummingbird::BuyerKey;
use aviary_market::client::{self, HopWant};
use aviary_market::embedded::GAS_PRICE;
use aviary_market::ledger::TX_GAS_CAP;
use aviary_market::{Address, Bytes, Ledger, SharedLedger, U256};

use std::sync::Mutex;

use super::*;
use crate::runner::market_setup::MarketLayout;
use crate::runner::RunLayout;

/// Core AS C of line5: transit from interface 1 to 2.
const C: &str = "1-ff00:0:110";

struct Setup {
    market: MarketLayout,
    cfg_path: PathBuf,
    /// Last, so that it goes after what uses it.
    _dir: aviary_scratch::ScratchDir,
}

impl Setup {
    fn new(name: &str) -> Self {
        let dir = aviary_scratch::ScratchDir::new(&format!("asvc-{name}"));
        let topo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/topologies/line5.toml");
        let mut layout = RunLayout::write(&topo, &dir, 48500).unwrap();
        layout.enable_market().unwrap();
        let market = layout.market.unwrap();
        let cfg_path = market.as_services[&C.parse().unwrap()].clone();
        Self { market, cfg_path, _dir: dir }
    }

    /// The AS service of C, as a (re)started process would build it.
    fn service(&self) -> AsService {
        AsService::new(AsServiceConfig::load(&self.cfg_path).unwrap(), &self.cfg_path).unwrap()
    }

    fn ledger(&self) -> SharedLedger {
        self.market.ledger().unwrap()
    }

    /// Buys `[start, start + secs)` at 1 Mbit/s across C, to be delivered within the hour; the
    /// request id and the buyer's key.
    fn buy(&self, start: u64, secs: u64) -> (U256, BuyerKey) {
        self.buy_within(start, secs, 3600)
    }

    /// [`Self::buy`] with a delivery window of `window_s`.
    fn buy_within(&self, start: u64, secs: u64, window_s: u32) -> (U256, BuyerKey) {
        let mut ledger = self.ledger();
        let d = self.market.deployment.deployment();
        let offers = client::open_offers(&ledger, &d).unwrap();
        let hop = HopWant { isd_as: C.parse::<IsdAsn>().unwrap().to_u64(), ingress: 1, egress: 2 };
        let window = client::Window { start, expiry: start + secs, bandwidth: 1000 };
        let plan = client::plan_cheapest(&offers, &[hop], window, aviary_market::Address::ZERO).unwrap();
        let key = BuyerKey::derive(format!("buyer {start}").as_bytes());
        let terms = client::DeliveryTerms { key: &key, window_s };
        let ids = client::buy_path(&mut ledger, &d, &self.market.buyer().unwrap(), &plan, terms).unwrap();
        (ids[0], key)
    }
}

/// A state file that is there but cannot be read stops the service, named; only a missing one
/// means a first start (which would issue and list again what is already on chain).
#[test]
fn an_unreadable_state_file_is_an_error_not_a_fresh_start() {
    let s = Setup::new("unreadable");
    let cfg = AsServiceConfig::load(&s.cfg_path).unwrap();
    let state_file = cfg.state_dir.join("as-service.json");
    std::fs::create_dir_all(&state_file).unwrap();
    let e = format!("{:#}", AsService::new(cfg, &s.cfg_path).err().expect("the service started"));
    assert!(e.contains("cannot read") && e.contains("as-service.json"), "{e}");
    std::fs::remove_dir(&state_file).unwrap();
    s.service();
}

/// A service that stopped between becoming a seller and approving the market gets the
/// approval at its next start, and lists what it issues.
#[test]
fn a_seller_left_unapproved_by_a_crash_approves_the_market_at_start() {
    let s = Setup::new("unapproved");
    let svc = s.service();
    let d = svc.deployment.deployment();
    let me = svc.account.address();
    let mut ledger = s.ledger();
    d.register_seller(&mut ledger, &svc.account, svc.deployment.marketplace).unwrap();
    assert!(!d.is_approved_for_all(&ledger, me, d.market).unwrap());
    drop(svc);
    let mut svc = s.service();
    svc.register().unwrap();
    assert!(d.is_approved_for_all(&ledger, me, d.market).unwrap());
    assert!(svc.issue_due(unix_s()).unwrap() > 0, "nothing listed");
}

fn sample(text: &str, name_and_labels: &str) -> Option<u64> {
    text.lines().find_map(|l| l.strip_prefix(name_and_labels)?.strip_prefix(' ')?.parse().ok())
}

#[test]
fn a_delivery_that_fails_is_retried_after_a_restart_with_the_same_reservation_and_res_id() {
    let s = Setup::new("retry");
    let mut svc = s.service();
    let now = unix_s();
    svc.register().unwrap();
    svc.issue_due(now).unwrap();
    // The AS's account runs out of gas money: the chain refuses its next transaction.
    let mut ledger = s.ledger();
    let me = svc.account.clone();
    let reserve = U256::from(TX_GAS_CAP) * U256::from(GAS_PRICE);
    let balance = ledger.balance(me.address()).unwrap();
    ledger.send(&me, Address::repeat_byte(1), Bytes::new(), balance - reserve).unwrap().into_result().unwrap();

    let start = now / 60 * 60;
    let (id, key) = s.buy(start, 600);
    svc.poll(now);
    let d = s.market.deployment.deployment();
    assert!(d.reservation_of(&ledger, id).unwrap().is_empty(), "nothing delivered");
    let open = svc.stats().lock().unwrap().open_requests.clone();
    assert_eq!(open.len(), 1, "{open:?}");
    assert_eq!((open[0].stage, open[0].failures, open[0].next_attempt_s), ("sealed", 1, now + 1));
    assert!(open[0].last_error.as_deref().unwrap().contains("invalid transaction"), "{open:?}");
    let text = svc.stats().lock().unwrap().prometheus();
    assert_eq!(
        sample(&text, r#"aviary_as_service_delivery_failures_total{ia="1-ff00:0:110",reason="ledger"}"#),
        Some(1)
    );
    assert_eq!(sample(&text, r#"aviary_as_service_open_requests{ia="1-ff00:0:110"}"#), Some(1));
    let sealed = svc.deliveries.values().next().unwrap().stage.sealed().unwrap().0.clone();
    // Not before its backoff.
    svc.poll(now);
    assert_eq!(svc.stats().lock().unwrap().delivery_retries, 0);

    // Restarted and funded again, the service delivers the reservation it sealed before.
    drop(svc);
    ledger.fund(me.address(), U256::from(10u128.pow(18))).unwrap();
    let mut svc = s.service();
    svc.poll(now + 1);
    assert_eq!(d.reservation_of(&ledger, id).unwrap(), sealed, "the same sealed reservation");
    let opened = client::await_deliveries(&ledger, &d, &[id], &key, std::time::Duration::ZERO).unwrap();
    assert_eq!(opened.len(), 1);
    // One ResID, held for this request, the one delivered.
    let holder = hex::encode(id.to_be_bytes::<32>());
    let store = svc.resids.snapshot().unwrap();
    let held: Vec<_> = store.resids.held(1).iter().filter(|h| h.holder.as_deref() == Some(holder.as_str())).collect();
    assert_eq!(held.len(), 1, "{held:?}");
    assert_eq!(held[0].res_id, opened[0].1.info.res_id);
    assert_eq!(store.resids.held(1).len(), 1);
    let stats = svc.stats().lock().unwrap().clone();
    assert_eq!((stats.deliveries, stats.delivery_retries, stats.open_requests.len()), (1, 1, 0));
    // Answered once: nothing more happens to it.
    svc.poll(now + 1000);
    assert_eq!(svc.stats().lock().unwrap().deliveries, 1);
    assert!(svc.service.is_delivered(&id.to_be_bytes::<32>()));
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&svc.state_file).unwrap().permissions().mode() & 0o777, 0o600);
}

#[test]
fn a_request_that_cannot_be_answered_is_closed_with_its_reason_once() {
    let s = Setup::new("refused");
    let mut svc = s.service();
    let now = unix_s();
    svc.register().unwrap();
    svc.issue_due(now).unwrap();
    let start = now / 60 * 60;
    let (id, _) = s.buy(start, 600);
    // The service looks only after the interval is over: nothing to deliver.
    let later = start + 601;
    svc.poll(later);
    svc.poll(later + 1000);
    let stats = svc.stats().lock().unwrap().clone();
    assert_eq!(stats.redeem_requests_failed.get("interval_over"), Some(&1), "{stats:?}");
    assert_eq!((stats.refused_requests, stats.open_requests.len(), stats.deliveries), (1, 0, 0));
    assert_eq!(svc.refused[&id.to::<u64>()].reason, "interval_over");
    let text = stats.prometheus();
    let failed = r#"aviary_as_service_redeem_requests_failed_total{ia="1-ff00:0:110",reason="interval_over"}"#;
    assert_eq!(sample(&text, failed), Some(1), "{text}");
    // A restarted service remembers it and does not look at it again.
    drop(svc);
    let mut svc = s.service();
    svc.poll(later + 2000);
    let stats = svc.stats().lock().unwrap().clone();
    assert_eq!((stats.redeem_requests_seen, stats.refused_requests, stats.delivery_retries), (0, 1, 0));
}

#[test]
fn a_request_past_its_deadline_is_closed_not_delivered_late_nor_retried() {
    let s = Setup::new("deadline");
    let mut svc = s.service();
    let now = unix_s();
    svc.register().unwrap();
    svc.issue_due(now).unwrap();
    let start = now / 60 * 60;
    let d = s.market.deployment.deployment();
    let mut ledger = s.ledger();
    // Seen only after its deadline: closed without sealing (no ResID taken).
    let (late, _) = s.buy_within(start, 600, 30);
    let deadline = d.request_of(&ledger, late).unwrap().deadline;
    svc.poll(deadline + 1);
    assert_eq!(svc.refused[&late.to::<u64>()].reason, "deadline_passed");
    assert!(svc.resids.snapshot().unwrap().resids.held(1).is_empty(), "nothing sealed");
    // The chain's clock runs ahead of the service's: the delivery reverts as too late, and
    // the request is closed rather than retried.
    let (ahead, _) = s.buy_within(start, 600, 30);
    let deadline = d.request_of(&ledger, ahead).unwrap().deadline;
    ledger.advance_time(31).unwrap();
    svc.poll(deadline.min(unix_s()));
    assert_eq!(svc.refused[&ahead.to::<u64>()].reason, "deadline_passed");
    assert!(d.reservation_of(&ledger, ahead).unwrap().is_empty());
    let stats = svc.stats().lock().unwrap().clone();
    assert_eq!(stats.redeem_requests_failed.get("deadline_passed"), Some(&2), "{stats:?}");
    assert_eq!((stats.open_requests.len(), stats.deliveries, stats.delivery_retries), (0, 0, 0));
    svc.poll(deadline + 600);
    assert_eq!(svc.stats().lock().unwrap().delivery_retries, 0, "never retried");
}

/// A chain whose node takes transactions into a pool and mines them only when the test says
/// (as a JSON-RPC node does, slowly); everything else goes straight to the embedded ledger.
struct SlowChain {
    inner: SharedLedger,
    pool: std::sync::Arc<Mutex<Pool>>,
}

#[derive(Default)]
struct Pool {
    waiting: Vec<(aviary_market::B256, Account, Address, Bytes, U256)>,
    mined: BTreeMap<aviary_market::B256, aviary_market::Receipt>,
    submitted: usize,
}

impl Pool {
    /// Mines (`true`) or drops every waiting transaction.
    fn settle(&mut self, ledger: &mut SharedLedger, mine: bool) {
        for (hash, from, to, data, value) in std::mem::take(&mut self.waiting) {
            if mine {
                let r = ledger.send(&from, to, data, value).unwrap();
                self.mined.insert(hash, aviary_market::Receipt { tx_hash: Some(hash), ..r });
            }
        }
    }
}

impl Ledger for SlowChain {
    fn chain_id(&self) -> u64 {
        self.inner.chain_id()
    }
    fn accounts(&self) -> &[Account] {
        self.inner.accounts()
    }
    fn deploy(&mut self, from: &Account, init_code: Bytes) -> Result<Address, aviary_market::LedgerError> {
        self.inner.deploy(from, init_code)
    }
    fn send(
        &mut self,
        from: &Account,
        to: Address,
        data: Bytes,
        value: U256,
    ) -> Result<aviary_market::Receipt, aviary_market::LedgerError> {
        self.inner.send(from, to, data, value)
    }
    fn submit(
        &mut self,
        from: &Account,
        to: Address,
        data: Bytes,
        value: U256,
    ) -> Result<aviary_market::Submitted, aviary_market::LedgerError> {
        let mut pool = self.pool.lock().unwrap();
        pool.submitted += 1;
        let hash = aviary_market::B256::from(U256::from(pool.submitted));
        pool.waiting.push((hash, from.clone(), to, data, value));
        Ok(aviary_market::Submitted::Pending(hash))
    }
    fn receipt(&self, hash: aviary_market::B256) -> Result<Option<aviary_market::Receipt>, aviary_market::LedgerError> {
        Ok(self.pool.lock().unwrap().mined.get(&hash).cloned())
    }
    fn call(&self, from: Address, to: Address, data: Bytes) -> Result<Bytes, aviary_market::LedgerError> {
        self.inner.call(from, to, data)
    }
    fn block_timestamp(&self) -> Result<u64, aviary_market::LedgerError> {
        self.inner.block_timestamp()
    }
    fn balance(&self, address: Address) -> Result<U256, aviary_market::LedgerError> {
        self.inner.balance(address)
    }
    fn fund(&mut self, address: Address, amount: U256) -> Result<(), aviary_market::LedgerError> {
        self.inner.fund(address, amount)
    }
    fn advance_time(&mut self, secs: u64) -> Result<(), aviary_market::LedgerError> {
        self.inner.advance_time(secs)
    }
}

#[test]
fn a_sent_delivery_is_awaited_across_a_restart_and_sent_again_only_if_the_chain_dropped_it() {
    let s = Setup::new("mempool");
    let pool = std::sync::Arc::new(Mutex::new(Pool::default()));
    let service = || {
        let cfg = AsServiceConfig::load(&s.cfg_path).unwrap();
        let account = Account::from_hex(std::fs::read_to_string(&cfg.account_key_file).unwrap().trim()).unwrap();
        let chain = SlowChain { inner: s.ledger(), pool: pool.clone() };
        AsService::with_ledger(cfg, &s.cfg_path, account, Box::new(chain)).unwrap()
    };
    let mut svc = service();
    let now = unix_s();
    svc.register().unwrap();
    svc.issue_due(now).unwrap();
    let start = now / 60 * 60;
    let (first, first_key) = s.buy(start, 600);
    svc.poll(now);
    let open = svc.stats().lock().unwrap().open_requests.clone();
    assert_eq!((open.len(), open[0].stage), (1, "sent"), "{open:?}");
    // Waiting to be mined, before and after a restart: nothing is sent again.
    svc.poll(now + 1);
    drop(svc);
    let mut svc = service();
    svc.poll(now + 2);
    assert_eq!(pool.lock().unwrap().submitted, 1);
    // Mined: delivered, found on chain.
    pool.lock().unwrap().settle(&mut s.ledger(), true);
    svc.poll(now + 3);
    let d = s.market.deployment.deployment();
    let ledger = s.ledger();
    client::await_deliveries(&ledger, &d, &[first], &first_key, std::time::Duration::ZERO).unwrap();
    assert_eq!(svc.stats().lock().unwrap().open_requests.len(), 0);

    // A delivery the chain drops is sent again, with the same blob, once the wait is over.
    let (second, second_key) = s.buy(start, 600);
    svc.poll(now + 10);
    let sealed = svc.deliveries.values().next().unwrap().stage.sealed().unwrap().0.clone();
    pool.lock().unwrap().settle(&mut s.ledger(), false);
    svc.poll(now + 10 + 59);
    assert_eq!(pool.lock().unwrap().submitted, 2, "not before the wait is over");
    svc.poll(now + 10 + 60);
    assert_eq!(pool.lock().unwrap().submitted, 3);
    pool.lock().unwrap().settle(&mut s.ledger(), true);
    svc.poll(now + 10 + 61);
    assert_eq!(d.reservation_of(&ledger, second).unwrap(), sealed);
    client::await_deliveries(&ledger, &d, &[second], &second_key, std::time::Duration::ZERO).unwrap();
    let stats = svc.stats().lock().unwrap().clone();
    assert_eq!((stats.open_requests.len(), stats.deliveries), (0, 2));
    let store = svc.resids.snapshot().unwrap();
    assert_eq!(store.resids.held(1).len(), 2, "one ResID per request: {:?}", store.resids.held(1));
}
