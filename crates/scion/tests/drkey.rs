//! DRKey: the shared vectors `testdata/vectors/drkey.json` (generated independently by
//! `testdata/vectors/gen_drkey.py`) at every level, scionproto's own golden keys, host
//! text parsing, epoch rollover, and properties of the derivation.

use std::collections::HashSet;
use std::net::{Ipv4Addr, Ipv6Addr};

use aviary_scion::drkey::{
    prf, svc, Derivation, DrkeyError, Epoch, EpochSchedule, HostAddr, IssuerKeyring, IssuerKeys, Level1Key, Protocol,
    SecretValue,
};
use aviary_scion::IsdAsn;
use proptest::prelude::*;
use serde_json::Value;

fn vectors() -> Vec<Value> {
    let path = format!("{}/../../testdata/vectors/drkey.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
    let doc: Value = serde_json::from_str(&text).expect("drkey.json parses");
    assert_eq!(doc["schema"], "scion-drkey-v1");
    doc["vectors"].as_array().expect("vectors is an array").clone()
}

fn text<'a>(v: &'a Value, field: &str) -> &'a str {
    v[field].as_str().unwrap_or_else(|| panic!("{}: {field} is not a string", v["name"]))
}

fn int(v: &Value, field: &str) -> u64 {
    v[field].as_u64().unwrap_or_else(|| panic!("{}: {field} is not an integer", v["name"]))
}

fn ia(s: &str) -> IsdAsn {
    s.parse().unwrap()
}

fn host(s: &str) -> HostAddr {
    s.parse().unwrap()
}

fn epoch(begin: u32, end: u32) -> Epoch {
    Epoch::new(begin, end).unwrap()
}

/// The five keys of one vector, as hex: sv, level1, as_host, host_as, host_host.
fn chain(
    master: &[u8],
    derivation: Derivation,
    protocol: Protocol,
    e: Epoch,
    dst_ia: IsdAsn,
    src: &HostAddr,
    dst: &HostAddr,
) -> [String; 5] {
    let sv = SecretValue::derive(master, derivation.sv_protocol(protocol), e).unwrap();
    let l1 = sv.level1(dst_ia);
    let host_as = l1.host_as(derivation, protocol, src);
    [
        hex::encode(sv.as_bytes()),
        hex::encode(l1.as_bytes()),
        hex::encode(l1.as_host(derivation, protocol, dst).as_bytes()),
        hex::encode(host_as.as_bytes()),
        hex::encode(host_as.host_host(dst).as_bytes()),
    ]
}

#[test]
fn vectors_match_at_every_level() {
    let vectors = vectors();
    let mut names = HashSet::new();
    let mut derivations = HashSet::new();
    for v in &vectors {
        let name = text(v, "name");
        assert!(names.insert(name.to_string()), "duplicate vector name {name}");
        let derivation = match text(v, "derivation") {
            "specific" => Derivation::Specific,
            "generic" => Derivation::Generic,
            other => panic!("{name}: unknown derivation {other:?}"),
        };
        derivations.insert(derivation);
        let protocol = Protocol(u16::try_from(int(v, "protocol")).unwrap());
        let master = hex::decode(text(v, "master_secret")).unwrap();
        let e = epoch(int(v, "epoch_begin") as u32, int(v, "epoch_end") as u32);
        if let Some(src_ia) = v.get("src_ia") {
            src_ia.as_str().unwrap().parse::<IsdAsn>().unwrap();
        }
        let dst_ia = ia(text(v, "dst_ia"));
        let (src, dst) = (host(text(v, "src_host")), host(text(v, "dst_host")));
        let want = ["sv", "level1", "as_host", "host_as", "host_host"].map(|f| text(v, f).to_string());

        assert_eq!(chain(&master, derivation, protocol, e, dst_ia, &src, &dst), want, "{name}: key chain");

        // The router-side type derives the same keys from its expanded secret value.
        let issuer = IssuerKeys::with_derivation(&master, protocol, derivation, e).unwrap();
        let got = [
            hex::encode(issuer.secret_value().as_bytes()),
            hex::encode(issuer.level1(dst_ia).as_bytes()),
            hex::encode(issuer.as_host(dst_ia, &dst).as_bytes()),
            hex::encode(issuer.host_as(dst_ia, &src).as_bytes()),
            hex::encode(issuer.host_host(dst_ia, &src, &dst).as_bytes()),
        ];
        assert_eq!(got, want, "{name}: IssuerKeys");
    }
    assert!(vectors.len() >= 30 && derivations.len() == 2);
}

