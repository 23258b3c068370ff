//! Thin typed wrappers over the bindings: one method per contract function that the AS service
//! and the market client use, on any [`Ledger`].
//!
//! A state-changing call mines a transaction and turns a revert into
//! `LedgerError::Revert` (named contract error). Values that a transaction returns (new asset,
//! listing and request ids) are read from its events, since JSON-RPC receipts carry no return
//! data; views decode the `eth_call` output.

use alloy_primitives::{Address, Bytes, B256, U256};
use alloy_sol_types::{SolCall, SolConstructor, SolEvent};

use crate::bindings::{AsRegistry, BandwidthAssets, Market, TestToken};
use crate::registration::{public_key_xy, Certificate, Registration, P256_VERIFIER};
use crate::{Account, Ledger, LedgerError, Receipt, Submitted};

pub use BandwidthAssets::{Asset, RedeemRequest};
pub use Market::{Listing, PathPurchase, PriceLimit};

mod market;
pub use market::IndexedSide;

/// `RedeemRequest.status` values (the contract's `RequestStatus` enum).
pub mod request_status {
    /// No such request.
    pub const NONE: u8 = 0;
    /// Waiting for the AS to deliver.
    pub const PENDING: u8 = 1;
    /// Delivered; the assets are burnt.
    pub const DELIVERED: u8 = 2;
    /// Not delivered by its deadline; the requester took the assets back.
    pub const RECLAIMED: u8 = 3;
}

/// How long an AS may take to deliver, at most (the contract's `MAX_DELIVERY_WINDOW`, s).
pub const MAX_DELIVERY_WINDOW_S: u32 = 86_400;

/// The attributes of an asset to issue (the Hummingbird paper, §4.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AssetSpec {
    /// The issuer's ISD-AS.
    pub isd_as: u64,
    /// SCION interface id.
    pub interface_id: u16,
    /// Ingress (true) or egress (false).
    pub is_ingress: bool,
    /// kbit/s.
    pub bandwidth: u64,
    /// Unix s, on the granularity grid.
    pub start_time: u64,
    /// Unix s, on the grid, > start.
    pub expiry_time: u64,
    /// Time grid, s.
    pub time_granularity: u32,
    /// Smallest bandwidth a split may leave, kbit/s.
    pub min_bandwidth: u32,
}

impl AssetSpec {
    /// The `issue` call of the asset contract for this asset.
    pub fn issue_call(&self) -> BandwidthAssets::issueCall {
        BandwidthAssets::issueCall {
            isdAs: self.isd_as,
            interfaceId: self.interface_id,
            isIngress: self.is_ingress,
            bandwidth: self.bandwidth,
            startTime: self.start_time,
            expiryTime: self.expiry_time,
            timeGranularity: self.time_granularity,
            minBandwidth: self.min_bandwidth,
        }
    }
}

/// The addresses of a deployment of the contracts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deployment {
    /// AsRegistry.
    pub registry: Address,
    /// BandwidthAssets.
    pub assets: Address,
    /// Market.
    pub market: Address,
}

/// Send `call` to `to` and fail on revert.
pub fn transact<L: Ledger + ?Sized, C: SolCall>(
    ledger: &mut L,
    from: &Account,
    to: Address,
    call: &C,
    value: U256,
) -> Result<Receipt, LedgerError> {
    ledger.send(from, to, call.abi_encode().into(), value)?.into_result()
}

/// Call a view of `to` and decode its return value.
pub fn view<L: Ledger + ?Sized, C: SolCall>(ledger: &L, to: Address, call: &C) -> Result<C::Return, LedgerError> {
    let out = ledger.call(Address::ZERO, to, call.abi_encode().into())?;
    C::abi_decode_returns(&out).map_err(|e| LedgerError::Decode(format!("{}: {e}", C::SIGNATURE)))
}

/// All events `E` that `emitter` logged in `receipt`.
pub fn events<E: SolEvent>(receipt: &Receipt, emitter: Address) -> Vec<E> {
    receipt
        .logs
        .iter()
        .filter(|log| log.address == emitter && log.topics().first() == Some(&E::SIGNATURE_HASH))
        .filter_map(|log| E::decode_log_data(&log.data).ok())
        .collect()
}

/// The first event `E` of `emitter` in `receipt`.
pub fn first_event<E: SolEvent>(receipt: &Receipt, emitter: Address) -> Result<E, LedgerError> {
    events::<E>(receipt, emitter)
        .into_iter()
        .next()
        .ok_or_else(|| LedgerError::Decode(format!("no {} event", E::SIGNATURE)))
}

