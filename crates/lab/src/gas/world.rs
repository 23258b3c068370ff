//! The market the gas rows are measured on: the deployed contracts, one registered AS per
//! path hop, a buyer, and the scenarios (each call once, worst-case path purchases, the
//! buy-to-delivery latency) that push their rows.

use super::*;

/// The deployed contracts, the market's participants and the ledger.
pub(super) struct World {
    pub(super) l: EmbeddedLedger,
    pub(super) dep: Deployment,
    pub(super) owner: Account,
    pub(super) buyer: Account,
    /// Registered ASes, one per path hop (hop k: ISD-AS `IA_BASE + k`).
    sellers: Vec<Seller>,
    /// The native-currency marketplace all sellers are registered in.
    pub(super) mp: u64,
}

#[derive(Clone)]
struct Seller {
    account: Account,
    ia: u64,
}

impl World {
    /// The same participants on another ledger (a copy of this chain).
    pub(super) fn on(self, l: EmbeddedLedger) -> Self {
        Self { l, ..self }
    }

    /// Deploy, register the ASes of the longest path and open a marketplace; the rows of the
    /// calls made here are pushed to `rows` (each call once).
    pub(super) fn setup(mut l: EmbeddedLedger, rows: &mut Vec<GasRow>) -> Result<Self> {
        let owner = l.accounts()[0].clone();
        let buyer = l.accounts()[1].clone();

        let (registry, gas) =
            deploy(&mut l, &owner, &AsRegistry::BYTECODE, aviary_market::registration::P256_VERIFIER)?;
        rows.push(GasRow::new("deploy AsRegistry", None, gas, None));
        let (assets, gas) = deploy(&mut l, &owner, &BandwidthAssets::BYTECODE, registry)?;
        rows.push(GasRow::new("deploy BandwidthAssets", None, gas, None));
        let (market, gas) = deploy(&mut l, &owner, &Market::BYTECODE, assets)?;
        rows.push(GasRow::new("deploy Market", None, gas, None));
        let dep = Deployment { registry, assets, market };

        let root = p256_key_from_seed(ROOT_SEED);
        let r = dep.set_isd_root(&mut l, &owner, 1, root.verifying_key())?;
        rows.push(GasRow::new("AsRegistry.setIsdRoot", None, r.gas_used, None));

        let hops = *PATH_HOPS.iter().max().expect("not empty");
        let mut sellers = vec![];
        for k in 0..u64::from(hops) {
            let account = Account::dev(10 + k as usize);
            l.fund(account.address(), U256::from(100u64) * U256::from(10u64).pow(U256::from(18)))?;
            let ia = IA_BASE + k;
            let r = register(&mut l, &dep, &account, ia)?;
            if k == 0 {
                rows.push(GasRow::new("AsRegistry.register (2 P-256 verifications)", None, r.gas_used, None));
            }
            sellers.push(Seller { account, ia });
        }

        let r = create_marketplace(&mut l, &dep, &owner, Address::ZERO)?;
        rows.push(GasRow::new("Market.createMarketplace", None, r.1.gas_used, paper("0.0028", "0.0034")));
        let mp = r.0;
        for (k, s) in sellers.iter().enumerate() {
            let r = dep.register_seller(&mut l, &s.account, mp)?;
            if k == 0 {
                rows.push(GasRow::new("Market.registerSeller", None, r.gas_used, paper("0.0024", "0.0029")));
            }
            let r = dep.set_approval_for_all(&mut l, &s.account, dep.market, true)?;
            if k == 0 {
                rows.push(GasRow::new("BandwidthAssets.setApprovalForAll", None, r.gas_used, None));
            }
        }
        Ok(Self { l, dep, owner, buyer, sellers, mp })
    }

