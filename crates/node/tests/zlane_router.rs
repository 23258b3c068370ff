//! A Z-Lane router through its real constructor line and class table, without sockets: the
//! source AS's router gets gateway-authorized EPIC traffic within and beyond its guarantee,
//! EPIC without the QoS flag, forged QoS flags, standard SCION and a Hummingbird flyover,
//! and every forwarded packet lands in its queue of Table 2. Then the operator changes the
//! guarantees at run time, and the change survives a restart.

use std::net::Ipv4Addr;

use aviary_hummingbird::testbed::{Chain, IF_NEXT};
use aviary_hummingbird::Source;
use aviary_node::config::RouterConfig;
use aviary_node::router::management::Command;
use aviary_node::router::pipeline::Pipeline;
use aviary_node::router::runtime_state::RuntimeState;
use aviary_node::router::{classes, processors};
use aviary_qos::{ClassTable, Classifier, Context, LinkState, SeededRandom, Verdict};
use aviary_scion::drkey::{EpochSchedule, HostAddr as DrkeyHost, IssuerKeys, Protocol, RotatingSecret};
use aviary_scion::epic::hvf::MacInput;
use aviary_scion::epic::per_as::{gateway_hvf, seal};
use aviary_scion::epic::timestamp::epic_timestamp;
use aviary_scion::mac::mac_input;
use aviary_scion::wire::epic::PktId;
use aviary_scion::wire::epic_per_as::{PerAsPath, PerAsPathView};
use aviary_scion::{path_type, HostAddr, ScionView};

const T0: u32 = 1_750_000_000;
const S: u64 = 1_000_000_000;
const NOW: u64 = T0 as u64 * S;
const CAPACITY: u64 = 10_000_000;
const PROTOCOL: u16 = 42;
const PAYLOAD: usize = 900;
const SRC_HOST: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const DST_HOST: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

/// The router of AS 0 of a two-AS chain (1-ff00:0:110 → 1-ff00:0:111): Z-Lane with the
/// default guarantees (its own AS, its neighbour, and ISD 2: a third of μ_G = 20% each).
const CONFIG: &str = r#"
ia = "1-ff00:0:110"
master_secret_file = "secret.hex"
internal = "127.0.0.1:31000"
management = "127.0.0.1:31001"

[zlane]
ases = ["1-ff00:0:110", "1-ff00:0:111"]
isds = [2]
drkey_protocol = 42

[[interface]]
id = 1
local = "127.0.0.1:31002"
remote = "127.0.0.1:31003"
neighbor = "1-ff00:0:111"
capacity_bps = 10000000
"#;

struct Setup {
    chain: Chain,
    cfg: RouterConfig,
    pipeline: Pipeline,
    table: ClassTable,
    classifier: Classifier,
    random: SeededRandom,
    counter: u32,
}

/// AS 0's master secret, never rotated.
fn drkey_secret(chain: &Chain) -> RotatingSecret {
    RotatingSecret::new(&chain.ases[0].master_secret).unwrap()
}

impl Setup {
    fn new() -> Self {
        let chain = Chain::new(2, T0 - 3600);
        let cfg: RouterConfig = toml::from_str(CONFIG).unwrap();
        cfg.validate("router.toml").unwrap();
        assert_eq!(cfg.ia, chain.ases[0].ia);
        let pipeline =
            processors(cfg.ia, &chain.ases[0].master_secret, &drkey_secret(&chain), &[IF_NEXT], &cfg, [0; 16], NOW)
                .unwrap();
        let table = cfg.class_tables("router.toml").unwrap()[classes::DEFAULT_TABLE].clone();
        let classifier =
            classes::classifier("router.toml", "default", &table, &cfg.class_mapping(), pipeline.admissions()).unwrap();
        Self { chain, cfg, pipeline, table, classifier, random: SeededRandom::new(1), counter: 0 }
    }

    /// The class name of `pkt` sent from inside the AS at `now`, or its drop label.
    fn class(&mut self, mut pkt: Vec<u8>, now: u64) -> String {
        let links = [LinkState { id: IF_NEXT, up: true, rate_bps: CAPACITY, ..Default::default() }];
        let mut ctx = Context { now_ns: now, ingress: 0, links: &links, random: &mut self.random };
        let mut verdicts = [Verdict::Deliver];
        self.pipeline.process_batch(&mut ctx, &mut [pkt.as_mut_slice()], &mut verdicts);
        match verdicts[0] {
            Verdict::Forward { egress, admission } => {
                assert_eq!(egress, IF_NEXT);
                self.table.get(self.classifier.classify(admission)).unwrap().name.clone()
            }
            Verdict::Drop(r) => self.pipeline.drop_label(&pkt, r).to_owned(),
            Verdict::Deliver => "delivered".into(),
        }
    }

    fn drkey(&self, i: usize, now: u64) -> IssuerKeys {
        let epoch = EpochSchedule::SCION_DEFAULT.epoch_at(now / S).unwrap();
        IssuerKeys::new(&self.chain.ases[i].master_secret, Protocol(PROTOCOL), epoch).unwrap()
    }

