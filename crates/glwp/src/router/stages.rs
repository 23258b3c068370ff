//! The stages a batch of packets goes through at a router, as Hummingbird's routers do:
//!
//! 1. **Check**, each packet on its own and without cryptography: the SCION and GLWP headers,
//!    the interface pair, freshness and the allocation's expiry (Alg. 2 lines 9-12); gather
//!    the inputs of the two MACs and the duplicate-filter key.
//! 2. **MACs and hashes**, for the whole batch at once: every hop key under `K_k` (AES rounds
//!    of several packets interleaved, one expanded key), then every hop authenticator under
//!    its packet's hop key (key schedules and rounds of four packets interleaved); the
//!    duplicate-filter keys hashed side by side, and the filter's lines of every packet
//!    prefetched before the first is checked.
//! 3. **Admit**, in arrival order: compare the hop authenticator, suppress duplicates, charge
//!    the monitor, advance the hop pointer. The state the stages share (duplicate filter,
//!    monitor) is only touched here, in order, so a batch's verdicts are those of its packets
//!    one by one.
//!
//! Per-batch state lives on the stack, sized for the batch: nothing is allocated.

use aviary_qos::{Admission, DropReason, KeyHash, Verdict};
use aviary_scion::cmac::mac_two_blocks_fresh_keys;

use super::{GlwpDrop, Router};
use crate::header::{field::HA_LEN, Header};
use crate::hop_key::{hop_authenticator_input, truncate, HopKeyInput};
use crate::matrix::{InterfaceId, LOCAL_INTERFACE};
use crate::monitor::MonitorVerdict;
use crate::packet::locate;

/// Packets that go through the stages together.
pub const BATCH: usize = 32;

/// What the check stage found out about one packet.
#[derive(Clone, Copy)]
struct Checked {
    /// Start of the GLWP header in the packet.
    header_at: usize,
    aid: u64,
    beta: u32,
    ts_exp: u32,
    pkt_len: u16,
    egress: InterfaceId,
    /// `(Src, ts_pkt)`, hashed for the duplicate filter with the rest of the batch.
    duplicate_key: [u8; 16],
    hop: Hop,
}

#[derive(Clone, Copy)]
enum Hop {
    /// At on-path AS k: the hop authenticator the packet carries for it, where its MACs are in
    /// the batch's MAC arrays, and whether this AS is the destination.
    OnPath { carried: [u8; HA_LEN], slot: usize, deliver: bool },
    /// A packet of this AS's own host leaving at `j_0`: the source AS holds no hop key of its
    /// own, and the hop pointer stays at 0.
    SourceAs,
}