    /// The rows of the calls not made by `setup`: registry, assets, market.
    pub(super) fn single_calls(&mut self, rows: &mut Vec<GasRow>) -> Result<()> {
        let dep = self.dep;
        let (owner, buyer) = (self.owner.clone(), self.buyer.clone());
        let as0 = self.sellers[0].clone();

        // ------------------------------------------------------------ registry
        let leaving = Account::dev(2);
        register(&mut self.l, &dep, &leaving, IA_BASE + 0x100)?;
        let r = dep.deregister(&mut self.l, &leaving)?;
        rows.push(GasRow::new("AsRegistry.deregister", None, r.gas_used, None));
        let revoked = Account::dev(3);
        register(&mut self.l, &dep, &revoked, IA_BASE + 0x101)?;
        let r = dep.revoke(&mut self.l, &owner, IA_BASE + 0x101)?;
        rows.push(GasRow::new("AsRegistry.revoke", None, r.gas_used, None));
        // A certificate revoked before anyone registered it (a leaked AS key, say).
        let ia = IA_BASE + 0x102;
        let as_key = p256_key_from_seed(format!("aviary lab gas: AS {ia:#x}").as_bytes());
        let cert =
            certify(&p256_key_from_seed(ROOT_SEED), ia, as_key.verifying_key(), self.l.block_timestamp()? + 3600);
        let r = dep.revoke_certificate(&mut self.l, &owner, ia, as_key.verifying_key(), &cert)?;
        rows.push(GasRow::new("AsRegistry.revokeCertificate", None, r.gas_used, None));
        let call = AsRegistry::transferOwnershipCall { newOwner: Account::dev(4).address() };
        let r = contracts::transact(&mut self.l, &owner, dep.registry, &call, U256::ZERO)?;
        rows.push(GasRow::new("AsRegistry.transferOwnership", None, r.gas_used, None));

        // ------------------------------------------------------------ assets
        let (s, e) = self.window()?;
        let (x, r) = self.issue(0, true, IF_INGRESS, s, e)?;
        rows.push(GasRow::new("BandwidthAssets.issue", None, r.gas_used, paper("0.0029", "0.0035")));
        let call = BandwidthAssets::splitTimeCall { id: x, time: s + 1800 };
        let r = contracts::transact(&mut self.l, &as0.account, dep.assets, &call, U256::ZERO)?;
        let x_late = contracts::first_event::<BandwidthAssets::SplitTime>(&r, dep.assets)?.newId;
        rows.push(GasRow::new("BandwidthAssets.splitTime", None, r.gas_used, paper("0.0029", "0.0035")));
        let call = BandwidthAssets::splitBandwidthCall { id: x, newBandwidth: 400 };
        let r = contracts::transact(&mut self.l, &as0.account, dep.assets, &call, U256::ZERO)?;
        let x_bw = contracts::first_event::<BandwidthAssets::SplitBandwidth>(&r, dep.assets)?.newId;
        rows.push(GasRow::new("BandwidthAssets.splitBandwidth", None, r.gas_used, paper("0.0029", "0.0035")));
        let r = dep.fuse_bandwidth(&mut self.l, &as0.account, x, x_bw)?;
        rows.push(GasRow::new("BandwidthAssets.fuseBandwidth", None, r.gas_used, paper("-0.0013", "-0.0016")));
        let r = dep.fuse_time(&mut self.l, &as0.account, x, x_late)?;
        rows.push(GasRow::new("BandwidthAssets.fuseTime", None, r.gas_used, paper("-0.0013", "-0.0016")));

        // Ownership: the AS hands an asset to the buyer, who approves another account for it.
        let r = dep.transfer_from(&mut self.l, &as0.account, as0.account.address(), buyer.address(), x)?;
        rows.push(GasRow::new("BandwidthAssets.transferFrom", None, r.gas_used, None));
        let r = dep.approve(&mut self.l, &buyer, Account::dev(5).address(), x)?;
        rows.push(GasRow::new("BandwidthAssets.approve", None, r.gas_used, None));

        // Redemption by a buyer who holds an ingress and an egress asset; the AS delivers a real
        // sealed reservation (80 bytes, HPKE).
        let buyer_key = BuyerKey::derive(b"aviary lab gas: redeem");
        let (i, _) = self.issue(0, true, IF_INGRESS, s, e)?;
        let (o, _) = self.issue(0, false, IF_EGRESS, s, e)?;
        for id in [i, o] {
            dep.transfer_from(&mut self.l, &as0.account, as0.account.address(), buyer.address(), id)?;
        }
        let call = BandwidthAssets::redeemCall {
            ingressId: i,
            egressId: o,
            ephemeralPubKey: B256::from(buyer_key.public()),
            deliveryWindow: DEFAULT_DELIVERY_WINDOW_S,
        };
        let r = contracts::transact(&mut self.l, &buyer, dep.assets, &call, U256::ZERO)?;
        rows.push(GasRow::new("BandwidthAssets.redeem", None, r.gas_used, paper("0.00012", "0.00014")));
        let requests = dep.redeem_requests(&r);
        ensure!(requests.len() == 1, "redeem filed {} requests", requests.len());
        let mut service = service(as0.ia);
        let now = self.l.block_timestamp()?;
        let sealed = fulfil(&mut service, &requests[0], now)?;
        ensure!(sealed.len() == seal::SEALED_LEN, "sealed reservation of {} bytes", sealed.len());
        let r = dep.deliver_reservation(&mut self.l, &as0.account, requests[0].requestId, sealed.into())?;
        rows.push(GasRow::new(
            "BandwidthAssets.deliverReservation (80 B sealed)",
            None,
            r.gas_used,
            paper("-0.0027", "-0.0033"),
        ));
        let (i, _) = self.issue(0, true, IF_INGRESS, s, e)?;
        let (o, _) = self.issue(0, false, IF_EGRESS, s, e)?;
        let call = BandwidthAssets::redeemForCall {
            ingressId: i,
            egressId: o,
            ephemeralPubKey: B256::from(buyer_key.public()),
            deliveryWindow: DEFAULT_DELIVERY_WINDOW_S,
            requester: buyer.address(),
        };
        let r = contracts::transact(&mut self.l, &as0.account, dep.assets, &call, U256::ZERO)?;
        rows.push(GasRow::new("BandwidthAssets.redeemFor", None, r.gas_used, None));
        // The AS misses that request's deadline: the buyer takes both assets back.
        let missed = dep.redeem_requests(&r).first().context("redeemFor filed no request")?.requestId;
        self.l.advance_time(u64::from(DEFAULT_DELIVERY_WINDOW_S) + 1)?;
        let r = dep.reclaim(&mut self.l, &buyer, missed)?;
        rows.push(GasRow::new("BandwidthAssets.reclaim (after the deadline)", None, r.gas_used, None));

        // ------------------------------------------------------------ market
        let (x, _) = self.issue(0, true, IF_INGRESS, s, e)?;
        let (listing, r) = self.list(0, x, PRICE_INGRESS)?;
        // The first listing of an interface side also enters the side in the market's index.
        rows.push(GasRow::new("Market.createListing (first of its interface side)", None, r.gas_used, None));
        let call = Market::setPriceCall { listingId: listing, pricePerUnit: PRICE_INGRESS + 1 };
        let r = contracts::transact(&mut self.l, &as0.account, dep.market, &call, U256::ZERO)?;
        rows.push(GasRow::new("Market.setPrice", None, r.gas_used, None));
        let r = dep.delist(&mut self.l, &as0.account, listing)?;
        rows.push(GasRow::new("Market.delist", None, r.gas_used, None));
        // A side whose listings came and went: the index position is written again.
        let (x, _) = self.issue(0, true, IF_INGRESS, s, e)?;
        let (_, r) = self.list(0, x, PRICE_INGRESS)?;
        rows.push(GasRow::new("Market.createListing", None, r.gas_used, paper("0.0050", "0.0061")));
        // A listing that expires, closed by anyone (the asset returns to its seller).
        let now = self.l.block_timestamp()?;
        let soon = (now / u64::from(GRAN) + 1) * u64::from(GRAN);
        let (x, _) = self.issue(0, false, IF_EGRESS, soon, soon + u64::from(GRAN))?;
        let (expiring, _) = self.list(0, x, PRICE_EGRESS)?;
        self.l.advance_time(soon + u64::from(GRAN) - now)?;
        let r = dep.close_expired(&mut self.l, &buyer, expiring)?;
        rows.push(GasRow::new("Market.closeExpired", None, r.gas_used, None));
        // An asset sent to the market outside createListing, and taken back by its sender.
        let (x, _) = self.issue(0, true, IF_INGRESS, s, e)?;
        let r = dep.transfer_from(&mut self.l, &as0.account, as0.account.address(), dep.market, x)?;
        rows.push(GasRow::new("BandwidthAssets.transferFrom (to a contract)", None, r.gas_used, None));
        let r = dep.recover(&mut self.l, &as0.account, x)?;
        rows.push(GasRow::new("Market.recover", None, r.gas_used, None));

        // The last number: new listings for remainders (the listing keeps the original asset,
        // which remains as the front part or the bandwidth remainder).
        let mid = (s + 1200, s + 2400);
        let cases = [
            ("Market.buy (whole listing)", (s, e), BW, paper("-0.0023", "-0.0028"), 0),
            ("Market.buy (split bandwidth)", (s, e), PIECE_BW, paper("0.0039", "0.0048"), 0),
            ("Market.buy (split time)", mid, BW, paper("0.010", "0.012"), 1),
            ("Market.buy (split time and bandwidth)", mid, PIECE_BW, paper("0.016", "0.020"), 2),
        ];
        for (name, (start, expiry), bw, paper, relisted) in cases {
            let (x, _) = self.issue(0, true, IF_INGRESS, s, e)?;
            let (listing, _) = self.list(0, x, PRICE_INGRESS)?;
            let (price, _) = dep.quote(&self.l, listing, start, expiry, bw)?;
            let (_, r) = dep.buy(&mut self.l, &buyer, listing, start, expiry, bw, price, price)?;
            let listed = dep.listed(&r).len();
            ensure!(listed == relisted, "{name}: {listed} remainders re-listed, expected {relisted}");
            rows.push(GasRow::new(name, None, r.gas_used, paper));
        }

        // The worst case in an ERC-20 marketplace (the market pulls the price from the buyer).
        let tok = deploy_test_token(&mut self.l, &owner, "Bandwidth Dollar", "BWD")?;
        let (mp_tok, _) = create_marketplace(&mut self.l, &dep, &owner, tok)?;
        dep.register_seller(&mut self.l, &as0.account, mp_tok)?;
        let (x, _) = self.issue(0, true, IF_INGRESS, s, e)?;
        let call = Market::createListingCall { marketplaceId: mp_tok, assetId: x, pricePerUnit: PRICE_INGRESS };
        let r = contracts::transact(&mut self.l, &as0.account, dep.market, &call, U256::ZERO)?;
        let listing = contracts::first_event::<Market::Listed>(&r, dep.market)?.listingId;
        let (price, _) = dep.quote(&self.l, listing, mid.0, mid.1, PIECE_BW)?;
        token::mint(&mut self.l, &buyer, tok, buyer.address(), price)?;
        token::approve(&mut self.l, &buyer, tok, dep.market, price)?;
        let (_, r) = dep.buy(&mut self.l, &buyer, listing, mid.0, mid.1, PIECE_BW, price, U256::ZERO)?;
        rows.push(GasRow::new("Market.buy (split time and bandwidth, ERC-20)", None, r.gas_used, None));

        // Sellers are paid by pull: each withdraws what the purchases above credited to it.
        let r = contracts::transact(
            &mut self.l,
            &as0.account,
            dep.market,
            &Market::withdrawCall { token: tok },
            U256::ZERO,
        )?;
        rows.push(GasRow::new("Market.withdraw (ERC-20)", None, r.gas_used, None));
        let call = Market::withdrawCall { token: Address::ZERO };
        let r = contracts::transact(&mut self.l, &as0.account, dep.market, &call, U256::ZERO)?;
        rows.push(GasRow::new("Market.withdraw (native)", None, r.gas_used, None));

        // Two back-to-back listings (two issuing periods) joined into one.
        let (a, _) = self.issue(0, true, IF_INGRESS, s, e)?;
        let (b, _) = self.issue(0, true, IF_INGRESS, e, e + 3600)?;
        let (la, _) = self.list(0, a, PRICE_INGRESS)?;
        let (lb, _) = self.list(0, b, PRICE_INGRESS)?;
        let r = dep.merge_listings(&mut self.l, &buyer, la, lb)?;
        rows.push(GasRow::new("Market.mergeListings (adjacent in time)", None, r.gas_used, None));
        Ok(())
    }