/// scionproto's golden keys, written out here so that they do not depend on the vector
/// file: `pkg/drkey/testdata/TestDeriveSV`, `TestDeriveLevel1` in
/// `pkg/drkey/specific/specific_test.go`, and `pkg/drkey/{specific,generic}/testdata/*`
/// (master secret of `private/drkey/drkeytest.GetLevel1`: 0..7 and the low byte of
/// 1-ff00:0:111; epoch [0, 1]; hosts 127.0.0.2 → 127.0.0.1; Level-2 protocol 10000).
#[test]
fn scionproto_golden_values() {
    let hx = |b: &[u8; 16]| hex::encode(b);
    let master16 = [0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7];
    let e = epoch(0, 1);
    let dst_ia = ia("1-ff00:0:112");
    let sv0 = SecretValue::derive(&master16, Protocol::GENERIC, e).unwrap();
    assert_eq!(hx(sv0.as_bytes()), "c3b4843c990314f9ac554f9b781cdeb7");
    let sv1 = SecretValue::derive(&master16, Protocol::SCMP, e).unwrap();
    assert_eq!(hx(sv1.level1(dst_ia).as_bytes()), "a823f5b956de7c0cbc5a6942f5b6fc10");

    let master9 = [0, 1, 2, 3, 4, 5, 6, 7, 0x11];
    let (src, dst) = (host("127.0.0.2"), host("127.0.0.1"));
    let specific = IssuerKeys::new(&master9, Protocol::SCMP, e).unwrap();
    assert_eq!(specific.derivation(), Derivation::Specific);
    assert_eq!(hx(specific.as_host(dst_ia, &dst).as_bytes()), "b5a756caa2e030f3a2b6dbfb03e03eb0");
    assert_eq!(hx(specific.host_as(dst_ia, &src).as_bytes()), "4cca42cd61ec9f84802b65f7774e9854");
    assert_eq!(hx(specific.host_host(dst_ia, &src, &dst).as_bytes()), "164fc8460825bc1abf88b4689c70f559");

    let generic = IssuerKeys::new(&master9, Protocol(10000), e).unwrap();
    assert_eq!(generic.derivation(), Derivation::Generic);
    assert_eq!(hx(generic.as_host(dst_ia, &dst).as_bytes()), "2bc8fbb9455531a804cf7fd5e5e512a4");
    assert_eq!(hx(generic.host_as(dst_ia, &src).as_bytes()), "3341fe339ec9492dd15509ce3a08b960");
    assert_eq!(hx(generic.host_host(dst_ia, &src, &dst).as_bytes()), "f7f4d42ced8b7d040be51b2f6837f886");
}

#[test]
fn prf_is_zero_padded_cbc_mac() {
    // FIPS-197 C.1: one block is one AES encryption.
    let key: [u8; 16] = hex::decode("000102030405060708090a0b0c0d0e0f").unwrap().try_into().unwrap();
    let block = hex::decode("00112233445566778899aabbccddeeff").unwrap();
    assert_eq!(hex::encode(prf(&key, &block)), "69c4e0d86a7b0430d8cdb78070b4c55a");
    // A short input equals its zero-padded form; two blocks chain through the first.
    assert_eq!(prf(&key, &[1, 2, 3]), prf(&key, &[1, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]));
    let mut second: [u8; 16] = [7; 16];
    second.iter_mut().zip(prf(&key, &block)).for_each(|(s, c)| *s ^= c);
    let two = [block.as_slice(), &[7; 16]].concat();
    assert_eq!(prf(&key, &two), prf(&key, &second));
}

#[test]
fn scheme_choice_follows_scion_control_service() {
    assert_eq!(Derivation::for_protocol(Protocol::GENERIC), Derivation::Specific);
    assert_eq!(Derivation::for_protocol(Protocol::SCMP), Derivation::Specific);
    assert_eq!(Derivation::for_protocol(Protocol(2)), Derivation::Generic);
    assert_eq!(Derivation::for_protocol(Protocol(u16::MAX)), Derivation::Generic);
    assert_eq!(Derivation::Generic.sv_protocol(Protocol(7)), Protocol::GENERIC);
    assert_eq!(Derivation::Specific.sv_protocol(Protocol(7)), Protocol(7));
    assert_eq!(Protocol::SCMP.to_string(), "SCMP");
    assert_eq!(Protocol(300).to_string(), "300");
}

