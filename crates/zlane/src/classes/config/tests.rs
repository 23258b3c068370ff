use super::*;
use proptest::prelude::*;

fn ia(isd: u16, n: u64) -> IsdAsn {
    IsdAsn::new(isd, 0xff00_0000_0100 + n)
}

fn config(ases: usize, isds: u16) -> ZlaneConfig {
    ZlaneConfig {
        ases: (0..ases as u64).map(|n| ia(1, n)).collect(),
        isds: (2..2 + isds).collect(),
        rates: BTreeMap::new(),
        burst_bytes: DEFAULT_BURST_BYTES,
        drkey_protocol: 42,
    }
}

fn share_sum(plan: &GuaranteePlan) -> u64 {
    plan.origins
        .iter()
        .map(|(_, r)| match r {
            GuaranteedRate::OfGuaranteedClass(p) => u64::from(*p),
            GuaranteedRate::Bps(_) => 0,
        })
        .sum()
}

#[test]
fn by_default_every_as_of_the_isd_and_every_other_isd_gets_an_equal_share() {
    let plan = config(3, 2).plan(1).unwrap();
    assert_eq!(plan.origins.len(), 5);
    assert!(plan.origins.iter().all(|(_, r)| *r == GuaranteedRate::OfGuaranteedClass(200_000)));
    assert_eq!(plan.origins[0].0, Origin::As(ia(1, 0)));
    assert_eq!(plan.origins[4].0, Origin::Isd(3));
    // 20% of a 10 Mbit/s link is μ_G = 2 Mbit/s; a fifth of it is 400 kbit/s.
    let mu_g = RateBound::Ppm(200_000).resolve(10_000_000);
    assert_eq!(plan.origins[0].1.resolve(mu_g).bps(), 400_000);
}

#[test]
fn explicit_rates_take_their_share_and_the_rest_split_what_is_left() {
    let mut c = config(3, 1);
    c.rates.insert("1-ff00:0:101".into(), RateConfig::Share("40%".into()));
    c.rates.insert("2".into(), RateConfig::Bps(3_000_000));
    let plan = c.plan(1).unwrap();
    let rate = |o| plan.origins.iter().find(|(x, _)| *x == o).unwrap().1;
    assert_eq!(rate(Origin::As(ia(1, 1))), GuaranteedRate::OfGuaranteedClass(400_000));
    assert_eq!(rate(Origin::Isd(2)), GuaranteedRate::Bps(3_000_000));
    assert_eq!(rate(Origin::As(ia(1, 0))), GuaranteedRate::OfGuaranteedClass(300_000));
    assert_eq!(rate(Origin::As(ia(1, 2))), GuaranteedRate::OfGuaranteedClass(300_000));
    assert_eq!(GuaranteedRate::Bps(u64::MAX).resolve(0), Rate::MAX);
}

#[test]
fn bad_tables_name_the_field() {
    let field = |c: &ZlaneConfig| c.plan(1).unwrap_err().field();
    let mut c = config(2, 1);
    c.ases.push(ia(2, 9));
    assert_eq!(field(&c), "ases[2]");
    let mut c = config(2, 1);
    c.ases.push(ia(1, 0));
    assert_eq!(field(&c), "ases[2]");
    let mut c = config(2, 1);
    c.isds.push(1);
    assert_eq!(field(&c), "isds[1]");
    let mut c = config(2, 1);
    c.isds.push(2);
    assert_eq!(field(&c), "isds[1]");
    for (key, rate, at) in [
        ("x-y", RateConfig::Bps(1), "rates.x-y"),
        ("zz", RateConfig::Bps(1), "rates.zz"),
        ("7", RateConfig::Bps(1), "rates.7"),
        ("2", RateConfig::Share("lots".into()), "rates.2"),
        ("2", RateConfig::Share("101%".into()), "rates.2"),
        ("2", RateConfig::Bps(7_000_000_000), "rates.2"),
    ] {
        let mut c = config(2, 1);
        c.rates.insert(key.into(), rate);
        assert_eq!(field(&c), at, "{key}");
    }
    let mut c = config(2, 1);
    c.rates.insert("2".into(), RateConfig::Share("60%".into()));
    c.rates.insert("1-ff00:0:100".into(), RateConfig::Share("50%".into()));
    assert_eq!(c.plan(1), Err(GuaranteeConfigError::SharesExceedGuaranteedClass));
    let c = ZlaneConfig { burst_bytes: 0, ..config(1, 0) };
    assert_eq!(field(&c), "burst_bytes");
}

#[test]
fn the_table_reads_from_toml() {
    let c: ZlaneConfig = toml::from_str(
        "ases = [\"1-ff00:0:110\"]\nisds = [2]\ndrkey_protocol = 42\n[rates]\n\"2\" = \"25%\"\n\"1-ff00:0:110\" = 1000000",
    )
    .unwrap();
    assert_eq!(c.burst_bytes, DEFAULT_BURST_BYTES);
    assert_eq!(c.rates["2"], RateConfig::Share("25%".into()));
    assert!(toml::from_str::<ZlaneConfig>("ases = []\nisds = []\ndrkey_protocol = 1\nburst = 3").is_err());
}

proptest! {
    /// Whatever the universe and the explicit shares, every listed origin gets a guarantee,
    /// the shares never exceed μ_G, and the default ones are equal.
    #[test]
    fn shares_never_exceed_mu_g(ases in 0usize..40, isds in 0u16..40, explicit in proptest::collection::vec(0u32..=30, 0..5)) {
        let mut c = config(ases, isds);
        for (i, pct) in explicit.iter().enumerate().take(ases) {
            c.rates.insert(ia(1, i as u64).to_string(), RateConfig::Share(format!("{pct}%")));
        }
        match c.plan(1) {
            Ok(plan) => {
                prop_assert_eq!(plan.origins.len(), ases + usize::from(isds));
                prop_assert!(share_sum(&plan) <= u64::from(RateBound::PPM));
                let defaults: std::collections::HashSet<_> = plan.origins[explicit.len().min(ases)..].iter().map(|(_, r)| *r).collect();
                prop_assert!(defaults.len() <= 1);
            }
            Err(e) => prop_assert_eq!(e, GuaranteeConfigError::SharesExceedGuaranteedClass),
        }
    }
}

#[test]
fn runtime_changes_replace_only_the_fields_they_name() {
    let c = config(2, 1);
    let next = c.changed(&serde_json::json!({ "isds": [5, 6], "rates": { "5": "10%" } })).unwrap();
    assert_eq!(next.isds, [5, 6]);
    assert_eq!(next.ases, c.ases);
    assert_eq!(next.rates["5"], RateConfig::Share("10%".into()));
    assert_eq!(next.drkey_protocol, c.drkey_protocol);
    let e = c.changed(&serde_json::json!({ "drkey_protocol": 1 })).unwrap_err();
    assert_eq!(e.field, "drkey_protocol");
}
