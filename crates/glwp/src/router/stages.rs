//! The stages a batch of packets goes through at a router, as Hummingbird's routers do:
//!
//! 1. **Check**, each packet on its own and without cryptography, in one pass over its headers:
//!    the SCION and GLWP headers, the interface pair, freshness and the allocation's expiry
//!    (Alg. 2 lines 9-12). A packet that fails gets its verdict and is counted here; one that
//!    passes leaves a compact [`Passed`] record (offsets and the few values later stages need)
//!    and writes its two MAC inputs straight into the batch's input arrays. The monitor's slots
//!    are prefetched.
//! 2. **MACs and hashes**, for the whole batch at once: every hop key under `K_k` (AES rounds
//!    of several packets interleaved, one expanded key), then every hop authenticator under
//!    its packet's hop key (key schedules and rounds of four packets interleaved); the
//!    duplicate-filter keys hashed side by side, and the filter's lines of every packet
//!    prefetched before the first is checked.
//! 3. **Admit**, the passed records in arrival order: compare the hop authenticator (one that
//!    fails gets both MACs again under the previous `K_k` during a rotation's overlap, from the
//!    MAC inputs stage 1 wrote), suppress duplicates, charge the monitor, advance the hop
//!    pointer at the offset stage 1 found. The state the stages share (duplicate filter,
//!    monitor) is only touched here, in order, so a batch's verdicts are those of its packets
//!    one by one.
//!
//! Per-batch state lives on the stack, sized for the batch: nothing is allocated. Counters are
//! summed per batch.

use arrayvec::ArrayVec;
use aviary_qos::{Admission, DropReason, KeyHash, Verdict};
use aviary_scion::cmac::mac_two_blocks_fresh_keys;

use super::{GlwpDrop, Router};
use crate::header::{field::HA_LEN, set_hop_pointer};
use crate::hop_key::{hop_authenticator_input, truncate, HopKeyInput};
use crate::matrix::LOCAL_INTERFACE;
use crate::monitor::MonitorVerdict;
use crate::packet::locate_header;

/// Packets that go through the stages together.
pub const BATCH: usize = 32;

/// What stage 1 keeps of a packet that passed it.
#[derive(Clone, Copy)]
struct Passed {
    /// The packet's place in the batch.
    index: usize,
    /// Start of the GLWP header in the packet.
    header_at: usize,
    aid: u64,
    beta: u32,
    ts_exp: u32,
    pkt_len: u16,
    /// `(Src, ts_pkt)`, hashed for the duplicate filter with the rest of the batch.
    duplicate_key: [u8; 16],
    hop: Hop,
    /// The verdict if stage 3 admits the packet.
    admitted: Verdict,
}

#[derive(Clone, Copy)]
enum Hop {
    /// At on-path AS k: the hop authenticator the packet carries for it, where its MACs are in
    /// the batch's MAC arrays, and the hop pointer after this AS (k, as HP = k − 1 < λ here).
    OnPath { carried: [u8; HA_LEN], slot: usize, next_hop_pointer: u8 },
    /// A packet of this AS's own host leaving at `j_0`: the source AS holds no hop key of its
    /// own, and the hop pointer stays at 0.
    SourceAs,
}

/// What stage 3 sees of a batch's MACs: the inputs (for a second try under the previous key)
/// and the hop authenticators under the current one, by slot.
struct Macs<'a> {
    hop_key_inputs: &'a [[u8; 28]],
    hop_authenticator_inputs: &'a [[u8; 18]],
    authenticators: &'a [[u8; 16]],
}

/// The MAC inputs of a batch, one slot per packet at an on-path AS, in arrival order.
struct MacInputs<const N: usize> {
    hop_key: [[u8; 28]; N],
    hop_authenticator: [[u8; 18]; N],
    /// Slots filled.
    len: usize,
}

