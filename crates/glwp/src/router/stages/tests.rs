//! Stage 1 over raw bytes against the checks it replaced, written here from the checked
//! views (`locate_header`, `Header`'s getters): on random valid, mutated, truncated and
//! extended packets, the same drop reason, or the same values for the later stages.

use std::net::{Ipv4Addr, Ipv6Addr};

use aviary_qos::{DuplicateFilter, DuplicateFilterConfig};
use aviary_scion::{HostAddr, ScionView};
use proptest::prelude::*;

use super::*;
use crate::hop_key::{hop_authenticator_input, HopKeyInput};
use crate::packet::locate_header;
use crate::router::Freshness;
use crate::{testbed, AidMonitor};

const S: u64 = 1_000_000_000;
const NOW: u64 = 1_700_000_000 * S;
const FRESH: Freshness = Freshness { lifetime_ns: S / 2, skew_ns: S };

/// What stage 1 hands on of a packet that passed.
#[derive(Debug, PartialEq)]
struct Found {
    aid: u64,
    beta: u32,
    ts_exp: u32,
    pkt_len: u16,
    header_at: usize,
    admitted: Verdict,
    on_path: Option<OnPath>,
    duplicate_key: [u8; 16],
}

/// What stage 1 hands on of a packet at an on-path AS.
#[derive(Debug, PartialEq)]
struct OnPath {
    next_hop_pointer: u8,
    carried: [u8; HA_LEN],
    hop_key_input: [u8; 28],
    hop_authenticator_input: [u8; 18],
}

/// Stage 1 as the router did it through the checked views.
fn reference(source_as: Option<IsdAsn>, pkt: &[u8], ingress: u16, now_ns: u64) -> Result<Found, DropReason> {
    let (header, at) = locate_header(pkt)?;
    let (lambda, hp) = (header.lambda(), header.hop_pointer());
    if hp >= lambda {
        return Err(GlwpDrop::PathComplete.reason());
    }
    let (aid, beta, ts_pkt, ts_exp) = (header.aid(), header.beta(), header.ts_pkt(), header.ts_exp());
    let (on_path, admitted) = if ingress == LOCAL_INTERFACE && hp == 0 {
        if source_as != Some(at.src) {
            return Err(DropReason::BadSrcIa);
        }
        let (i_0, j_0) = header.pair(0).ok_or(DropReason::PathIndexOutOfRange)?;
        if i_0 != LOCAL_INTERFACE || j_0 == LOCAL_INTERFACE {
            return Err(DropReason::MalformedPath);
        }
        (None, Verdict::forward(j_0, Admission::GUARANTEED))
    } else {
        let k = usize::from(hp) + 1;
        let (i_k, j_k) = header.pair(k).ok_or(DropReason::PathIndexOutOfRange)?;
        if ingress != i_k {
            return Err(DropReason::BadIngress);
        }
        let deliver = j_k == LOCAL_INTERFACE;
        if deliver != (k == usize::from(lambda)) || i_k == LOCAL_INTERFACE {
            return Err(DropReason::MalformedPath);
        }
        let carried = header.hop_authenticator(k).ok_or(DropReason::PathIndexOutOfRange)?;
        let hop_key = HopKeyInput { src: at.src, aid, beta, ingress: i_k, egress: j_k, ts_exp }.bytes();
        let authenticator = hop_authenticator_input(at.src, ts_pkt, at.pkt_len);
        let admitted = if deliver { Verdict::Deliver } else { Verdict::forward(j_k, Admission::GUARANTEED) };
        let on_path = OnPath {
            next_hop_pointer: hp + 1,
            carried,
            hop_key_input: hop_key,
            hop_authenticator_input: authenticator,
        };
        (Some(on_path), admitted)
    };
    FRESH.check_packet(ts_pkt, now_ns).map_err(GlwpDrop::reason)?;
    FRESH.check_allocation(ts_exp, now_ns).map_err(GlwpDrop::reason)?;
    let mut duplicate_key = [0u8; 16];
    duplicate_key[..8].copy_from_slice(&at.src.to_bytes());
    duplicate_key[8..].copy_from_slice(&ts_pkt.to_be_bytes());
    Ok(Found { aid, beta, ts_exp, pkt_len: at.pkt_len, header_at: at.header.start, admitted, on_path, duplicate_key })
}

