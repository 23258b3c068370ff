//! The seam, end to end without sockets: a toy mechanism with its own path type, admission,
//! class and drop reason joins a router with one constructor line, the operator maps its
//! admission to a class of a link's table in the router config, and the link serves that class
//! within its bounds.

use aviary_node::config::RouterConfig;
use aviary_node::router::{classes, pipeline::Pipeline};
use aviary_qos::{
    Admission, Claim, ClassId, Context, DropReason, EgressScheduler, LinkParams, Processor, SeededRandom, Verdict,
};
use aviary_scion::{AsForwarding, HopMacKey, IsdAsn, StandardForwarder};

const TOY_PATH_TYPE: u8 = 0x42;
const EXPRESS: Admission = Admission(Admission::FIRST_OWN);
const LINK: u16 = 1;

/// Forwards its packets on `LINK`: byte 11 = 1 as `express`, 0 dropped as `toy_rejected`,
/// anything else unauthenticated.
struct Toy;

impl Processor for Toy {
    fn name(&self) -> &'static str {
        "toy"
    }
    fn claims(&self) -> &'static [Claim] {
        &[Claim::PathType(TOY_PATH_TYPE)]
    }
    fn admissions(&self) -> &'static [(Admission, &'static str)] {
        &[(EXPRESS, "express")]
    }
    fn drop_reasons(&self) -> &'static [&'static str] {
        &["toy_rejected"]
    }
    fn process_batch(&mut self, _: &mut Context<'_>, pkts: &mut [&mut [u8]], verdicts: &mut [Verdict]) {
        for (p, v) in pkts.iter().zip(verdicts) {
            *v = match p[11] {
                0 => Verdict::Drop(DropReason::Mechanism(0)),
                1 => Verdict::forward(LINK, EXPRESS),
                _ => Verdict::unauthenticated(LINK),
            };
        }
    }
}

const CONFIG: &str = r#"
ia = "1-ff00:0:110"
master_secret_file = "secret.hex"
internal = "127.0.0.1:31000"
management = "127.0.0.1:31001"

[classes]
express = "express"

[class_table.toy]
policy = "bounded_shares"
class = [
  { name = "express", queue_bytes = 20000, lower = "20%", upper = "20%" },
  { name = "best_effort", queue_bytes = 20000 },
]

[[interface]]
id = 1
local = "127.0.0.1:31002"
remote = "127.0.0.1:31003"
neighbor = "1-ff00:0:111"
capacity_bps = 10000000
class_table = "toy"
"#;

fn pkt(kind: u8) -> Vec<u8> {
    let mut p = vec![0u8; 500];
    p[8] = TOY_PATH_TYPE;
    p[11] = kind;
    p
}

#[test]
fn a_toy_mechanism_gets_its_class_served_within_its_bounds() {
    let cfg: RouterConfig = toml::from_str(CONFIG).unwrap();
    cfg.validate("router.toml").unwrap();
    let fwd = AsForwarding::new(IsdAsn::new(1, 0xff00_0000_0110), HopMacKey::new(&[1; 16]), [LINK]);
    // The router's constructor lines: standard SCION, and the toy.
    let mut pipeline = Pipeline::new(vec![Box::new(StandardForwarder::standard(fwd)), Box::new(Toy)]).unwrap();

    let tables = cfg.class_tables("router.toml").unwrap();
    let table = tables["toy"].clone();
    let classifier = classes::classifier("router.toml", "toy", &table, &cfg.classes, pipeline.admissions()).unwrap();
    assert_eq!(table.get(classifier.classify(EXPRESS)).unwrap().name, "express");
    assert_eq!(table.get(classifier.classify(Admission::UNAUTHENTICATED)).unwrap().name, "best_effort");

    let rate = cfg.interfaces[0].capacity_bps;
    let mut link = EgressScheduler::new(LinkParams { rate_bps: rate, delay_ns: 0 }, table);
    let mut random = SeededRandom::new(3);
    let mut sent = [0u64; 2];
    // One second, offered 12 Mbit/s of express and 12 Mbit/s of best effort (500 B each, in
    // batches of 3: express, best effort, one the toy rejects).
    let gap_ns = 500 * 8 * 1_000_000_000 / 12_000_000;
    let mut now = 0;
    while now < 1_000_000_000 {
        let mut bufs = [pkt(1), pkt(2), pkt(0)];
        let mut pkts: Vec<&mut [u8]> = bufs.iter_mut().map(|b| b.as_mut_slice()).collect();
        let mut verdicts = [Verdict::Deliver; 3];
        let mut ctx = Context { now_ns: now, ingress: 2, links: &[], random: &mut random };
        pipeline.process_batch(&mut ctx, &mut pkts, &mut verdicts);
        for (p, v) in pkts.iter().zip(verdicts) {
            if let Verdict::Forward { egress, admission } = v {
                assert_eq!(egress, LINK);
                let _ = link.enqueue(p.to_vec(), classifier.classify(admission), 7, now);
            }
        }
        link.poll(now, &mut |p: Vec<u8>| sent[usize::from(p[11] != 1)] += p.len() as u64 * 8);
        now += gap_ns;
    }
    // Express is held to its 20% (plus at most a burst), best effort takes the rest of the link.
    let express_bps = sent[0];
    let best_effort_bps = sent[1];
    assert!(express_bps <= rate / 5 + 200_000, "express got {express_bps} bit/s of {rate}");
    assert!(express_bps >= rate / 5 - 200_000, "express got only {express_bps} bit/s");
    assert!(express_bps + best_effort_bps >= rate - 200_000, "link not used: {express_bps} + {best_effort_bps}");
    let st = link.stats();
    assert!(st.class(ClassId(0)).dropped_packets > 0 && st.class(ClassId(1)).dropped_packets > 0);

    // The toy's own drop reason is counted for it, under its own label.
    let report = pipeline.report();
    let toy = report.iter().find(|m| m.name == "toy").unwrap();
    let batches = 1_000_000_000u64.div_ceil(gap_ns);
    assert_eq!(toy.drops, [("toy_rejected", batches)]);
    assert_eq!(pipeline.drop_label(&pkt(0), DropReason::Mechanism(0)), "toy_rejected");
}

#[test]
fn a_path_type_claimed_twice_stops_the_router_naming_both() {
    struct Thief;
    impl Processor for Thief {
        fn name(&self) -> &'static str {
            "thief"
        }
        fn claims(&self) -> &'static [Claim] {
            &[Claim::PathType(TOY_PATH_TYPE)]
        }
        fn process_batch(&mut self, _: &mut Context<'_>, _: &mut [&mut [u8]], _: &mut [Verdict]) {}
    }
    let err = Pipeline::new(vec![Box::new(Toy), Box::new(Thief)]).err().unwrap();
    assert_eq!(err.to_string(), "path type 66 is claimed by both `toy` and `thief`");
}
