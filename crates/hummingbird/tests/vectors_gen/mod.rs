//! Generation of the shared test vectors `testdata/vectors/hummingbird.json`.
//!
//! Used by the `gen_vectors` example, which writes the file, and by the `vectors` test,
//! which checks that the committed file is what this code produces. Every input is fixed
//! (no randomness, no clock), so the output is byte-for-byte reproducible. Field order in
//! the JSON is the declaration order of the structs below (not a map order), so it does
//! not depend on serde_json's `preserve_order` feature.
#![allow(dead_code)]

use aviary_hummingbird::crypto::flyover_block;
use aviary_hummingbird::path::HbirdPath;
use aviary_hummingbird::path::{MAX_COUNTER, MAX_MILLIS, MAX_RES_ID};
use aviary_hummingbird::reservation::as_hops;
use aviary_hummingbird::testbed::{Chain, IF_NEXT, IF_PREV};
use aviary_hummingbird::{derive_sv, AuthKey, ResInfo, Reservation, Router, RouterParams, SecretValue, Source};
use aviary_qos::{Admission, Verdict};
use aviary_scion::mac::{derive_forwarding_key, mac_input};
use aviary_scion::wire::path::chain_seg_id;
use aviary_scion::{HopMacKey, IsdAsn, ScionPacket, ScionView, StandardPath};
use serde::{Deserialize, Serialize};

mod walks;
use walks::{first_walk_pkt_len, packet_walks};

/// Name of the vector file inside the output directory.
pub const FILE_NAME: &str = "hummingbird.json";
/// Value of the `format` field; bump it when the layout of the file changes.
pub const FORMAT: &str = "aviary-hummingbird-vectors/1";

/// Unix seconds of the fixed "now" of the packet walks.
pub const NOW_S: u32 = 1_750_000_000;
/// The fixed "now" in ns: 250 ms after `NOW_S`.
pub const NOW_NS: u64 = NOW_S as u64 * NS + 250 * MS;
/// Beacon timestamp of the hop fields of the packet walks.
pub const BEACON_TS: u32 = NOW_S - 60;

const NS: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;
/// Lifetime of a hop field with ExpTime 63: 64 × 337.5 s = 6 h.
const HOP_LIFETIME_S: u32 = 21_600;