impl Router {
    /// The three stages for up to `N` packets.
    pub(super) fn run<const N: usize>(
        &mut self,
        pkts: &mut [&mut [u8]],
        ingress: u16,
        now_ns: u64,
        verdicts: &mut [Verdict],
    ) {
        let n = pkts.len().min(verdicts.len()).min(N);
        let mut inputs = MacInputs { hop_key: [[0; 28]; N], hop_authenticator: [[0; 18]; N], len: 0 };
        let mut passed = ArrayVec::<Passed, N>::new();
        let mut duplicate_keys = ArrayVec::<[u8; 16], N>::new();
        for (index, (pkt, verdict)) in pkts[..n].iter().zip(verdicts.iter_mut()).enumerate() {
            match self.check(pkt, index, ingress, now_ns, &mut inputs) {
                Ok(p) => {
                    if N > 1 {
                        self.monitor.prefetch(p.aid);
                    }
                    duplicate_keys.push(p.duplicate_key);
                    passed.push(p);
                }
                Err(reason) => {
                    self.stats.drops.count(reason);
                    *verdict = Verdict::Drop(reason);
                }
            }
        }
        let mut duplicate_hashes = [KeyHash::default(); N];
        self.duplicates.hash_many(&duplicate_keys, &mut duplicate_hashes[..passed.len()]);
        if N > 1 {
            duplicate_hashes[..passed.len()].iter().for_each(|h| self.duplicates.prefetch(*h));
        }
        let macs = inputs.len;
        let mut hop_keys = [[0u8; 16]; N];
        self.secret.current().mac_two_blocks_many(&inputs.hop_key[..macs], &mut hop_keys[..macs]);
        let mut authenticators = [[0u8; 16]; N];
        mac_two_blocks_fresh_keys(&hop_keys[..macs], &inputs.hop_authenticator[..macs], &mut authenticators[..macs]);
        let macs = Macs {
            hop_key_inputs: &inputs.hop_key,
            hop_authenticator_inputs: &inputs.hop_authenticator,
            authenticators: &authenticators,
        };
        let (mut forwarded, mut delivered) = (0, 0);
        for (p, h) in passed.iter().zip(duplicate_hashes) {
            let verdict = match self.admit(pkts[p.index], p, h, &macs, now_ns) {
                Ok(v) => {
                    match v {
                        Verdict::Deliver => delivered += 1,
                        _ => forwarded += 1,
                    }
                    v
                }
                Err(reason) => {
                    self.stats.drops.count(reason);
                    Verdict::Drop(reason)
                }
            };
            verdicts[p.index] = verdict;
        }
        self.stats.forwarded += forwarded;
        self.stats.delivered += delivered;
    }

    /// Stage 1 of the packet at `index` of the batch (Alg. 2 lines 9-12): one pass over its
    /// headers. A packet at an on-path AS gets the next slot of `inputs`.
    fn check<const N: usize>(
        &self,
        pkt: &[u8],
        index: usize,
        ingress: u16,
        now_ns: u64,
        inputs: &mut MacInputs<N>,
    ) -> Result<Passed, DropReason> {
        let (header, at) = locate_header(pkt)?;
        let (lambda, hp) = (header.lambda(), header.hop_pointer());
        if hp >= lambda {
            return Err(GlwpDrop::PathComplete.reason());
        }
        let (aid, beta, ts_pkt, ts_exp) = (header.aid(), header.beta(), header.ts_pkt(), header.ts_exp());
        let (hop, admitted) = if ingress == LOCAL_INTERFACE && hp == 0 {
            if self.source_as != Some(at.src) {
                // A host of this AS sending under another AS's name, or a router that sends
                // no GLWP of its own: nothing here may leave as GLWP.
                return Err(DropReason::BadSrcIa);
            }
            let (i_0, j_0) = header.pair(0).ok_or(DropReason::PathIndexOutOfRange)?;
            if i_0 != LOCAL_INTERFACE || j_0 == LOCAL_INTERFACE {
                return Err(DropReason::MalformedPath);
            }
            (Hop::SourceAs, Verdict::forward(j_0, Admission::GUARANTEED))
        } else {
            // This AS is on-path AS k = HP + 1: pair k of π, hop authenticator k.
            let k = usize::from(hp) + 1;
            let (i_k, j_k) = header.pair(k).ok_or(DropReason::PathIndexOutOfRange)?;
            if ingress != i_k {
                return Err(DropReason::BadIngress);
            }
            // Only the destination (k = λ) leaves at its local interface, and only it may.
            let deliver = j_k == LOCAL_INTERFACE;
            if deliver != (k == usize::from(lambda)) || i_k == LOCAL_INTERFACE {
                return Err(DropReason::MalformedPath);
            }
            let carried = header.hop_authenticator(k).ok_or(DropReason::PathIndexOutOfRange)?;
            // The next free slot, taken below once the packet has passed every check.
            let slot = inputs.len;
            let hop_key = HopKeyInput { src: at.src, aid, beta, ingress: i_k, egress: j_k, ts_exp };
            inputs.hop_key[slot] = hop_key.bytes();
            inputs.hop_authenticator[slot] = hop_authenticator_input(at.src, ts_pkt, at.pkt_len);
            let admitted = if deliver { Verdict::Deliver } else { Verdict::forward(j_k, Admission::GUARANTEED) };
            (Hop::OnPath { carried, slot, next_hop_pointer: hp + 1 }, admitted)
        };
        self.freshness.check_packet(ts_pkt, now_ns).map_err(GlwpDrop::reason)?;
        self.freshness.check_allocation(ts_exp, now_ns).map_err(GlwpDrop::reason)?;
        if let Hop::OnPath { .. } = hop {
            inputs.len += 1;
        }
        let mut duplicate_key = [0u8; 16];
        duplicate_key[..8].copy_from_slice(&at.src.to_bytes());
        duplicate_key[8..].copy_from_slice(&ts_pkt.to_be_bytes());
        Ok(Passed {
            index,
            header_at: at.header.start,
            aid,
            beta,
            ts_exp,
            pkt_len: at.pkt_len,
            duplicate_key,
            hop,
            admitted,
        })
    }

