//! proptest strategies for SCION fields, shared by the property and interop tests of
//! aviary-scion and aviary-hummingbird. Not every suite uses every strategy.
#![allow(dead_code)]

use std::net::{Ipv4Addr, Ipv6Addr};

use aviary_scion::{HopField, HostAddr, InfoField};
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