/// The whole vector file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Vectors {
    pub format: String,
    pub comment: String,
    /// Data-plane parameters of every router of the packet walks.
    pub router_params: RouterParams,
    pub key_derivation: Vec<KeyDerivation>,
    pub hop_mac: Vec<HopMacVector>,
    pub flyover: Vec<FlyoverVector>,
    pub packets: Vec<PacketWalk>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyDerivation {
    pub master_secret: String,
    /// PBKDF2-HMAC-SHA256(master_secret, "Derive OF Key", 1000, 16).
    pub forwarding_key: String,
    /// PBKDF2-HMAC-SHA256(master_secret, "Derive hbird sv", 1000, 16).
    pub sv: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HopMacVector {
    pub comment: String,
    /// The 16-byte hop-field MAC key (already derived).
    pub key: String,
    pub seg_id: u16,
    pub timestamp: u32,
    pub exp_time: u8,
    pub cons_ingress: u16,
    pub cons_egress: u16,
    /// The 16-byte CMAC input block.
    pub block: String,
    /// First 6 bytes of AES-CMAC_key(block).
    pub mac: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlyoverVector {
    pub comment: String,
    pub master_secret: String,
    /// SV derived from `master_secret`.
    pub sv: String,
    /// Interfaces in the direction of travel.
    pub ingress: u16,
    pub egress: u16,
    pub res_id: u32,
    pub bw: u16,
    /// BaseTimestamp of the packet (Unix s); `res_start = base_ts - res_start_offset`.
    pub base_ts: u32,
    pub res_start: u32,
    pub res_duration: u16,
    /// The 16-byte A_K input block (ResInfo).
    pub res_info_block: String,
    /// A_K = AES-128_SV(res_info_block).
    pub ak: String,
    pub dst_ia: String,
    pub pkt_len: u16,
    pub res_start_offset: u16,
    pub millis: u16,
    pub counter: u32,
    /// The 16-byte FlyoverMAC input block.
    pub flyover_block: String,
    /// First 6 bytes of AES-128_{A_K}(flyover_block).
    pub flyover_mac: String,
}

/// Packets through a sequence of routers. Each walk starts with fresh routers (one per
/// distinct AS, created at its first step); the steps are applied in order and a router
/// keeps its policing state across the steps of its walk.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PacketWalk {
    pub name: String,
    pub comment: String,
    pub steps: Vec<Step>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// ISD-AS of the processing router.
    #[serde(rename = "as")]
    pub as_: String,
    /// Its master secret (hop-field key and SV are derived from it).
    pub master_secret: String,
    /// Its inter-domain interfaces.
    pub interfaces: Vec<u16>,
    /// The interface the packet arrived on (0: from inside the AS).
    pub ingress: u16,
    pub now_ns: u64,
    pub before: String,
    pub after: String,
    /// `forward <priority|best_effort> <egress>`, `deliver` or `drop <reason>`.
    pub verdict: String,
}

/// The text form of a verdict used in the file.
pub fn verdict_text(v: &Verdict) -> String {
    match v {
        Verdict::Forward { egress, admission } => {
            let c = match *admission {
                Admission::RESERVED => "priority",
                Admission::UNAUTHENTICATED => "best_effort",
                a => panic!("Hummingbird forwards with no admission {a:?}"),
            };
            format!("forward {c} {egress}")
        }
        Verdict::Deliver => "deliver".into(),
        Verdict::Drop(r) => format!("drop {}", r.label()),
    }
}

/// The vectors, rendered exactly as the generator writes them.
pub fn render() -> String {
    let mut s = serde_json::to_string_pretty(&generate()).expect("serialize vectors");
    s.push('\n');
    s
}

pub fn generate() -> Vectors {
    Vectors {
        format: FORMAT.into(),
        comment: "Hummingbird (path type 5) and SCION hop-field test vectors generated by aviary; \
                  see README.md next to this file."
            .into(),
        router_params: RouterParams::default(),
        key_derivation: key_derivation(),
        hop_mac: hop_macs(),
        flyover: flyovers(),
        packets: packet_walks(),
    }
}

// ---------------------------------------------------------------------------------------
// Secrets and keys.

/// Master secret of AS `i` of a [`Chain`] (as the testbed makes it).
fn chain_secret(i: u8) -> Vec<u8> {
    let mut s = vec![0u8; 16];
    s[..8].copy_from_slice(b"aviary-m");
    s[15] = i;
    s
}

fn master_secrets() -> Vec<Vec<u8>> {
    vec![
        chain_secret(0),
        chain_secret(1),
        chain_secret(2),
        chain_secret(3),
        vec![0u8; 16],
        vec![0xff; 16],
        (0u8..32).collect(),
        b"scion master secret".to_vec(),
    ]
}

fn key_derivation() -> Vec<KeyDerivation> {
    master_secrets()
        .iter()
        .map(|s| KeyDerivation {
            master_secret: hex::encode(s),
            forwarding_key: hex::encode(derive_forwarding_key(s)),
            sv: hex::encode(derive_sv(s)),
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// Hop-field MACs.

fn hop_mac_vector(comment: &str, key: [u8; 16], f: (u16, u32, u8, u16, u16)) -> HopMacVector {
    let (seg_id, timestamp, exp_time, cons_ingress, cons_egress) = f;
    let block = mac_input(seg_id, timestamp, exp_time, cons_ingress, cons_egress);
    HopMacVector {
        comment: comment.into(),
        key: hex::encode(key),
        seg_id,
        timestamp,
        exp_time,
        cons_ingress,
        cons_egress,
        block: hex::encode(block),
        mac: hex::encode(HopMacKey::new(&key).mac(&block)),
    }
}

fn hop_macs() -> Vec<HopMacVector> {
    let rfc: [u8; 16] = hex::decode("2b7e151628aed2a6abf7158809cf4f3c").unwrap().try_into().unwrap();
    let zero = [0u8; 16];
    let ones = [0xffu8; 16];
    let as0 = derive_forwarding_key(&chain_secret(0));
    let max = (u16::MAX, u32::MAX, u8::MAX, u16::MAX, u16::MAX);
    let mut v = vec![
        hop_mac_vector("all fields 0, zero key", zero, (0, 0, 0, 0, 0)),
        hop_mac_vector("all fields at their maximum, all-ones key", ones, max),
        hop_mac_vector("all fields 0, RFC 4493 key", rfc, (0, 0, 0, 0, 0)),
        hop_mac_vector("all fields at their maximum, RFC 4493 key", rfc, max),
        hop_mac_vector("SegID max, others 0", rfc, (u16::MAX, 0, 0, 0, 0)),
        hop_mac_vector("Timestamp max, others 0", rfc, (0, u32::MAX, 0, 0, 0)),
        hop_mac_vector("ExpTime max, others 0", rfc, (0, 0, u8::MAX, 0, 0)),
        hop_mac_vector("ConsIngress max, others 0", rfc, (0, 0, 0, u16::MAX, 0)),
        hop_mac_vector("ConsEgress max, others 0", rfc, (0, 0, 0, 0, u16::MAX)),
        hop_mac_vector("SegID 0, others max", as0, (0, u32::MAX, u8::MAX, u16::MAX, u16::MAX)),
        hop_mac_vector("Timestamp 0, others max", as0, (u16::MAX, 0, u8::MAX, u16::MAX, u16::MAX)),
        hop_mac_vector("ExpTime 0, others max", as0, (u16::MAX, u32::MAX, 0, u16::MAX, u16::MAX)),
        hop_mac_vector(
            "ConsIngress 0 (segment initiator), others max",
            as0,
            (u16::MAX, u32::MAX, u8::MAX, 0, u16::MAX),
        ),
        hop_mac_vector("ConsEgress 0 (segment end), others max", as0, (u16::MAX, u32::MAX, u8::MAX, u16::MAX, 0)),
        hop_mac_vector(
            "byte-order check: distinct bytes in every field",
            rfc,
            (0x0102, 0x0304_0506, 0x07, 0x0809, 0x0a0b),
        ),
    ];
    // The hop fields of the 4-AS chain used by the packet walks, each with the key of its
    // AS and the SegID it is MAC'd under (β of SegID chaining).
    let chain = Chain::new(4, BEACON_TS);
    let owners = hop_owners(&chain.path);
    let mut idx = 0;
    for (s, info) in chain.path.info.iter().enumerate() {
        let n = usize::from(chain.path.seg_len[s]);
        let mut beta = info.seg_id;
        for t in 0..n {
            let hop = chain.path.hops[idx];
            // Against construction direction the info field carries the SegID of the first
            // traversed hop; later hops unchain with their own MAC. Along it, each hop
            // chains the next with its MAC.
            if !info.cons_dir && t > 0 {
                beta = chain_seg_id(beta, &hop.mac);
            }
            let key = derive_forwarding_key(&chain.ases[owners[idx]].master_secret);
            let comment = format!(
                "4-AS chain of the packet walks: hop field {idx} (segment {s}, C={}), AS {}",
                u8::from(info.cons_dir),
                chain.ases[owners[idx]].ia
            );
            let vec =
                hop_mac_vector(&comment, key, (beta, info.timestamp, hop.exp_time, hop.cons_ingress, hop.cons_egress));
            assert_eq!(vec.mac, hex::encode(hop.mac), "β computation for hop {idx}");
            v.push(vec);
            if info.cons_dir {
                beta = chain_seg_id(beta, &hop.mac);
            }
            idx += 1;
        }
    }
    v
}

/// The chain AS that owns each hop field of a chain path (path order).
fn hop_owners(p: &StandardPath) -> Vec<usize> {
    // A chain path visits ASes 0, 1, ..., n-1; a crossover AS owns two consecutive hop
    // fields (the last of one segment and the first of the next).
    let mut out = Vec::new();
    let mut idx = 0;
    let mut as_idx = 0;
    for s in 0..p.info.len() {
        let n = usize::from(p.seg_len[s]);
        for t in 0..n {
            if s > 0 && t == 0 {
                as_idx -= 1;
            }
            out.push(as_idx);
            as_idx += 1;
            idx += 1;
        }
    }
    assert_eq!(idx, p.hops.len());
    out
}

// ---------------------------------------------------------------------------------------
// A_K and FlyoverMAC.

struct Fly<'a> {
    comment: &'a str,
    secret: Vec<u8>,
    ingress: u16,
    egress: u16,
    res_id: u32,
    bw: u16,
    base_ts: u32,
    res_start_offset: u16,
    res_duration: u16,
    dst_ia: &'a str,
    pkt_len: u16,
    millis: u16,
    counter: u32,
}

impl Default for Fly<'_> {
    fn default() -> Self {
        Self {
            comment: "",
            secret: chain_secret(1),
            ingress: IF_PREV,
            egress: IF_NEXT,
            res_id: 7,
            bw: 600,
            base_ts: NOW_S,
            res_start_offset: 10,
            res_duration: 3600,
            dst_ia: "1-ff00:0:113",
            pkt_len: 600,
            millis: 250,
            counter: 0,
        }
    }
}

fn flyover_vector(f: Fly<'_>) -> FlyoverVector {
    let sv = derive_sv(&f.secret);
    let res_start = f.base_ts.checked_sub(u32::from(f.res_start_offset)).expect("res_start before the epoch");
    let res = ResInfo {
        ingress: f.ingress,
        egress: f.egress,
        res_id: f.res_id,
        bw: f.bw,
        start: res_start,
        duration: f.res_duration,
    };
    let ak = SecretValue::new(&sv).auth_key(&res);
    let dst: IsdAsn = f.dst_ia.parse().expect("ISD-AS");
    assert_eq!(dst.to_string(), f.dst_ia, "canonical ISD-AS text");
    let block = flyover_block(dst.to_bytes(), f.pkt_len, f.res_start_offset, f.millis, f.counter);
    FlyoverVector {
        comment: f.comment.into(),
        master_secret: hex::encode(&f.secret),
        sv: hex::encode(sv),
        ingress: f.ingress,
        egress: f.egress,
        res_id: f.res_id,
        bw: f.bw,
        base_ts: f.base_ts,
        res_start,
        res_duration: f.res_duration,
        res_info_block: hex::encode(res.block()),
        ak: hex::encode(ak),
        dst_ia: f.dst_ia.into(),
        pkt_len: f.pkt_len,
        res_start_offset: f.res_start_offset,
        millis: f.millis,
        counter: f.counter,
        flyover_block: hex::encode(block),
        flyover_mac: hex::encode(AuthKey::new(&ak).flyover_mac(&block)),
    }
}

fn flyovers() -> Vec<FlyoverVector> {
    let chain = Chain::new(4, BEACON_TS);
    let hops = as_hops(&chain.path);
    let walk_pkt_len = first_walk_pkt_len();
    let v = vec![
        Fly {
            comment: "all fields 0",
            secret: vec![0; 16],
            ingress: 0,
            egress: 0,
            res_id: 0,
            bw: 0,
            base_ts: 0,
            res_start_offset: 0,
            res_duration: 0,
            dst_ia: "0-0",
            pkt_len: 0,
            millis: 0,
            counter: 0,
        },
        Fly {
            comment: "all fields at their maximum",
            secret: vec![0xff; 16],
            ingress: u16::MAX,
            egress: u16::MAX,
            res_id: MAX_RES_ID,
            bw: 1023,
            base_ts: u32::MAX,
            res_start_offset: u16::MAX,
            res_duration: u16::MAX,
            dst_ia: "65535-ffff:ffff:ffff",
            pkt_len: u16::MAX,
            millis: MAX_MILLIS,
            counter: MAX_COUNTER,
        },
        Fly { comment: "ResID 0, BW 1023", res_id: 0, bw: 1023, ..Default::default() },
        Fly { comment: "ResID 2^22-1, BW 0", res_id: MAX_RES_ID, bw: 0, ..Default::default() },
        Fly {
            comment: "ResID 2^22-1, BW 1023 (ResID|BW word all ones)",
            res_id: MAX_RES_ID,
            bw: 1023,
            ..Default::default()
        },
        Fly { comment: "Counter 2^22-1, MillisTimestamp 0", counter: MAX_COUNTER, millis: 0, ..Default::default() },
        Fly {
            comment: "MillisTimestamp 1023 (field maximum), Counter 0",
            millis: MAX_MILLIS,
            counter: 0,
            ..Default::default()
        },
        Fly {
            comment: "MillisTimestamp 999 (largest a source stamps), Counter 1",
            millis: 999,
            counter: 1,
            ..Default::default()
        },
        Fly { comment: "MillisTimestamp 0, Counter 0", millis: 0, counter: 0, ..Default::default() },
        Fly {
            comment: "ResStartOffset 65535 (reservation started ~18.2 h before BaseTimestamp)",
            res_start_offset: u16::MAX,
            res_duration: u16::MAX,
            ..Default::default()
        },
        Fly {
            comment: "ResStartOffset 0 (reservation starts at BaseTimestamp)",
            res_start_offset: 0,
            ..Default::default()
        },
        Fly { comment: "ResDuration 0", res_duration: 0, ..Default::default() },
        Fly {
            comment: "flyover at the source AS: ingress 0 (from inside the AS)",
            secret: chain_secret(0),
            ingress: hops[0].ingress,
            egress: hops[0].egress,
            ..Default::default()
        },
        Fly {
            comment: "flyover at the destination AS: egress 0 (into the AS)",
            secret: chain_secret(3),
            ingress: hops[3].ingress,
            egress: hops[3].egress,
            ..Default::default()
        },
        Fly {
            comment: "crossover AS 1-ff00:0:111 of the 4-AS chain: ingress = ConsEgress of its hop field in segment 0 \
                      (C=0), egress = ConsIngress of its hop field in segment 1 (C=0)",
            secret: chain_secret(1),
            ingress: hops[1].ingress,
            egress: hops[1].egress,
            ..Default::default()
        },
        Fly {
            comment: "crossover AS 1-ff00:0:112 of the 4-AS chain: ingress = ConsEgress of its hop field in segment 1 \
                      (C=0), egress = ConsEgress of its hop field in segment 2 (C=1)",
            secret: chain_secret(2),
            ingress: hops[2].ingress,
            egress: hops[2].egress,
            res_id: 100_000,
            res_start_offset: 30,
            res_duration: 120,
            ..Default::default()
        },
        Fly {
            comment: "crossover with distinct interfaces: ingress 17 from the hop field of the first segment, \
                      egress 4242 from the hop field of the second",
            ingress: 17,
            egress: 4242,
            ..Default::default()
        },
        Fly {
            comment: "the same reservation fields in the opposite direction (ingress and egress swapped)",
            ingress: 4242,
            egress: 17,
            ..Default::default()
        },
        Fly {
            comment: "AS 1-ff00:0:111's flyover of packet walk hbird_4as_flyovers_on_crossovers (its PktLen, \
                      DstIA, timestamps and Counter)",
            secret: chain_secret(1),
            ingress: hops[1].ingress,
            egress: hops[1].egress,
            pkt_len: walk_pkt_len,
            ..Default::default()
        },
        Fly {
            comment: "32-byte master secret, BGP-style AS number in DstIA",
            secret: (0u8..32).collect(),
            dst_ia: "64-559",
            pkt_len: 1500,
            ..Default::default()
        },
        Fly {
            comment: "ASCII master secret, PktLen 65535",
            secret: b"scion master secret".to_vec(),
            dst_ia: "2-ff00:0:220",
            pkt_len: u16::MAX,
            counter: 123_456,
            ..Default::default()
        },
    ];
    v.into_iter().map(flyover_vector).collect()
}
