//! The registry under attack ("Market under attack", item 4), on any ledger: an AS whose
//! certificate is revoked or expires cannot sell, redeem or deliver any more, its buyers take
//! their pending requests back at once, and a revoked certificate cannot be registered again.

use aviary_market::contracts::{request_status, PathPurchase};
use aviary_market::registration::{self, certify, p256_key_from_seed};
use aviary_market::{Address, Bytes, Ledger, B256, U256};

use super::attacks::{native, setup, spec, Fixture};
use super::{expect_revert, IA1, WINDOW};

/// Every scenario, one fresh deployment each.
pub fn scenarios<L: Ledger>(l: &mut L) {
    revoked_issuer_sells_and_delivers_nothing(l);
    expired_certificate_is_a_deregistration(l);
    certificates_are_revoked_by_digest(l);
}

/// AS 1's key and a certificate of it by ISD 1's root (the fixture's root), until `not_after`.
fn as1_cert(not_after: u64) -> (p256::ecdsa::SigningKey, registration::Certificate) {
    let root = p256_key_from_seed(b"isd 1 root");
    let key = p256_key_from_seed(&IA1.to_be_bytes());
    let cert = certify(&root, IA1, key.verifying_key(), not_after);
    (key, cert)
}

/// Lists an ingress and an egress asset of AS 1 for [s, s + 3600) at 1 wei per unit.
fn list_pair<L: Ledger>(l: &mut L, f: &Fixture) -> (U256, U256) {
    let ingress = f.list(l, &f.as1, &spec(IA1, 1, true, f.s, f.s + 3600), 1);
    let egress = f.list(l, &f.as1, &spec(IA1, 2, false, f.s, f.s + 3600), 1);
    (ingress, egress)
}

fn hop(ingress: U256, egress: U256, start: u64, expiry: u64) -> PathPurchase {
    PathPurchase {
        ingressListingIds: vec![ingress],
        egressListingIds: vec![egress],
        startTime: start,
        expiryTime: expiry,
        bandwidth: 200,
    }
}

/// Buys the first 600 s of the pair `list_pair` listed, as one path paid `price`, redeemed
/// under `key`; the request IDs.
fn buy_pair<L: Ledger>(l: &mut L, f: &Fixture, (ingress, egress): (U256, U256), price: U256, key: B256) -> Vec<U256> {
    let path = vec![hop(ingress, egress, f.s, f.s + 600)];
    f.dep.buy_and_redeem_path(l, &f.buyer, path, key, WINDOW, native(price), price).unwrap().0
}

