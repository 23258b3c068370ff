//! The persistent ledger against an in-memory twin: the same operations give the same state
//! after replaying the log, with and without compaction, and after a crash mid-append.

use std::sync::Arc;

use alloy_sol_types::SolCall;
use aviary_scratch::ScratchDir;
use proptest::prelude::*;

use super::*;
use crate::bindings::TestToken;
use crate::contracts::deploy_test_token;
use crate::state_log::LOG_FILE;

#[derive(Clone, Debug)]
enum Op {
    Fund(usize, u64),
    Send(usize, usize, u64),
    Mint(usize, u64),
    /// Transfer all of one's tokens (the balance slot goes back to zero).
    TransferAll(usize, usize),
    Advance(u64),
}

fn op() -> impl Strategy<Value = Op> {
    let who = || 0..4usize;
    prop_oneof![
        (who(), 1..1000u64).prop_map(|(a, v)| Op::Fund(a, v)),
        (who(), who(), 0..1000u64).prop_map(|(a, b, v)| Op::Send(a, b, v)),
        (who(), 1..1000u64).prop_map(|(a, v)| Op::Mint(a, v)),
        (who(), who()).prop_map(|(a, b)| Op::TransferAll(a, b)),
        (1..100_000u64).prop_map(Op::Advance),
    ]
}

fn run(l: &mut EmbeddedLedger, token: Address, op: &Op) {
    let acc = l.accounts().to_vec();
    match *op {
        Op::Fund(a, v) => l.fund(acc[a].address(), U256::from(v)).unwrap(),
        Op::Send(a, b, v) => {
            l.send(&acc[a], acc[b].address(), Bytes::new(), U256::from(v)).unwrap();
        }
        Op::Mint(a, v) => {
            let call = TestToken::mintCall { to: acc[a].address(), amount: U256::from(v) };
            l.send(&acc[a], token, call.abi_encode().into(), U256::ZERO).unwrap();
        }
        Op::TransferAll(a, b) => {
            let data = TestToken::balanceOfCall { account: acc[a].address() }.abi_encode();
            let out = l.call(acc[a].address(), token, data.into()).unwrap();
            let amount = TestToken::balanceOfCall::abi_decode_returns(&out).unwrap();
            let call = TestToken::transferCall { to: acc[b].address(), amount };
            l.send(&acc[a], token, call.abi_encode().into(), U256::ZERO).unwrap();
        }
        Op::Advance(s) => l.advance_time(s).unwrap(),
    }
}

/// The state without the persistence bookkeeping.
fn state(l: &EmbeddedLedger) -> Snapshot {
    Snapshot { generation: 0, ..l.snapshot() }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn replaying_the_log_gives_the_state_in_memory(ops in prop::collection::vec(op(), 1..30), compact in any::<bool>()) {
        let clock: Clock = Arc::new(|| 1_800_000_000);
        let dir = ScratchDir::new("embedded-replay");
        let mut disk = EmbeddedLedger::open_with_clock(&dir, clock.clone()).unwrap();
        if compact {
            disk.compact_after_every_block();
        }
        let mut memory = EmbeddedLedger::in_memory_with_clock(clock.clone());
        let owner = memory.accounts()[0].clone();
        let token = deploy_test_token(&mut memory, &owner, "T", "T").unwrap();
        prop_assert_eq!(deploy_test_token(&mut disk, &owner, "T", "T").unwrap(), token);
        for op in &ops {
            run(&mut memory, token, op);
            run(&mut disk, token, op);
        }
        prop_assert_eq!(state(&disk), state(&memory));
        let reopened = EmbeddedLedger::open_with_clock(&dir, clock).unwrap();
        prop_assert_eq!(state(&reopened), state(&memory));
        prop_assert_eq!(reopened.block_number(), memory.block_number());
    }
}

#[test]
fn a_block_torn_by_a_crash_is_lost_alone() {
    let clock: Clock = Arc::new(|| 1_800_000_000);
    let dir = ScratchDir::new("embedded-torn");
    let mut l = EmbeddedLedger::open_with_clock(&dir, clock.clone()).unwrap();
    let acc = l.accounts().to_vec();
    l.send(&acc[0], acc[1].address(), Bytes::new(), U256::from(1)).unwrap();
    let before = state(&l);
    let len = std::fs::metadata(dir.join(LOG_FILE)).unwrap().len();
    l.send(&acc[0], acc[1].address(), Bytes::new(), U256::from(2)).unwrap();
    let full = std::fs::metadata(dir.join(LOG_FILE)).unwrap().len();
    drop(l);
    // The crash came in the middle of the second block's record.
    let file = std::fs::OpenOptions::new().write(true).open(dir.join(LOG_FILE)).unwrap();
    file.set_len(len + (full - len) / 2).unwrap();
    let mut l = EmbeddedLedger::open_with_clock(&dir, clock.clone()).unwrap();
    assert_eq!(state(&l), before, "the state before the torn block");
    // The chain goes on from there, and the next block is read back after the cut.
    l.send(&acc[0], acc[1].address(), Bytes::new(), U256::from(3)).unwrap();
    let after = state(&l);
    assert_eq!(state(&EmbeddedLedger::open_with_clock(&dir, clock).unwrap()), after);
}