#[test]
fn host_text_forms() {
    let v4 = HostAddr::Ipv4(Ipv4Addr::new(192, 0, 2, 1));
    assert_eq!(host("192.0.2.1"), v4);
    for mapped in ["::ffff:192.0.2.1", "::FFFF:c000:201", "0:0:0:0:0:ffff:192.0.2.1"] {
        assert_eq!(host(mapped), v4, "{mapped}");
    }
    assert_eq!(HostAddr::from(Ipv6Addr::from(0xffff_c000_0201u128)), v4);
    let v6 = HostAddr::Ipv6("2001:db8::1".parse().unwrap());
    for form in ["2001:db8::1", "2001:0DB8:0000:0000:0000:0000:0000:0001", "2001:db8:0:0::1"] {
        assert_eq!(host(form), v6, "{form}");
    }
    // IPv4-compatible (not mapped) and NAT64 addresses stay IPv6.
    assert_eq!(host("::192.0.2.1").type_len(), 0x3);
    assert_eq!(host("64:ff9b::192.0.2.1").type_len(), 0x3);
    for (text, value) in [
        ("DS", svc::DS),
        ("CS", svc::CS),
        ("Wildcard", svc::WILDCARD),
        ("CS_A", svc::CS),
        ("DS_M", svc::DS | svc::MULTICAST),
        ("Wildcard_M", 0x8010),
    ] {
        assert_eq!(host(text), HostAddr::Svc(value), "{text}");
    }
    for (h, code, bytes) in [
        (v4, 0x0, "c0000201"),
        (v6, 0x3, "20010db8000000000000000000000001"),
        (HostAddr::Svc(svc::CS | svc::MULTICAST), 0x4, "80020000"),
    ] {
        let (raw, len) = h.encode();
        assert_eq!((h.type_len(), hex::encode(&raw[..len])), (code, bytes.to_string()));
    }
    for canonical in ["192.0.2.1", "2001:db8::1", "::", "CS", "DS_M", "Wildcard"] {
        assert_eq!(host(canonical).to_string(), canonical);
    }
    assert_eq!(host("CS_A").to_string(), "CS");
    assert_eq!(HostAddr::Svc(3).to_string(), "<SVC:0x0003>");
    // A mapped address put into Ipv6 by hand still encodes and prints as IPv4.
    let by_hand = HostAddr::Ipv6(Ipv4Addr::new(192, 0, 2, 1).to_ipv6_mapped());
    assert_eq!((by_hand.type_len(), by_hand.encode(), by_hand.to_string()), (0x0, v4.encode(), "192.0.2.1".into()));
}

#[test]
fn host_text_rejections() {
    assert_eq!("".parse::<HostAddr>(), Err(DrkeyError::EmptyHost));
    assert_eq!("fe80::1%eth0".parse::<HostAddr>(), Err(DrkeyError::ZonedHost("fe80::1%eth0".into())));
    for bad in [
        "cs",
        "CS_X",
        "CS_A_M",
        "_A",
        "XS",
        "<SVC:0x0003>",
        "192.168.01.1",
        "256.0.0.1",
        "1.2.3",
        "1.2.3.4.5",
        " 192.0.2.1",
        "192.0.2.1 ",
        "1.2.3.4/24",
        "2001:db8::1::2",
        "2001:db8:0:0:0:0:0:0:1",
        "[::1]",
        "::ffff:256.0.0.1",
        "localhost",
        "<malformed address>",
    ] {
        assert_eq!(bad.parse::<HostAddr>(), Err(DrkeyError::BadHost(bad.into())), "{bad:?}");
    }
}