    /// A copy of this market on an in-memory copy of its chain.
    pub(super) fn forked(&self) -> Self {
        Self {
            l: self.l.fork(),
            dep: self.dep,
            owner: self.owner.clone(),
            buyer: self.buyer.clone(),
            sellers: self.sellers.clone(),
            mp: self.mp,
        }
    }

    /// Seller `k`'s ISD-AS.
    pub(super) fn seller_ia(&self, k: usize) -> u64 {
        self.sellers[k].ia
    }

    /// A listed asset's interval: whole hours, an hour or more ahead of the chain.
    pub(super) fn window(&self) -> Result<(u64, u64)> {
        let s = (self.l.block_timestamp()? / 3600 + 2) * 3600;
        Ok((s, s + 3600))
    }

    /// Seller `k` issues a `BW` asset over `[start, expiry)`.
    pub(super) fn issue(
        &mut self,
        k: usize,
        ingress: bool,
        interface_id: u16,
        start: u64,
        expiry: u64,
    ) -> Result<(U256, Receipt)> {
        let seller = &self.sellers[k];
        let call = AssetSpec {
            isd_as: seller.ia,
            interface_id,
            is_ingress: ingress,
            bandwidth: BW,
            start_time: start,
            expiry_time: expiry,
            time_granularity: GRAN,
            min_bandwidth: MIN_BW,
        }
        .issue_call();
        let r = contracts::transact(&mut self.l, &seller.account, self.dep.assets, &call, U256::ZERO)?;
        let id = contracts::first_event::<BandwidthAssets::Issued>(&r, self.dep.assets)?.id;
        Ok((id, r))
    }

