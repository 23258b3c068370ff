//! EPIC at routers and destinations: whole packets walked through the forwarders of three
//! ASes, for path type 3 (PHVF at the penultimate, LHVF at the last hop) and for the per-AS
//! path (every hop field validated and updated, the destination's check, replays, the
//! gateway's QoS form, a segment crossover), and a property that every authenticated bit
//! counts.

use std::net::Ipv4Addr;

use aviary_qos::{Admission, DropReason, Verdict};
use aviary_scion::drkey::{Epoch, HostAddr as DrkeyHost, HostHostKey, IssuerKeys, Protocol};
use aviary_scion::epic::hvf::{hvf, MacInput};
use aviary_scion::epic::per_as::{gateway_hvf, seal, verify_at_destination, DestinationError};
use aviary_scion::epic::timestamp::{epic_timestamp, MAX_CLOCK_SKEW_NS, MAX_PACKET_LIFETIME_NS};
use aviary_scion::epic::{Epic, EpicDuplicates, EpicForwarder};
use aviary_scion::mac::mac_input;
use aviary_scion::wire::epic::{field as hp_field, EpicPath, PktId};
use aviary_scion::wire::epic_per_as::{PerAsPath, PerAsPathView};
use aviary_scion::wire::header::field as header_field;
use aviary_scion::{
    combine, path_type, AsForwarding, HopMacKey, HostAddr, IsdAsn, ScionHeader, ScionPacket, ScionView, Segment,
    StandardPath,
};
use proptest::prelude::*;

const TS: u32 = 1_700_000_000;
const NOW: u64 = TS as u64 * 1_000_000_000 + 10_000_000_000;
const SRC_HOST: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const DST_HOST: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

struct As {
    ia: IsdAsn,
    key: HopMacKey,
    drkey: IssuerKeys,
    interfaces: Vec<u16>,
}

impl As {
    fn new(n: u64) -> Self {
        let secret = [n as u8; 16];
        let drkey = IssuerKeys::new(&secret, Protocol(42), Epoch::new(TS - 3600, TS + 3600).unwrap()).unwrap();
        Self { ia: IsdAsn::new(1, 0xff00_0000_0110 + n), key: HopMacKey::new(&secret), drkey, interfaces: vec![1, 2] }
    }
    fn forwarding(&self) -> AsForwarding {
        AsForwarding::new(self.ia, self.key.clone(), self.interfaces.iter().copied())
    }
    fn hp_router(&self) -> EpicForwarder {
        EpicForwarder::new(self.forwarding(), Epic::hp_only())
    }
    fn per_as_router(&self) -> EpicForwarder {
        let dups = EpicDuplicates::new(10_000, 1e-6, [self.ia.to_bytes()[7]; 16]).unwrap();
        EpicForwarder::new(self.forwarding(), Epic::new(self.drkey.clone(), Some(dups)))
    }
}

/// σ of hop field `j` (construction order) of `seg`, made with `key`.
fn sigma(seg: &Segment, j: usize, key: &HopMacKey) -> [u8; 16] {
    let h = &seg.hops[j];
    key.cmac_block(&mac_input(seg.beta(j), seg.timestamp, h.exp_time, h.cons_ingress, h.cons_egress))
}

/// Three ASes on one segment in construction direction; σ of every hop field in path order.
fn one_segment(ases: &[As; 3]) -> (StandardPath, Vec<[u8; 16]>) {
    let mut seg = Segment::new(0x1234, TS);
    seg.push_hop(&ases[0].key, 63, 0, 1);
    seg.push_hop(&ases[1].key, 63, 2, 1);
    seg.push_hop(&ases[2].key, 63, 2, 0);
    let sigmas = (0..3).map(|j| sigma(&seg, j, &ases[j].key)).collect();
    (combine(&[(&seg, true)]).unwrap(), sigmas)
}

fn packet(path_type: u8, path: Vec<u8>, src: IsdAsn, dst: IsdAsn) -> Vec<u8> {
    let header = ScionHeader {
        traffic_class: 0,
        flow_id: 1,
        next_hdr: 17,
        path_type,
        dst_ia: dst,
        src_ia: src,
        dst_host: HostAddr::V4(DST_HOST),
        src_host: HostAddr::V4(SRC_HOST),
        path,
    };
    ScionPacket { header, payload: vec![0xab; 50] }.to_bytes().unwrap()
}

