//! An untrusted router on a [`Chain`] attacking the packets it forwards, and what the trusted
//! nodes detect (the attacks of the paper's §V, under every [`SchemeKind`]).
//!
//! The attacker sits on the wire after node `a` = [`attacker_position`]: it sees every packet
//! node `a` sends to node `a + 1`, can change it, send something else in its place or send it
//! past node `a + 1` straight to node `a + 2`. A packet it acted on is **detected** if a
//! trusted node drops it, and the attack **succeeded undetected** if the destination delivers
//! it. A dropped packet is no evidence on its own and is not an attack measured here.

use aviary_qos::RandomSource;

use crate::chain::Chain;
use crate::crypto::data_hash;
use crate::header::{field, locate, PathvalView, BLOCK_LEN, HIDDEN_SAMPLE_LEN};
use crate::router::Verdict;
use crate::scheme::SchemeKind;

/// What the attacker does to the packets it forwards.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Attack {
    /// Changes a payload byte and writes the new payload's DataHash (§V-B).
    PayloadAlteration,
    /// Flips one bit of a field the source covers (DataHash, SessionID, Timestamp or
    /// Concealment, in turn).
    HeaderTampering,
    /// Sends a packet of its own in place of the one it saw: its own payload and DataHash, the
    /// seen header's other fields, random proofs (§V-C).
    Injection,
    /// Sends a packet it saw again once the Timestamp is out of the freshness window (§V-C).
    Replay,
    /// Sends every packet past node `a + 1`, the router the path goes through (§V-D).
    Deviation,
    /// Sends past node `a + 1` only the packets it believes no proof will be checked for, as
    /// far as it can tell from the header (§IV-D's selective attacker).
    SelectiveMisroute,
}

impl Attack {
    pub const ALL: [Attack; 6] = [
        Attack::PayloadAlteration,
        Attack::HeaderTampering,
        Attack::Injection,
        Attack::Replay,
        Attack::Deviation,
        Attack::SelectiveMisroute,
    ];

    pub const fn label(self) -> &'static str {
        match self {
            Attack::PayloadAlteration => "payload_alteration",
            Attack::HeaderTampering => "header_tampering",
            Attack::Injection => "injection",
            Attack::Replay => "replay",
            Attack::Deviation => "deviation",
            Attack::SelectiveMisroute => "selective_misroute",
        }
    }

    /// The detection rate the analysis predicts on a chain of `nodes` nodes, forgeries
    /// succeeding with probability `2^-128` counted as 0.
    ///
    /// Every scheme's destination checks Concealment over SessionID, Timestamp and the payload,
    /// and every node the Timestamp, so alteration, injection and replay are always detected,
    /// and so is tampering, with one exception: the destination recomputes DataHash from the
    /// payload, so a flipped DataHash field is caught only by a node that checks it. In
    /// pathval that is node `a + 1` always (HiddenSample covers DataHash); in PPV only a verifier
    /// at or after node `a + 1`, i.e. when the mark is `a` or later, `(N - 1 - a) / (N - 1)`,
    /// and DataHash is one of the four tampered fields. Deviation is detected wherever the node after the bypassed one verifies
    /// proofs keyed to the bypassed one: always in pathval (its HiddenSample is keyed per link
    /// too, so an unsampled packet fails as well), Baseline and EPIC; in PPV only if the
    /// bypassed router was the marked sampler, `1 / (N - 1)`. The selective attacker reads
    /// PPV's mark and spares exactly those packets, so PPV detects none of its bypasses; the
    /// other schemes detect all, whatever it guesses.
    pub fn predicted_detection(self, scheme: SchemeKind, nodes: usize) -> f64 {
        match (self, scheme) {
            (Attack::HeaderTampering, SchemeKind::Ppv) => {
                let sampling = (nodes - 1) as f64;
                0.75 + 0.25 * (sampling - attacker_position(nodes) as f64) / sampling
            }
            (Attack::Deviation, SchemeKind::Ppv) => 1.0 / (nodes - 1) as f64,
            (Attack::SelectiveMisroute, SchemeKind::Ppv) => 0.0,
            _ => 1.0,
        }
    }
}

/// The node after which the attacker sits on a chain of `nodes` (at least 3) nodes: near the
/// middle, with a router after it to bypass.
pub fn attacker_position(nodes: usize) -> usize {
    (nodes.max(3) - 3) / 2
}