/// The owner revokes AS 1 while a buyer's request is pending and its listings are open: the
/// listings cannot be bought (by `buy` or a path), the AS cannot deliver, the buyer reclaims at
/// once (not only after the deadline) but cannot redeem the assets while nobody would deliver;
/// the revoked certificate cannot come back; a new certificate can, and then all works again.
fn revoked_issuer_sells_and_delivers_nothing<L: Ledger>(l: &mut L) {
    let f = setup(l);
    let (ingress, egress) = list_pair(l, &f);
    let price = U256::from(2 * 200 * 600);
    let key = B256::repeat_byte(0x42);
    let ids = buy_pair(l, &f, (ingress, egress), price, key);
    let pending = f.dep.request_of(l, ids[0]).unwrap();
    expect_revert(f.dep.revoke(l, &f.as1, IA1), "NotOwner");
    expect_revert(f.dep.reclaim(l, &f.buyer, ids[0]), "DeadlineNotPassed");

    let (digest, not_after) = f.dep.certificate_of(l, IA1).unwrap();
    f.dep.revoke(l, &f.owner, IA1).unwrap();
    assert_eq!(f.dep.account_of(l, IA1).unwrap(), Address::ZERO);
    assert_eq!(f.dep.as_of(l, f.as1.address()).unwrap(), 0);

    // Its listings are not sold, whole, in part, or on a path.
    let rv = expect_revert(f.dep.buy(l, &f.buyer, ingress, f.s, f.s + 600, 200, price, price), "IssuerNotRegistered");
    assert_eq!(
        (rv.arg("listingId"), rv.arg("isdAs")),
        (Some(ingress.to_string().as_str()), Some(IA1.to_string().as_str()))
    );
    let path = vec![hop(ingress, egress, f.s, f.s + 600)];
    expect_revert(
        f.dep.buy_and_redeem_path(l, &f.buyer, path, key, WINDOW, native(price), price),
        "IssuerNotRegistered",
    );
    // It cannot deliver; the buyer takes its assets back now, before the deadline.
    expect_revert(f.dep.deliver_reservation(l, &f.as1, ids[0], Bytes::from(vec![7u8; 80])), "NotRequestAs");
    assert!(l.block_timestamp().unwrap() <= pending.deadline);
    expect_revert(f.dep.reclaim(l, &f.as1, ids[0]), "NotRequester");
    // The client reports it as reclaimable now, and reclaims it as it does an expired one.
    let req = f.dep.request_of(l, ids[0]).unwrap();
    let now = l.pending_timestamp().unwrap();
    assert_eq!(
        aviary_market::client::current_state(l, &f.dep, &req, now).unwrap(),
        aviary_market::client::RequestState::Orphaned
    );
    assert_eq!(aviary_market::client::reclaim_expired(l, &f.dep, &f.buyer, &ids).unwrap(), ids);
    assert_eq!(f.dep.request_of(l, ids[0]).unwrap().status, request_status::RECLAIMED);
    let (i, e) = (U256::from(pending.ingressId), U256::from(pending.egressId));
    // Redeeming them again to a revoked AS is refused by the asset contract itself.
    let rv = expect_revert(f.dep.redeem(l, &f.buyer, i, e, key, WINDOW), "IssuerNotRegistered");
    assert_eq!(rv.arg("isdAs"), Some(IA1.to_string().as_str()));
    // Nor can it issue.
    expect_revert(f.dep.issue(l, &f.as1, &spec(IA1, 1, true, f.s, f.s + 3600)), "NotIssuingAs");

    // The revoked certificate is dead for good; a new one (another expiry) registers.
    assert!(f.dep.is_revoked(l, digest).unwrap());
    let (_, old_expiry) = f.dep.certificate_of(l, IA1).unwrap();
    assert_eq!(old_expiry, 0, "the registration's record is cleared");
    let (as_key, old) = as1_cert(not_after);
    assert_eq!(registration::certificate_digest(IA1, as_key.verifying_key(), not_after), digest, "same certificate");
    let reg = f.dep.registration(l, IA1, old, &as_key, f.as1.address()).unwrap();
    let rv = expect_revert(f.dep.register(l, &f.as1, &reg), "CertificateRevoked");
    assert_eq!(rv.arg("digest"), Some(digest.to_string().as_str()));
    let (as_key, fresh) = as1_cert(not_after + 60);
    let reg = f.dep.registration(l, IA1, fresh, &as_key, f.as1.address()).unwrap();
    f.dep.register(l, &f.as1, &reg).unwrap();
    f.dep.redeem(l, &f.buyer, i, e, key, WINDOW).unwrap();
    f.dep.buy(l, &f.buyer, ingress, f.s, f.s + 600, 200, price, price).unwrap();
}