/// Stage 1 of `router` on `pkt` alone.
fn raw(router: &Router, pkt: &[u8], ingress: u16, now_ns: u64) -> Result<Found, DropReason> {
    let mut inputs = MacInputs::<1> { hop_key: [[0; 28]; 1], hop_authenticator: [[0; 18]; 1], len: 0 };
    let mut duplicate_keys = [[0; 16]];
    let p = router.check(pkt, 0, ingress, now_ns, &mut inputs, &mut duplicate_keys, 0)?;
    assert_eq!(p.index, 0);
    let on_path = (p.slot != SOURCE_AS).then(|| {
        assert_eq!((p.slot, inputs.len), (0, 1));
        OnPath {
            next_hop_pointer: p.next_hop_pointer,
            carried: {
                let [a, b, c, top] = p.carried.to_le_bytes();
                assert_eq!(top, 0);
                [a, b, c]
            },
            hop_key_input: inputs.hop_key[0],
            hop_authenticator_input: inputs.hop_authenticator[0],
        }
    });
    if on_path.is_none() {
        assert_eq!(inputs.len, 0);
    }
    Ok(Found {
        aid: p.aid,
        beta: p.beta,
        ts_exp: p.ts_exp,
        pkt_len: p.pkt_len,
        header_at: usize::from(p.header_at),
        admitted: p.admitted(),
        on_path,
        duplicate_key: duplicate_keys[0],
    })
}

fn router(source_as: Option<IsdAsn>) -> Router {
    let dups = DuplicateFilter::new(
        DuplicateFilterConfig { window_ns: 3 * S, expected_per_window: 1000, false_positive_rate: 1e-6 },
        [9; 16],
    )
    .unwrap();
    let r = Router::new(&[0x11; 16], FRESH, AidMonitor::new(8, 3000, 1), dups);
    match source_as {
        Some(ia) => r.with_source_as(ia),
        None => r,
    }
}

fn host(kind: u8) -> HostAddr {
    match kind % 3 {
        0 => HostAddr::V4(Ipv4Addr::new(10, 0, 0, kind)),
        1 => HostAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, u16::from(kind))),
        _ => HostAddr::Svc(u16::from(kind)),
    }
}

