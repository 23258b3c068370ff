//! The Z-Lane gateway and the source AS's Z-Lane router behind it on fuzzed packets, on a
//! three-AS chain (`aviary_zlane::testbed`):
//! - no panic, and every packet the gateway drops is counted under exactly one reason;
//! - a batch gets the verdicts and the bytes its packets get one at a time (two gateways fed
//!   the same packets in lock step, one in batches and one packet by packet);
//! - the gateway passes a packet (authorized or not) only if a reference computation of the
//!   source's validation field (`hop_validation` over the packet's fields as the owned
//!   representations decode them, under the claimed host's key) gives the field it carries: a
//!   gateway that ignored a covered byte would pass a spoofed or altered packet;
//! - the router gives the guaranteed class only to a flagged packet from the source AS whose
//!   validation field is the gateway's form of the reference one: neither a host setting the
//!   flag itself nor a packet altered after the gateway gets the AS's guarantee.
//!
//! Input: `[selector][rest]`. Selector bit 0: `rest` itself (0) or a fresh honest packet of
//! host 10.0.0.1 with `rest` XORed over it (1); bit 1: the XOR lands before the gateway (0) or
//! on the gateway's output, before the router (1); bit 2: the batch starts with a junk packet
//! (so the stages' bookkeeping of passed packets is tested with a gap).
#![no_main]

use std::collections::BTreeMap;
use std::sync::Mutex;

use aviary_qos::{Context, LinkState, Processor, RateBound, SeededRandom, Verdict};
use aviary_scion::drkey::{EpochSchedule, HostAddr as DrkeyHost, RotatingSecret};
use aviary_scion::epic::hvf::{hvf_eq, MacInput};
use aviary_scion::epic::per_as::{gateway_hvf, hop_validation, source_hvf};
use aviary_scion::mac::mac_input;
use aviary_scion::wire::epic_per_as::PerAsPath;
use aviary_scion::{path_type, AsForwarding, ScionPacket};
use aviary_zlane::classes::{RateConfig, RouterClass, ZlaneConfig};
use aviary_zlane::gateway::config::HostRateConfig;
use aviary_zlane::gateway::{Gateway, GatewayConfig, GatewayVerdict, OverRatePolicy};
use aviary_zlane::router::ZlaneRouter;
use aviary_zlane::testbed::{Net, IF_NEXT, PROTOCOL};
use libfuzzer_sys::fuzz_target;

const S: u64 = 1_000_000_000;
const NOW: u64 = 1_750_000_000 * S;
const PAYLOAD: usize = 64;

struct State {
    net: Net,
    /// Fed whole batches, and packet by packet: their verdicts and outputs must agree.
    batched: Gateway,
    single: Gateway,
    router: ZlaneRouter,
    links: [LinkState; 1],
    random: SeededRandom,
    /// The simulated clock, a microsecond a run, so that the host's rate is now met and now
    /// exceeded.
    now: u64,
}