/// Deploy `BYTECODE` followed by the constructor arguments.
fn deploy_with<L: Ledger + ?Sized, C: SolConstructor>(
    ledger: &mut L,
    from: &Account,
    bytecode: &Bytes,
    args: &C,
) -> Result<Address, LedgerError> {
    let mut code = bytecode.to_vec();
    code.extend_from_slice(&args.abi_encode());
    ledger.deploy(from, code.into())
}

/// Deploy a TestToken (an ERC-20 anyone may mint).
pub fn deploy_test_token<L: Ledger + ?Sized>(
    ledger: &mut L,
    from: &Account,
    name: &str,
    symbol: &str,
) -> Result<Address, LedgerError> {
    let args = TestToken::constructorCall { name_: name.into(), symbol_: symbol.into() };
    deploy_with(ledger, from, &TestToken::BYTECODE, &args)
}

impl Deployment {
    /// Deploy AsRegistry (verifier: the P256VERIFY precompile), BandwidthAssets and Market,
    /// owned by `owner`.
    pub fn deploy_all<L: Ledger + ?Sized>(ledger: &mut L, owner: &Account) -> Result<Self, LedgerError> {
        Self::deploy_with_verifier(ledger, owner, P256_VERIFIER)
    }

    /// As [`Self::deploy_all`], with another P-256 verifier contract (a chain without 0x100).
    pub fn deploy_with_verifier<L: Ledger + ?Sized>(
        ledger: &mut L,
        owner: &Account,
        verifier: Address,
    ) -> Result<Self, LedgerError> {
        let registry = deploy_with(ledger, owner, &AsRegistry::BYTECODE, &AsRegistry::constructorCall { verifier })?;
        let assets = deploy_with(
            ledger,
            owner,
            &BandwidthAssets::BYTECODE,
            &BandwidthAssets::constructorCall { registry_: registry },
        )?;
        let market = deploy_with(ledger, owner, &Market::BYTECODE, &Market::constructorCall { assets_: assets })?;
        Ok(Self { registry, assets, market })
    }

    // ------------------------------------------------------------------ registry

    /// Set the P-256 root key of `isd` (registry owner only).
    pub fn set_isd_root<L: Ledger + ?Sized>(
        &self,
        l: &mut L,
        owner: &Account,
        isd: u16,
        root: &p256::ecdsa::VerifyingKey,
    ) -> Result<Receipt, LedgerError> {
        let (x, y) = public_key_xy(root);
        transact(l, owner, self.registry, &AsRegistry::setIsdRootCall { isd, x, y }, U256::ZERO)
    }

    /// Prepare the registration of `isd_as` for `account` (reads its nonce from the chain).
    pub fn registration<L: Ledger + ?Sized>(
        &self,
        l: &L,
        isd_as: u64,
        certificate: Certificate,
        as_key: &p256::ecdsa::SigningKey,
        account: Address,
    ) -> Result<Registration, LedgerError> {
        let nonce = self.registration_nonce(l, account)?;
        Ok(Registration::new(isd_as, certificate, as_key, self.registry, l.chain_id(), account, nonce))
    }

    /// Register (the caller becomes the ISD-AS's account).
    pub fn register<L: Ledger + ?Sized>(
        &self,
        l: &mut L,
        from: &Account,
        reg: &Registration,
    ) -> Result<Receipt, LedgerError> {
        transact(l, from, self.registry, &reg.call(), U256::ZERO)
    }

    /// Give up the caller's ISD-AS.
    pub fn deregister<L: Ledger + ?Sized>(&self, l: &mut L, from: &Account) -> Result<Receipt, LedgerError> {
        transact(l, from, self.registry, &AsRegistry::deregisterCall {}, U256::ZERO)
    }

    /// Revoke the certificate the registration of `isd_as` uses (registry owner only): the
    /// registration ends and that certificate cannot be registered again.
    pub fn revoke<L: Ledger + ?Sized>(&self, l: &mut L, owner: &Account, isd_as: u64) -> Result<Receipt, LedgerError> {
        transact(l, owner, self.registry, &AsRegistry::revokeCall { isdAs: isd_as }, U256::ZERO)
    }

    /// Revoke `certificate` of `as_key` for `isd_as`, registered or not (registry owner only).
    pub fn revoke_certificate<L: Ledger + ?Sized>(
        &self,
        l: &mut L,
        owner: &Account,
        isd_as: u64,
        as_key: &p256::ecdsa::VerifyingKey,
        certificate: &Certificate,
    ) -> Result<Receipt, LedgerError> {
        let (x, y) = public_key_xy(as_key);
        let call =
            AsRegistry::revokeCertificateCall { isdAs: isd_as, asKeyX: x, asKeyY: y, notAfter: certificate.not_after };
        transact(l, owner, self.registry, &call, U256::ZERO)
    }