/// The two MAC inputs of a packet at an on-path AS.
struct MacInputs {
    hop_key: [u8; 28],
    hop_authenticator: [u8; 18],
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
        let mut checked = [Err(DropReason::Truncated); N];
        let mut hop_key_inputs = [[0u8; 28]; N];
        let mut ha_inputs = [[0u8; 18]; N];
        let mut duplicate_keys = [[0u8; 16]; N];
        let mut macs = 0;
        for ((c, pkt), duplicate_key) in checked.iter_mut().zip(&pkts[..n]).zip(&mut duplicate_keys) {
            *c = self.check(pkt, ingress, now_ns).map(|(mut checked, inputs)| {
                if let (Hop::OnPath { slot, .. }, Some(inputs)) = (&mut checked.hop, inputs) {
                    (hop_key_inputs[macs], ha_inputs[macs]) = (inputs.hop_key, inputs.hop_authenticator);
                    *slot = macs;
                    macs += 1;
                }
                *duplicate_key = checked.duplicate_key;
                checked
            });
        }
        let mut duplicate_hashes = [KeyHash::default(); N];
        self.duplicates.hash_many(&duplicate_keys[..n], &mut duplicate_hashes[..n]);
        if N > 1 {
            for (c, h) in checked[..n].iter().zip(&duplicate_hashes) {
                if c.is_ok() {
                    self.duplicates.prefetch(*h);
                }
            }
        }
        let mut hop_keys = [[0u8; 16]; N];
        self.secret.mac_two_blocks_many(&hop_key_inputs[..macs], &mut hop_keys[..macs]);
        let mut authenticators = [[0u8; 16]; N];
        mac_two_blocks_fresh_keys(&hop_keys[..macs], &ha_inputs[..macs], &mut authenticators[..macs]);
        let packets = pkts[..n].iter_mut().zip(&checked).zip(&duplicate_hashes);
        for (((pkt, c), h), verdict) in packets.zip(verdicts.iter_mut()) {
            *verdict = match c.and_then(|c| self.admit(pkt, &c, *h, &authenticators, now_ns)) {
                Ok(v) => {
                    match v {
                        Verdict::Deliver => self.stats.delivered += 1,
                        _ => self.stats.forwarded += 1,
                    }
                    v
                }
                Err(reason) => {
                    self.stats.drops.count(reason);
                    Verdict::Drop(reason)
                }
            };
        }
    }

    /// Stage 1 of one packet (Alg. 2 lines 9-12).
    fn check(&self, pkt: &[u8], ingress: u16, now_ns: u64) -> Result<(Checked, Option<MacInputs>), DropReason> {
        let at = locate(pkt)?;
        let header = Header::new_checked(&pkt[at.header.clone()]).map_err(DropReason::from)?;
        let (lambda, hp) = (header.lambda(), header.hop_pointer());
        if hp >= lambda {
            return Err(GlwpDrop::PathComplete.reason());
        }
        let (aid, beta, ts_pkt, ts_exp) = (header.aid(), header.beta(), header.ts_pkt(), header.ts_exp());
        let (hop, egress, inputs) = if ingress == LOCAL_INTERFACE && hp == 0 {
            if self.source_as != Some(at.src) {
                // A host of this AS sending under another AS's name, or a router that sends
                // no GLWP of its own: nothing here may leave as GLWP.
                return Err(DropReason::BadSrcIa);
            }
            let (i_0, j_0) = header.pair(0).ok_or(DropReason::PathIndexOutOfRange)?;
            if i_0 != LOCAL_INTERFACE || j_0 == LOCAL_INTERFACE {
                return Err(DropReason::MalformedPath);
            }
            (Hop::SourceAs, j_0, None)
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
            let hop_key = HopKeyInput { src: at.src, aid, beta, ingress: i_k, egress: j_k, ts_exp };
            let inputs = MacInputs {
                hop_key: hop_key.bytes(),
                hop_authenticator: hop_authenticator_input(at.src, ts_pkt, at.pkt_len),
            };
            (Hop::OnPath { carried, slot: 0, deliver }, j_k, Some(inputs))
        };
        self.freshness.check_packet(ts_pkt, now_ns).map_err(GlwpDrop::reason)?;
        self.freshness.check_allocation(ts_exp, now_ns).map_err(GlwpDrop::reason)?;
        let mut duplicate_key = [0u8; 16];
        duplicate_key[..8].copy_from_slice(&at.src.to_bytes());
        duplicate_key[8..].copy_from_slice(&ts_pkt.to_be_bytes());
        let checked =
            Checked { header_at: at.header.start, aid, beta, ts_exp, pkt_len: at.pkt_len, egress, duplicate_key, hop };
        Ok((checked, inputs))
    }

    /// Stage 3 of one packet: lines 14-18, with duplicates suppressed (line 17) before the
    /// monitor charges the packet (line 16), so a replay is never charged to its source.
    fn admit(
        &mut self,
        pkt: &mut [u8],
        c: &Checked,
        duplicate_hash: KeyHash,
        authenticators: &[[u8; 16]],
        now_ns: u64,
    ) -> Result<Verdict, DropReason> {
        if let Hop::OnPath { carried, slot, .. } = c.hop {
            if !ha_eq(&carried, &truncate(&authenticators[slot])) {
                return Err(GlwpDrop::BadHopAuthenticator.reason());
            }
        }
        if !self.duplicates.check_and_insert_hashed(duplicate_hash, now_ns) {
            return Err(DropReason::Duplicate);
        }
        match self.monitor.charge(c.aid, c.beta, c.ts_exp, u32::from(c.pkt_len), now_ns) {
            MonitorVerdict::Within => {}
            MonitorVerdict::Overuse => return Err(GlwpDrop::Overuse.reason()),
            MonitorVerdict::Full => return Err(GlwpDrop::MonitorFull.reason()),
        }
        match c.hop {
            Hop::OnPath { deliver, .. } => {
                Header::new_checked(&mut pkt[c.header_at..]).map_err(DropReason::from)?.advance_hop_pointer();
                Ok(if deliver { Verdict::Deliver } else { Verdict::forward(c.egress, Admission::GUARANTEED) })
            }
            Hop::SourceAs => Ok(Verdict::forward(c.egress, Admission::GUARANTEED)),
        }
    }
}

/// Constant-time comparison of a received hop authenticator with the recomputed one.
fn ha_eq(got: &[u8; HA_LEN], want: &[u8; HA_LEN]) -> bool {
    got.iter().zip(want).fold(0u8, |d, (a, b)| d | (a ^ b)) == 0
}