#[derive(Clone, Debug)]
enum Change {
    /// XOR a byte (at a position in thousandths of the first 160 bytes, or of the packet).
    Flip { at: u16, xor: u8, anywhere: bool },
    /// Cut the packet at a position in thousandths of its length.
    Truncate(u16),
    /// Append bytes.
    Extend(u8),
    /// Four more bytes of path (HdrLen one more), the lengths still adding up.
    PadPath,
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        6 => (0..1000u16, 1..=255u8, any::<bool>()).prop_map(|(at, xor, anywhere)| Change::Flip { at, xor, anywhere }),
        1 => (0..1000u16).prop_map(Change::Truncate),
        1 => (1..=8u8).prop_map(Change::Extend),
        1 => Just(Change::PadPath),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn raw_stage_one_matches_the_checked_views(
        pairs in prop::collection::vec((0..4u16, 0..4u16), 2..=9),
        (aid, beta) in (any::<u64>(), any::<u32>()),
        ts_exp_offset in -3i64..4,
        ts_pkt_offset_ms in -2500i64..2500,
        hosts in (0..6u8, 0..6u8),
        hop_pointer in 0..10u8,
        payload in 0..300usize,
        too_long in prop::bool::weighted(0.1),
        ingress_pick in 0..3u8,
        source_as in 0..3u8,
        changes in prop::collection::vec(change(), 0..3),
    ) {
        let lambda = pairs.len() - 1;
        let ts_exp = (NOW / S).saturating_add_signed(ts_exp_offset) as u32;
        let alloc = testbed::allocation(testbed::SRC_IA, &pairs, (aid, beta, ts_exp), &vec![[0x11; 16]; lambda]);
        let mut addresses = testbed::addresses(testbed::SRC_IA);
        (addresses.dst_host, addresses.src_host) = (host(hosts.0), host(hosts.1));
        let ts_pkt = NOW.saturating_add_signed(ts_pkt_offset_ms * 1_000_000);
        let mut pkt = alloc.packet(&addresses, ts_pkt, &vec![0x5a; payload]).unwrap();
        let header_at = ScionView::new_checked(&pkt[..]).unwrap().path_range().start;
        if too_long {
            // PayloadLen at its largest: with the headers, more than the 65535 bytes the hop
            // authenticators can bind (a source could not have stamped it).
            let more = usize::from(u16::MAX) - payload;
            pkt.resize(pkt.len() + more, 0x5a);
            pkt[aviary_scion::wire::header::field::PAYLOAD_LEN].copy_from_slice(&u16::MAX.to_be_bytes());
        }
        let hp = hop_pointer.min(lambda as u8 + 1);
        pkt[header_at + field::HOP_POINTER] = hp;
        let k = usize::from(hp) + 1;
        let ingress = match ingress_pick {
            0 => pairs.get(k).map_or(1, |p| p.0),
            1 => LOCAL_INTERFACE,
            _ => 2,
        };
        let source_as = match source_as {
            0 => None,
            1 => Some(testbed::SRC_IA),
            _ => Some(testbed::DST_IA),
        };
        for c in &changes {
            match *c {
                Change::Flip { at, xor, anywhere } => {
                    let span = if anywhere { pkt.len() } else { pkt.len().min(160) };
                    if span > 0 {
                        pkt[usize::from(at) * span / 1000] ^= xor;
                    }
                }
                Change::Truncate(at) => pkt.truncate(usize::from(at) * pkt.len() / 1000),
                Change::Extend(n) => pkt.extend(std::iter::repeat_n(0x77, usize::from(n))),
                Change::PadPath => {
                    let hdr_len = aviary_scion::wire::header::field::HDR_LEN;
                    if let Some(&units) = pkt.get(hdr_len).filter(|u| **u < u8::MAX) {
                        let end = (usize::from(units) * 4).min(pkt.len());
                        pkt.splice(end..end, [0; 4]);
                        pkt[hdr_len] = units + 1;
                    }
                }
            }
        }
        let want = reference(source_as, &pkt, ingress, NOW);
        prop_assert_eq!(raw(&router(source_as), &pkt, ingress, NOW), want);
    }
}

/// The portable stages and the ones chosen at run time (AES-NI, and AVX2, where the CPU has
/// them) give the same verdicts, packet bytes and counters, over valid packets, replays,
/// tampered hop authenticators, packets over β and a wrong ingress.
#[test]
fn the_baseline_and_the_chosen_stages_agree() {
    let pairs = [(0, 1), (2, 3), (4, 0)];
    let alloc = testbed::allocation(testbed::SRC_IA, &pairs, (7, 1000, (NOW / S) as u32 + 10), &[[0x11; 16]; 2]);
    let addresses = testbed::addresses(testbed::SRC_IA);
    let mut pkts: Vec<Vec<u8>> =
        (0..45u64).map(|i| alloc.packet(&addresses, NOW - (i % 40) * 1000, &[i as u8; 60]).unwrap()).collect();
    let header_at = ScionView::new_checked(&pkts[0][..]).unwrap().path_range().start;
    let ha_1 = header_at + after_path(2) + after_path::HA;
    for (i, pkt) in pkts.iter_mut().enumerate().filter(|(i, _)| i % 7 == 3) {
        pkt[ha_1 + i % HA_LEN] ^= 1 << (i % 8);
    }
    let run = |fastest: bool, ingress: u16| {
        let mut r = router(Some(testbed::SRC_IA));
        let mut pkts = pkts.clone();
        let mut verdicts = vec![Verdict::Deliver; pkts.len()];
        let mut refs: Vec<&mut [u8]> = pkts.iter_mut().map(|p| p.as_mut_slice()).collect();
        for (batch, verdicts) in refs.chunks_mut(BATCH).zip(verdicts.chunks_mut(BATCH)) {
            if fastest {
                r.run_fastest::<BATCH>(batch, ingress, NOW, verdicts);
            } else {
                r.run::<BATCH>(aviary_scion::cpu::Portable, batch, ingress, NOW, verdicts);
            }
        }
        (verdicts, pkts, format!("{:?}", r.stats))
    };
    for ingress in [2, 4] {
        let baseline = run(false, ingress);
        assert_eq!(run(true, ingress), baseline);
        if ingress == 2 {
            // Each kind of outcome is there.
            let count = |want: fn(&Verdict) -> bool| baseline.0.iter().filter(|v| want(v)).count();
            assert!(count(|v| matches!(v, Verdict::Forward { .. })) > 0);
            assert!(count(|v| *v == Verdict::Drop(DropReason::Duplicate)) > 0);
            assert!(count(|v| *v == Verdict::Drop(GlwpDrop::BadHopAuthenticator.reason())) > 0);
            assert!(count(|v| *v == Verdict::Drop(GlwpDrop::Overuse.reason())) > 0);
        }
    }
}

