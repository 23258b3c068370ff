//! The same market scenario against a real Hardhat 2.29 node over JSON-RPC.

mod common;

use aviary_market::{Address, Bytes, Ledger, Submitted, U256};
use common::hardhat::HardhatNode;

#[test]
fn market_scenario_on_hardhat_node() {
    let (_node, mut ledger) = HardhatNode::start("scenario");
    assert_eq!(ledger.chain_id(), 31337);
    common::scenario(&mut ledger);

    // Submitting returns at once with the hash; the receipt comes when the node mined it.
    let from = ledger.accounts()[1].clone();
    let to = Address::repeat_byte(0x77);
    let Submitted::Pending(hash) = ledger.submit(&from, to, Bytes::new(), U256::from(5)).unwrap() else {
        panic!("a JSON-RPC node returns the hash before the receipt");
    };
    let t0 = std::time::Instant::now();
    let receipt = loop {
        if let Some(r) = ledger.receipt(hash).unwrap() {
            break r;
        }
        assert!(t0.elapsed() < std::time::Duration::from_secs(30), "mined within 30 s");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!((receipt.status, receipt.tx_hash), (true, Some(hash)));
    assert_eq!(ledger.balance(to).unwrap(), U256::from(5));
    assert_eq!(ledger.receipt(aviary_market::B256::repeat_byte(1)).unwrap(), None, "unknown hash");
}

#[test]
fn purchases_cannot_be_blocked_on_hardhat_node() {
    let (_node, mut ledger) = HardhatNode::start("attacks");
    common::attacks::scenarios(&mut ledger);
}

#[test]
fn nothing_is_stranded_on_hardhat_node() {
    let (_node, mut ledger) = HardhatNode::start("stranded");
    common::stranded::scenarios(&mut ledger);
}

#[test]
fn sums_do_not_overflow_on_hardhat_node() {
    let (_node, mut ledger) = HardhatNode::start("overflow");
    common::overflow::scenarios(&mut ledger);
}

#[test]
fn revoked_or_expired_ases_sell_nothing_on_hardhat_node() {
    let (_node, mut ledger) = HardhatNode::start("registry");
    common::registry::scenarios(&mut ledger);
}

#[test]
fn buyers_resell_on_hardhat_node() {
    let (_node, mut ledger) = HardhatNode::start("resale");
    common::resale::scenarios(&mut ledger);
}

#[test]
fn open_listings_are_indexed_per_interface_on_hardhat_node() {
    let (_node, mut ledger) = HardhatNode::start("index");
    common::index::scenarios(&mut ledger);
}
