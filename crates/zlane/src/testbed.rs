//! A chain of ASes with their secrets, a per-AS EPIC path through them, hosts that seal
//! packets with their DRKey keys, the source AS's gateway and every AS's EPIC forwarder: for
//! tests and benchmarks. Each AS's hop fields and keys are made with that AS's own secrets, as
//! its services would; a real deployment never holds several ASes' secrets in one place.
//!
//! AS `i` has interface 1 towards AS `i+1` and interface 2 towards AS `i-1`. The path is one
//! down segment through all ASes, or ([`Net::with_crossover`]) an up segment from AS 0 to AS 1
//! and a down segment from AS 1 to the last, so that AS 1 holds two hop fields.

use std::net::Ipv4Addr;

use aviary_qos::{Admission, Verdict};
use aviary_scion::drkey::{EpochSchedule, HostAddr as DrkeyHost, IssuerKeys, Protocol, RotatingSecret};
use aviary_scion::epic::hvf::MacInput;
use aviary_scion::epic::per_as::seal;
use aviary_scion::epic::timestamp::epic_timestamp;
use aviary_scion::epic::{Epic, EpicForwarder};
use aviary_scion::mac::{mac_input, HopMacKey};
use aviary_scion::wire::epic::PktId;
use aviary_scion::wire::epic_per_as::{PerAsPath, PerAsPathView};
use aviary_scion::{combine, path_type, AsForwarding, HostAddr, IsdAsn, ScionHeader, ScionPacket, ScionView};
use aviary_scion::{Segment, StandardPath};

use crate::gateway::{Gateway, GatewayConfig, GatewayError, MAX_HOST_SLOTS};

/// Interface towards the next AS on the chain.
pub const IF_NEXT: u16 = 1;
/// Interface towards the previous AS on the chain.
pub const IF_PREV: u16 = 2;
/// The DRKey protocol of the chain's EPIC keys.
pub const PROTOCOL: u16 = 42;
const S: u64 = 1_000_000_000;
const EXP_TIME: u8 = 63;
/// The destination host in the last AS.
pub const DST_HOST: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 2);

pub struct NetAs {
    pub ia: IsdAsn,
    pub master_secret: [u8; 16],
    pub mac_key: HopMacKey,
    /// DRKey keys of the epoch the net was made for.
    pub drkey: IssuerKeys,
}

pub struct Net {
    pub ases: Vec<NetAs>,
    pub path: StandardPath,
    /// Per hop field: its AS and its full CMAC σ.
    hops: Vec<(usize, [u8; 16])>,
    counter: u32,
    /// The DRKey epochs of every AS of the net.
    schedule: EpochSchedule,
}

impl Net {
    /// `n ≥ 2` ASes on one segment, hop fields made an hour before `now_ns`, DRKey keys of the
    /// epoch of `now_ns` (packets must be sent in it).
    pub fn new(n: usize, now_ns: u64) -> Self {
        Self::build(n, now_ns, false, EpochSchedule::SCION_DEFAULT)
    }

    /// [`Net::new`] whose ASes' DRKey epochs follow `schedule` instead of SCION's default.
    pub fn with_schedule(n: usize, now_ns: u64, schedule: EpochSchedule) -> Self {
        Self::build(n, now_ns, false, schedule)
    }

    /// `n ≥ 3` ASes, up to AS 1 and down from it.
    pub fn with_crossover(n: usize, now_ns: u64) -> Self {
        assert!(n >= 3, "a crossover needs three ASes");
        Self::build(n, now_ns, true, EpochSchedule::SCION_DEFAULT)
    }

    fn build(n: usize, now_ns: u64, crossover: bool, schedule: EpochSchedule) -> Self {
        assert!((2..=60).contains(&n), "chain of {n} ASes");
        let epoch = schedule.epoch_at(now_ns / S).expect("epoch");
        let ases: Vec<NetAs> = (0..n)
            .map(|i| {
                let mut master_secret = [0u8; 16];
                master_secret[..8].copy_from_slice(b"zlane-gw");
                master_secret[15] = i as u8;
                let drkey = IssuerKeys::new(&master_secret, Protocol(PROTOCOL), epoch).expect("drkey");
                let ia = IsdAsn::new(1, 0xff00_0000_0110 + i as u64);
                NetAs { ia, master_secret, mac_key: HopMacKey::from_master_secret(&master_secret), drkey }
            })
            .collect();
        let timestamp = (now_ns / S) as u32 - 3600;
        // A segment built from AS `from` to AS `to`, and the AS of each construction index.
        let seg = |from: usize, to: usize, seg_id: u16| {
            let mut s = Segment::new(seg_id, timestamp);
            let order: Vec<usize> = if to > from { (from..=to).collect() } else { (to..=from).rev().collect() };
            for (k, &i) in order.iter().enumerate() {
                let towards = |j: usize| if j > i { IF_NEXT } else { IF_PREV };
                let ingress = if k == 0 { 0 } else { towards(order[k - 1]) };
                let egress = if k + 1 == order.len() { 0 } else { towards(order[k + 1]) };
                s.push_hop(&ases[i].mac_key, EXP_TIME, ingress, egress);
            }
            (s, order)
        };
        let segments = if crossover {
            vec![(seg(1, 0, 0x2222), false), (seg(1, n - 1, 0x3333), true)]
        } else {
            vec![(seg(0, n - 1, 0x1111), true)]
        };
        let path = combine(&segments.iter().map(|((s, _), d)| (s, *d)).collect::<Vec<_>>()).expect("path");
        let mut hops = Vec::new();
        for ((s, order), cons_dir) in &segments {
            let mut ks: Vec<usize> = (0..order.len()).collect();
            if !cons_dir {
                ks.reverse();
            }
            for k in ks {
                let (h, i) = (&s.hops[k], order[k]);
                let block = mac_input(s.beta(k), s.timestamp, h.exp_time, h.cons_ingress, h.cons_egress);
                hops.push((i, ases[i].mac_key.cmac_block(&block)));
            }
        }
        Self { ases, path, hops, counter: 0, schedule }
    }