#[test]
fn hop_authenticators_differing_in_any_bit_do_not_match() {
    // HA = 5a 00 ff, carried after a byte of ts_exp (or of the previous HA) and read as a word.
    let pkt = [0x77, 0x5a, 0x00, 0xff];
    // SAFETY: 1 ≤ 1 and 1 + 3 ≤ 4.
    let carried = unsafe { carried_word(&pkt, 1) };
    let mut mac = [0x33; 16];
    mac[..HA_LEN].copy_from_slice(&pkt[1..]);
    assert!(ha_matches(carried, &mac));
    // Bytes of the MAC past the first three are not compared.
    mac[HA_LEN] ^= 0xff;
    assert!(ha_matches(carried, &mac));
    for byte in 0..HA_LEN {
        for bit in 0..8 {
            let mut other = mac;
            other[byte] ^= 1 << bit;
            assert!(!ha_matches(carried, &other), "byte {byte}, bit {bit}");
            let mut sent = pkt;
            sent[1 + byte] ^= 1 << bit;
            // SAFETY: as above.
            assert!(!ha_matches(unsafe { carried_word(&sent, 1) }, &mac), "carried byte {byte}, bit {bit}");
        }
    }
}

/// The generator reaches every outcome the comparison is about (so the property above is not
/// vacuous): checked here on a few hand-made packets.
#[test]
fn the_reference_sees_each_kind_of_packet() {
    let pairs = [(0, 1), (2, 3), (4, 0)];
    let alloc = testbed::allocation(testbed::SRC_IA, &pairs, (7, 1000, (NOW / S) as u32 + 10), &[[0x11; 16]; 2]);
    let pkt = alloc.packet(&testbed::addresses(testbed::SRC_IA), NOW, &[0; 50]).unwrap();
    let r = router(Some(testbed::SRC_IA));
    assert!(raw(&r, &pkt, 2, NOW).unwrap().on_path.is_some());
    assert!(raw(&r, &pkt, 0, NOW).unwrap().on_path.is_none());
    assert_eq!(raw(&r, &pkt, 4, NOW), Err(DropReason::BadIngress));
    assert_eq!(raw(&r, &pkt[..27], 2, NOW), Err(DropReason::Truncated));
    assert_eq!(raw(&r, &pkt[..pkt.len() - 1], 2, NOW), Err(DropReason::LengthMismatch));
    assert_eq!(raw(&r, &pkt, 2, NOW + 2 * S), Err(GlwpDrop::TimestampExpired.reason()));
    let mut bad = pkt.clone();
    bad[0] = 0x10;
    assert_eq!(raw(&r, &bad, 2, NOW), Err(DropReason::BadVersion));
}