    /// Whether the registry owner revoked the certificate with `digest`.
    pub fn is_revoked<L: Ledger + ?Sized>(&self, l: &L, digest: B256) -> Result<bool, LedgerError> {
        view(l, self.registry, &AsRegistry::isRevokedCall { digest })
    }

    /// The digest and expiry of the certificate `isd_as` is registered with (zeros: none).
    pub fn certificate_of<L: Ledger + ?Sized>(&self, l: &L, isd_as: u64) -> Result<(B256, u64), LedgerError> {
        let c = view(l, self.registry, &AsRegistry::certificateOfCall { isdAs: isd_as })?;
        Ok((c.digest, c.notAfter))
    }

    /// The AS key registered for `isd_as` (zeros: none).
    pub fn as_key<L: Ledger + ?Sized>(&self, l: &L, isd_as: u64) -> Result<(B256, B256), LedgerError> {
        let k = view(l, self.registry, &AsRegistry::asKeyCall { isdAs: isd_as })?;
        Ok((k.x, k.y))
    }

    /// The digest the registry expects the AS key to sign for `account` now (the same as
    /// [`crate::registration::registration_digest`] with the account's current nonce).
    pub fn registration_digest<L: Ledger + ?Sized>(&self, l: &L, account: Address) -> Result<B256, LedgerError> {
        view(l, self.registry, &AsRegistry::registrationDigestCall { account })
    }

    /// The digest an ISD root signs to certify `as_key` for `isd_as`, as the registry computes it.
    pub fn certificate_digest<L: Ledger + ?Sized>(
        &self,
        l: &L,
        isd_as: u64,
        as_key: &p256::ecdsa::VerifyingKey,
        not_after: u64,
    ) -> Result<B256, LedgerError> {
        let (x, y) = public_key_xy(as_key);
        let call = AsRegistry::certificateDigestCall { isdAs: isd_as, asKeyX: x, asKeyY: y, notAfter: not_after };
        view(l, self.registry, &call)
    }

    /// The nonce the next proof of possession of `account` signs.
    pub fn registration_nonce<L: Ledger + ?Sized>(&self, l: &L, account: Address) -> Result<U256, LedgerError> {
        view(l, self.registry, &AsRegistry::registrationNonceCall { account })
    }

    /// The ISD-AS of `account` (0: none).
    pub fn as_of<L: Ledger + ?Sized>(&self, l: &L, account: Address) -> Result<u64, LedgerError> {
        view(l, self.registry, &AsRegistry::asOfCall { account })
    }

    /// The account of `isd_as` (zero: none).
    pub fn account_of<L: Ledger + ?Sized>(&self, l: &L, isd_as: u64) -> Result<Address, LedgerError> {
        view(l, self.registry, &AsRegistry::accountOfCall { isdAs: isd_as })
    }

    // ------------------------------------------------------------------ assets

    /// Issue an asset; returns its id.
    pub fn issue<L: Ledger + ?Sized>(&self, l: &mut L, from: &Account, a: &AssetSpec) -> Result<U256, LedgerError> {
        let r = transact(l, from, self.assets, &a.issue_call(), U256::ZERO)?;
        Ok(first_event::<BandwidthAssets::Issued>(&r, self.assets)?.id)
    }

    /// Move asset `id` from `owner` to `to`.
    pub fn transfer_from<L: Ledger + ?Sized>(
        &self,
        l: &mut L,
        from: &Account,
        owner: Address,
        to: Address,
        id: U256,
    ) -> Result<Receipt, LedgerError> {
        transact(l, from, self.assets, &BandwidthAssets::transferFromCall { from: owner, to, id }, U256::ZERO)
    }

    /// Approve `approved` for asset `id`.
    pub fn approve<L: Ledger + ?Sized>(
        &self,
        l: &mut L,
        from: &Account,
        approved: Address,
        id: U256,
    ) -> Result<Receipt, LedgerError> {
        transact(l, from, self.assets, &BandwidthAssets::approveCall { approved, id }, U256::ZERO)
    }

    /// Let `operator` act on all of the caller's assets.
    pub fn set_approval_for_all<L: Ledger + ?Sized>(
        &self,
        l: &mut L,
        from: &Account,
        operator: Address,
        approved: bool,
    ) -> Result<Receipt, LedgerError> {
        transact(l, from, self.assets, &BandwidthAssets::setApprovalForAllCall { operator, approved }, U256::ZERO)
    }