    pub fn src_ia(&self) -> IsdAsn {
        self.ases[0].ia
    }

    pub fn hop_fields(&self) -> usize {
        self.hops.len()
    }

    /// Host `last` of the source AS: 10.0.(last >> 8).(last & 0xff).
    pub fn host(last: u16) -> Ipv4Addr {
        let [hi, lo] = last.to_be_bytes();
        Ipv4Addr::new(10, 0, hi, lo)
    }

    /// The gateway of AS 0 with every AS's Level-1 key for AS 0 and the chain's links.
    pub fn gateway(&self, config: &GatewayConfig, now_ns: u64) -> Result<Gateway, GatewayError> {
        self.gateway_with_max_host_slots(config, now_ns, MAX_HOST_SLOTS)
    }

    /// [`Net::gateway`] whose host table has at most `max_slots` slots.
    pub fn gateway_with_max_host_slots(
        &self,
        config: &GatewayConfig,
        now_ns: u64,
        max_slots: usize,
    ) -> Result<Gateway, GatewayError> {
        let mut gw = Gateway::with_max_host_slots(
            self.src_ia(),
            &RotatingSecret::new(&self.ases[0].master_secret)?,
            self.schedule,
            config,
            now_ns,
            max_slots,
        )?;
        let keys = gw.path_keys_mut();
        for (i, a) in self.ases.iter().enumerate() {
            keys.set_key(a.ia, &a.drkey.level1(self.src_ia()));
            if let Some(next) = self.ases.get(i + 1) {
                keys.add_link(a.ia, IF_NEXT, next.ia);
                keys.add_link(next.ia, IF_PREV, a.ia);
            }
        }
        Ok(gw)
    }

    /// A per-AS EPIC packet with `payload` bytes from host `sealer` sent at `now_ns`, whose
    /// header claims host `claimed` (the same, unless it is spoofed).
    pub fn packet_as(&mut self, sealer: Ipv4Addr, claimed: Ipv4Addr, payload: usize, now_ns: u64) -> Vec<u8> {
        self.counter = self.counter.wrapping_add(1);
        let info = self.path.info[0];
        let epic_ts = epic_timestamp(info.timestamp, now_ns).expect("sent after the path's timestamp");
        let id = PktId { epic_ts, counter: self.counter };
        let path = PerAsPath::unsealed(id, self.path.clone()).to_bytes().expect("path");
        let src = self.src_ia();
        let dst = self.ases.last().expect("two ASes");
        let mut pkt = ScionPacket {
            header: ScionHeader {
                traffic_class: 0,
                flow_id: 1,
                next_hdr: 17,
                path_type: path_type::EPIC_PER_AS,
                dst_ia: dst.ia,
                src_ia: src,
                dst_host: HostAddr::V4(DST_HOST),
                src_host: HostAddr::V4(claimed),
                path,
            },
            payload: vec![0x5a; payload],
        }
        .to_bytes()
        .expect("packet");
        let h = DrkeyHost::Ipv4(sealer);
        let keys: Vec<_> = self.hops.iter().map(|(i, _)| self.ases[*i].drkey.as_host(src, &h)).collect();
        let sigmas: Vec<_> = self.hops.iter().map(|(_, s)| *s).collect();
        let dst_key = dst.drkey.host_host(src, &DrkeyHost::Ipv4(DST_HOST), &h);
        let range = ScionView::new_checked(&pkt[..]).expect("header").path_range();
        let mut view = PerAsPathView::new_checked(&mut pkt[range]).expect("path");
        let input = MacInput::new(info.timestamp, id, src, &HostAddr::V4(claimed), payload as u16);
        seal(&mut view, &input, &keys, &sigmas, &dst_key).expect("one key per hop field");
        pkt
    }

    pub fn packet(&mut self, host: Ipv4Addr, payload: usize, now_ns: u64) -> Vec<u8> {
        self.packet_as(host, host, payload, now_ns)
    }

    /// AS `i`'s EPIC forwarder, without duplicate suppression.
    pub fn forwarder(&self, i: usize) -> EpicForwarder {
        let a = &self.ases[i];
        let ifs = [(i + 1 < self.ases.len()).then_some(IF_NEXT), (i > 0).then_some(IF_PREV)];
        let fwd = AsForwarding::new(a.ia, a.mac_key.clone(), ifs.into_iter().flatten());
        EpicForwarder::new(fwd, Epic::new(a.drkey.clone(), None))
    }

    /// Sends `pkt` along the path through every AS's forwarder, which update its fields:
    /// `Ok` if every AS admitted it as authenticated and the last delivered it, else the
    /// first other verdict.
    pub fn traverse(&self, pkt: &mut [u8], now_ns: u64) -> Result<(), Verdict> {
        let mut ingress = 0;
        let mut at = usize::MAX;
        for &(i, _) in &self.hops {
            if i == at {
                continue; // the second hop field of a crossover: that AS handled both
            }
            at = i;
            let mut v = [Verdict::Deliver];
            self.forwarder(i).process_batch(&mut [&mut *pkt], ingress, now_ns, &mut v);
            match v[0] {
                Verdict::Forward { egress, admission: Admission::AUTHENTICATED } => {
                    ingress = if egress == IF_NEXT { IF_PREV } else { IF_NEXT };
                }
                Verdict::Deliver if i + 1 == self.ases.len() => return Ok(()),
                other => return Err(other),
            }
        }
        Err(Verdict::Deliver)
    }
}
