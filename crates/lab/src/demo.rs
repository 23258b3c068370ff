//! The in-process data-plane demo: five ASes in a line (Fig. 1 of seed 000), a source
//! with reservations on the three transit ASes, and legitimate and attack flows pushed
//! through the border-router pipeline of every AS, packet by packet, on a simulated
//! clock. It shows what each AS's processor decides; the emulated network with real
//! sockets and congested links is built on top of these processors.

use std::collections::BTreeMap;

use aviary_hummingbird::testbed::Chain;
use aviary_hummingbird::{BwCodec, Reservation, Router, RouterParams, Source};
use aviary_qos::{Class, Verdict};
use aviary_scion::ScionView;
use serde::Serialize;

const T0: u32 = 1_750_000_000;
const S: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;
/// Packets of every flow are 1000 bytes on the wire.
const PKT_LEN: usize = 1000;
/// The reserved ASes: the three transit ASes of the line.
const RESERVED: [usize; 3] = [1, 2, 3];
/// The reservations' bandwidth code: e = 7, s = 0 → 32 << 6 kbit/s = 2.048 Mbit/s.
const BW_CODE: u16 = 224;

#[derive(Clone, Debug, Serialize)]
pub struct FlowReport {
    pub name: &'static str,
    /// `reserved`, `best_effort` or `attack`.
    pub kind: &'static str,
    pub offered_bps: u64,
    pub reserved_bps: Option<u64>,
    pub sent: u64,
    pub delivered: u64,
    /// Packets that had priority at every reserved AS.
    pub priority_everywhere: u64,
    /// Drops by reason label.
    pub dropped: BTreeMap<&'static str, u64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct DemoReport {
    pub topology: &'static str,
    pub duration_s: f64,
    pub flows: Vec<FlowReport>,
}

struct Flow {
    report: FlowReport,
    interval_ns: u64,
    /// Turns a fresh packet into what this flow sends at `now`.
    make: Box<dyn FnMut(u64) -> Vec<u8>>,
    /// Extra delay between creation and arrival at the first router (replays).
    delay_ns: u64,
}

fn walk(routers: &mut [Router], mut pkt: Vec<u8>, now: u64, r: &mut FlowReport) {
    let mut priority_hops = 0;
    for (i, router) in routers.iter_mut().enumerate() {
        match router.process(&mut pkt, Chain::forward_ingress(i), now) {
            Verdict::Forward { class, .. } => {
                if class == Class::Priority && RESERVED.contains(&i) {
                    priority_hops += 1;
                }
            }
            Verdict::Deliver => {
                r.delivered += 1;
                if priority_hops == RESERVED.len() {
                    r.priority_everywhere += 1;
                }
                return;
            }
            Verdict::Drop(reason) => {
                *r.dropped.entry(reason.label()).or_default() += 1;
                return;
            }
        }
    }
}

