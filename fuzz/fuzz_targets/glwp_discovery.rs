//! GLWP discovery messages on fuzzed bytes: the on-path AS's forward and return processing
//! and the source's check never panic, and every message an AS does not pass on is counted
//! under exactly one drop reason. A mutated response the source accepts must give the same
//! allocation as the honest one (anything else would be a forgery past the aggregate MAC).
//!
//! Input: `[selector][rest]`. Selector bit 0: `rest` itself (0) or the honest message for
//! that step with `rest` XORed over it (1); bits 1-2: the step (0: the request at AS 1,
//! 1: the response at AS 1, 2 and 3: the response at the source).
#![no_main]

use std::collections::BTreeMap;
use std::sync::OnceLock;

use aviary_glwp::discovery::rate::RateLimit;
use aviary_glwp::discovery::wire::{message_len, MAX_ASES};
use aviary_glwp::discovery::{AnnouncementLimit, AsConfig, DiscoveryParams, DrkeyKeys, Neighbourhood, OnPathAs, Source};
use aviary_glwp::{AllocationMatrix, Freshness, MatrixEntry, SourceAllocation};
use aviary_scion::drkey::Epoch;
use aviary_scion::IsdAsn;
use libfuzzer_sys::fuzz_target;

const NOW: u64 = 1_750_000_000_000_000_000;
const PATH: [(u16, u16); 3] = [(0, 1), (2, 3), (4, 0)];
const RATE: RateLimit = RateLimit { share_ppm: 1_000_000, burst_bytes: message_len(MAX_ASES) as u16 };

fn ia(k: usize) -> IsdAsn {
    IsdAsn::new(1, 0xff00_0000_0110 + k as u64)
}

struct Setup {
    configs: Vec<AsConfig>,
    keys: Vec<DrkeyKeys>,
    /// Each AS's record of its neighbours' announcements, exchanged at `NOW`.
    neighbourhoods: Vec<Neighbourhood>,
    /// The honest request at AS 1, response at AS 1 and response at the source.
    honest: [Vec<u8>; 3],
    allocation: SourceAllocation,
}

fn setup() -> &'static Setup {
    static S: OnceLock<Setup> = OnceLock::new();
    S.get_or_init(|| {
        let epoch = Epoch::new(1_700_000_000, 1_800_000_000).unwrap();
        let issued: Vec<DrkeyKeys> = (0..3).map(|k| DrkeyKeys::new(&[k as u8 + 1; 16], epoch).unwrap()).collect();
        let mut keys = Vec::new();
        let mut configs = Vec::new();
        for (k, &(i, j)) in PATH.iter().enumerate() {
            let mut mine = issued[k].clone();
            for m in (0..3).filter(|&m| m != k) {
                mine.insert_fetched(ia(m), issued[m].issue(ia(k)));
            }
            keys.push(mine);
            let mut neighbours = BTreeMap::new();
            if k > 0 {
                neighbours.insert(i, ia(k - 1));
            }
            if k < 2 {
                neighbours.insert(j, ia(k + 1));
            }
            let e = |ingress, egress, bps| MatrixEntry { ingress, egress, bps };
            configs.push(AsConfig {
                ia: ia(k),
                secret: [0x10 + k as u8; 16],
                matrix: AllocationMatrix::new([e(i, j, 1_000_000_000), e(i, 9, 500), e(9, j, 700)]).unwrap(),
                neighbours,
                params: DiscoveryParams {
                    freshness: Freshness { lifetime_ns: 500_000_000, skew_ns: 1_000_000_000 },
                    validity_s: 86_400,
                    min_guarantee_bps: 0,
                },
                announcement_limit: AnnouncementLimit { burst: 4, refill_ns: 1_000_000_000 },
            });
        }
        let mut neighbourhoods: Vec<Neighbourhood> = configs.iter().map(AsConfig::neighbourhood).collect();
        for k in 0..3 {
            for (to, _, bytes) in neighbourhoods[k].announcements(&keys[k], NOW) {
                let r = (0..3).find(|&r| ia(r) == to).unwrap();
                neighbourhoods[r].receive(&bytes, ia(k), &keys[r], NOW).unwrap();
            }
        }
        let source = Source::new(configs[0].clone(), keys[0].clone()).unwrap();
        let mut as1 = OnPathAs::new(configs[1].clone(), RATE, keys[1].clone()).unwrap();
        as1.neighbourhood = neighbourhoods[1].clone();
        let mut as2 = OnPathAs::new(configs[2].clone(), RATE, keys[2].clone()).unwrap();
        as2.neighbourhood = neighbourhoods[2].clone();
        let request = source.request(&neighbourhoods[0], &[ia(0), ia(1), ia(2)], &PATH, NOW).unwrap();
        let mut msg = request.clone();
        as1.forward(&mut msg, ia(0), NOW).unwrap();
        as2.forward(&mut msg, ia(1), NOW).unwrap();
        let at_as1 = msg.clone();
        as1.backward(&mut msg, ia(2), NOW).unwrap();
        let allocation = Source::new(configs[0].clone(), keys[0].clone())
            .unwrap()
            .finish(&mut neighbourhoods[0].clone(), &msg, NOW)
            .unwrap();
        Setup { configs, keys, neighbourhoods, honest: [request, at_as1, msg], allocation }
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else { return };
    let s = setup();
    let step = usize::from((selector >> 1) & 3).min(2);
    let mut msg = if selector & 1 == 0 {
        rest.to_vec()
    } else {
        let mut m = s.honest[step].clone();
        m.iter_mut().zip(rest).for_each(|(b, x)| *b ^= x);
        m
    };
    if step == 2 {
        let mut source = Source::new(s.configs[0].clone(), s.keys[0].clone()).unwrap();
        match source.finish(&mut s.neighbourhoods[0].clone(), &msg, NOW) {
            Ok(alloc) => assert_eq!(alloc, s.allocation, "a forged response was accepted"),
            Err(_) => assert_eq!(source.stats.total_drops() + source.stats.refused, 1),
        }
        return;
    }
    let mut as1 = OnPathAs::new(s.configs[1].clone(), RATE, s.keys[1].clone()).unwrap();
    as1.neighbourhood = s.neighbourhoods[1].clone();
    let out = if step == 0 { as1.forward(&mut msg, ia(0), NOW) } else { as1.backward(&mut msg, ia(2), NOW) };
    assert_eq!(as1.stats.total_drops(), u64::from(out.is_err()));
});
