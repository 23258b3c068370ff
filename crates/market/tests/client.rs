//! The buyer client on the embedded ledger: offers, the cheapest plan in one payment token, an
//! atomic purchase paid in an ERC-20 token, the AS answering, and the buyer opening what it
//! delivered.

use std::time::Duration;

use aviary_hummingbird::{BuyerKey, BwCodec, RedeemRequest, ReservationService, SecretValue, ServiceState};
use aviary_market::client::{self, ClientError, HopWant, Window};
use aviary_market::contracts::{deploy_test_token, token};
use aviary_market::registration::{certify, p256_key_from_seed};
use aviary_market::{Address, AssetSpec, Deployment, EmbeddedLedger, Ledger, U256};

const IA: u64 = (1 << 48) | 0xff00_0000_0110;
const T0: u64 = 1_800_000_000;

fn spec(interface_id: u16, is_ingress: bool) -> AssetSpec {
    AssetSpec {
        isd_as: IA,
        interface_id,
        is_ingress,
        bandwidth: 5000,
        start_time: T0,
        expiry_time: T0 + 3600,
        time_granularity: 60,
        min_bandwidth: 100,
    }
}

#[test]
fn cheapest_plan_is_bought_atomically_and_opened_by_the_buyer() {
    let mut l = EmbeddedLedger::in_memory_with_clock(std::sync::Arc::new(|| T0 + 30));
    let accts = l.accounts().to_vec();
    let (owner, as_acct, buyer) = (&accts[0], &accts[1], &accts[2]);
    let d = Deployment::deploy_all(&mut l, owner).unwrap();
    let root = p256_key_from_seed(b"root");
    let as_key = p256_key_from_seed(b"as");
    d.set_isd_root(&mut l, owner, 1, root.verifying_key()).unwrap();
    let reg = d
        .registration(
            &l,
            IA,
            certify(&root, IA, as_key.verifying_key(), l.block_timestamp().unwrap() + 86_400 * 30),
            &as_key,
            as_acct.address(),
        )
        .unwrap();
    d.register(&mut l, as_acct, &reg).unwrap();
    let native = d.create_marketplace(&mut l, owner, Address::ZERO).unwrap();
    let tok = deploy_test_token(&mut l, owner, "Bandwidth Dollar", "BWD").unwrap();
    let in_token = d.create_marketplace(&mut l, owner, tok).unwrap();
    for mp in [native, in_token] {
        d.register_seller(&mut l, as_acct, mp).unwrap();
    }
    d.set_approval_for_all(&mut l, as_acct, d.market, true).unwrap();
    // Two ingress listings on interface 1 for tokens (the dearer one first) and one, numerically
    // cheapest, in the native currency; the egress of 2 for tokens only.
    let dear = d.issue(&mut l, as_acct, &spec(1, true)).unwrap();
    let cheap = d.issue(&mut l, as_acct, &spec(1, true)).unwrap();
    let in_native = d.issue(&mut l, as_acct, &spec(1, true)).unwrap();
    let egress = d.issue(&mut l, as_acct, &spec(2, false)).unwrap();
    d.create_listing(&mut l, as_acct, in_token, dear, 30).unwrap();
    let cheap_listing = d.create_listing(&mut l, as_acct, in_token, cheap, 10).unwrap();
    d.create_listing(&mut l, as_acct, native, in_native, 1).unwrap();
    d.create_listing(&mut l, as_acct, in_token, egress, 20).unwrap();

    let offers = client::open_offers(&l, &d).unwrap();
    assert_eq!(offers.len(), 4);
    let want = [HopWant { isd_as: IA, ingress: 1, egress: 2 }];
    let (start, expiry, bw) = (T0 + 60, T0 + 660, 1000);
    let w = Window { start, expiry, bandwidth: bw };
    // In the native currency the egress is not for sale; the token's offers are not mixed in.
    let in_eth = client::plan_cheapest(&offers, &want, w, Address::ZERO);
    assert!(matches!(in_eth, Err(ClientError::NoOffer { interface: 2, .. })), "{in_eth:?}");
    let plan = client::plan_cheapest(&offers, &want, w, tok).unwrap();
    assert_eq!(plan.hops[0].ingress.len(), 1);
    assert_eq!(plan.hops[0].ingress[0].offer.listing_id, cheap_listing);
    assert_eq!((plan.token, plan.total), (tok, U256::from((10u64 + 20) * 1000 * 600)));
    // The plan in the token's units: BWD's symbol and decimals read from the token itself.
    let tokens = client::token_infos(&l, [plan.token]).unwrap();
    assert_eq!(tokens[&tok], client::TokenInfo { symbol: "BWD".into(), decimals: 18 });
    let lines = client::view::plan_lines(&plan, &tokens);
    assert!(lines.last().unwrap().contains(" BWD for 10 min from 2027-01-15T08:01:00Z"), "{lines:?}");
    // Hops that cannot be bought are named.
    let none = client::plan_cheapest(&offers, &[HopWant { isd_as: IA, ingress: 3, egress: 2 }], w, tok);
    assert!(matches!(none, Err(ClientError::NoOffer { hop: 0, interface: 3, .. })), "{none:?}");
    let edge = client::plan_cheapest(&offers, &[HopWant { isd_as: IA, ingress: 0, egress: 2 }], w, tok);
    assert!(matches!(edge, Err(ClientError::NotTransit { .. })));
    let too_much = client::plan_cheapest(&offers, &want, Window { bandwidth: 6000, ..w }, tok);
    assert!(matches!(too_much, Err(ClientError::NoOffer { .. })));

    // Without tokens the atomic purchase fails and nothing is bought.
    let key = BuyerKey::derive(b"buyer ephemeral");
    let terms = client::DeliveryTerms { key: &key, window_s: client::DEFAULT_DELIVERY_WINDOW_S };
    let before = d.next_request_id(&l).unwrap();
    assert!(client::buy_path(&mut l, &d, buyer, &plan, terms).is_err());
    assert_eq!(d.next_request_id(&l).unwrap(), before);
    token::mint(&mut l, owner, tok, buyer.address(), U256::from(1_000_000_000u64)).unwrap();
    let requests = client::buy_path(&mut l, &d, buyer, &plan, terms).unwrap();
    assert_eq!(requests.len(), 1);
    let paid = U256::from(1_000_000_000u64) - plan.total;
    assert_eq!(token::balance_of(&l, tok, buyer.address()).unwrap(), paid, "the plan's total, in the token");

    // The AS answers the request (as its service does) and the buyer opens the delivery.
    let secret = [7u8; 32];
    let mut service = ReservationService::new(IA, l.chain_id(), &secret, BwCodec::Paper, ServiceState::new(100));
    let req = d.request_of(&l, requests[0]).unwrap();
    let (ia, ea) =
        (d.asset_of(&l, U256::from(req.ingressId)).unwrap(), d.asset_of(&l, U256::from(req.egressId)).unwrap());
    assert_eq!((ia.startTime, ia.expiryTime, ia.bandwidth), (start, expiry, bw));
    let rr = RedeemRequest {
        request_id: requests[0].to_be_bytes::<32>(),
        ingress: ia.interfaceId,
        egress: ea.interfaceId,
        bandwidth_kbps: ia.bandwidth,
        start: ia.startTime,
        expiry: ia.expiryTime,
        buyer_key: req.ephemeralPubKey.0,
    };
    let mut resids = aviary_hummingbird::ResIdAllocator::new(100);
    let f = service.fulfil(&rr, T0 + 30, &[1; 32], &mut resids).unwrap();
    d.deliver_reservation(&mut l, as_acct, requests[0], f.sealed.into()).unwrap();
    let opened = client::await_deliveries(&l, &d, &requests, &key, Duration::from_secs(1)).unwrap();
    let (isd_as, r) = opened[0];
    assert_eq!(isd_as, IA);
    assert_eq!((r.info.ingress, r.info.egress, u64::from(r.info.start), r.info.duration), (1, 2, start, 600));
    assert_eq!(r.ak, SecretValue::from_master_secret(&secret).auth_key(&r.info));
    // Someone else's key opens nothing.
    let other = client::await_deliveries(&l, &d, &requests, &BuyerKey::derive(b"thief"), Duration::from_secs(1));
    assert!(matches!(other, Err(ClientError::Open(..))));
}