fn state() -> State {
    let net = Net::new(3, NOW);
    let config = GatewayConfig {
        guarantee_bps: 400_000_000,
        burst_bytes: 3000,
        over_rate: OverRatePolicy::Unflagged,
        drkey_protocol: PROTOCOL,
        suppress_duplicates: true,
        hosts: vec![HostRateConfig { prefix: "10.0.0.0/8".into(), rate_bps: None }],
    };
    let (batched, single) = (net.gateway(&config, NOW).unwrap(), net.gateway(&config, NOW).unwrap());
    let a = &net.ases[0];
    let zcfg = ZlaneConfig {
        ases: net.ases.iter().map(|a| a.ia).collect(),
        isds: vec![],
        rates: BTreeMap::from([(a.ia.to_string(), RateConfig::Bps(200_000_000))]),
        burst_bytes: 15_000,
        drkey_protocol: PROTOCOL,
    };
    let fwd = AsForwarding::new(a.ia, a.mac_key.clone(), [IF_NEXT]);
    let secret = RotatingSecret::new(&a.master_secret).unwrap();
    let links = [(IF_NEXT, RateBound::Ppm(500_000))];
    let router = ZlaneRouter::new(fwd, &secret, EpochSchedule::SCION_DEFAULT, zcfg, links, NOW).unwrap();
    let links = [LinkState { id: IF_NEXT, up: true, rate_bps: 1_000_000_000, ..Default::default() }];
    State { net, batched, single, router, links, random: SeededRandom::new(1), now: NOW }
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

/// `V_0`, the full MAC of the source AS's hop field under the claimed source host's key,
/// recomputed from the packet's decoded fields; `None` for a packet that is not per-AS EPIC
/// from the chain's source AS.
fn reference_v0(net: &Net, pkt: &[u8]) -> Option<[u8; 16]> {
    let p = ScionPacket::parse(pkt).ok()?;
    let h = &p.header;
    if h.path_type != path_type::EPIC_PER_AS || h.src_ia != net.src_ia() {
        return None;
    }
    let path = PerAsPath::parse(&h.path).ok()?;
    let (info, hop) = (path.path.info.first()?, path.path.hops.first()?);
    let a = &net.ases[0];
    let sigma =
        a.mac_key.cmac_block(&mac_input(info.seg_id, info.timestamp, hop.exp_time, hop.cons_ingress, hop.cons_egress));
    let key = a.drkey.as_host(net.src_ia(), &DrkeyHost::from(&h.src_host));
    let input = MacInput::new(info.timestamp, path.pkt_id, h.src_ia, &h.src_host, p.payload.len() as u16);
    Some(hop_validation(&key, &input, &sigma))
}

/// HVF 0 and the QoS flag as the owned representation reads them.
fn hvf0_and_flag(pkt: &[u8]) -> Option<([u8; 4], bool)> {
    let p = ScionPacket::parse(pkt).ok()?;
    let path = PerAsPath::parse(&p.header.path).ok()?;
    Some((*path.hvfs.first()?, path.qos))
}

fn drops(gw: &Gateway) -> u64 {
    gw.drops().map(|(_, n)| n).sum()
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else { return };
    let mut guard = STATE.lock().unwrap();
    let st = guard.get_or_insert_with(state);
    st.now += 1_000;
    let now = st.now;
    let host = Net::host(1);
    let xor = |p: &mut Vec<u8>| p.iter_mut().zip(rest).for_each(|(b, x)| *b ^= x);
    let mut pkt = if sel & 1 == 0 { rest.to_vec() } else { st.net.packet(host, PAYLOAD, now) };
    if sel & 1 == 1 && sel & 2 == 0 {
        xor(&mut pkt);
    }
    let before_gateway = pkt.clone();

    // The batch: an optional junk packet, the fuzzed one, and another honest one.
    let mut batch = Vec::new();
    if sel & 4 != 0 {
        batch.push(rest.iter().rev().copied().collect::<Vec<u8>>());
    }
    let at = batch.len();
    batch.push(pkt);
    batch.push(st.net.packet(Net::host(2), PAYLOAD, now));
    let mut singles = batch.clone();

    let dropped_before = drops(&st.batched);
    let mut verdicts = vec![GatewayVerdict::Unflagged; batch.len()];
    let mut refs: Vec<&mut [u8]> = batch.iter_mut().map(|p| p.as_mut_slice()).collect();
    st.batched.process_batch(&mut refs, now, &mut verdicts);
    for (i, p) in singles.iter_mut().enumerate() {
        let mut v = [GatewayVerdict::Unflagged];
        st.single.process_batch(&mut [p.as_mut_slice()], now, &mut v);
        assert_eq!(v[0], verdicts[i], "packet {i}: alone and in a batch");
        assert_eq!(*p, batch[i], "packet {i}: the bytes alone and in a batch");
    }
    let drop_verdicts = verdicts.iter().filter(|v| matches!(v, GatewayVerdict::Drop(_))).count() as u64;
    assert_eq!(drops(&st.batched) - dropped_before, drop_verdicts, "every drop is counted once");

    let verdict = verdicts[at];
    if matches!(verdict, GatewayVerdict::Drop(_)) {
        return;
    }
    let v0 = reference_v0(&st.net, &before_gateway);
    let carried = hvf0_and_flag(&before_gateway).map(|(h, _)| h);
    assert!(
        matches!((v0, carried), (Some(v), Some(h)) if hvf_eq(&h, &source_hvf(&v))),
        "the gateway passed ({verdict:?}) a packet whose source does not verify"
    );

    // The router of the source AS, after the gateway.
    let mut pkt = std::mem::take(&mut batch[at]);
    if sel & 1 == 1 && sel & 2 != 0 {
        xor(&mut pkt);
    }
    let before_router = pkt.clone();
    let State { router, links, random, net, .. } = st;
    let mut ctx = Context { now_ns: now, ingress: 0, links: &links[..], random };
    let mut v = [Verdict::Deliver];
    router.process_batch(&mut ctx, &mut [pkt.as_mut_slice()], &mut v);
    if v[0] == Verdict::forward(IF_NEXT, RouterClass::Guaranteed.admission()) {
        let own = net.ases[0].drkey.level1(net.src_ia());
        let ok = match (reference_v0(net, &before_router), hvf0_and_flag(&before_router)) {
            (Some(v), Some((h, true))) => hvf_eq(&h, &gateway_hvf(&own, &source_hvf(&v))),
            _ => false,
        };
        assert!(ok, "the router guaranteed a packet the gateway did not authorize");
    }
});