    /// A per-AS EPIC packet from host 10.0.0.1 of AS 0, sent at `now`; with `qos`, in the form
    /// the AS's gateway gives it (if `gateway`, else with the flag set by the host alone).
    fn epic(&mut self, now: u64, qos: bool, gateway: bool) -> Vec<u8> {
        self.counter += 1;
        let path = self.chain.path.clone();
        let info = path.info[0];
        let sigma0 = {
            let h = &path.hops[0];
            let block = mac_input(info.seg_id, info.timestamp, h.exp_time, h.cons_ingress, h.cons_egress);
            self.chain.ases[0].mac_key.cmac_block(&block)
        };
        let id = PktId { epic_ts: epic_timestamp(info.timestamp, now).unwrap(), counter: self.counter };
        let mut pkt = self.chain.packet(
            path_type::EPIC_PER_AS,
            PerAsPath::unsealed(id, path).to_bytes().unwrap(),
            vec![0; PAYLOAD],
        );
        let (src, host) = (self.chain.src_ia(), DrkeyHost::Ipv4(SRC_HOST));
        let keys = [self.drkey(0, now), self.drkey(1, now)];
        let host_keys: Vec<_> = keys.iter().map(|k| k.as_host(src, &host)).collect();
        let dst_key = keys[1].host_host(src, &DrkeyHost::Ipv4(DST_HOST), &host);
        let range = ScionView::new_checked(&pkt[..]).unwrap().path_range();
        let mut view = PerAsPathView::new_checked(&mut pkt[range]).unwrap();
        let input = MacInput::new(info.timestamp, id, src, &HostAddr::V4(SRC_HOST), PAYLOAD as u16);
        // Only AS 0's field is checked here; AS 1's σ does not matter.
        seal(&mut view, &input, &host_keys, &[sigma0, [0; 16]], &dst_key).unwrap();
        if qos {
            view.set_qos(true);
            if gateway {
                for (i, k) in keys.iter().enumerate() {
                    let h = view.hvf(i);
                    view.set_hvf(i, gateway_hvf(&k.level1(src), &h));
                }
            }
        }
        pkt
    }
}

#[test]
fn a_zlane_router_sorts_traffic_into_r_g_a_and_u() {
    let mut s = Setup::new();
    assert_eq!(s.table.classes().iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["R", "N", "G", "A", "U"]);

    // Standard SCION: unauthenticated. EPIC without the flag: authenticated best effort.
    let standard = s.chain.standard_packet(PAYLOAD);
    assert_eq!(s.class(standard, NOW), "U");
    let plain = s.epic(NOW, false, false);
    assert_eq!(s.class(plain, NOW), "A");
    // A QoS flag the gateway did not authorize fails the check: dropped, never G.
    let forged = s.epic(NOW, true, false);
    assert_eq!(s.class(forged, NOW), "bad_hvf");
    // A Hummingbird flyover at this AS: R.
    let res = s.chain.grant(0, 7, 800, T0 - 10, 600);
    let mut flyover = s.chain.hbird_packet(&[(0, res)], T0, PAYLOAD).unwrap();
    Source::new(&flyover, &[res]).unwrap().stamp(&mut flyover, NOW).unwrap();
    assert_eq!(s.class(flyover, NOW), "R");

    // Authorized EPIC at 2 Mbit/s for one second against a guarantee of 600 kbit/s
    // (a third of μ_G = 2 Mbit/s, in the bucket's 100 kbit/s units) with a 15000-byte burst:
    // G up to the guarantee, A beyond it, nothing dropped.
    let len = s.epic(NOW, true, true).len() as u64;
    let gap = len * 8 * S / 2_000_000;
    let (mut g, mut a, mut now) = (0u64, 0u64, NOW + 1);
    while now < NOW + S {
        let pkt = s.epic(now, true, true);
        match s.class(pkt, now).as_str() {
            "G" => g += len,
            "A" => a += len,
            other => panic!("authorized traffic classified {other}"),
        }
        now += gap;
    }
    assert!(g <= 600_000 / 8 + 15_000 + len, "G held to its guarantee: {g} bytes");
    assert!(g >= 600_000 / 8, "the guarantee is kept: {g} bytes");
    assert!(a >= 2_000_000 / 8 - g - 2 * len, "the overuse is A: {a} bytes");
    let report = s.pipeline.report();
    let zlane = report.iter().find(|m| m.name == "zlane").unwrap();
    let counter = |name: &str| zlane.counters.iter().find(|(n, _)| *n == name).unwrap().1;
    assert_eq!(counter("guaranteed_packets") * len, g);
    assert_eq!(counter("guarantee_overuse_packets") * len, a);
}

