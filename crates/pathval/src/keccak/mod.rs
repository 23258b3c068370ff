//! SHA3-256 over many independent messages at once: Keccak-f[1600] permutes up to eight
//! states side by side in SIMD registers (AVX-512: eight, AVX2: four at a time), the fastest
//! implementation the CPU has chosen at run time, the `keccak` crate's one state at a time
//! where there is none. pathval routers hash every packet of a batch this way (see
//! [`crate::batch`]); a lone Keccak-f permutation in software is what made a router slow.
//!
//! The digests are exactly SHA3-256's (FIPS 202): rate 136 bytes, padding `0x06 … 0x80`.

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
mod permutation;
mod portable;

/// States permuted together.
pub const LANES: usize = 8;
/// SHA3-256's rate: the bytes absorbed per permutation.
const RATE: usize = 136;
pub const DIGEST_LEN: usize = 32;

/// Eight states word by word: `[j][i]` is word `j` of state `i`, so that word `j` of all
/// states is one vector.
type Interleaved = [[u64; LANES]; 25];

/// A Keccak-f[1600] implementation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Implementation {
    /// One state after the other (the `keccak` crate).
    Portable,
    /// Four states per permutation.
    Avx2,
    /// Eight states per permutation.
    Avx512,
}

impl Implementation {
    /// The implementations this CPU can run, slowest first.
    pub fn available() -> Vec<Implementation> {
        let mut all = vec![Implementation::Portable];
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx2") {
                all.push(Implementation::Avx2);
            }
            if std::is_x86_feature_detected!("avx512f") {
                all.push(Implementation::Avx512);
            }
        }
        all
    }

    /// The fastest implementation this CPU can run (the detection is cached by `std`).
    pub fn fastest() -> Implementation {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx512f") {
                return Implementation::Avx512;
            }
            if std::is_x86_feature_detected!("avx2") {
                return Implementation::Avx2;
            }
        }
        Implementation::Portable
    }

    /// Permutes the states of `states`; those whose bit in `live` is clear may be left
    /// unpermuted or permuted, whichever is cheaper.
    fn permute(self, states: &mut Interleaved, live: u8) {
        match self {
            Implementation::Portable => portable::permute_live(states, live),
            // SAFETY: only `available()`/`fastest()` name the SIMD variants, after detecting
            // the feature; `sha3_256_many_with` checks a caller-chosen one again.
            #[cfg(target_arch = "x86_64")]
            Implementation::Avx2 => unsafe { avx2::permute_all(states, live) },
            #[cfg(target_arch = "x86_64")]
            Implementation::Avx512 => unsafe { avx512::permute_all(states) },
            #[cfg(not(target_arch = "x86_64"))]
            Implementation::Avx2 | Implementation::Avx512 => unreachable!("not detected off x86-64"),
        }
    }

    fn runs_here(self) -> bool {
        self == Implementation::Portable || Self::available().contains(&self)
    }
}

/// `out[i] = SHA3-256(msgs[i])`, with the fastest implementation. The messages share the
/// states as [`hash_packed`] says: longer messages first pack the lanes best.
///
/// # Panics
/// If `out` is shorter than `msgs`.
pub fn sha3_256_many(msgs: &[&[u8]], out: &mut [[u8; DIGEST_LEN]]) {
    // A vector permutation costs more than one state's alone (about 1.3 times on the AMD
    // EPYC of docs/pathval.md): a lone message is hashed alone.
    let imp = if msgs.len() == 1 { Implementation::Portable } else { Implementation::fastest() };
    hash_packed(imp, msgs, out);
}

/// [`sha3_256_many`] with the implementation `imp`.
///
/// # Panics
/// If this CPU cannot run `imp`, or `out` is shorter than `msgs`.
pub fn sha3_256_many_with(imp: Implementation, msgs: &[&[u8]], out: &mut [[u8; DIGEST_LEN]]) {
    assert!(imp.runs_here(), "{imp:?} needs a CPU feature this one lacks");
    hash_packed(imp, msgs, out);
}

/// The message a state is absorbing: its index in `msgs`, what is left of it from the next
/// block on (shorter than a block: the last, padded, block), and whether that block is its
/// first.
#[derive(Clone, Copy)]
struct InLane<'m> {
    msg: usize,
    rest: &'m [u8],
    first: bool,
}

/// All messages through [`LANES`] states: a state whose message has ended (`len / 136 + 1`
/// blocks, the last one padded) takes the next message not yet started, in the order of
/// `msgs`, so that one long message (a 1000-byte payload: eight blocks) does not leave the
/// other lanes idle while it is absorbed. A lane with nothing left to absorb is carried along
/// unread.
fn hash_packed(imp: Implementation, msgs: &[&[u8]], out: &mut [[u8; DIGEST_LEN]]) {
    assert!(out.len() >= msgs.len(), "one digest per message");
    let mut states: Interleaved = [[0; LANES]; 25];
    let mut lanes: [Option<InLane<'_>>; LANES] = [None; LANES];
    let mut waiting = msgs.iter().enumerate();
    loop {
        let mut live = 0u8;
        for (lane, slot) in lanes.iter_mut().enumerate() {
            if slot.is_none() {
                *slot = waiting.next().map(|(msg, rest)| InLane { msg, rest, first: true });
            }
            let Some(at) = slot else { continue };
            absorb(&mut states, lane, at.rest, at.first);
            live |= 1 << lane;
        }
        if live == 0 {
            return;
        }
        imp.permute(&mut states, live);
        for (lane, slot) in lanes.iter_mut().enumerate() {
            let Some(at) = slot else { continue };
            if at.rest.len() < RATE {
                squeeze(&states, lane, &mut out[at.msg]);
                *slot = None;
            } else {
                at.rest = &at.rest[RATE..];
                at.first = false;
            }
        }
    }
}

/// XORs the next block of a message (`rest`: the message from that block on) into state
/// `lane`; the last block, shorter than the rate, is `rest` padded with `0x06 … 0x80` (SHA3's
/// domain bits and pad10*1). The first block of a message is written over what the lane held
/// (the state of the message before it), the capacity words cleared: a fresh state XORed with
/// the block.
fn absorb(states: &mut Interleaved, lane: usize, rest: &[u8], first: bool) {
    let mut padded = [0u8; RATE];
    let block: &[u8; RATE] = if rest.len() < RATE {
        padded[..rest.len()].copy_from_slice(rest);
        padded[rest.len()] ^= 0x06;
        padded[RATE - 1] ^= 0x80;
        &padded
    } else {
        rest[..RATE].try_into().expect("a whole block")
    };
    let (rate, capacity) = states.split_at_mut(RATE / 8);
    for (words, chunk) in rate.iter_mut().zip(block.chunks_exact(8)) {
        let w = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        words[lane] = if first { w } else { words[lane] ^ w };
    }
    if first {
        for words in capacity {
            words[lane] = 0;
        }
    }
}

/// The first 32 bytes of state `lane`, little-endian words.
fn squeeze(states: &Interleaved, lane: usize, out: &mut [u8; DIGEST_LEN]) {
    for (chunk, words) in out.chunks_exact_mut(8).zip(states.iter()) {
        chunk.copy_from_slice(&words[lane].to_le_bytes());
    }
}

#[cfg(test)]
mod tests;