fn input(src: IsdAsn, id: PktId) -> MacInput {
    MacInput::new(TS, id, src, &HostAddr::V4(SRC_HOST), 50)
}

fn epic_id(now: u64) -> PktId {
    PktId { epic_ts: epic_timestamp(TS, now).unwrap(), counter: 7 }
}

/// A path type 3 packet from AS 0 to AS 2, its HVFs as the source computes them.
fn hp_packet(ases: &[As; 3]) -> Vec<u8> {
    let (path, sigmas) = one_segment(ases);
    let id = epic_id(NOW);
    let inp = input(ases[0].ia, id);
    let epic = EpicPath { pkt_id: id, phvf: hvf(&sigmas[1], &inp), lhvf: hvf(&sigmas[2], &inp), path };
    packet(path_type::EPIC, epic.to_bytes().unwrap(), ases[0].ia, ases[2].ia)
}

fn path_offset(pkt: &[u8]) -> usize {
    ScionView::new_checked(pkt).unwrap().path_range().start
}

#[test]
fn hp_packet_is_validated_at_the_last_two_hops() {
    let ases = [As::new(0), As::new(1), As::new(2)];
    let mut pkt = hp_packet(&ases);
    assert_eq!(ases[0].hp_router().process(&mut pkt, 0, NOW), Verdict::forward(1, Admission::UNAUTHENTICATED));
    assert_eq!(ases[1].hp_router().process(&mut pkt, 2, NOW), Verdict::forward(1, Admission::AUTHENTICATED));
    assert_eq!(ases[2].hp_router().process(&mut pkt, 2, NOW), Verdict::Deliver);
}

#[test]
fn hp_packet_with_a_wrong_hvf_or_stale_timestamp_is_dropped() {
    let ases = [As::new(0), As::new(1), As::new(2)];
    let mut pkt = hp_packet(&ases);
    ases[0].hp_router().process(&mut pkt, 0, NOW);
    let off = path_offset(&pkt);
    for (field, hop) in [(hp_field::PHVF, 1), (hp_field::LHVF, 2)] {
        let mut bad = pkt.clone();
        if hop == 2 {
            assert_eq!(ases[1].hp_router().process(&mut bad, 2, NOW), Verdict::forward(1, Admission::AUTHENTICATED));
        }
        bad[off + field.start] ^= 1;
        assert_eq!(ases[hop].hp_router().process(&mut bad, 2, NOW), Verdict::Drop(DropReason::BadHvf));
    }
    let late = NOW + MAX_PACKET_LIFETIME_NS + MAX_CLOCK_SKEW_NS + 1_000_000;
    let early = NOW - MAX_CLOCK_SKEW_NS - 1_000_000;
    assert_eq!(ases[1].hp_router().process(&mut pkt.clone(), 2, late), Verdict::Drop(DropReason::EpicTimestampExpired));
    assert_eq!(ases[1].hp_router().process(&mut pkt.clone(), 2, early), Verdict::Drop(DropReason::EpicTimestampFuture));
}

/// A sealed per-AS packet along `path` (σ in path order, `owners[i]` the AS of hop field i),
/// with the destination's host-host key.
fn per_as_packet(ases: &[As], owners: &[usize], path: StandardPath, sigmas: &[[u8; 16]]) -> (Vec<u8>, HostHostKey) {
    let (src, dst) = (ases[0].ia, ases[*owners.last().unwrap()].ia);
    let id = epic_id(NOW);
    let host = DrkeyHost::Ipv4(SRC_HOST);
    let keys: Vec<_> = owners.iter().map(|i| ases[*i].drkey.as_host(src, &host)).collect();
    let dst_key = ases[*owners.last().unwrap()].drkey.host_host(src, &DrkeyHost::Ipv4(DST_HOST), &host);
    let mut pkt = packet(path_type::EPIC_PER_AS, PerAsPath::unsealed(id, path).to_bytes().unwrap(), src, dst);
    let range = ScionView::new_checked(&pkt[..]).unwrap().path_range();
    let mut view = PerAsPathView::new_checked(&mut pkt[range]).unwrap();
    seal(&mut view, &input(src, id), &keys, sigmas, &dst_key).unwrap();
    (pkt, dst_key)
}

