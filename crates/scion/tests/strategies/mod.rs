//! proptest strategies for SCION fields, shared by the property and interop tests of
//! aviary-scion and aviary-hummingbird. Not every suite uses every strategy.
#![allow(dead_code)]

use std::net::{Ipv4Addr, Ipv6Addr};

use aviary_scion::{path_type, HopField, HostAddr, InfoField, IsdAsn, ScionHeader, ScionPacket, StandardPath};
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