    /// Seller `k` lists `asset` in the native marketplace.
    pub(super) fn list(&mut self, k: usize, asset: U256, price: u128) -> Result<(U256, Receipt)> {
        let call = Market::createListingCall { marketplaceId: self.mp, assetId: asset, pricePerUnit: price };
        let r = contracts::transact(&mut self.l, &self.sellers[k].account, self.dep.market, &call, U256::ZERO)?;
        let id = contracts::first_event::<Market::Listed>(&r, self.dep.market)?.listingId;
        Ok((id, r))
    }

    /// Fresh ingress and egress listings at each of the first `hops` sellers, and the path
    /// purchase of the worst case over them with its price.
    fn list_path(&mut self, hops: u32) -> Result<(Vec<PathPurchase>, U256)> {
        let (s, e) = self.window()?;
        let mut path = vec![];
        let mut value = U256::ZERO;
        for k in 0..hops as usize {
            let (i, _) = self.issue(k, true, IF_INGRESS, s, e)?;
            let (o, _) = self.issue(k, false, IF_EGRESS, s, e)?;
            let (li, _) = self.list(k, i, PRICE_INGRESS)?;
            let (lo, _) = self.list(k, o, PRICE_EGRESS)?;
            let hop = PathPurchase {
                ingressListingIds: vec![li],
                egressListingIds: vec![lo],
                startTime: s + 1200,
                expiryTime: s + 2400,
                bandwidth: PIECE_BW,
            };
            for listing in [li, lo] {
                value += self.dep.quote(&self.l, listing, hop.startTime, hop.expiryTime, hop.bandwidth)?.0;
            }
            path.push(hop);
        }
        Ok((path, value))
    }