#[test]
fn bad_inputs_are_typed_errors() {
    let e = epoch(0, 86400);
    assert_eq!(SecretValue::derive(&[], Protocol::SCMP, e), Err(DrkeyError::EmptyMasterSecret));
    assert!(matches!(IssuerKeys::new(&[], Protocol(9), e), Err(DrkeyError::EmptyMasterSecret)));
    assert_eq!(Epoch::new(5, 5), Err(DrkeyError::BadEpoch { begin_s: 5, end_s: 5 }));
    assert_eq!(Epoch::new(6, 5), Err(DrkeyError::BadEpoch { begin_s: 6, end_s: 5 }));
    assert_eq!(EpochSchedule::new(0, 0), Err(DrkeyError::BadSchedule { duration_s: 0, grace_s: 0 }));
    assert_eq!(EpochSchedule::new(10, 10), Err(DrkeyError::BadSchedule { duration_s: 10, grace_s: 10 }));
    let day = EpochSchedule::SCION_DEFAULT;
    let last_end = u32::MAX as u64 - u32::MAX as u64 % 86400;
    assert!(day.epoch_at(last_end - 1).is_ok());
    assert_eq!(day.epoch_at(last_end), Err(DrkeyError::EpochOutOfRange(last_end)));
    assert_eq!(day.epoch_at(u64::MAX), Err(DrkeyError::EpochOutOfRange(u64::MAX)));
}

#[test]
fn debug_does_not_print_keys() {
    let issuer = IssuerKeys::new(b"secret", Protocol::SCMP, epoch(0, 86400)).unwrap();
    let sv = *issuer.secret_value();
    for shown in [format!("{sv:?}"), format!("{issuer:?}"), format!("{:?}", issuer.level1(ia("1-1")))] {
        assert!(!shown.contains(&hex::encode(sv.as_bytes())) && !shown.contains(&format!("{:?}", sv.as_bytes())));
    }
    assert_eq!(format!("{:?}", Level1Key::from_bytes([0; 16])), "Level1Key(..)");
}

#[test]
fn epochs_roll_over_with_a_grace_period() {
    let day = EpochSchedule::SCION_DEFAULT;
    assert_eq!((day.duration_s(), day.grace_s()), (86400, 5));
    let t0 = 1_700_006_400; // a multiple of one day
    let today = day.epoch_at(t0).unwrap();
    assert_eq!(today, epoch(t0 as u32, t0 as u32 + 86400));
    assert_eq!(day.epoch_at(t0 + 86399).unwrap(), today);
    let tomorrow = day.next(today).unwrap();
    assert_eq!(day.epoch_at(t0 + 86400).unwrap(), tomorrow);
    assert!(today.contains(t0) && !today.contains(t0 + 86400) && !today.contains(t0 - 1));
    // At the rollover both keys verify for 5 s, then only the new one.
    let r = t0 + 86400;
    assert_eq!(day.accepted_at(r).unwrap(), (tomorrow, Some(today)));
    assert_eq!(day.accepted_at(r + 4).unwrap(), (tomorrow, Some(today)));
    assert_eq!(day.accepted_at(r + 5).unwrap(), (tomorrow, None));
    assert_eq!(day.accepted_at(r - 1).unwrap(), (today, None));
    assert!(today.accepts(r + 4, 5) && !today.accepts(r + 5, 5));
    // The first epoch has no predecessor.
    assert_eq!(day.accepted_at(0).unwrap(), (epoch(0, 86400), None));
}

#[test]
fn keyring_accepts_old_and_new_key_only_during_grace() {
    let schedule = EpochSchedule::new(360, 5).unwrap();
    let (dst_ia, h) = (ia("1-ff00:0:111"), host("192.0.2.1"));
    let t0 = 3600;
    let mut ring = IssuerKeyring::new(b"master", Protocol::SCMP, schedule, t0).unwrap();
    let old = ring.current().host_as(dst_ia, &h);
    assert!(!ring.advance(t0 + 359).unwrap());
    let accepted = |ring: &IssuerKeyring, t| ring.accepted(t).map(|k| k.host_as(dst_ia, &h)).collect::<Vec<_>>();
    assert_eq!(accepted(&ring, t0 + 359), vec![old]);

    assert!(ring.advance(t0 + 360).unwrap());
    let new = ring.current().host_as(dst_ia, &h);
    assert_ne!(new, old, "a new epoch gives new keys");
    assert_eq!(ring.current().epoch(), epoch(3960, 4320));
    assert_eq!(accepted(&ring, t0 + 360), vec![new, old]);
    assert_eq!(accepted(&ring, t0 + 364), vec![new, old]);
    assert_eq!(accepted(&ring, t0 + 365), vec![new]);
    // A keyring created inside the grace period holds both epochs too.
    let late = IssuerKeyring::new(b"master", Protocol::SCMP, schedule, t0 + 362).unwrap();
    assert_eq!(accepted(&late, t0 + 362), vec![new, old]);
    // After a gap of several epochs there is no previous key to accept.
    assert!(ring.advance(t0 + 10 * 360 + 1).unwrap());
    assert_eq!(ring.accepted(t0 + 10 * 360 + 1).count(), 1);
    assert_eq!(ring.accepted(t0).count(), 0);
}