    /// Whether `operator` may act on all of `owner`'s assets.
    pub fn is_approved_for_all<L: Ledger + ?Sized>(
        &self,
        l: &L,
        owner: Address,
        operator: Address,
    ) -> Result<bool, LedgerError> {
        view(l, self.assets, &BandwidthAssets::isApprovedForAllCall { owner, operator })
    }

    /// Split `id` at `time`; returns the id of the later part.
    pub fn split_time<L: Ledger + ?Sized>(
        &self,
        l: &mut L,
        from: &Account,
        id: U256,
        time: u64,
    ) -> Result<U256, LedgerError> {
        let r = transact(l, from, self.assets, &BandwidthAssets::splitTimeCall { id, time }, U256::ZERO)?;
        Ok(first_event::<BandwidthAssets::SplitTime>(&r, self.assets)?.newId)
    }

    /// Split `bandwidth` off `id`; returns the id of the new part.
    pub fn split_bandwidth<L: Ledger + ?Sized>(
        &self,
        l: &mut L,
        from: &Account,
        id: U256,
        bandwidth: u64,
    ) -> Result<U256, LedgerError> {
        let call = BandwidthAssets::splitBandwidthCall { id, newBandwidth: bandwidth };
        let r = transact(l, from, self.assets, &call, U256::ZERO)?;
        Ok(first_event::<BandwidthAssets::SplitBandwidth>(&r, self.assets)?.newId)
    }

    /// Fuse `b` (adjacent, later) into `a`.
    pub fn fuse_time<L: Ledger + ?Sized>(
        &self,
        l: &mut L,
        from: &Account,
        a: U256,
        b: U256,
    ) -> Result<Receipt, LedgerError> {
        transact(l, from, self.assets, &BandwidthAssets::fuseTimeCall { a, b }, U256::ZERO)
    }

    /// Fuse `b` (same interval) into `a`.
    pub fn fuse_bandwidth<L: Ledger + ?Sized>(
        &self,
        l: &mut L,
        from: &Account,
        a: U256,
        b: U256,
    ) -> Result<Receipt, LedgerError> {
        transact(l, from, self.assets, &BandwidthAssets::fuseBandwidthCall { a, b }, U256::ZERO)
    }

    /// Redeem an ingress and an egress asset, to be delivered within `delivery_window_s` (1 to
    /// [`MAX_DELIVERY_WINDOW_S`]); returns the request id.
    #[allow(clippy::too_many_arguments)] // the contract's arguments, plus ledger and sender
    pub fn redeem<L: Ledger + ?Sized>(
        &self,
        l: &mut L,
        from: &Account,
        ingress: U256,
        egress: U256,
        ephemeral_key: B256,
        delivery_window_s: u32,
    ) -> Result<U256, LedgerError> {
        let call = BandwidthAssets::redeemCall {
            ingressId: ingress,
            egressId: egress,
            ephemeralPubKey: ephemeral_key,
            deliveryWindow: delivery_window_s,
        };
        let r = transact(l, from, self.assets, &call, U256::ZERO)?;
        Ok(first_event::<BandwidthAssets::RedeemRequested>(&r, self.assets)?.requestId)
    }

    /// Deliver the sealed reservation of a request (the request's AS only).
    pub fn deliver_reservation<L: Ledger + ?Sized>(
        &self,
        l: &mut L,
        from: &Account,
        request: U256,
        sealed: Bytes,
    ) -> Result<Receipt, LedgerError> {
        let call = BandwidthAssets::deliverReservationCall { requestId: request, sealedReservation: sealed };
        transact(l, from, self.assets, &call, U256::ZERO)
    }

    /// [`Self::deliver_reservation`] without waiting for the transaction to be mined (see
    /// [`Ledger::submit`]); a second delivery for one request reverts with `RequestNotPending`.
    pub fn submit_delivery<L: Ledger + ?Sized>(
        &self,
        l: &mut L,
        from: &Account,
        request: U256,
        sealed: Bytes,
    ) -> Result<Submitted, LedgerError> {
        let call = BandwidthAssets::deliverReservationCall { requestId: request, sealedReservation: sealed };
        l.submit(from, self.assets, call.abi_encode().into(), U256::ZERO)
    }

    /// Take back the assets of an undelivered request after its deadline (its requester only).
    pub fn reclaim<L: Ledger + ?Sized>(
        &self,
        l: &mut L,
        from: &Account,
        request: U256,
    ) -> Result<Receipt, LedgerError> {
        transact(l, from, self.assets, &BandwidthAssets::reclaimCall { requestId: request }, U256::ZERO)
    }