/// The probability that node `a` (the source is node 0) puts a proof in a packet, i.e. that
/// an attacker after it faces a sampled packet: `1 / (a + 1)` under pathval, `1 / (N - 1)`
/// under PPV, 1 under Baseline and EPIC.
pub fn sampled_at(scheme: SchemeKind, a: usize, nodes: usize) -> f64 {
    match scheme {
        SchemeKind::Pathval => 1.0 / (a + 1) as f64,
        SchemeKind::Ppv => 1.0 / (nodes - 1) as f64,
        SchemeKind::Baseline | SchemeKind::Epic => 1.0,
    }
}

/// What one run of an attack measured.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Packets the attacker saw.
    pub seen: u64,
    /// Packets it acted on.
    pub attacked: u64,
    /// Of those, dropped by a trusted node.
    pub detected: u64,
    /// Packets node `a` put a proof in.
    pub sampled: u64,
    /// Packets the attacker guessed node `a` put a proof in, and how many of those it did.
    pub guessed_sampled: u64,
    pub guessed_sampled_right: u64,
    /// Packets an honest node dropped before the attacker saw them (none on an honest chain).
    pub honest_drops: u64,
}

impl Outcome {
    /// Attacks that succeeded undetected: the destination delivered them.
    pub fn undetected(&self) -> u64 {
        self.attacked - self.detected
    }
    pub fn detection_rate(&self) -> f64 {
        self.detected as f64 / self.attacked as f64
    }
    /// How often the attacker's guess "sampled" was right; at chance, the rate of sampled
    /// packets.
    pub fn guess_precision(&self) -> f64 {
        self.guessed_sampled_right as f64 / self.guessed_sampled as f64
    }
    pub fn sampled_rate(&self) -> f64 {
        self.sampled as f64 / self.seen as f64
    }
}

/// The attacker's guess whether node `a` put a proof in the packet, from what it sees on the
/// wire: PPV's plaintext mark; under the other schemes, which show no sample state, one bit
/// of ValidationProof (a MAC if sampled, random bytes otherwise: no better than any other bit).
fn guess_sampled(scheme: SchemeKind, hdr: &PathvalView<&mut [u8]>, a: usize) -> bool {
    match scheme {
        SchemeKind::Ppv => usize::from(hdr.ppv_sampled_node()) == a,
        _ => hdr.validation_proof()[0] & 1 == 1,
    }
}

/// Whether the selective attacker bypasses the packet: it believes no proof of node `a` or
/// node `a + 1` will be checked. Under PPV it reads the mark; elsewhere it trusts its guess.
fn believes_unchecked(scheme: SchemeKind, hdr: &PathvalView<&mut [u8]>, a: usize, guessed: bool) -> bool {
    match scheme {
        SchemeKind::Ppv => !(a..=a + 1).contains(&usize::from(hdr.ppv_sampled_node())),
        _ => !guessed,
    }
}

/// A payload unique to packet `i`.
fn payload(i: u64) -> Vec<u8> {
    let mut p = b"pathval attack harness ".to_vec();
    p.extend_from_slice(&i.to_be_bytes());
    p
}

