//! AES-128 without AES-NI: the round keys [`Aes128`] holds, expanded and applied one round at
//! a time with RustCrypto's `aes::hazmat` rounds (constant time, bit-sliced in software; they
//! use the CPU's AES instructions where that crate finds them). The same interface as
//! [`super::ni`], one block at a time: a fallback, not a fast path.

use super::{Aes128, Chained, Recall};
use aes::hazmat::{cipher_round, inv_mix_columns};
use aes::Block;

use crate::xor;

/// One full round (`AESENC`): SubBytes, ShiftRows, MixColumns, then `k` added.
fn round(b: [u8; 16], k: &[u8; 16]) -> [u8; 16] {
    let mut x = Block::from(b);
    cipher_round(&mut x, Block::from_slice(k));
    x.into()
}

/// The last round (`AESENCLAST`): SubBytes and ShiftRows, then `k` added; a full round under
/// the zero key with its MixColumns undone.
fn last_round(b: [u8; 16], k: &[u8; 16]) -> [u8; 16] {
    let mut x = Block::from(b);
    cipher_round(&mut x, &Block::default());
    inv_mix_columns(&mut x);
    xor(x.into(), k)
}

pub(super) fn new(key: &[u8; 16]) -> Aes128 {
    let mut rk = [*key; 11];
    let mut rcon = 1u8;
    for r in 1..11 {
        let prev = rk[r - 1];
        // SubWord(RotWord(w3)): the last round of four equal columns (ShiftRows moves equal
        // bytes onto each other), as `ni` does with AESENCLAST.
        let rot = [prev[13], prev[14], prev[15], prev[12]];
        let sub = last_round(std::array::from_fn(|i| rot[i % 4]), &[0; 16]);
        let mut w = [sub[0] ^ rcon, sub[1], sub[2], sub[3]];
        for c in 0..4 {
            for (i, wi) in w.iter_mut().enumerate() {
                *wi ^= prev[4 * c + i];
                rk[r][4 * c + i] = *wi;
            }
        }
        rcon = (rcon << 1) ^ if rcon & 0x80 != 0 { 0x1b } else { 0 };
    }
    Aes128 { rk }
}

pub(super) fn new_each<const M: usize>(keys: &[[u8; 16]; M]) -> [Aes128; M] {
    std::array::from_fn(|j| new(&keys[j]))
}

pub(super) fn encrypt(c: &Aes128, block: &[u8; 16]) -> [u8; 16] {
    let mut b = xor(*block, &c.rk[0]);
    for k in &c.rk[1..10] {
        b = round(b, k);
    }
    last_round(b, &c.rk[10])
}

pub(super) fn encrypt_many(c: &Aes128, blocks: &mut [[u8; 16]]) {
    for b in blocks {
        *b = encrypt(c, b);
    }
}

pub(super) fn new_each_encrypting<const M: usize, const B: usize>(
    keys: &[[u8; 16]; M],
    blocks: &mut [[[u8; 16]; B]; M],
) -> [Aes128; M] {
    let ciphers = new_each(keys);
    encrypt_each(&ciphers, blocks);
    ciphers
}

pub(super) fn cbc_two_blocks_many<const LEN: usize>(
    c: &Aes128,
    msgs: &[[u8; LEN]],
    tweak: &[u8; 16],
    out: &mut [[u8; 16]],
) {
    for (m, o) in msgs.iter().zip(out) {
        let first = encrypt(c, m[..16].try_into().expect("16 bytes"));
        let mut last = *tweak;
        for (l, (b, f)) in last.iter_mut().zip(m[16..].iter().chain(&[0; 16]).zip(first)) {
            *l ^= b ^ f;
        }
        *o = encrypt(c, &last);
    }
}

pub(super) fn encrypt_each<const M: usize, const B: usize>(ciphers: &[Aes128; M], blocks: &mut [[[u8; 16]; B]; M]) {
    for (c, bs) in ciphers.iter().zip(blocks) {
        encrypt_many(c, bs);
    }
}

pub(super) fn encrypt_fresh_keys(keys: &[[u8; 16]], blocks: &mut [[u8; 16]]) {
    for (k, b) in keys.iter().zip(blocks) {
        *b = encrypt(&new(k), b);
    }
}

pub(super) fn fresh_key_chain_beside(
    c: &Aes128,
    key_in: &[u8; 16],
    block: &[u8; 16],
    other: &Aes128,
    other_in: &[u8; 16],
    feed: Option<(&[u8; 16], &[u8; 16])>,
    keep: Option<&mut Aes128>,
) -> Chained {
    let key = new(&encrypt(c, key_in));
    if let Some(keep) = keep {
        *keep = key;
    }
    chain_beside(&key, block, other, other_in, feed, None)
}

pub(super) fn chain_beside(
    c: &Aes128,
    block: &[u8; 16],
    other: &Aes128,
    other_in: &[u8; 16],
    feed: Option<(&[u8; 16], &[u8; 16])>,
    recall: Option<(&Recall, &[u8; 16])>,
) -> Chained {
    let y = encrypt(c, block);
    let mut z_in = *other_in;
    if let Some((feed, mix)) = feed {
        for (z, &f) in z_in.iter_mut().zip(feed) {
            if f & 0x80 == 0 {
                let i = usize::from(f & 0x0f);
                *z ^= y[i] ^ mix[i];
            }
        }
    }
    // As the AES-NI code: a recall only where the second block follows the chain, its input is
    // `z_in` and its output agrees with `y ⊕ mix` where `agree` says.
    let agrees = |output: &[u8; 16], agree: &[u8; 16]| match feed {
        Some((_, mix)) => (0..16).all(|i| (y[i] ^ mix[i] ^ output[i]) & agree[i] == 0),
        None => false,
    };
    let recall = recall.filter(|([input, output], agree)| *input == z_in && agrees(output, agree));
    let z = match recall {
        Some(([_, output], _)) => *output,
        None => encrypt(other, &z_in),
    };
    Chained { y, z, z_in, recalled: recall.is_some() }
}
