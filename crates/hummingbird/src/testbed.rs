//! A chain of ASes with their secrets and the SCION path through them, for tests,
//! benchmarks and the in-process demo. Each AS's hop fields and reservations are made
//! with that AS's own keys, as its control service would; a real deployment never holds
//! several ASes' secrets in one place.
//!
//! AS `i` has interface 1 towards AS `i+1` and interface 2 towards AS `i-1`. With four
//! or more ASes the path has three segments (up `0..=1` against construction direction,
//! core `1..=n-2` against it, down `n-2..=n-1` along it), so ASes 1 and n-2 are
//! crossovers.

use std::net::Ipv4Addr;

use aviary_scion::wire::header::path_type;
use aviary_scion::{
    combine, AsForwarding, HopMacKey, HostAddr, IsdAsn, ScionHeader, ScionPacket, Segment, StandardPath,
};

use crate::crypto::{ResInfo, SecretValue};
use crate::reservation::{as_hops, build_path, BuildError, Reservation};
use crate::router::{Router, RouterParams};

/// Interface towards the next AS on the chain.
pub const IF_NEXT: u16 = 1;
/// Interface towards the previous AS on the chain.
pub const IF_PREV: u16 = 2;
/// ExpTime of generated hop fields: 63 → 6 h.
pub const EXP_TIME: u8 = 63;

pub struct ChainAs {
    pub ia: IsdAsn,
    pub master_secret: [u8; 16],
    pub mac_key: HopMacKey,
    pub sv: SecretValue,
}

pub struct Chain {
    pub ases: Vec<ChainAs>,
    /// The path from AS 0 to the last AS, at its first hop.
    pub path: StandardPath,
}

impl Chain {
    /// `n ≥ 2` ASes, hop fields timestamped `timestamp` (Unix seconds).
    pub fn new(n: usize, timestamp: u32) -> Self {
        Self::with_key_generation(n, timestamp, 0)
    }

    /// The same ASes and path with other master secrets, one set per `generation`: the chain
    /// after its ASes rotated their keys.
    pub fn with_key_generation(n: usize, timestamp: u32, generation: u8) -> Self {
        assert!((2..=20).contains(&n), "chain of {n} ASes");
        let ases: Vec<ChainAs> = (0..n)
            .map(|i| {
                let mut master_secret = [0u8; 16];
                master_secret[..8].copy_from_slice(b"aviary-m");
                master_secret[14] = generation;
                master_secret[15] = i as u8;
                ChainAs {
                    ia: IsdAsn::new(1, 0xff00_0000_0110 + i as u64),
                    master_secret,
                    mac_key: HopMacKey::from_master_secret(&master_secret),
                    sv: SecretValue::from_master_secret(&master_secret),
                }
            })
            .collect();
        // A segment constructed from `from` towards `to` (inclusive).
        let seg = |from: usize, to: usize, seg_id: u16| {
            let mut s = Segment::new(seg_id, timestamp);
            let step: isize = if to > from { 1 } else { -1 };
            let mut i = from as isize;
            loop {
                let at_start = i as usize == from;
                let at_end = i as usize == to;
                let towards = |j: isize| if j > i { IF_NEXT } else { IF_PREV };
                let ingress = if at_start { 0 } else { towards(i - step) };
                let egress = if at_end { 0 } else { towards(i + step) };
                s.push_hop(&ases[i as usize].mac_key, EXP_TIME, ingress, egress);
                if at_end {
                    break;
                }
                i += step;
            }
            s
        };
        let path = match n {
            2 => combine(&[(&seg(0, 1, 0x1111), true)]),
            3 => combine(&[(&seg(1, 0, 0x2222), false), (&seg(1, 2, 0x3333), true)]),
            _ => combine(&[
                (&seg(1, 0, 0x2222), false),
                (&seg(n - 2, 1, 0x4444), false),
                (&seg(n - 2, n - 1, 0x3333), true),
            ]),
        }
        .expect("chain path");
        Self { ases, path }
    }

    pub fn src_ia(&self) -> IsdAsn {
        self.ases[0].ia
    }
    pub fn dst_ia(&self) -> IsdAsn {
        self.ases.last().unwrap().ia
    }

    /// The border router of AS `i`.
    pub fn router(&self, i: usize, params: RouterParams) -> Router {
        let a = &self.ases[i];
        let ifs = [(i + 1 < self.ases.len()).then_some(IF_NEXT), (i > 0).then_some(IF_PREV)];
        let fwd = AsForwarding::new(a.ia, a.mac_key.clone(), ifs.into_iter().flatten());
        Router::new(fwd, a.sv.clone(), params).expect("router params")
    }

    /// The ingress interface on which AS `i` receives traffic going forward.
    pub fn forward_ingress(i: usize) -> u16 {
        if i == 0 {
            0
        } else {
            IF_PREV
        }
    }

    /// A reservation granted by AS `i` (its own SV) for its hop on the path.
    pub fn grant(&self, i: usize, res_id: u32, bw: u16, start: u32, duration: u16) -> Reservation {
        let hop = as_hops(&self.path)[i];
        let info = ResInfo { ingress: hop.ingress, egress: hop.egress, res_id, bw, start, duration };
        Reservation { info, ak: self.ases[i].sv.auth_key(&info) }
    }

    /// A packet from AS 0 to the last AS over `path` bytes of type `ptype`.
    pub fn packet(&self, ptype: u8, path: Vec<u8>, payload: Vec<u8>) -> Vec<u8> {
        ScionPacket {
            header: ScionHeader {
                traffic_class: 0,
                flow_id: 1,
                next_hdr: 17,
                path_type: ptype,
                dst_ia: self.dst_ia(),
                src_ia: self.src_ia(),
                dst_host: HostAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
                src_host: HostAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
                path,
            },
            payload,
        }
        .to_bytes()
        .expect("packet")
    }

    /// A standard SCION packet along the chain.
    pub fn standard_packet(&self, payload_len: usize) -> Vec<u8> {
        self.packet(path_type::SCION, self.path.to_bytes().unwrap(), vec![0xab; payload_len])
    }

    /// A Hummingbird packet with flyovers at the given ASes (reservation per AS hop),
    /// not yet stamped.
    pub fn hbird_packet(
        &self,
        reservations: &[(usize, Reservation)],
        base_ts: u32,
        payload_len: usize,
    ) -> Result<Vec<u8>, BuildError> {
        let res: Vec<(usize, ResInfo)> = reservations.iter().map(|(i, r)| (*i, r.info)).collect();
        let path = build_path(&self.path, &res, base_ts)?;
        Ok(self.packet(path_type::HUMMINGBIRD, path.to_bytes()?, vec![0xab; payload_len]))
    }
}