/// Runs the demo for `duration_ms` of simulated time.
pub fn run(duration_ms: u64) -> DemoReport {
    let chain = std::rc::Rc::new(Chain::new(5, T0 - 60));
    let start = u64::from(T0) * S;
    let res: Vec<(usize, Reservation)> =
        RESERVED.iter().map(|i| (*i, chain.grant(*i, 5, BW_CODE, T0 - 1, 600))).collect();
    let reserved_bps = BwCodec::Paper.decode_bps(BW_CODE);
    let keys: Vec<Reservation> = res.iter().map(|r| r.1).collect();
    let hdr = ScionView::new_checked(&chain.hbird_packet(&res, T0, 0).unwrap()[..]).unwrap().hdr_len();
    let payload = PKT_LEN - hdr;
    let at_rate = reserved_bps * 9 / 10;
    let interval = |bps: u64| (PKT_LEN as u64 * 8 * S) / bps;

    let reserved =
        |chain: std::rc::Rc<Chain>, res: Vec<(usize, Reservation)>, keys: Vec<Reservation>, tamper: fn(&mut [u8])| {
            let mut src: Option<Source> = None;
            move |now: u64| {
                let mut p = chain.hbird_packet(&res, (now / S) as u32, payload).unwrap();
                src.get_or_insert_with(|| Source::new(&p, &keys).unwrap()).stamp(&mut p, now).unwrap();
                tamper(&mut p);
                p
            }
        };
    let mk = |name, kind, bps: u64, reserved: Option<u64>| FlowReport {
        name,
        kind,
        offered_bps: bps,
        reserved_bps: reserved,
        sent: 0,
        delivered: 0,
        priority_everywhere: 0,
        dropped: BTreeMap::new(),
    };
    let mut flows = vec![
        Flow {
            report: mk("reserved", "reserved", at_rate, Some(reserved_bps)),
            interval_ns: interval(at_rate),
            make: Box::new(reserved(chain.clone(), res.clone(), keys.clone(), |_| {})),
            delay_ns: 0,
        },
        Flow {
            report: mk("best effort", "best_effort", at_rate, None),
            interval_ns: interval(at_rate),
            make: Box::new({
                let chain = chain.clone();
                let std_hdr = ScionView::new_checked(&chain.standard_packet(0)[..]).unwrap().hdr_len();
                move |_| chain.standard_packet(PKT_LEN - std_hdr)
            }),
            delay_ns: 0,
        },
        Flow {
            report: mk("overuse ×3", "attack", 3 * reserved_bps, Some(reserved_bps)),
            interval_ns: interval(3 * reserved_bps),
            make: Box::new(reserved(chain.clone(), res.clone(), keys.clone(), |_| {})),
            delay_ns: 0,
        },
        Flow {
            report: mk("forged bandwidth", "attack", at_rate, None),
            interval_ns: interval(at_rate),
            make: Box::new(reserved(chain.clone(), res.clone(), keys.clone(), |p| flip_bw_bit(p))),
            delay_ns: 0,
        },
        Flow {
            report: mk("stale replay (+2 s)", "attack", at_rate, None),
            interval_ns: interval(at_rate),
            make: Box::new(reserved(chain.clone(), res.clone(), keys.clone(), |_| {})),
            delay_ns: 2 * S,
        },
    ];
    // Each flow has its own routers: the policing state of one flow's reservation must not
    // be spent by another flow in this demo (in the network, the overuse flow shares it).
    for f in &mut flows {
        let mut routers: Vec<Router> = (0..5).map(|i| chain.router(i, RouterParams::default())).collect();
        let mut t = start;
        while t < start + duration_ms * MS {
            let pkt = (f.make)(t);
            f.report.sent += 1;
            walk(&mut routers, pkt, t + f.delay_ns, &mut f.report);
            t += f.interval_ns;
        }
    }
    DemoReport {
        topology: "line5",
        duration_s: duration_ms as f64 / 1e3,
        flows: flows.into_iter().map(|f| f.report).collect(),
    }
}

/// Claims more bandwidth at the first reserved AS by flipping the top BW bit.
fn flip_bw_bit(pkt: &mut [u8]) {
    let v = ScionView::new_checked(&*pkt).unwrap();
    let path = v.path_range().start;
    let p = aviary_hummingbird::HbirdPath::parse(v.path()).unwrap();
    let mut off = path + aviary_hummingbird::path::META_LEN + 8 * p.info.len();
    for h in p.hops() {
        if h.flyover.is_some() {
            pkt[off + 14] ^= 0x02; // BW bit 9 (byte 2 of the ResID|BW word)
            return;
        }
        off += 4 * h.lines();
    }
}

/// The table for a person.
pub fn table(r: &DemoReport) -> String {
    let mut out = format!(
        "{:<22} {:<12} {:>10} {:>10} {:>7} {:>9} {:>10}  {}\n",
        "flow", "kind", "offered", "reserved", "sent", "delivered", "priority", "dropped"
    );
    let mbps = |b: u64| format!("{:.2}M", b as f64 / 1e6);
    for f in &r.flows {
        let dropped: Vec<String> = f.dropped.iter().map(|(k, v)| format!("{k}={v}")).collect();
        out += &format!(
            "{:<22} {:<12} {:>10} {:>10} {:>7} {:>9} {:>9.1}%  {}\n",
            f.name,
            f.kind,
            mbps(f.offered_bps),
            f.reserved_bps.map(mbps).unwrap_or_else(|| "-".into()),
            f.sent,
            f.delivered,
            100.0 * f.priority_everywhere as f64 / f.sent.max(1) as f64,
            if dropped.is_empty() { "-".into() } else { dropped.join(" ") }
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demo_shows_what_each_flow_gets() {
        let r = run(1000);
        let flow = |name: &str| r.flows.iter().find(|f| f.name == name).unwrap();
        let share = |f: &FlowReport| f.priority_everywhere as f64 / f.sent as f64;
        let reserved = flow("reserved");
        assert!(reserved.sent > 100);
        assert_eq!(reserved.priority_everywhere, reserved.sent);
        assert_eq!(flow("best effort").priority_everywhere, 0);
        // Three times the reserved rate: about a third within the reservation (plus the burst).
        let over = share(flow("overuse ×3"));
        assert!((0.30..0.40).contains(&over), "overuse share {over}");
        let forged = flow("forged bandwidth");
        assert_eq!(forged.delivered, 0);
        assert_eq!(forged.dropped.get("bad_mac"), Some(&forged.sent));
        let stale = flow("stale replay (+2 s)");
        assert_eq!(stale.priority_everywhere, 0);
        assert_eq!(stale.delivered, stale.sent);
    }
}
