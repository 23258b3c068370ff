use proptest::prelude::*;
use sha3::{Digest, Sha3_256};

use super::*;

fn reference(m: &[u8]) -> [u8; DIGEST_LEN] {
    Sha3_256::digest(m).into()
}

fn check(imp: Implementation, msgs: &[Vec<u8>]) {
    let refs: Vec<&[u8]> = msgs.iter().map(Vec::as_slice).collect();
    let mut out = vec![[0u8; DIGEST_LEN]; msgs.len()];
    sha3_256_many_with(imp, &refs, &mut out);
    for (m, d) in msgs.iter().zip(&out) {
        assert_eq!(*d, reference(m), "{imp:?}, a message of {} bytes", m.len());
    }
}

#[test]
fn abc_is_the_fips_202_example_on_every_implementation() {
    let want = hex::decode("3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532").unwrap();
    for imp in Implementation::available() {
        let mut out = [[0u8; DIGEST_LEN]; 1];
        sha3_256_many_with(imp, &[b"abc"], &mut out);
        assert_eq!(out[0][..], want[..], "{imp:?}");
    }
}

#[test]
fn lengths_around_the_block_edges_on_every_implementation() {
    // Empty, one short of a block (padding bytes 0x06 and 0x80 in one), whole blocks (a
    // padding-only block follows), and lanes ending blocks apart in one group.
    let lens = [0, 1, 135, 136, 137, 271, 272, 273, 1000, 34];
    let msgs: Vec<Vec<u8>> = lens.iter().map(|&n| (0..n).map(|i| (i * 7 + n) as u8).collect()).collect();
    for imp in Implementation::available() {
        check(imp, &msgs);
    }
}

#[test]
fn lanes_that_finish_take_the_next_message_on_every_implementation() {
    // As a router hashes a batch: payloads of eight blocks first, then one-block
    // HiddenSamples filling the lanes the payloads leave; more messages than lanes, ending
    // at different permutations, so that cleared lanes are refilled several times.
    let mut lens = vec![1000, 1000, 1000];
    lens.extend([34; 40]);
    lens.extend([272, 0, 136, 1000, 135]);
    let msgs: Vec<Vec<u8>> =
        lens.iter().enumerate().map(|(k, &n)| (0..n).map(|i| (i * 13 + k) as u8).collect()).collect();
    for imp in Implementation::available() {
        check(imp, &msgs);
    }
}

#[test]
fn this_cpu_runs_its_fastest_implementation() {
    assert!(Implementation::available().contains(&Implementation::fastest()));
    let mut out = [[0u8; DIGEST_LEN]; 1];
    sha3_256_many(&[b"abc"], &mut out);
    assert_eq!(out[0], reference(b"abc"));
}

proptest! {
    #[test]
    fn batches_of_any_lengths_hash_as_sha3_256(
        msgs in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..700), 0..20),
    ) {
        for imp in Implementation::available() {
            check(imp, &msgs);
        }
        // And as dispatched (a lone message in a group goes its own way).
        let refs: Vec<&[u8]> = msgs.iter().map(Vec::as_slice).collect();
        let mut out = vec![[0u8; DIGEST_LEN]; msgs.len()];
        sha3_256_many(&refs, &mut out);
        for (m, d) in msgs.iter().zip(&out) {
            prop_assert_eq!(*d, reference(m));
        }
    }
}