    /// Stage 3 of one packet: lines 14-18, with duplicates suppressed (line 17) before the
    /// monitor charges the packet (line 16), so a replay is never charged to its source.
    fn admit(
        &mut self,
        pkt: &mut [u8],
        p: &Passed,
        duplicate_hash: KeyHash,
        macs: &Macs<'_>,
        now_ns: u64,
    ) -> Result<Verdict, DropReason> {
        if let Hop::OnPath { carried, slot, .. } = p.hop {
            if !ha_eq(&carried, &truncate(&macs.authenticators[slot]))
                && !self.made_by_previous_key(macs, slot, &carried, now_ns)
            {
                return Err(GlwpDrop::BadHopAuthenticator.reason());
            }
        }
        if !self.duplicates.check_and_insert_hashed(duplicate_hash, now_ns) {
            return Err(DropReason::Duplicate);
        }
        match self.monitor.charge(p.aid, p.beta, p.ts_exp, u32::from(p.pkt_len), now_ns) {
            MonitorVerdict::Within => {}
            MonitorVerdict::Overuse => return Err(GlwpDrop::Overuse.reason()),
            MonitorVerdict::Full => return Err(GlwpDrop::MonitorFull.reason()),
        }
        if let Hop::OnPath { next_hop_pointer, .. } = p.hop {
            set_hop_pointer(pkt, p.header_at, next_hop_pointer);
        }
        Ok(p.admitted)
    }

    /// Whether `carried` is the hop authenticator of slot `slot` of `macs` under the previous
    /// `K_k`, if one still verifies at `now_ns` (counted): the second try of a packet that
    /// failed under the current key, off the path that packets under the current key take.
    #[cold]
    #[inline(never)]
    fn made_by_previous_key(&mut self, macs: &Macs<'_>, slot: usize, carried: &[u8; HA_LEN], now_ns: u64) -> bool {
        let Some(previous) = self.secret.previous_at(now_ns) else { return false };
        let mut hop_key = [[0u8; 16]];
        previous.mac_two_blocks_many(&macs.hop_key_inputs[slot..=slot], &mut hop_key);
        let mut authenticator = [[0u8; 16]];
        mac_two_blocks_fresh_keys(&hop_key, &macs.hop_authenticator_inputs[slot..=slot], &mut authenticator);
        let made = ha_eq(carried, &truncate(&authenticator[0]));
        self.stats.previous_key_packets += u64::from(made);
        made
    }
}

/// Constant-time comparison of a received hop authenticator with the recomputed one.
fn ha_eq(got: &[u8; HA_LEN], want: &[u8; HA_LEN]) -> bool {
    got.iter().zip(want).fold(0u8, |d, (a, b)| d | (a ^ b)) == 0
}