/// Runs `packets` packets created at `now_s` through `chain` with `attack` after node
/// [`attacker_position`]. Every node's clock reads `now_s`, except for replays.
pub fn measure(chain: &mut Chain, attack: Attack, packets: u64, now_s: u64, random: &mut dyn RandomSource) -> Outcome {
    let (nodes, scheme) = (chain.nodes(), chain.scheme());
    assert!(nodes >= 3, "the attacker needs a router to bypass");
    let a = attacker_position(nodes);
    let replay_at = now_s + chain.destination().freshness.max_age_s + 1;
    let mut out = Outcome::default();
    'packets: for i in 0..packets {
        let mut pkt = chain.packet(&payload(i));
        let Ok(mut sampled) = chain.send(&mut pkt, now_s as u32) else {
            out.honest_drops += 1;
            continue;
        };
        for j in 1..=a {
            match chain.step(j, &mut pkt, now_s, random) {
                Verdict::Forward { sampled: s } => sampled = s,
                _ => {
                    out.honest_drops += 1;
                    continue 'packets;
                }
            }
        }
        let at = locate(&pkt).expect("an honest packet has its header");
        let (head, body) = pkt.split_at_mut(at.payload.start);
        let mut hdr = PathvalView::new_checked(&mut head[at.header.clone()]).expect("101 bytes");
        let guessed = guess_sampled(scheme, &hdr, a);
        out.seen += 1;
        out.sampled += u64::from(sampled);
        out.guessed_sampled += u64::from(guessed);
        out.guessed_sampled_right += u64::from(guessed && sampled);
        let (from, clock) = match attack {
            Attack::PayloadAlteration => {
                alter(&mut hdr, body);
                (a + 1, now_s)
            }
            Attack::HeaderTampering => {
                tamper(&mut head[at.header.clone()], i, random);
                (a + 1, now_s)
            }
            Attack::Injection => {
                let own = payload(!i);
                let (mut hs, mut c, mut vp) = ([0; HIDDEN_SAMPLE_LEN], [0; BLOCK_LEN], [0; BLOCK_LEN]);
                random.fill_bytes(&mut hs);
                random.fill_bytes(&mut c);
                random.fill_bytes(&mut vp);
                hdr.set_hidden_sample(&hs);
                hdr.set_data_hash(&data_hash(&own));
                hdr.set_concealment(&c);
                hdr.set_validation_proof(&vp);
                let seen_header = head[at.header.clone()].to_vec();
                pkt = chain.packet(&own);
                let at = locate(&pkt).expect("the chain's packet has its header");
                pkt[at.header].copy_from_slice(&seen_header);
                (a + 1, now_s)
            }
            Attack::Replay => (a + 1, replay_at),
            Attack::Deviation => (a + 2, now_s),
            Attack::SelectiveMisroute => {
                if !believes_unchecked(scheme, &hdr, a, guessed) {
                    continue;
                }
                (a + 2, now_s)
            }
        };
        out.attacked += 1;
        if let Verdict::Drop(_) = walk(chain, from, &mut pkt, clock, random) {
            out.detected += 1;
        }
    }
    out
}

/// §V-B: changes the payload's last byte and writes the new payload's DataHash.
fn alter(hdr: &mut PathvalView<&mut [u8]>, body: &mut [u8]) {
    if let Some(b) = body.last_mut() {
        *b ^= 1;
    }
    hdr.set_data_hash(&data_hash(body));
}

/// Flips one random bit of a field the source covers: DataHash, SessionID, Timestamp or
/// Concealment for `i` = 0, 1, 2, 3 modulo 4. `header` is the 101 header bytes.
fn tamper(header: &mut [u8], i: u64, random: &mut dyn RandomSource) {
    let fields = [field::DATA_HASH, field::SESSION_ID, field::TIMESTAMP, field::CONCEALMENT];
    let f = &fields[i as usize % fields.len()];
    let bit = random.next_u64() as usize % (8 * f.len());
    header[f.start + bit / 8] ^= 1 << (bit % 8);
}

/// What an untrusted router of a network does to the `i`-th packet it forwards under
/// `attack`, in place: the attacks on one packet at a time (payload alteration, header
/// tampering). Returns whether it changed the packet; `None` for an attack that needs more
/// than the packet in hand (a replay's later time, another path, another packet), which a
/// network router does not run.
pub fn on_the_wire(attack: Attack, pkt: &mut [u8], i: u64, random: &mut dyn RandomSource) -> Option<bool> {
    if !matches!(attack, Attack::PayloadAlteration | Attack::HeaderTampering) {
        return None;
    }
    let Ok(at) = locate(pkt) else { return Some(false) };
    let (head, body) = pkt.split_at_mut(at.payload.start);
    let header = &mut head[at.header];
    match attack {
        Attack::PayloadAlteration => {
            let Ok(mut hdr) = PathvalView::new_checked(header) else { return Some(false) };
            alter(&mut hdr, body);
        }
        _ => tamper(header, i, random),
    }
    Some(true)
}

/// Hands `pkt` to node `from` and on to the destination; the first drop or the delivery.
fn walk(chain: &mut Chain, from: usize, pkt: &mut [u8], now_s: u64, random: &mut dyn RandomSource) -> Verdict {
    let last = chain.nodes() - 1;
    for j in from..last {
        if let v @ Verdict::Drop(_) = chain.step(j, pkt, now_s, random) {
            return v;
        }
    }
    chain.step(last, pkt, now_s, random)
}