fn per_as_view(pkt: &[u8]) -> PerAsPathView<&[u8]> {
    let range = ScionView::new_checked(pkt).unwrap().path_range();
    PerAsPathView::new_checked(&pkt[range]).unwrap()
}

fn destination_check(pkt: &[u8], src: IsdAsn, key: &HostHostKey) -> Result<(), DestinationError> {
    verify_at_destination(&per_as_view(pkt), &input(src, epic_id(NOW)), key)
}

#[test]
fn per_as_fields_are_checked_updated_and_verified_by_the_destination() {
    let ases = [As::new(0), As::new(1), As::new(2)];
    let (path, sigmas) = one_segment(&ases);
    let (mut pkt, dst_key) = per_as_packet(&ases, &[0, 1, 2], path, &sigmas);
    let sent = per_as_view(&pkt).hvfs().to_vec();
    let auth = Verdict::forward(1, Admission::AUTHENTICATED);
    assert_eq!(ases[0].per_as_router().process(&mut pkt, 0, NOW), auth);
    assert_eq!(ases[1].per_as_router().process(&mut pkt, 2, NOW), auth);
    // Before the last AS updated its field, the destination would not accept the packet.
    assert_eq!(destination_check(&pkt, ases[0].ia, &dst_key), Err(DestinationError::BadDvf));
    assert_eq!(ases[2].per_as_router().process(&mut pkt, 2, NOW), Verdict::Deliver);
    let arrived = per_as_view(&pkt).hvfs().to_vec();
    assert!(sent.chunks(4).zip(arrived.chunks(4)).all(|(a, b)| a != b), "every AS replaced its field");
    assert_eq!(destination_check(&pkt, ases[0].ia, &dst_key), Ok(()));
    // A proof changed after the fact fails the destination's check.
    let off = path_offset(&pkt) + per_as_view(&pkt).hvf_offset(1);
    pkt[off] ^= 0x40;
    assert_eq!(destination_check(&pkt, ases[0].ia, &dst_key), Err(DestinationError::BadDvf));
}

#[test]
fn per_as_forgeries_and_replays_are_dropped() {
    let ases = [As::new(0), As::new(1), As::new(2)];
    let (path, sigmas) = one_segment(&ases);
    let (mut pkt, _) = per_as_packet(&ases, &[0, 1, 2], path, &sigmas);
    let mut router_b = ases[1].per_as_router();
    ases[0].per_as_router().process(&mut pkt, 0, NOW);
    let replay = pkt.clone();
    // A flipped field, or a spoofed source host (its key differs), fails B's check.
    let mut forged = pkt.clone();
    let off = path_offset(&forged) + per_as_view(&forged).hvf_offset(1);
    forged[off + 3] ^= 1;
    assert_eq!(router_b.process(&mut forged, 2, NOW), Verdict::Drop(DropReason::BadHvf));
    let mut spoofed = pkt.clone();
    let host_off = path_offset(&spoofed) - 4;
    spoofed[host_off + 3] ^= 1;
    assert_eq!(router_b.process(&mut spoofed, 2, NOW), Verdict::Drop(DropReason::BadHvf));
    // The forgeries did not poison the filter: the genuine packet passes once, its replay not.
    assert_eq!(router_b.process(&mut pkt, 2, NOW), Verdict::forward(1, Admission::AUTHENTICATED));
    assert_eq!(router_b.process(&mut replay.clone(), 2, NOW + 1_000), Verdict::Drop(DropReason::Duplicate));
}

#[test]
fn gateway_form_is_accepted_only_with_the_qos_flag() {
    let ases = [As::new(0), As::new(1), As::new(2)];
    let (path, sigmas) = one_segment(&ases);
    let (mut pkt, dst_key) = per_as_packet(&ases, &[0, 1, 2], path, &sigmas);
    let range = ScionView::new_checked(&pkt[..]).unwrap().path_range();
    {
        let mut view = PerAsPathView::new_checked(&mut pkt[range.clone()]).unwrap();
        for (i, a) in ases.iter().enumerate() {
            let as_key = a.drkey.level1(ases[0].ia);
            let h = view.hvf(i);
            view.set_hvf(i, gateway_hvf(&as_key, &h));
        }
    }
    let mut without_flag = pkt.clone();
    assert_eq!(ases[0].per_as_router().process(&mut without_flag, 0, NOW), Verdict::Drop(DropReason::BadHvf));
    PerAsPathView::new_checked(&mut pkt[range]).unwrap().set_qos(true);
    let auth = Verdict::forward(1, Admission::AUTHENTICATED);
    assert_eq!(ases[0].per_as_router().process(&mut pkt, 0, NOW), auth);
    assert_eq!(ases[1].per_as_router().process(&mut pkt, 2, NOW), auth);
    assert_eq!(ases[2].per_as_router().process(&mut pkt, 2, NOW), Verdict::Deliver);
    // The routers wrote the source's proofs, so the destination sees the original EPIC MACs.
    assert_eq!(destination_check(&pkt, ases[0].ia, &dst_key), Ok(()));
}