fn arb_host() -> impl Strategy<Value = HostAddr> {
    prop_oneof![
        any::<[u8; 4]>().prop_map(|b| HostAddr::from(Ipv4Addr::from(b))),
        any::<[u8; 16]>().prop_map(|b| HostAddr::from(Ipv6Addr::from(b))),
        any::<u16>().prop_map(HostAddr::Svc),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn host_text_round_trips(h in arb_host()) {
        prop_assume!(!matches!(h, HostAddr::Svc(v) if HostAddr::parse_svc(&h.to_string()) != Some(v)));
        prop_assert_eq!(host(&h.to_string()), h);
    }

    #[test]
    fn different_inputs_give_different_keys(
        master in prop::collection::vec(any::<u8>(), 1..80),
        p in any::<u16>(), q in any::<u16>(),
        begin in 0u32..1 << 31, len in 1u32..1 << 20,
        a in any::<u64>(), b in any::<u64>(),
        h in arb_host(), g in arb_host(),
    ) {
        let e = epoch(begin, begin + len);
        let (p, q, a, b) = (Protocol(p), Protocol(q), IsdAsn::from_u64(a), IsdAsn::from_u64(b));
        let keys = IssuerKeys::with_derivation(&master, p, Derivation::Generic, e).unwrap();
        let sv = SecretValue::derive(&master, p, e).unwrap();
        if p != q {
            prop_assert_ne!(sv, SecretValue::derive(&master, q, e).unwrap());
            let l1 = keys.level1(a);
            prop_assert_ne!(l1.as_host(Derivation::Generic, p, &h), l1.as_host(Derivation::Generic, q, &h));
            prop_assert_ne!(l1.host_as(Derivation::Generic, p, &h), l1.host_as(Derivation::Generic, q, &h));
        }
        prop_assert_ne!(sv, SecretValue::derive(&master, p, epoch(begin, begin + len + 1)).unwrap());
        prop_assert_ne!(sv, SecretValue::derive(&master, p, epoch(begin + 1, begin + len + 1)).unwrap());
        let mut other = master.clone();
        other.push(0);
        prop_assert_ne!(sv, SecretValue::derive(&other, p, e).unwrap());
        if a != b {
            prop_assert_ne!(keys.level1(a), keys.level1(b));
        }
        if h != g {
            prop_assert_ne!(keys.as_host(a, &h), keys.as_host(a, &g));
            prop_assert_ne!(keys.host_as(a, &h), keys.host_as(a, &g));
            prop_assert_ne!(keys.host_host(a, &h, &h), keys.host_host(a, &h, &g));
        }
        // Key types are separated even for the same host.
        prop_assert_ne!(*keys.as_host(a, &h).as_bytes(), *keys.host_as(a, &h).as_bytes());
    }

    #[test]
    fn specific_and_generic_differ(master in prop::collection::vec(any::<u8>(), 1..40), p in 1u16.., h in arb_host()) {
        let e = epoch(86400, 2 * 86400);
        let dst = IsdAsn::new(1, 0xff00_0000_0110);
        let specific = IssuerKeys::with_derivation(&master, Protocol(p), Derivation::Specific, e).unwrap();
        let generic = IssuerKeys::with_derivation(&master, Protocol(p), Derivation::Generic, e).unwrap();
        prop_assert_ne!(specific.secret_value(), generic.secret_value());
        prop_assert_ne!(specific.level1(dst), generic.level1(dst));
        prop_assert_ne!(specific.as_host(dst, &h), generic.as_host(dst, &h));
        prop_assert_ne!(specific.host_as(dst, &h), generic.host_as(dst, &h));
        prop_assert_ne!(specific.host_host(dst, &h, &h), generic.host_host(dst, &h, &h));
        // Generic keys of every protocol descend from the same (protocol 0) Level-1 key.
        let zero = IssuerKeys::new(&master, Protocol::GENERIC, e).unwrap();
        prop_assert_eq!(generic.level1(dst), zero.level1(dst));
    }
}