    /// Who sent asset `id` to the contract holding it, if that contract did not take it itself.
    pub fn sender_of<L: Ledger + ?Sized>(&self, l: &L, id: U256) -> Result<Address, LedgerError> {
        view(l, self.assets, &BandwidthAssets::senderOfCall { id })
    }

    /// Asset `id` (owner zero: none).
    pub fn asset_of<L: Ledger + ?Sized>(&self, l: &L, id: U256) -> Result<Asset, LedgerError> {
        view(l, self.assets, &BandwidthAssets::assetOfCall { id })
    }

    /// The owner of asset `id` (reverts UnknownAsset if there is none).
    pub fn owner_of<L: Ledger + ?Sized>(&self, l: &L, id: U256) -> Result<Address, LedgerError> {
        view(l, self.assets, &BandwidthAssets::ownerOfCall { id })
    }

    /// The id the next asset gets (all ids below it were used).
    pub fn next_asset_id<L: Ledger + ?Sized>(&self, l: &L) -> Result<U256, LedgerError> {
        view(l, self.assets, &BandwidthAssets::nextAssetIdCall {})
    }

    /// The id the next redeem request gets.
    pub fn next_request_id<L: Ledger + ?Sized>(&self, l: &L) -> Result<U256, LedgerError> {
        view(l, self.assets, &BandwidthAssets::nextRequestIdCall {})
    }

    /// Redeem request `id` (status None: none).
    pub fn request_of<L: Ledger + ?Sized>(&self, l: &L, id: U256) -> Result<RedeemRequest, LedgerError> {
        view(l, self.assets, &BandwidthAssets::requestOfCall { requestId: id })
    }

    /// The sealed reservation delivered for request `id` (empty until delivered).
    pub fn reservation_of<L: Ledger + ?Sized>(&self, l: &L, id: U256) -> Result<Bytes, LedgerError> {
        view(l, self.assets, &BandwidthAssets::reservationOfCall { requestId: id })
    }

    // ------------------------------------------------------------------ events

    /// The redeem requests filed by a transaction (what an AS service acts on).
    pub fn redeem_requests(&self, r: &Receipt) -> Vec<BandwidthAssets::RedeemRequested> {
        events(r, self.assets)
    }

    /// The deliveries in a transaction.
    pub fn deliveries(&self, r: &Receipt) -> Vec<BandwidthAssets::ReservationDelivered> {
        events(r, self.assets)
    }

    /// The listings created by a transaction (new listings and remainders of a purchase).
    pub fn listed(&self, r: &Receipt) -> Vec<Market::Listed> {
        events(r, self.market)
    }
}

/// TestToken calls (ERC-20 marketplaces in tests and demos).
pub mod token {
    use super::*;

    /// Mint `amount` to `to`.
    pub fn mint<L: Ledger + ?Sized>(
        l: &mut L,
        from: &Account,
        token: Address,
        to: Address,
        amount: U256,
    ) -> Result<Receipt, LedgerError> {
        transact(l, from, token, &TestToken::mintCall { to, amount }, U256::ZERO)
    }

    /// Allow `spender` to pull `amount`.
    pub fn approve<L: Ledger + ?Sized>(
        l: &mut L,
        from: &Account,
        token: Address,
        spender: Address,
        amount: U256,
    ) -> Result<Receipt, LedgerError> {
        transact(l, from, token, &TestToken::approveCall { spender, amount }, U256::ZERO)
    }

    /// The token balance of `account`.
    pub fn balance_of<L: Ledger + ?Sized>(l: &L, token: Address, account: Address) -> Result<U256, LedgerError> {
        view(l, token, &TestToken::balanceOfCall { account })
    }

    /// What `spender` may pull from `owner` (ERC-20 `allowance`).
    pub fn allowance<L: Ledger + ?Sized>(
        l: &L,
        token: Address,
        owner: Address,
        spender: Address,
    ) -> Result<U256, LedgerError> {
        view(l, token, &TestToken::allowanceCall { owner, spender })
    }

    /// The token's symbol (ERC-20 `symbol()`).
    pub fn symbol<L: Ledger + ?Sized>(l: &L, token: Address) -> Result<String, LedgerError> {
        view(l, token, &TestToken::symbolCall {})
    }

    /// The digits of the token's smallest unit (ERC-20 `decimals()`).
    pub fn decimals<L: Ledger + ?Sized>(l: &L, token: Address) -> Result<u8, LedgerError> {
        view(l, token, &TestToken::decimalsCall {})
    }
}
