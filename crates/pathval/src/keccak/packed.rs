//! The lane scheduler every sponge of [`super`] shares: all messages of a call through
//! [`LANES`] states, a state whose message has ended taking the next message not yet started
//! (in the order of `msgs`), so that one long message (a 1000-byte payload: eight SHA3 blocks,
//! six KT128 ones) does not leave the other lanes idle while it is absorbed. A lane with
//! nothing left to absorb is carried along unread.

use super::permutation::Rounds;
use super::{Implementation, Interleaved, LANES};

/// The largest rate (TurboSHAKE128's), for the buffer of a padded block.
const MAX_RATE: usize = 168;

/// One sponge function: what every message of a call is hashed with.
#[derive(Clone, Copy, Debug)]
pub(super) struct Sponge {
    /// Bytes absorbed per permutation, a multiple of 8.
    rate: usize,
    rounds: Rounds,
    /// The first padding byte: the domain bits and the first bit of pad10*1.
    domain: u8,
    /// Zero bytes appended to every message before the padding (KT128's `M | 0x00`).
    zero_suffix: usize,
    /// Messages longer than this are left to the caller (their output untouched).
    max_len: usize,
}

impl Sponge {
    pub(super) const SHA3_256: Sponge =
        Sponge { rate: 136, rounds: Rounds::Full, domain: 0x06, zero_suffix: 0, max_len: usize::MAX };

    /// KT128 as a single node: TurboSHAKE128 of `M | 0x00` (the empty customization string
    /// and its length encoding, one zero byte) with the domain byte `0x07`, for messages of
    /// at most [`super::KT128_SINGLE_NODE_MAX`] bytes. XORing the zero byte changes nothing:
    /// it only moves the padding one byte on.
    pub(super) const KT128_SINGLE_NODE: Sponge =
        Sponge { domain: 0x07, zero_suffix: 1, max_len: super::KT128_SINGLE_NODE_MAX, ..Sponge::turboshake128(0x1f) };

    /// TurboSHAKE128 with the domain byte `domain` (RFC 9861, §2.2).
    ///
    /// # Panics
    /// If `domain` is outside `0x01..=0x7F`.
    pub(super) const fn turboshake128(domain: u8) -> Sponge {
        assert!(domain >= 0x01 && domain <= 0x7f, "TurboSHAKE's domain byte is 0x01-0x7F");
        Sponge { rate: MAX_RATE, rounds: Rounds::Twelve, domain, zero_suffix: 0, max_len: usize::MAX }
    }

    /// The blocks a message of `len` bytes takes: the last one holds the padding.
    #[inline(always)]
    fn last_block(&self, len: usize) -> usize {
        (len + self.zero_suffix) / self.rate
    }
}

/// The message a state is absorbing: its index in `msgs` and the block it absorbs next.
#[derive(Clone, Copy)]
struct InLane {
    msg: usize,
    block: usize,
}

/// `out[i]` = the first `N` bytes of `sponge` over `msgs[i]`, every message of at most
/// `sponge.max_len` bytes (the others' outputs are left alone).
///
/// # Panics
/// If `out` is shorter than `msgs`, or `N` is not a multiple of 8 up to the rate.
#[inline(always)]
pub(super) fn hash_packed<const N: usize>(imp: Implementation, sponge: Sponge, msgs: &[&[u8]], out: &mut [[u8; N]]) {
    assert!(N.is_multiple_of(8) && N <= sponge.rate, "whole words of one block out");
    assert!(out.len() >= msgs.len(), "one output per message");
    let mut states: Interleaved = [[0; LANES]; 25];
    let mut lanes: [Option<InLane>; LANES] = [None; LANES];
    let mut waiting = msgs.iter().enumerate().filter(|(_, m)| m.len() <= sponge.max_len).map(|(msg, _)| msg);
    loop {
        let mut live = 0u8;
        for (lane, slot) in lanes.iter_mut().enumerate() {
            if slot.is_none() {
                *slot = waiting.next().map(|msg| InLane { msg, block: 0 });
            }
            let Some(at) = slot else { continue };
            absorb(&sponge, &mut states, lane, msgs[at.msg], at.block);
            live |= 1 << lane;
        }
        if live == 0 {
            return;
        }
        imp.permute(&mut states, live, sponge.rounds);
        for (lane, slot) in lanes.iter_mut().enumerate() {
            let Some(at) = slot else { continue };
            if at.block == sponge.last_block(msgs[at.msg].len()) {
                squeeze(&states, lane, &mut out[at.msg]);
                *slot = None;
            } else {
                at.block += 1;
            }
        }
    }
}

/// XORs block `block` of `msg` into state `lane`; the last block is padded with the domain
/// byte after the message (and its zero suffix) and `0x80` in the block's last byte. The first
/// block of a message is written over what the lane held (the state of the message before
/// it), the capacity words cleared: a fresh state XORed with the block.
#[inline(always)]
fn absorb(sponge: &Sponge, states: &mut Interleaved, lane: usize, msg: &[u8], block: usize) {
    let rate = sponge.rate;
    let start = (block * rate).min(msg.len());
    let end = (block * rate + rate).min(msg.len());
    let last = block == sponge.last_block(msg.len());
    let mut padded = [0u8; MAX_RATE];
    let bytes: &[u8] = if !last && end - start == rate {
        &msg[start..end]
    } else {
        // The last block, or the one before it when the zero suffix crosses into it.
        padded[..end - start].copy_from_slice(&msg[start..end]);
        if last {
            padded[msg.len() + sponge.zero_suffix - block * rate] ^= sponge.domain;
            padded[rate - 1] ^= 0x80;
        }
        &padded[..rate]
    };
    let first = block == 0;
    let (rate_words, capacity) = states.split_at_mut(rate / 8);
    for (words, chunk) in rate_words.iter_mut().zip(bytes.chunks_exact(8)) {
        let w = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        words[lane] = if first { w } else { words[lane] ^ w };
    }
    if first {
        for words in capacity {
            words[lane] = 0;
        }
    }
}

/// The first `N` bytes of state `lane`, little-endian words.
fn squeeze<const N: usize>(states: &Interleaved, lane: usize, out: &mut [u8; N]) {
    for (chunk, words) in out.chunks_exact_mut(8).zip(states.iter()) {
        chunk.copy_from_slice(&words[lane].to_le_bytes());
    }
}