    /// Buy and redeem a fresh path of `hops` hops (worst case); its gas and receipt.
    pub(super) fn buy_path(&mut self, hops: u32, key: B256) -> Result<(u64, Receipt)> {
        let (path, value) = self.list_path(hops)?;
        let (requests, r) = self.dep.buy_and_redeem_path(
            &mut self.l,
            &self.buyer,
            path,
            key,
            DEFAULT_DELIVERY_WINDOW_S,
            native(value),
            value,
        )?;
        check_path(&self.dep, hops, &requests, &r)?;
        Ok((r.gas_used, r))
    }

    /// Buy and redeem one hop whose sides each span two back-to-back listings (the window
    /// crosses the boundary of two issuing periods): four pieces, two fuses, and the two
    /// bandwidth remainders of each side merged back into one listing.
    pub(super) fn buy_hop_across_periods(&mut self, key: B256) -> Result<u64> {
        let (s, e) = self.window()?;
        let mut ids = [vec![], vec![]];
        for (side, (ingress, interface, price)) in
            [(true, IF_INGRESS, PRICE_INGRESS), (false, IF_EGRESS, PRICE_EGRESS)].into_iter().enumerate()
        {
            for (start, expiry) in [(s, e), (e, e + 3600)] {
                let (asset, _) = self.issue(0, ingress, interface, start, expiry)?;
                ids[side].push(self.list(0, asset, price)?.0);
            }
        }
        let [ingress, egress] = ids;
        let hop = PathPurchase {
            ingressListingIds: ingress,
            egressListingIds: egress,
            startTime: e - 300,
            expiryTime: e + 300,
            bandwidth: PIECE_BW,
        };
        let value = U256::from((PRICE_INGRESS + PRICE_EGRESS) * u128::from(PIECE_BW) * 600);
        let (requests, r) = self.dep.buy_and_redeem_path(
            &mut self.l,
            &self.buyer,
            vec![hop],
            key,
            DEFAULT_DELIVERY_WINDOW_S,
            native(value),
            value,
        )?;
        ensure!(requests.len() == 1, "one request for one hop");
        let merged = contracts::events::<Market::ListingsMerged>(&r, self.dep.market).len();
        ensure!(merged == 2, "{merged} bandwidth remainders merged, expected 2 (one per side)");
        Ok(r.gas_used)
    }