/// A certificate that expires ends the registration by itself: from its expiry on the AS looks
/// deregistered (no lookup, issue, sale or delivery; its buyers reclaim at once); a certificate
/// already expired is refused; a fresh one registers again over the stale registration.
fn expired_certificate_is_a_deregistration<L: Ledger>(l: &mut L) {
    let f = setup(l);
    let (ingress, egress) = list_pair(l, &f);
    // Re-register AS 1 with a certificate that lasts ten minutes.
    f.dep.deregister(l, &f.as1).unwrap();
    let now = l.block_timestamp().unwrap();
    let (as_key, short) = as1_cert(now + 600);
    let reg = f.dep.registration(l, IA1, short, &as_key, f.as1.address()).unwrap();
    f.dep.register(l, &f.as1, &reg).unwrap();
    assert_eq!(f.dep.certificate_of(l, IA1).unwrap().1, now + 600);
    let price = U256::from(2 * 200 * 600);
    let key = B256::repeat_byte(0x42);
    let ids = buy_pair(l, &f, (ingress, egress), price, key);

    l.advance_time(now + 600 - l.block_timestamp().unwrap()).unwrap();
    assert_eq!(f.dep.account_of(l, IA1).unwrap(), Address::ZERO);
    assert_eq!(f.dep.as_of(l, f.as1.address()).unwrap(), 0);
    assert_eq!(f.dep.as_key(l, IA1).unwrap(), (B256::ZERO, B256::ZERO));
    expect_revert(f.dep.buy(l, &f.buyer, ingress, f.s, f.s + 600, 200, price, price), "IssuerNotRegistered");
    expect_revert(f.dep.issue(l, &f.as1, &spec(IA1, 1, true, f.s, f.s + 3600)), "NotIssuingAs");
    expect_revert(f.dep.deliver_reservation(l, &f.as1, ids[0], Bytes::from(vec![7u8; 80])), "NotRequestAs");
    f.dep.reclaim(l, &f.buyer, ids[0]).unwrap();

    // An expired certificate does not register (not even a fresh proof of possession).
    let reg = f.dep.registration(l, IA1, short, &as_key, f.as1.address()).unwrap();
    let rv = expect_revert(f.dep.register(l, &f.as1, &reg), "CertificateExpired");
    assert_eq!(rv.arg("notAfter"), Some((now + 600).to_string().as_str()));
    // A renewed one does: the stale registration of the ISD-AS and the account is replaced.
    let (as_key, renewed) = as1_cert(super::cert_expiry(l));
    let reg = f.dep.registration(l, IA1, renewed, &as_key, f.as1.address()).unwrap();
    f.dep.register(l, &f.as1, &reg).unwrap();
    assert_eq!(f.dep.account_of(l, IA1).unwrap(), f.as1.address());
    f.dep.buy(l, &f.buyer, ingress, f.s, f.s + 600, 200, price, price).unwrap();
}

/// The owner revokes a certificate it learns is compromised before anyone registers it: it
/// never registers; revoking a certificate that is not the registered one leaves the
/// registration alone; only the owner revokes.
fn certificates_are_revoked_by_digest<L: Ledger>(l: &mut L) {
    let f = setup(l);
    let not_after = super::cert_expiry(l) + 3600;
    let (as_key, leaked) = as1_cert(not_after);
    expect_revert(f.dep.revoke_certificate(l, &f.as2, IA1, as_key.verifying_key(), &leaked), "NotOwner");
    f.dep.revoke_certificate(l, &f.owner, IA1, as_key.verifying_key(), &leaked).unwrap();
    let digest = registration::certificate_digest(IA1, as_key.verifying_key(), not_after);
    assert!(f.dep.is_revoked(l, digest).unwrap());
    // AS 1's current registration (another certificate) is untouched.
    assert_eq!(f.dep.account_of(l, IA1).unwrap(), f.as1.address());
    f.dep.deregister(l, &f.as1).unwrap();
    let reg = f.dep.registration(l, IA1, leaked, &as_key, f.as1.address()).unwrap();
    expect_revert(f.dep.register(l, &f.as1, &reg), "CertificateRevoked");
    // Revoking the registered certificate by digest ends the registration.
    let (as_key, current) = as1_cert(not_after + 60);
    let reg = f.dep.registration(l, IA1, current, &as_key, f.as1.address()).unwrap();
    f.dep.register(l, &f.as1, &reg).unwrap();
    f.dep.revoke_certificate(l, &f.owner, IA1, as_key.verifying_key(), &current).unwrap();
    assert_eq!(f.dep.account_of(l, IA1).unwrap(), Address::ZERO);
}
