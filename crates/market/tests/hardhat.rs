//! The same market scenario against a real Hardhat 2.29 node over JSON-RPC.

mod common;

use aviary_market::Ledger;
use common::hardhat::HardhatNode;

#[test]
fn market_scenario_on_hardhat_node() {
    let (_node, mut ledger) = HardhatNode::start("scenario");
    assert_eq!(ledger.chain_id(), 31337);
    common::scenario(&mut ledger);
}

#[test]
fn purchases_cannot_be_blocked_on_hardhat_node() {
    let (_node, mut ledger) = HardhatNode::start("attacks");
    common::attacks::scenarios(&mut ledger);
}
