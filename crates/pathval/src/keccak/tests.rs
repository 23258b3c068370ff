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
fn one_block_messages_hash_eight_to_a_permutation_on_every_implementation() {
    // Every length that fits in one block with its padding (0 to 135 bytes), 136 messages:
    // seventeen whole groups of eight; then 19, which leave the last group partly empty and
    // whose lanes' earlier messages must not leak into it.
    let msgs: Vec<Vec<u8>> = (0..136).map(|n| (0..n).map(|i| (i * 5 + n) as u8).collect()).collect();
    for imp in Implementation::available() {
        check(imp, &msgs);
        check(imp, &msgs[117..]);
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

/// RFC 9861's `ptn(n)`: the bytes `00 01 … FA` repeated, `n` of them.
fn ptn(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8).collect()
}

/// The messages of RFC 9861's vectors: the empty one, then `ptn(17^i)` for `i < count`.
fn rfc_9861_messages(count: u32) -> Vec<Vec<u8>> {
    std::iter::once(Vec::new()).chain((0..count).map(|i| ptn(17usize.pow(i)))).collect()
}

fn unhex<const N: usize>(s: &str) -> [u8; N] {
    hex::decode(s).unwrap().try_into().unwrap()
}

fn kt128_on<const N: usize>(imp: Implementation, msgs: &[&[u8]]) -> Vec<[u8; N]> {
    let mut out = vec![[0u8; N]; msgs.len()];
    kt128_many_with(imp, msgs, &mut out);
    out
}

#[test]
fn kt128_is_rfc_9861s_on_every_implementation() {
    // RFC 9861, §5: KT128(M = ptn(17^i bytes), C = empty, 32) for i = 0…5, and M empty: the
    // single node up to 4913 bytes, the tree mode from 83521 on.
    let want = [
        "1ac2d450fc3b4205d19da7bfca1b37513c0803577ac7167f06fe2ce1f0ef39e5",
        "2bda92450e8b147f8a7cb629e784a058efca7cf7d8218e02d345dfaa65244a1f",
        "6bf75fa2239198db4772e36478f8e19b0f371205f6a9a93a273f51df37122888",
        "0c315ebcdedbf61426de7dcf8fb725d1e74675d7f5327a5067f367b108ecb67c",
        "cb552e2ec77d9910701d578b457ddf772c12e322e4ee7fe417f92c758f0d59d0",
        "8701045e22205345ff4dda05555cbb5c3af1a771c2b89baef37db43d9998b9fe",
        "844d610933b1b9963cbdeb5ae3b6b05cc7cbd67ceedf883eb678a0a8e0371682",
    ];
    let msgs = rfc_9861_messages(6);
    let refs: Vec<&[u8]> = msgs.iter().map(Vec::as_slice).collect();
    for imp in Implementation::available() {
        let out = kt128_on::<32>(imp, &refs);
        for ((m, o), w) in msgs.iter().zip(&out).zip(want) {
            assert_eq!(*o, unhex::<32>(w), "{imp:?}, {} bytes", m.len());
        }
    }
    // The 64-byte output of the empty message.
    let want64 = "1ac2d450fc3b4205d19da7bfca1b37513c0803577ac7167f06fe2ce1f0ef39e5\
                  4269c056b8c82e48276038b6d292966cc07a3d4645272e31ff38508139eb0a71";
    assert_eq!(kt128_on::<64>(Implementation::Portable, &[b""])[0], unhex::<64>(want64));
}

#[test]
fn turboshake128_is_rfc_9861s_on_every_implementation() {
    // RFC 9861, §5: TurboSHAKE128(M = ptn(17^i bytes), D = 0x1F, 32), and M empty.
    let want = [
        "1e415f1c5983aff2169217277d17bb538cd945a397ddec541f1ce41af2c1b74c",
        "55cedd6f60af7bb29a4042ae832ef3f58db7299f893ebb9247247d856958daa9",
        "9c97d036a3bac819db70ede0ca554ec6e4c2a1a4ffbfd9ec269ca6a111161233",
        "96c77c279e0126f7fc07c9b07f5cdae1e0be60bdbe10620040e75d7223a624d2",
        "d4976eb56bcf118520582b709f73e1d6853e001fdaf80e1b13e0d0599d5fb372",
        "da67c7039e98bf530cf7a37830c6664e14cbab7f540f58403b1b82951318ee5c",
    ];
    let msgs = rfc_9861_messages(5);
    let refs: Vec<&[u8]> = msgs.iter().map(Vec::as_slice).collect();
    for imp in Implementation::available() {
        let mut out = vec![[0u8; 32]; msgs.len()];
        turboshake128_many_with(imp, 0x1f, &refs, &mut out);
        for ((m, o), w) in msgs.iter().zip(&out).zip(want) {
            assert_eq!(*o, unhex::<32>(w), "{imp:?}, {} bytes", m.len());
        }
    }
}

/// Every implementation's KT128 against the one-state-at-a-time sponge of the tree mode.
fn check_kt128(msgs: &[Vec<u8>]) {
    let refs: Vec<&[u8]> = msgs.iter().map(Vec::as_slice).collect();
    for imp in Implementation::available() {
        for (m, o) in msgs.iter().zip(kt128_on::<16>(imp, &refs)) {
            assert_eq!(o, kt128_tree::kt128::<16>(m), "{imp:?}, a message of {} bytes", m.len());
        }
    }
}

#[test]
fn kt128_lengths_around_the_block_and_chunk_edges_on_every_implementation() {
    // The zero byte KT128 appends moves the padding: 167 bytes fill a block with it, 166 leave
    // room for the domain byte; 8191 is the longest single node, 8192 the shortest tree.
    let lens = [0, 1, 166, 167, 168, 169, 334, 335, 336, 337, 1000, 8190, 8191, 8192, 8193, 16383, 16384, 34];
    let msgs: Vec<Vec<u8>> = lens.iter().map(|&n| (0..n).map(|i| (i * 7 + n) as u8).collect()).collect();
    check_kt128(&msgs);
}

proptest! {
    #[test]
    fn kt128_batches_of_any_lengths_agree_with_one_at_a_time(
        lens in prop::collection::vec(prop_oneof![0usize..400, 800usize..1200, 8180usize..8200], 0..20),
        seed in any::<u8>(),
    ) {
        let msgs: Vec<Vec<u8>> =
            lens.iter().map(|&n| (0..n).map(|i| (i as u8).wrapping_mul(31) ^ seed).collect()).collect();
        check_kt128(&msgs);
        // And as dispatched (a lone message goes its own way).
        let refs: Vec<&[u8]> = msgs.iter().map(Vec::as_slice).collect();
        let mut out = vec![[0u8; 16]; msgs.len()];
        kt128_many(&refs, &mut out);
        for (m, o) in msgs.iter().zip(&out) {
            prop_assert_eq!(*o, kt128_tree::kt128::<16>(m));
        }
    }
}

/// Each message alone through a one-state sponge: the `sha3` crate's SHA3-256, the tree
/// mode's KT128.
fn one_at_a_time(function: Function, m: &[u8]) -> [u8; 32] {
    match function {
        Function::Sha3_256 => reference(m),
        Function::Kt128 => kt128_tree::kt128::<32>(m),
    }
}

fn check_mixed(functions: &[Function], msgs: &[Vec<u8>]) {
    let refs: Vec<&[u8]> = msgs.iter().map(Vec::as_slice).collect();
    for imp in Implementation::available() {
        let mut out = vec![[0u8; 32]; msgs.len()];
        hash_mixed_with(imp, functions, &refs, &mut out);
        for ((f, m), o) in functions.iter().zip(msgs).zip(&out) {
            assert_eq!(*o, one_at_a_time(*f, m), "{imp:?}, {f:?} of {} bytes", m.len());
        }
    }
    // As dispatched, and 16 bytes out (DataHash's length; a prefix of SHA3-256's digest).
    let mut out = vec![[0u8; 16]; msgs.len()];
    hash_mixed(functions, &refs, &mut out);
    for ((f, m), o) in functions.iter().zip(msgs).zip(&out) {
        assert_eq!(o[..], one_at_a_time(*f, m)[..16], "{f:?} of {} bytes", m.len());
    }
}

#[test]
fn a_router_batch_of_payloads_and_hidden_samples_shares_the_lanes() {
    // Nine 1000-byte payloads (KT128: six blocks of twelve rounds) ahead of 32 one-block
    // HiddenSamples (SHA3-256: 24 rounds), which fill the lanes the payloads leave and run
    // beside the ninth payload half a Keccak-f at a time.
    let mut functions = vec![Function::Kt128; 9];
    functions.extend([Function::Sha3_256; 32]);
    let msgs: Vec<Vec<u8>> = functions
        .iter()
        .enumerate()
        .map(|(k, f)| {
            let n = if *f == Function::Kt128 { 1000 } else { 34 };
            (0..n).map(|i| (i * 11 + k) as u8).collect()
        })
        .collect();
    check_mixed(&functions, &msgs);
}

proptest! {
    #[test]
    fn mixed_batches_agree_with_each_message_alone(
        msgs in prop::collection::vec(
            (any::<bool>(), prop_oneof![0usize..400, 800usize..1200, 8180usize..8200], any::<u8>()),
            0..24,
        ),
    ) {
        let functions: Vec<Function> =
            msgs.iter().map(|&(kt, _, _)| if kt { Function::Kt128 } else { Function::Sha3_256 }).collect();
        let msgs: Vec<Vec<u8>> =
            msgs.iter().map(|&(_, n, seed)| (0..n).map(|i| (i as u8).wrapping_mul(29) ^ seed).collect()).collect();
        check_mixed(&functions, &msgs);
    }
}
