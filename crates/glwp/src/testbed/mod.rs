//! Allocations made directly from the on-path ASes' secrets, as discovery would hand them to a
//! source, and the addresses of two hosts: for tests, benchmarks and fuzzing. A deployment
//! never holds several ASes' secrets in one place; discovery seals each AS's hop key to the
//! source. [`discovery`] runs that discovery on a chain of ASes in memory.

pub mod discovery;

use std::net::Ipv4Addr;

use aviary_scion::{HostAddr, IsdAsn, ScionHeader};

use crate::hop_key::{hop_key, HopKeyInput};
use crate::matrix::InterfaceId;
use crate::packet::SourceAllocation;

/// The source AS of [`addresses`].
pub const SRC_IA: IsdAsn = IsdAsn::new(1, 0xff00_0000_0110);
/// The destination AS of [`addresses`].
pub const DST_IA: IsdAsn = IsdAsn::new(1, 0xff00_0000_0112);

/// The allocation `(aid, beta, ts_exp)` of `src` on `path` with the hop keys of the on-path
/// ASes: `secrets[k]` is the secret of the AS of `path[k + 1]` (the source, `path[0]`, has no
/// hop key). Extra secrets are ignored.
pub fn allocation(
    src: IsdAsn,
    path: &[(InterfaceId, InterfaceId)],
    (aid, beta, ts_exp): (u64, u32, u32),
    secrets: &[[u8; 16]],
) -> SourceAllocation {
    let hop_keys = secrets
        .iter()
        .zip(&path[1..])
        .map(|(s, &(ingress, egress))| hop_key(s, &HopKeyInput { src, aid, beta, ingress, egress, ts_exp }))
        .collect();
    SourceAllocation { path: path.to_vec(), aid, beta, ts_exp, hop_keys }
}

/// UDP from host 10.0.0.1 of `src` to host 10.0.0.2 of [`DST_IA`] (the path is the
/// allocation's).
pub fn addresses(src: IsdAsn) -> ScionHeader {
    ScionHeader {
        traffic_class: 0,
        flow_id: 1,
        next_hdr: 17,
        path_type: 0,
        dst_ia: DST_IA,
        src_ia: src,
        dst_host: HostAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
        src_host: HostAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
        path: vec![],
    }
}
