//! The lane scheduler every sponge of [`super`] shares: all messages of a call through
//! [`LANES`] states, a state whose message has ended taking the next message not yet started
//! (in the order of `msgs`), so that one long message (a 1000-byte payload: eight SHA3 blocks,
//! six KT128 ones) does not leave the other lanes idle while it is absorbed. A lane with
//! nothing left to absorb is carried along unread. The messages of one call may be of
//! different sponges (SHA3-256's HiddenSamples beside KT128's payloads): each lane runs the
//! rounds its own block needs.

use super::permutation::{Rounds, Step};
use super::{Block, Blocks, Implementation, Interleaved, Padding, LANES, MAX_RATE};

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

    /// The blocks a message of `len` bytes takes: the last one holds the padding. (Divisions
    /// by the constant rates of SHA3-256 and TurboSHAKE128 are multiplications.)
    #[inline(always)]
    fn last_block(&self, len: usize) -> usize {
        let padded = len + self.zero_suffix;
        match self.rate {
            136 => padded / 136,
            MAX_RATE => padded / MAX_RATE,
            rate => padded / rate,
        }
    }
}

/// The message a state is absorbing: its index in `msgs`, its sponge, the block it absorbs
/// or permutes next and its last block, and whether that block's Keccak-f has run its first
/// half only.
#[derive(Clone, Copy)]
struct InLane {
    msg: usize,
    sponge: Sponge,
    block: usize,
    last: usize,
    halfway: bool,
}

/// `out[i]` = the first `N` bytes of `sponge_of(i)` over `msgs[i]`, every message of at most
/// its sponge's `max_len` bytes (the others' outputs are left alone).
///
/// The sponges may differ from message to message: a permutation runs Keccak-f[1600] in every
/// lane when every lane starts a 24-round block, else twelve rounds, the first half of
/// Keccak-f in the lanes that start one and the last twelve rounds in the others (a
/// Keccak-f's second half, or Keccak-p[1600, 12]).
///
/// # Panics
/// If `out` is shorter than `msgs`, or `N` is not a multiple of 8 up to every rate.
#[inline(always)]
pub(super) fn hash_packed<const N: usize>(
    imp: Implementation,
    sponge_of: impl Fn(usize) -> Sponge,
    msgs: &[&[u8]],
    out: &mut [[u8; N]],
) {
    assert!(out.len() >= msgs.len(), "one output per message");
    let mut states = Interleaved([[0; LANES]; 25]);
    let mut lanes: [Option<InLane>; LANES] = [None; LANES];
    let mut waiting = (0..msgs.len()).filter(|&msg| msgs[msg].len() <= sponge_of(msg).max_len);
    // Every lane's block is written at every step.
    let mut blocks = Blocks::default();
    loop {
        let mut live = 0u8;
        // The lanes that start a 24-round block.
        let mut starting_full = 0u8;
        blocks.fresh = 0;
        for (lane, slot) in lanes.iter_mut().enumerate() {
            blocks.lanes[lane] = Block::default();
            if slot.is_none() {
                *slot = waiting.next().map(|msg| {
                    let sponge = sponge_of(msg);
                    assert!(N.is_multiple_of(8) && N <= sponge.rate, "whole words of one block out");
                    InLane { msg, sponge, block: 0, last: sponge.last_block(msgs[msg].len()), halfway: false }
                });
            }
            let Some(at) = slot else { continue };
            live |= 1 << lane;
            if at.halfway {
                continue;
            }
            blocks.lanes[lane] = block(&at.sponge, msgs[at.msg], at.block, at.block == at.last);
            blocks.fresh |= u8::from(at.block == 0) << lane;
            starting_full |= u8::from(at.sponge.rounds == Rounds::Full) << lane;
        }
        if live == 0 {
            return;
        }
        let step = if starting_full == live { Step::Full } else { Step::Half { first_half: starting_full } };
        imp.absorb_permute(&mut states, &blocks, live, step);
        for (lane, slot) in lanes.iter_mut().enumerate() {
            let Some(at) = slot else { continue };
            if step != Step::Full && starting_full >> lane & 1 == 1 {
                at.halfway = true;
            } else if at.block == at.last {
                squeeze(&states, lane, &mut out[at.msg]);
                *slot = None;
            } else {
                at.halfway = false;
                at.block += 1;
            }
        }
    }
}

/// [`hash_packed`] for messages that each fit in one block with their padding (a
/// HiddenSample's 34 bytes): eight to a permutation, every lane starting and ending its
/// message in it, without the per-lane bookkeeping a message spread over several blocks needs.
///
/// # Panics
/// If `out` is shorter than `msgs`, a message does not fit in one block, or `N` is not a
/// multiple of 8 up to the rate.
#[inline(always)]
pub(super) fn hash_single_blocks<const N: usize>(
    imp: Implementation,
    sponge: Sponge,
    msgs: &[&[u8]],
    out: &mut [[u8; N]],
) {
    assert!(out.len() >= msgs.len(), "one output per message");
    assert!(N.is_multiple_of(8) && N <= sponge.rate, "whole words of one block out");
    let mut states = Interleaved([[0; LANES]; 25]);
    let step = Step::from(sponge.rounds);
    for (group, outs) in msgs.chunks(LANES).zip(out.chunks_mut(LANES)) {
        // Every lane starts a message: the previous group's states are cleared.
        let mut blocks = Blocks { fresh: u8::MAX, ..Blocks::default() };
        for (b, m) in blocks.lanes.iter_mut().zip(group) {
            assert!(sponge.last_block(m.len()) == 0, "one block per message");
            *b = block(&sponge, m, 0, true);
        }
        let live = (u16::MAX >> (16 - group.len())) as u8;
        imp.absorb_permute(&mut states, &blocks, live, step);
        for (lane, o) in outs.iter_mut().enumerate().take(group.len()) {
            squeeze(&states, lane, o);
        }
    }
}

/// Whether every message fits in one block of `sponge` with its padding.
pub(super) fn single_blocks(sponge: &Sponge, msgs: &[&[u8]]) -> bool {
    msgs.iter().all(|m| sponge.last_block(m.len()) == 0)
}

/// Block `block` of `msg`: its bytes of the message, and in the `last` block the padding: the
/// domain byte after the message (and its zero suffix), `0x80` in the block's last byte.
#[inline(always)]
fn block<'m>(sponge: &Sponge, msg: &'m [u8], block: usize, last: bool) -> Block<'m> {
    let rate = sponge.rate;
    let start = (block * rate).min(msg.len());
    let end = (block * rate + rate).min(msg.len());
    let padding = last.then(|| Padding {
        domain_at: msg.len() + sponge.zero_suffix - block * rate,
        domain: sponge.domain,
        last_at: rate - 1,
    });
    Block { bytes: &msg[start..end], padding }
}

/// The first `N` bytes of state `lane`, little-endian words.
fn squeeze<const N: usize>(states: &Interleaved, lane: usize, out: &mut [u8; N]) {
    for (chunk, words) in out.chunks_exact_mut(8).zip(states.iter()) {
        chunk.copy_from_slice(&words[lane].to_le_bytes());
    }
}
