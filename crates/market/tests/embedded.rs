//! The market scenario on the embedded (revm) ledger, and its persistence.

mod common;

use aviary_market::{EmbeddedLedger, Ledger, U256};
use common::{market_state, scenario};

fn fresh_dir(name: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn market_scenario_on_embedded_ledger() {
    let mut ledger = EmbeddedLedger::in_memory();
    scenario(&mut ledger);
}

#[test]
fn purchases_cannot_be_blocked_on_embedded_ledger() {
    let mut ledger = EmbeddedLedger::in_memory();
    common::attacks::scenarios(&mut ledger);
}

#[test]
fn nothing_is_stranded_on_embedded_ledger() {
    let mut ledger = EmbeddedLedger::in_memory();
    common::stranded::scenarios(&mut ledger);
}

#[test]
fn sums_do_not_overflow_on_embedded_ledger() {
    let mut ledger = EmbeddedLedger::in_memory();
    common::overflow::scenarios(&mut ledger);
}

#[test]
fn revoked_or_expired_ases_sell_nothing_on_embedded_ledger() {
    let mut ledger = EmbeddedLedger::in_memory();
    common::registry::scenarios(&mut ledger);
}

#[test]
fn buyers_resell_on_embedded_ledger() {
    let mut ledger = EmbeddedLedger::in_memory();
    common::resale::scenarios(&mut ledger);
}

#[test]
fn open_listings_are_indexed_per_interface_on_embedded_ledger() {
    let mut ledger = EmbeddedLedger::in_memory();
    common::index::scenarios(&mut ledger);
}

#[test]
fn state_survives_reopening_the_data_directory() {
    let dir = fresh_dir("embedded-reopen");
    let mut ledger = EmbeddedLedger::open(&dir).unwrap();
    let world = scenario(&mut ledger);
    let state = market_state(&ledger, &world.dep, Some(world.token), &world.who);
    let snapshot = ledger.snapshot();
    let (number, time) = (ledger.block_number(), ledger.block_timestamp().unwrap());
    drop(ledger);

    let mut reopened = EmbeddedLedger::open(&dir).unwrap();
    assert_eq!(reopened.snapshot(), snapshot);
    assert_eq!((reopened.block_number(), reopened.block_timestamp().unwrap()), (number, time));
    assert_eq!(market_state(&reopened, &world.dep, Some(world.token), &world.who), state);

    // The chain goes on: nonces, ids and registrations were restored.
    let as1 = reopened.accounts()[1].clone();
    let next = world.dep.next_asset_id(&reopened).unwrap();
    let spec = aviary_market::AssetSpec {
        isd_as: common::IA1,
        interface_id: 9,
        is_ingress: true,
        bandwidth: 100,
        start_time: (time / 3600 + 2) * 3600,
        expiry_time: (time / 3600 + 3) * 3600,
        time_granularity: 60,
        min_bandwidth: 10,
    };
    assert_eq!(world.dep.issue(&mut reopened, &as1, &spec).unwrap(), next);
    assert_eq!(world.dep.next_asset_id(&reopened).unwrap(), next + U256::from(1));
    assert_eq!(reopened.block_number(), number + 1);
    assert!(reopened.block_timestamp().unwrap() > time);
}

#[test]
fn a_failed_transaction_charges_gas_and_changes_nothing_else() {
    let mut ledger = EmbeddedLedger::in_memory();
    let owner = ledger.accounts()[0].clone();
    let dep = aviary_market::Deployment::deploy_all(&mut ledger, &owner).unwrap();
    let before = ledger.snapshot();
    let stranger = ledger.accounts()[4].clone();
    let call = aviary_market::bindings::AsRegistry::deregisterCall {};
    let data = alloy_sol_types::SolCall::abi_encode(&call);
    let r = ledger.send(&stranger, dep.registry, data.into(), U256::ZERO).unwrap();
    assert!(!r.status);
    assert!(r.gas_used > 21_000);
    let after = ledger.snapshot();
    let mut expected = before.accounts.clone();
    let acc = expected.get_mut(&stranger.address()).unwrap();
    acc.nonce += 1;
    acc.balance -= r.fee();
    assert_eq!(after.accounts, expected);
    assert_eq!(
        r.into_result().unwrap_err().to_string(),
        format!("reverted: NotRegistered(account={})", stranger.address())
    );
}