    /// The latency of buy-and-redeem to delivery over `LATENCY_HOPS` hops, `reps` times.
    pub(super) fn latency(&mut self, call: &str, reps: usize) -> Result<GasRow> {
        let dep = self.dep;
        let sellers: Vec<Seller> = self.sellers[..LATENCY_HOPS as usize].to_vec();
        let mut services: Vec<AsSide> = sellers.iter().map(|s| service(s.ia)).collect();
        let mut times = vec![];
        let mut gases = vec![];
        for rep in 0..reps.max(1) {
            let (path, value) = self.list_path(LATENCY_HOPS)?;
            let buyer_key = BuyerKey::derive(format!("aviary lab gas: latency {call} {rep}").as_bytes());
            let key = B256::from(buyer_key.public());

            let t = Instant::now();
            let (requests, receipt) = dep.buy_and_redeem_path(
                &mut self.l,
                &self.buyer,
                path,
                key,
                DEFAULT_DELIVERY_WINDOW_S,
                native(value),
                value,
            )?;
            let now = self.l.block_timestamp()?;
            let mut gas = 0;
            let mut delivered = vec![];
            for ev in dep.redeem_requests(&receipt) {
                let k = sellers.iter().position(|s| s.ia == ev.isdAs).context("request for an unknown AS")?;
                let sealed = fulfil(&mut services[k], &ev, now)?;
                let r = dep.deliver_reservation(&mut self.l, &sellers[k].account, ev.requestId, sealed.into())?;
                gas += r.gas_used;
                delivered.push((ev.requestId, ev.isdAs));
            }
            for &(id, ia) in &delivered {
                let blob = dep.reservation_of(&self.l, id)?;
                seal::open(&blob, &SealContext::new(CHAIN_ID, ia, id.to_be_bytes::<32>()), &buyer_key)?;
            }
            times.push(t.elapsed().as_secs_f64() * 1e3);

            check_path(&dep, LATENCY_HOPS, &requests, &receipt)?;
            ensure!(delivered.iter().map(|d| d.0).eq(requests.iter().copied()), "not every request was delivered");
            gases.push(gas);
        }
        times.sort_by(f64::total_cmp);
        gases.sort_unstable();
        let mut row = GasRow::new(call, Some(LATENCY_HOPS), gases[gases.len() / 2], None);
        row.paper = Some(PAPER_LATENCY.into());
        row.latency_ms = Some(percentile(&times, 0.5));
        row.latency_p5_ms = Some(percentile(&times, 0.05));
        row.latency_p95_ms = Some(percentile(&times, 0.95));
        row.repetitions = Some(times.len() as u32);
        Ok(row)
    }
}

/// The purchase filed one request per hop and re-listed two remainders per piece.
fn check_path(dep: &Deployment, hops: u32, requests: &[U256], r: &Receipt) -> Result<()> {
    let listed = dep.listed(r).len();
    if requests.len() != hops as usize || listed != 4 * hops as usize {
        bail!("{hops}-hop purchase: {} requests, {listed} remainders re-listed (not the worst case)", requests.len());
    }
    Ok(())
}

