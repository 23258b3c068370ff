//! proptest strategies for SCION fields, shared by the property and interop tests of
//! aviary-scion and aviary-hummingbird. Not every suite uses every strategy.
#![allow(dead_code)]

pub mod lies;

use std::net::{Ipv4Addr, Ipv6Addr};

use aviary_scion::{
    combine, path_type, AsForwarding, HopField, HopMacKey, HostAddr, InfoField, IsdAsn, ScionHeader, ScionPacket,
    Segment, StandardPath,
};
use proptest::prelude::*;

pub fn arb_host() -> impl Strategy<Value = HostAddr> {
    prop_oneof![
        any::<[u8; 4]>().prop_map(|b| HostAddr::V4(Ipv4Addr::from(b))),
        any::<[u8; 16]>().prop_map(|b| HostAddr::V6(Ipv6Addr::from(b))),
        any::<u16>().prop_map(HostAddr::Svc),
    ]
}

pub fn arb_info() -> impl Strategy<Value = InfoField> {
    (any::<bool>(), any::<bool>(), any::<u16>(), any::<u32>())
        .prop_map(|(peering, cons_dir, seg_id, timestamp)| InfoField { peering, cons_dir, seg_id, timestamp })
}

pub fn arb_hop() -> impl Strategy<Value = HopField> {
    (any::<bool>(), any::<bool>(), any::<u8>(), any::<u16>(), any::<u16>(), any::<[u8; 6]>()).prop_map(
        |(ingress_alert, egress_alert, exp_time, cons_ingress, cons_egress, mac)| HopField {
            ingress_alert,
            egress_alert,
            exp_time,
            cons_ingress,
            cons_egress,
            mac,
        },
    )
}

/// A valid packet around a path from `paths` (returned alongside), with arbitrary header
/// fields, host addresses and a payload of up to `max_payload` bytes.
pub fn arb_packet_with(
    paths: impl Strategy<Value = StandardPath>,
    max_payload: usize,
) -> impl Strategy<Value = (ScionPacket, StandardPath)> {
    (
        (any::<u8>(), 0u32..=0xf_ffff, any::<u8>(), any::<u64>(), any::<u64>()),
        (arb_host(), arb_host(), paths, prop::collection::vec(any::<u8>(), 0..max_payload)),
    )
        .prop_map(|((traffic_class, flow_id, next_hdr, dst, src), (dst_host, src_host, path, payload))| {
            let header = ScionHeader {
                traffic_class,
                flow_id,
                next_hdr,
                path_type: path_type::SCION,
                dst_ia: IsdAsn::from_u64(dst),
                src_ia: IsdAsn::from_u64(src),
                dst_host,
                src_host,
                path: path.to_bytes().unwrap(),
            };
            (ScionPacket { header, payload }, path)
        })
}

/// The bytes of a UDP/SCION packet with the given addresses and raw path bytes.
pub fn raw_packet(
    (dst_host, src_host): (HostAddr, HostAddr),
    (dst, src): (u64, u64),
    path_type: u8,
    path: Vec<u8>,
    payload: Vec<u8>,
) -> Vec<u8> {
    ScionPacket {
        header: ScionHeader {
            traffic_class: 0,
            flow_id: 0,
            next_hdr: 17,
            path_type,
            dst_ia: IsdAsn::from_u64(dst),
            src_ia: IsdAsn::from_u64(src),
            dst_host,
            src_host,
            path,
        },
        payload,
    }
    .to_bytes()
    .unwrap()
}

// ---------------------------------------------------------------------------------------
// A chain of ASes with correctly MAC'd paths (cheap keys, no PBKDF2)
// ---------------------------------------------------------------------------------------

pub struct Chain {
    pub fwd: Vec<AsForwarding>,
    pub path: StandardPath,
}

pub const IF_NEXT: u16 = 1;
pub const IF_PREV: u16 = 2;
pub const TS: u32 = 1_750_000_000;
pub const NOW_NS: u64 = (TS as u64 + 60) * 1_000_000_000;

pub fn ia(i: usize) -> IsdAsn {
    IsdAsn::new(1, 0xff00_0000_0110 + i as u64)
}

/// `n` ASes; AS `i` has interface 1 towards `i+1` and 2 towards `i-1`. With four or more
/// ASes the path has an up, a core and a down segment (two crossovers), with three an up
/// and a down segment, with two a single segment.
pub fn chain(n: usize) -> Chain {
    let keys: Vec<HopMacKey> = (0..n).map(|i| HopMacKey::new(&[i as u8 + 1; 16])).collect();
    let seg = |from: usize, to: usize, seg_id: u16| {
        let mut s = Segment::new(seg_id, TS);
        let idx: Vec<usize> = if from <= to { (from..=to).collect() } else { (to..=from).rev().collect() };
        for (k, &i) in idx.iter().enumerate() {
            let towards = |j: usize| if j > i { IF_NEXT } else { IF_PREV };
            let ingress = if k == 0 { 0 } else { towards(idx[k - 1]) };
            let egress = if k + 1 == idx.len() { 0 } else { towards(idx[k + 1]) };
            s.push_hop(&keys[i], 63, ingress, egress);
        }
        s
    };
    let path = match n {
        2 => combine(&[(&seg(0, 1, 0x1111), true)]),
        3 => combine(&[(&seg(1, 0, 0x2222), false), (&seg(1, 2, 0x3333), true)]),
        _ => {
            combine(&[(&seg(1, 0, 0x2222), false), (&seg(n - 2, 1, 0x4444), false), (&seg(n - 2, n - 1, 0x3333), true)])
        }
    }
    .unwrap();
    let fwd = (0..n)
        .map(|i| {
            let ifs = [(i + 1 < n).then_some(IF_NEXT), (i > 0).then_some(IF_PREV)];
            AsForwarding::new(ia(i), keys[i].clone(), ifs.into_iter().flatten())
        })
        .collect();
    Chain { fwd, path }
}

pub fn chain_packet(c: &Chain, payload_len: usize) -> Vec<u8> {
    packet_over(ia(0), HostAddr::V6(Ipv6Addr::LOCALHOST), ia(c.fwd.len() - 1), &c.path, payload_len)
}

pub fn forward_ingress(i: usize) -> u16 {
    if i == 0 {
        0
    } else {
        IF_PREV
    }
}

/// The bytes of a UDP packet from host 10.0.0.1 in `src` to host 10.0.0.2 in `dst` over
/// `path`, its payload `payload_len` bytes of 0x5a: the packet of the forwarder tests that
/// build their own lines of ASes.
pub fn udp_packet_over(src: IsdAsn, dst: IsdAsn, path: &StandardPath, payload_len: usize) -> Vec<u8> {
    packet_over(src, HostAddr::V4(Ipv4Addr::new(10, 0, 0, 1)), dst, path, payload_len)
}

/// A UDP packet from `src_host` in `src` to host 10.0.0.2 in `dst` over `path`, its payload
/// `payload_len` bytes of 0x5a.
fn packet_over(src: IsdAsn, src_host: HostAddr, dst: IsdAsn, path: &StandardPath, payload_len: usize) -> Vec<u8> {
    ScionPacket {
        header: ScionHeader {
            traffic_class: 0,
            flow_id: 1,
            next_hdr: 17,
            path_type: path_type::SCION,
            dst_ia: dst,
            src_ia: src,
            dst_host: HostAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
            src_host,
            path: path.to_bytes().unwrap(),
        },
        payload: vec![0x5a; payload_len],
    }
    .to_bytes()
    .unwrap()
}