#[test]
fn a_crossover_as_validates_both_of_its_hop_fields() {
    let ases = [As::new(0), As::new(1), As::new(2)];
    // Up segment built from AS 1 to AS 0, traversed against construction; down segment from
    // AS 1 to AS 2. AS 1 owns hop fields 1 and 2.
    let mut up = Segment::new(0x1111, TS);
    up.push_hop(&ases[1].key, 63, 0, 2);
    up.push_hop(&ases[0].key, 63, 1, 0);
    let mut down = Segment::new(0x2222, TS);
    down.push_hop(&ases[1].key, 63, 0, 1);
    down.push_hop(&ases[2].key, 63, 2, 0);
    let path = combine(&[(&up, false), (&down, true)]).unwrap();
    let sigmas = [
        sigma(&up, 1, &ases[0].key),
        sigma(&up, 0, &ases[1].key),
        sigma(&down, 0, &ases[1].key),
        sigma(&down, 1, &ases[2].key),
    ];
    let (pkt, dst_key) = per_as_packet(&ases, &[0, 1, 1, 2], path, &sigmas);
    let mut walked = pkt.clone();
    let auth = Verdict::forward(1, Admission::AUTHENTICATED);
    assert_eq!(ases[0].per_as_router().process(&mut walked, 0, NOW), auth);
    assert_eq!(ases[1].per_as_router().process(&mut walked, 2, NOW), auth);
    assert_eq!(ases[2].per_as_router().process(&mut walked, 2, NOW), Verdict::Deliver);
    assert_eq!(destination_check(&walked, ases[0].ia, &dst_key), Ok(()));
    // A wrong field for the crossover's second hop field is caught too.
    let mut bad = pkt.clone();
    ases[0].per_as_router().process(&mut bad, 0, NOW);
    let off = path_offset(&bad) + per_as_view(&bad).hvf_offset(2);
    bad[off] ^= 1;
    assert_eq!(ases[1].per_as_router().process(&mut bad, 2, NOW), Verdict::Drop(DropReason::BadHvf));
}

#[test]
fn per_as_path_needs_drkey_keys() {
    let ases = [As::new(0), As::new(1), As::new(2)];
    let (path, sigmas) = one_segment(&ases);
    let (mut pkt, _) = per_as_packet(&ases, &[0, 1, 2], path, &sigmas);
    assert_eq!(ases[0].hp_router().process(&mut pkt, 0, NOW), Verdict::Drop(DropReason::UnsupportedPathType));
}

proptest! {
    /// Every bit of what the per-AS field authenticates (source ISD-AS and host, packet ID,
    /// the AS's own field) matters: flipping one makes the first AS drop the packet.
    #[test]
    fn a_flipped_authenticated_bit_is_dropped(pick in 0usize..(8 + 4 + 8 + 4) * 8) {
        let ases = [As::new(0), As::new(1), As::new(2)];
        let (path, sigmas) = one_segment(&ases);
        let (mut pkt, _) = per_as_packet(&ases, &[0, 1, 2], path, &sigmas);
        let path_at = path_offset(&pkt);
        let src_host_at = path_at - 4;
        let hvf0_at = path_at + per_as_view(&pkt).hvf_offset(0);
        let (byte, bit) = (pick / 8, pick % 8);
        let at = match byte {
            0..8 => header_field::SRC_IA.start + byte,
            8..12 => src_host_at + byte - 8,
            12..20 => path_at + byte - 12,
            _ => hvf0_at + byte - 20,
        };
        pkt[at] ^= 1 << bit;
        let verdict = ases[0].per_as_router().process(&mut pkt, 0, NOW);
        prop_assert!(matches!(verdict, Verdict::Drop(_)), "{verdict:?}");
    }
}