/// Deploy `bytecode` with one address argument; the address and the gas (fee / gas price).
fn deploy(l: &mut EmbeddedLedger, from: &Account, bytecode: &Bytes, arg: Address) -> Result<(Address, u64)> {
    let mut code = bytecode.to_vec();
    code.extend_from_slice(arg.into_word().as_slice()); // the ABI encoding of one address
    let before = l.balance(from.address())?;
    let address = l.deploy(from, code.into())?;
    Ok((address, gas_from_fee(before - l.balance(from.address())?)?))
}

/// The gas a transaction used from the fee its sender paid (base fee = gas price, no tip).
/// A price limit of `value` in the native currency.
fn native(value: U256) -> Vec<PriceLimit> {
    vec![PriceLimit { token: Address::ZERO, maxTotal: value }]
}

pub(super) fn gas_from_fee(fee: U256) -> Result<u64> {
    let price = U256::from(GAS_PRICE);
    ensure!(fee % price == U256::ZERO, "fee {fee} is not a multiple of the gas price");
    Ok((fee / price).try_into()?)
}

/// How long the AS certificates of the gas world last (a year).
const CERTIFICATE_VALIDITY_S: u64 = 365 * 24 * 3600;

/// The seed of ISD 1's root key.
const ROOT_SEED: &[u8] = b"aviary lab gas: ISD 1 root";

/// Register `account` as `ia` with an AS key certified by ISD 1's root.
fn register(l: &mut EmbeddedLedger, dep: &Deployment, account: &Account, ia: u64) -> Result<Receipt> {
    let root = &p256_key_from_seed(ROOT_SEED);
    let as_key = p256_key_from_seed(format!("aviary lab gas: AS {ia:#x}").as_bytes());
    let not_after = l.block_timestamp()? + CERTIFICATE_VALIDITY_S;
    let cert = certify(root, ia, as_key.verifying_key(), not_after);
    let reg: Registration = dep.registration(l, ia, cert, &as_key, account.address())?;
    Ok(dep.register(l, account, &reg)?)
}

/// Create a marketplace; its id and the receipt.
fn create_marketplace(
    l: &mut EmbeddedLedger,
    dep: &Deployment,
    from: &Account,
    token: Address,
) -> Result<(u64, Receipt)> {
    let call = Market::createMarketplaceCall { paymentToken: token };
    let r = contracts::transact(l, from, dep.market, &call, U256::ZERO)?;
    let id = contracts::first_event::<Market::MarketplaceCreated>(&r, dep.market)?.marketplaceId;
    Ok((id, r))
}

/// The reservation service of an AS and the AS's ResID allocator.
struct AsSide {
    service: ReservationService,
    resids: ResIdAllocator,
}

/// The AS side of AS `ia` (fresh state, the whole ResID range).
fn service(ia: u64) -> AsSide {
    let secret = format!("aviary lab gas: master secret {ia:#x}");
    AsSide {
        service: ReservationService::new(
            ia,
            CHAIN_ID,
            secret.as_bytes(),
            BwCodec::Paper,
            ServiceState::new(MAX_RES_ID),
        ),
        resids: ResIdAllocator::new(MAX_RES_ID),
    }
}

/// The AS side of a redeem request as the ledger reported it: the sealed reservation.
fn fulfil(side: &mut AsSide, ev: &BandwidthAssets::RedeemRequested, now: u64) -> Result<Vec<u8>> {
    let req = RedeemRequest {
        request_id: ev.requestId.to_be_bytes::<32>(),
        ingress: ev.ingressInterface,
        egress: ev.egressInterface,
        bandwidth_kbps: ev.bandwidth,
        start: ev.startTime,
        expiry: ev.expiryTime,
        buyer_key: ev.ephemeralPubKey.0,
    };
    // The HPKE ephemeral key's randomness: derived from the request here so that the sealed
    // blobs (and the calldata gas) repeat from run to run; the AS service draws it from the OS.
    let mut ikm = req.request_id;
    ikm[0] ^= 0xa5;
    Ok(side.service.fulfil(&req, now, &ikm, &mut side.resids)?.sealed)
}

/// The `q` quantile of sorted samples (linear interpolation).
pub(super) fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// A data directory for the persisted ledger, removed on drop.
pub(super) struct TempDir(pub(super) PathBuf);

impl TempDir {
    pub(super) fn new() -> Result<Self> {
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let dir = std::env::temp_dir().join(format!("aviary-lab-gas-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(Self(dir))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