#[test]
fn epic_under_the_drkey_keys_of_before_a_rotation_passes_after_it_within_the_epoch() {
    let mut s = Setup::new();
    let gateway = s.epic(NOW, true, true);
    assert_eq!(s.class(gateway.clone(), NOW), "G");
    // `PUT /v1/keys` with a day of overlap: hop fields verify under the previous key, and the
    // DRKey keys of the epoch in progress stay those hosts and other ASes already hold.
    let new_secret = [0x5a; 16];
    s.pipeline.rotate_secret(&new_secret, NOW + 86400 * S, NOW / S + 1);
    let later = NOW + 60 * S;
    let gateway = s.epic(later, true, true);
    assert_eq!(s.class(gateway, later), "G");
    let plain = s.epic(later, false, false);
    assert_eq!(s.class(plain, later), "A");
    // A router restarted from the rotation's record derives the same keys.
    let rotated = RotatingSecret::rotated(&new_secret, &s.chain.ases[0].master_secret, NOW / S + 1).unwrap();
    s.pipeline =
        processors(s.cfg.ia, &s.chain.ases[0].master_secret, &rotated, &[IF_NEXT], &s.cfg, [0; 16], later).unwrap();
    s.pipeline.rotate_secret(&new_secret, NOW + 86400 * S, NOW / S + 1);
    let plain = s.epic(later, false, false);
    assert_eq!(s.class(plain, later), "A");
    // Without the record (the behaviour this guards against) the same packet fails
    // (the hop-field key rotated as before, so that only DRKey differs).
    let unrecorded = RotatingSecret::new(&new_secret).unwrap();
    s.pipeline =
        processors(s.cfg.ia, &s.chain.ases[0].master_secret, &unrecorded, &[IF_NEXT], &s.cfg, [0; 16], later).unwrap();
    s.pipeline.rotate_secret(&new_secret, NOW + 86400 * S, NOW / S + 1);
    let plain = s.epic(later, false, false);
    assert_ne!(s.class(plain, later), "A");
}

#[test]
fn guarantees_change_at_run_time_and_survive_a_restart() {
    let mut s = Setup::new();
    // All of μ_G to this AS: 2 Mbit/s.
    let change = serde_json::json!({ "rates": { "1-ff00:0:110": "100%" } });
    s.pipeline.control("zlane", &change).unwrap();
    let settings = s.pipeline.processors().find(|p| p.name() == "zlane").unwrap().settings();
    assert_eq!(settings["rates"]["1-ff00:0:110"], "100%");
    let bad = serde_json::json!({ "rates": { "1-ff00:0:110": "100%", "2": "1%" } });
    let e = s.pipeline.control("zlane", &bad).unwrap_err();
    assert!(e.to_string().contains("rates"), "{e}");
    let e = s.pipeline.control("zlane", &serde_json::json!({ "rate": {} })).unwrap_err();
    assert!(e.to_string().contains("rate"), "{e}");

    // 1.5 Mbit/s offered: all of it is G now.
    let len = s.epic(NOW, true, true).len() as u64;
    let gap = len * 8 * S / 1_500_000;
    let mut now = NOW + 1;
    while now < NOW + S {
        let pkt = s.epic(now, true, true);
        assert_eq!(s.class(pkt, now), "G");
        now += gap;
    }

    // Kept like every runtime change, and applied again at the next start.
    let dir = aviary_scratch::ScratchDir::new("zlane-router");
    let file = dir.join("runtime.json");
    let mut state = RuntimeState::default();
    state.record(&Command::Mechanism { name: "zlane".into(), request: change });
    state.save(&file).unwrap();
    let mut restarted =
        processors(s.cfg.ia, &s.chain.ases[0].master_secret, &drkey_secret(&s.chain), &[IF_NEXT], &s.cfg, [0; 16], NOW)
            .unwrap();
    for cmd in RuntimeState::load(&file).unwrap().commands() {
        if let Command::Mechanism { name, request } = cmd {
            restarted.control(&name, &request).unwrap();
        }
    }
    let settings = restarted.processors().find(|p| p.name() == "zlane").unwrap().settings();
    assert_eq!(settings["rates"]["1-ff00:0:110"], "100%");
}

#[test]
fn a_bad_zlane_table_stops_the_router_naming_the_field() {
    let with = |extra: &str| {
        let text = CONFIG.replace("drkey_protocol = 42\n", &format!("drkey_protocol = 42\n{extra}\n"));
        toml::from_str::<RouterConfig>(&text).unwrap().validate("router.toml").unwrap_err()
    };
    assert_eq!(with("[zlane.rates]\n\"9\" = \"10%\"").field, "zlane.rates.9");
    assert_eq!(with("[zlane.rates]\n\"2\" = \"110%\"").field, "zlane.rates.2");
    // A link table without a bounded class for guaranteed traffic has no μ_G.
    let text = CONFIG.replace("capacity_bps = 10000000\n", "capacity_bps = 10000000\nclass_table = \"plain\"\n");
    let unbounded = ["R", "N", "G", "A", "U"].map(|c| format!("{{ name = \"{c}\", queue_bytes = 10 }}")).join(", ");
    let table = format!("drkey_protocol = 42\n[class_table.plain]\nclass = [{unbounded}]\n");
    let text = text.replace("drkey_protocol = 42\n", &table);
    let e = toml::from_str::<RouterConfig>(&text).unwrap().validate("router.toml").unwrap_err();
    assert_eq!(e.field, "interface[0].class_table");
}
