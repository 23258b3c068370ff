// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

import {AsRegistry} from "./AsRegistry.sol";
import {BandwidthAssets} from "./BandwidthAssets.sol";
import {MarketIndex} from "./MarketIndex.sol";
import {MarketPayments} from "./MarketPayments.sol";

/// @title Market
/// @notice Posted-price marketplaces for bandwidth assets (the Hummingbird paper, §4.2, §5, §6):
/// ASes list the assets they issued, and any account lists assets it bought (resale), at a
/// price per bandwidth-time unit; buyers take the whole listed
/// asset or any sub-rectangle of it (time x bandwidth); a path's pieces are bought and redeemed
/// atomically, each side of a hop from one or several listings whose pieces are fused.
/// @dev Price unit: one unit is 1 kbit/s reserved for 1 s (= 1 kbit of reserved capacity);
/// price = pricePerUnit x bandwidth (kbit/s) x (expiry - start) (s), in the smallest unit of the
/// marketplace's payment token (wei for the native currency).
///
/// Remainder convention of a purchase from listing L holding asset A = [S, E) x B, buying
/// [s, e) x b: the market splits A at s (if s > S), then at e (if e < E), then splits b off the
/// middle piece (if b < B); the buyer gets the piece [s, e) x b. Every remainder stays listed at
/// the same price by the same seller: L keeps asset A if A is a remainder, otherwise (the buyer
/// got A's id) L takes the first remainder; every other remainder gets a new listing id
/// (event Listed with parentListingId = L). If nothing remains, L is closed (ListingClosed).
/// Worst case (s > S, e < E, b < B): three splits, three remainders, two new listings.
///
/// A piece is sold only while its issuing AS is registered in the registry (its key seals the
/// reservation); the seller may be that AS or a reseller, who gets no other power over the asset.
///
/// Payment is by pull (MarketPayments): a purchase credits each seller's proceeds in the
/// market, and sellers withdraw them. No seller code runs during a purchase, so no seller can
/// make one revert.
///
/// Open listings are indexed per side of an AS's interface (MarketIndex): `openListings` pages
/// through one side's, with their assets and payment tokens.
contract Market is MarketPayments, MarketIndex {
    /// @notice A marketplace: a payment token (zero: native currency) and its sellers.
    struct Marketplace {
        address paymentToken;
        address creator; // zero: no such marketplace
    }

    /// @notice A listing: one asset escrowed in the market, offered at a posted price.
    struct Listing {
        address seller; // zero: no such listing
        uint64 marketplaceId;
        uint32 openSlot; // position + 1 among its side's open listings (MarketIndex)
        uint128 pricePerUnit; // per kbit/s x s
        uint128 assetId;
    }

    /// @notice One hop of a path purchase: the ingress and the egress asset of one AS, both
    /// [startTime, expiryTime) x bandwidth. Each side names its listings in time order: the
    /// first covers startTime, each next one continues where the previous one ends, the last
    /// covers up to expiryTime; their pieces are fused into one asset (same issuer, interface,
    /// direction, time grid and minimum bandwidth).
    struct PathPurchase {
        uint256[] ingressListingIds;
        uint256[] egressListingIds;
        uint64 startTime;
        uint64 expiryTime;
        uint64 bandwidth;
    }

    /// @notice An open listing as `openListings` returns it.
    struct OpenListing {
        uint256 listingId;
        Listing listing;
        BandwidthAssets.Asset asset;
        address paymentToken;
    }

    /// @notice The most a path purchase may cost in one payment token (zero: native currency).
    struct PriceLimit {
        address token;
        uint256 maxTotal;
    }

    /// @dev The bandwidth remainder of the previous piece of a side (listing 0: none), which the
    /// next piece's bandwidth remainder joins when both are alike.
    struct Leftover {
        uint256 listingId;
        uint256 assetId;
        Listing listing;
        BandwidthAssets.Asset asset; // the listed asset the remainder came from
    }

    /// @notice The asset contract whose assets this market trades.
    BandwidthAssets public immutable assets;
    /// @notice The AS registry (the asset contract's).
    AsRegistry public immutable registry;

    /// @notice The id the next marketplace gets (ids start at 1).
    uint64 public nextMarketplaceId = 1;
    /// @notice The id the next listing gets (ids start at 1).
    uint256 public nextListingId = 1;

    mapping(uint64 marketplaceId => Marketplace) private _marketplaces;
    mapping(uint64 marketplaceId => mapping(address seller => bool)) private _sellers;
    mapping(uint256 listingId => Listing) private _listings;

    // ------------------------------------------------------------------ errors

    /// @notice The payment token is neither zero (native) nor a contract.
    error InvalidPaymentToken(address token);
    /// @notice No marketplace has this id.
    error UnknownMarketplace(uint64 marketplaceId);
    /// @notice The caller is already a seller in this marketplace.
    error AlreadySeller(uint64 marketplaceId, address account);
    /// @notice The caller is not a seller in this marketplace.
    error NotSeller(uint64 marketplaceId, address account);
    /// @notice The caller does not own the asset it wants to list (or there is no such asset;
    /// an asset in a redeem request is owned by the asset contract).
    error NotAssetOwner(uint256 assetId, address caller);
    /// @notice createListing: the asset has expired (the asset contract's error of the same name).
    error AssetExpired(uint256 id, uint64 expiryTime);
    /// @notice No account is registered for the ISD-AS that issued the listed asset (deregistered,
    /// revoked or its certificate expired): nobody could deliver its reservation, so it is not sold.
    error IssuerNotRegistered(uint256 listingId, uint64 isdAs);
    /// @notice The market is not approved to take the asset (approve or setApprovalForAll first).
    error MarketNotApproved(uint256 assetId);
    /// @notice No listing has this id (never existed, sold out or delisted).
    error UnknownListing(uint256 listingId);
    /// @notice Only the listing's seller may do this.
    error NotListingSeller(uint256 listingId, address caller);
    /// @notice The requested rectangle is empty or not inside the listed asset.
    error OutsideListing(uint256 listingId, uint64 startTime, uint64 expiryTime, uint64 bandwidth);
    /// @notice A side of a hop: its listings end at `coveredUntil`, before `expiryTime`.
    error HopNotCovered(uint256 hop, uint64 coveredUntil, uint64 expiryTime);
    /// @notice The price in `token` is above the buyer's limit for it.
    error PriceAboveLimit(address token, uint256 price, uint256 limit);
    /// @notice Two listings that differ in seller, marketplace or price, or whose assets are
    /// neither adjacent in time with equal bandwidth nor equal in time.
    error NotMergeable(uint256 listingId, uint256 otherListingId);
    /// @notice A path purchase with no hops.
    error EmptyPath();
    /// @notice The listed asset has expired: it cannot be bought (its seller may delist it).
    error ListingExpired(uint256 listingId, uint64 expiryTime);
    /// @notice The requested piece ends at or before now: it would buy only the past.
    error WindowInPast(uint256 listingId, uint64 expiryTime);
    /// @notice closeExpired: the listed asset has not expired yet.
    error ListingNotExpired(uint256 listingId, uint64 expiryTime);
    /// @notice recover: the market does not hold this asset as a stray (it is listed, or was
    /// not sent to the market directly), or the caller did not send it.
    error NotRecoverable(uint256 assetId, address caller);

    // ------------------------------------------------------------------ events

    /// @notice A marketplace was created.
    event MarketplaceCreated(uint64 indexed marketplaceId, address indexed paymentToken, address indexed creator);
    /// @notice An account became a seller in a marketplace (an AS, or a reseller of assets it bought).
    event SellerRegistered(uint64 indexed marketplaceId, address indexed seller);
    /// @notice An asset is listed (parentListingId != 0: a remainder of a purchase from that listing).
    event Listed(
        uint256 indexed listingId,
        uint64 indexed marketplaceId,
        address indexed seller,
        uint256 assetId,
        uint128 pricePerUnit,
        uint256 parentListingId
    );
    /// @notice After a purchase, the listing holds another asset (a remainder).
    event ListingAssetChanged(uint256 indexed listingId, uint256 assetId);
    /// @notice A listing was sold out.
    event ListingClosed(uint256 indexed listingId);
    /// @notice `mergedListingId`'s asset was fused into `listingId`'s, and `mergedListingId` closed.
    event ListingsMerged(uint256 indexed listingId, uint256 indexed mergedListingId, uint256 assetId);
    /// @notice A listing's price changed.
    event PriceChanged(uint256 indexed listingId, uint128 pricePerUnit);
    /// @notice The seller took its asset back.
    event Delisted(uint256 indexed listingId, uint256 assetId);
    /// @notice A piece of a listing was bought (on a path purchase it goes straight into a redeem
    /// request for the buyer); `price` is credited to the seller's proceeds.
    event Purchased(
        uint256 indexed listingId,
        address indexed buyer,
        uint256 indexed assetId,
        uint64 startTime,
        uint64 expiryTime,
        uint64 bandwidth,
        uint256 price
    );
    /// @notice A path was bought and redeemed; one redeem request per hop, in hop order.
    event PathPurchased(address indexed buyer, uint256[] requestIds);
    /// @notice An asset sent to the market outside createListing went back to its sender.
    event Recovered(uint256 indexed assetId, address indexed sender);

    /// @param assets_ The asset contract.
    constructor(BandwidthAssets assets_) {
        assets = assets_;
        registry = assets_.registry();
    }

    // ------------------------------------------------------------------ marketplaces and sellers

    /// @notice Create a marketplace paid in `paymentToken` (address(0): native currency).
    /// @return marketplaceId The new marketplace's id.
    function createMarketplace(address paymentToken) external returns (uint64 marketplaceId) {
        if (paymentToken != address(0) && paymentToken.code.length == 0) revert InvalidPaymentToken(paymentToken);
        marketplaceId = nextMarketplaceId++;
        _marketplaces[marketplaceId] = Marketplace(paymentToken, msg.sender);
        emit MarketplaceCreated(marketplaceId, paymentToken, msg.sender);
    }

    /// @notice Become a seller in a marketplace. Any account may: an AS sells what it issued, a
    /// buyer resells what it bought (the Hummingbird paper, §5: a buyer's opportunity cost is to
    /// resell). What is sold is checked per asset: owned by the seller at listing, issued by an
    /// AS still registered at purchase.
    function registerSeller(uint64 marketplaceId) external {
        _marketplace(marketplaceId);
        if (_sellers[marketplaceId][msg.sender]) revert AlreadySeller(marketplaceId, msg.sender);
        _sellers[marketplaceId][msg.sender] = true;
        emit SellerRegistered(marketplaceId, msg.sender);
    }

    // ------------------------------------------------------------------ listings

    /// @notice List an asset the caller owns (not expired); the market takes it into escrow. The
    /// caller must be a seller of the marketplace and have approved the market for the asset.
    /// @param pricePerUnit Price per kbit/s x s in the marketplace's payment token.
    /// @return listingId The new listing's id.
    function createListing(uint64 marketplaceId, uint256 assetId, uint128 pricePerUnit)
        external
        nonReentrant
        returns (uint256 listingId)
    {
        _marketplace(marketplaceId);
        if (!_sellers[marketplaceId][msg.sender]) revert NotSeller(marketplaceId, msg.sender);
        BandwidthAssets.Asset memory a = assets.assetOf(assetId);
        if (a.owner != msg.sender) revert NotAssetOwner(assetId, msg.sender);
        if (a.expiryTime <= block.timestamp) revert AssetExpired(assetId, a.expiryTime);
        if (assets.getApproved(assetId) != address(this) && !assets.isApprovedForAll(msg.sender, address(this))) {
            revert MarketNotApproved(assetId);
        }
        assets.transferFrom(msg.sender, address(this), assetId);
        listingId = _list(Listing(msg.sender, marketplaceId, 0, pricePerUnit, 0), assetId, 0, a);
    }

    /// @notice Change the price of a listing. Caller: its seller.
    function setPrice(uint256 listingId, uint128 pricePerUnit) external {
        Listing storage l = _listing(listingId);
        if (l.seller != msg.sender) revert NotListingSeller(listingId, msg.sender);
        l.pricePerUnit = pricePerUnit;
        emit PriceChanged(listingId, pricePerUnit);
    }

    /// @notice Close a listing and return its asset to the seller. Caller: its seller.
    function delist(uint256 listingId) external nonReentrant {
        Listing storage l = _listing(listingId);
        if (l.seller != msg.sender) revert NotListingSeller(listingId, msg.sender);
        uint256 assetId = l.assetId;
        _close(listingId, l.openSlot, assets.assetOf(assetId));
        assets.transferFrom(address(this), msg.sender, assetId);
        emit Delisted(listingId, assetId);
    }

    /// @notice Close a listing whose asset has expired (nobody can buy it any more) and return
    /// the asset to its seller, as `delist` would. Anyone may call it: it prunes the index of
    /// open listings, and the seller loses nothing.
    function closeExpired(uint256 listingId) external nonReentrant {
        Listing memory l = _listing(listingId);
        BandwidthAssets.Asset memory a = assets.assetOf(l.assetId);
        if (a.expiryTime > block.timestamp) revert ListingNotExpired(listingId, a.expiryTime);
        _close(listingId, l.openSlot, a);
        assets.transferFrom(address(this), l.seller, l.assetId);
        emit Delisted(listingId, l.assetId);
    }

    /// @notice Give an asset that was sent to the market directly (a transfer outside
    /// createListing, which the market never lists) back to the account that sent it. The
    /// asset contract remembers that sender until the asset moves again; listed assets and
    /// purchase pieces never have one, since the market took them itself or split them off.
    function recover(uint256 assetId) external nonReentrant {
        if (assets.ownerOf(assetId) != address(this) || assets.senderOf(assetId) != msg.sender) {
            revert NotRecoverable(assetId, msg.sender);
        }
        assets.transferFrom(address(this), msg.sender, assetId);
        emit Recovered(assetId, msg.sender);
    }

    /// @notice Join two listings of one seller in one marketplace at one price into
    /// `listingId`: assets adjacent in time with equal bandwidth are fused in time, assets with
    /// equal intervals in bandwidth (the asset contract checks that issuer, interface,
    /// direction, grid and minimum bandwidth agree). Anyone may call it: the seller offers the
    /// same volume at the same price, in fewer, larger pieces.
    function mergeListings(uint256 listingId, uint256 otherListingId) external nonReentrant {
        Listing memory l = _listing(listingId);
        Listing memory o = _listing(otherListingId);
        if (
            listingId == otherListingId || l.seller != o.seller || l.marketplaceId != o.marketplaceId
                || l.pricePerUnit != o.pricePerUnit
        ) revert NotMergeable(listingId, otherListingId);
        BandwidthAssets.Asset memory a = assets.assetOf(l.assetId);
        BandwidthAssets.Asset memory b = assets.assetOf(o.assetId);
        uint256 kept = l.assetId;
        if (a.startTime == b.startTime && a.expiryTime == b.expiryTime) {
            assets.fuseBandwidth(l.assetId, o.assetId);
        } else if (a.bandwidth == b.bandwidth && a.expiryTime == b.startTime) {
            assets.fuseTime(l.assetId, o.assetId);
        } else if (a.bandwidth == b.bandwidth && b.expiryTime == a.startTime) {
            // fuseTime keeps the earlier asset's id: the listing moves to it.
            assets.fuseTime(o.assetId, l.assetId);
            kept = o.assetId;
            _listings[listingId].assetId = uint128(kept);
        } else {
            revert NotMergeable(listingId, otherListingId);
        }
        _close(otherListingId, o.openSlot, b);
        emit ListingsMerged(listingId, otherListingId, kept);
    }

    // ------------------------------------------------------------------ buying

    /// @notice Buy [startTime, expiryTime) x bandwidth of a listing (the whole listing or any
    /// sub-rectangle on the asset's time grid, leaving at least minBandwidth in any remainder)
    /// for at most `maxPrice` (a price raised after the buyer looked reverts PriceAboveLimit).
    /// Native currency: msg.value must cover the price; the excess is refunded. ERC-20: the
    /// market pulls the price with transferFrom (approve it first); any msg.value is refunded.
    /// @return assetId The bought asset, now owned by the caller.
    function buy(uint256 listingId, uint64 startTime, uint64 expiryTime, uint64 bandwidth, uint256 maxPrice)
        external
        payable
        nonReentrant
        returns (uint256 assetId)
    {
        Bill memory bill = _newBill(1);
        Listing memory l = _listing(listingId);
        BandwidthAssets.Asset memory a = assets.assetOf(l.assetId);
        (assetId,,) = _take(listingId, l, a, startTime, expiryTime, bandwidth, bill);
        if (bill.amounts[0] > maxPrice) revert PriceAboveLimit(bill.tokens[0], bill.amounts[0], maxPrice);
        assets.transferFrom(address(this), msg.sender, assetId);
        _collect(bill);
    }

    /// @notice Atomically buy the ingress and egress asset of every hop (each side from its
    /// listings, pieces fused) and file one redeem request per hop for the caller, all with
    /// `ephemeralPubKey` and a deadline `deliveryWindow` seconds from now (after which the
    /// caller may reclaim a request's undelivered assets from the asset contract). The total per payment token must not exceed its entry in `maxPrices`
    /// (a token without an entry: 0). Native payment is checked once against the native total;
    /// the excess is refunded; ERC-20 totals are pulled from the caller. Any failure reverts all.
    /// @return requestIds The redeem requests, in hop order.
    function buyAndRedeemPath(
        PathPurchase[] calldata hops,
        bytes32 ephemeralPubKey,
        uint32 deliveryWindow,
        PriceLimit[] calldata maxPrices
    )
        external
        payable
        nonReentrant
        returns (uint256[] memory requestIds)
    {
        uint256 n = hops.length;
        if (n == 0) revert EmptyPath();
        uint256 pieces;
        for (uint256 i = 0; i < n; ++i) {
            pieces += hops[i].ingressListingIds.length + hops[i].egressListingIds.length;
        }
        Bill memory bill = _newBill(pieces);
        requestIds = new uint256[](n);
        for (uint256 i = 0; i < n; ++i) {
            PathPurchase calldata h = hops[i];
            uint256 ingress = _takeSide(i, h.ingressListingIds, h.startTime, h.expiryTime, h.bandwidth, bill);
            uint256 egress = _takeSide(i, h.egressListingIds, h.startTime, h.expiryTime, h.bandwidth, bill);
            requestIds[i] = assets.redeemFor(ingress, egress, ephemeralPubKey, deliveryWindow, msg.sender);
        }
        for (uint256 k = 0; k < bill.count; ++k) {
            uint256 limit;
            for (uint256 j = 0; j < maxPrices.length; ++j) {
                if (maxPrices[j].token == bill.tokens[k]) limit = maxPrices[j].maxTotal;
            }
            if (bill.amounts[k] > limit) revert PriceAboveLimit(bill.tokens[k], bill.amounts[k], limit);
        }
        emit PathPurchased(msg.sender, requestIds);
        _collect(bill);
    }

    // ------------------------------------------------------------------ views

    /// @notice The marketplace `marketplaceId` (creator zero if there is none).
    function marketplaceOf(uint64 marketplaceId) external view returns (Marketplace memory) {
        return _marketplaces[marketplaceId];
    }

    /// @notice Whether `account` is a seller in `marketplaceId`.
    function isSeller(uint64 marketplaceId, address account) external view returns (bool) {
        return _sellers[marketplaceId][account];
    }

    /// @notice The listing `listingId` (seller zero if there is none).
    function listingOf(uint256 listingId) external view returns (Listing memory) {
        return _listings[listingId];
    }

    /// @notice Open listings `offset` to `offset + limit` (fewer at the end) of one side of an
    /// AS's interface, in no particular order, with their assets and payment tokens; expired
    /// ones included until they are closed. The order changes as listings close: a reader
    /// pages within one block (one `eth_call` per page at one block number) or re-reads.
    function openListings(uint64 isdAs, uint16 interfaceId, bool isIngress, uint256 offset, uint256 limit)
        external
        view
        returns (OpenListing[] memory page)
    {
        uint256[] memory ids = _openPage(isdAs, interfaceId, isIngress, offset, limit);
        page = new OpenListing[](ids.length);
        for (uint256 i = 0; i < ids.length; ++i) {
            Listing memory l = _listings[ids[i]];
            page[i] = OpenListing(ids[i], l, assets.assetOf(l.assetId), _marketplaces[l.marketplaceId].paymentToken);
        }
    }

    /// @notice The price of [startTime, expiryTime) x bandwidth at the listing's posted price
    /// (does not check that the rectangle can be bought), and the payment token.
    function quote(uint256 listingId, uint64 startTime, uint64 expiryTime, uint64 bandwidth)
        external
        view
        returns (uint256 price, address paymentToken)
    {
        Listing storage l = _listing(listingId);
        if (startTime >= expiryTime) revert OutsideListing(listingId, startTime, expiryTime, bandwidth);
        price = uint256(l.pricePerUnit) * bandwidth * (expiryTime - startTime);
        paymentToken = _marketplaces[l.marketplaceId].paymentToken;
    }

    // ------------------------------------------------------------------ internal

    function _marketplace(uint64 marketplaceId) private view returns (Marketplace storage m) {
        m = _marketplaces[marketplaceId];
        if (m.creator == address(0)) revert UnknownMarketplace(marketplaceId);
    }

    function _listing(uint256 listingId) private view returns (Listing storage l) {
        l = _listings[listingId];
        if (l.seller == address(0)) revert UnknownListing(listingId);
    }

    /// @dev Close listing `listingId` (at `slot` of the side of asset `a`): delete it and take
    /// it out of the index (the listing that takes its position gets its slot).
    function _close(uint256 listingId, uint32 slot, BandwidthAssets.Asset memory a) private {
        delete _listings[listingId];
        uint256 moved = _unindex(_sideKey(a.isdAs, a.interfaceId, a.isIngress), slot);
        if (moved != 0) _listings[moved].openSlot = slot;
    }

    /// @dev A new listing of `assetId` by `terms`' seller in its marketplace at its price
    /// (`terms.openSlot` and `terms.assetId` are ignored); `a`: the asset's attributes, its
    /// side in the index.
    function _list(Listing memory terms, uint256 assetId, uint256 parent, BandwidthAssets.Asset memory a)
        private
        returns (uint256 listingId)
    {
        listingId = nextListingId++;
        uint32 slot = _index(_sideKey(a.isdAs, a.interfaceId, a.isIngress), listingId);
        _listings[listingId] = Listing(terms.seller, terms.marketplaceId, slot, terms.pricePerUnit, uint128(assetId));
        emit Listed(listingId, terms.marketplaceId, terms.seller, assetId, terms.pricePerUnit, parent);
    }

    /// @dev One side of hop `hop`: the pieces [cursor, min(expiry, listing's expiry)) x
    /// bandwidth of `listingIds` in turn, fused in time into the first (the market keeps it).
    /// Bandwidth remainders of consecutive pieces that are alike (seller, marketplace, price,
    /// bandwidth, asset attributes) are fused back into one listing, so that buying across
    /// listings leaves no more fragments than buying within one.
    function _takeSide(
        uint256 hop,
        uint256[] calldata listingIds,
        uint64 start,
        uint64 expiry,
        uint64 bandwidth,
        Bill memory bill
    ) private returns (uint256 asset) {
        uint64 cursor = start;
        Leftover memory prev;
        for (uint256 k = 0; k < listingIds.length; ++k) {
            uint256 id = listingIds[k];
            Listing memory l = _listing(id);
            BandwidthAssets.Asset memory a = assets.assetOf(l.assetId);
            uint64 end = a.expiryTime < expiry ? a.expiryTime : expiry;
            (uint256 piece, uint256 restListing, uint256 restAsset) = _take(id, l, a, cursor, end, bandwidth, bill);
            if (k == 0) asset = piece;
            else assets.fuseTime(asset, piece);
            if (restListing != 0) {
                if (prev.listingId != 0 && _alike(prev, l, a)) {
                    assets.fuseTime(prev.assetId, restAsset);
                    _close(restListing, _listings[restListing].openSlot, a);
                    emit ListingsMerged(prev.listingId, restListing, prev.assetId);
                } else {
                    prev = Leftover(restListing, restAsset, l, a);
                }
            } else {
                prev.listingId = 0;
            }
            cursor = end;
        }
        if (cursor != expiry) revert HopNotCovered(hop, cursor, expiry);
    }

    /// @dev Whether the bandwidth remainder of a piece of listing `l` (asset `a`) can join the
    /// previous one: same seller, marketplace and price, and assets that fuseTime accepts (the
    /// remainders are adjacent; equal listed bandwidth gives equal remainders).
    function _alike(Leftover memory prev, Listing memory l, BandwidthAssets.Asset memory a)
        private
        pure
        returns (bool)
    {
        Listing memory p = prev.listing;
        BandwidthAssets.Asset memory b = prev.asset;
        return p.seller == l.seller && p.marketplaceId == l.marketplaceId && p.pricePerUnit == l.pricePerUnit
            && b.bandwidth == a.bandwidth && b.isdAs == a.isdAs && b.interfaceId == a.interfaceId
            && b.isIngress == a.isIngress && b.timeGranularity == a.timeGranularity
            && b.minBandwidth == a.minBandwidth;
    }

    /// @dev The remainders `rest` (ids, then zeros) of a purchase from listing `listingId`: it
    /// keeps its asset if that remains, else takes the first remainder; the others are listed
    /// anew. Returns the listing that holds `restAsset` (0: none).
    function _relist(
        uint256 listingId,
        Listing memory l,
        BandwidthAssets.Asset memory a,
        uint256[3] memory rest,
        uint256 restAsset
    ) private returns (uint256 restListing) {
        bool assetSold = rest[0] != l.assetId && rest[1] != l.assetId && rest[2] != l.assetId;
        for (uint256 k = 0; k < 3 && rest[k] != 0; ++k) {
            uint256 r = rest[k];
            uint256 holder = listingId;
            if (r == l.assetId) {
                // The listing keeps its asset.
            } else if (assetSold && k == 0) {
                _listings[listingId].assetId = uint128(r);
                emit ListingAssetChanged(listingId, r);
            } else {
                holder = _list(l, r, listingId, a);
            }
            if (r == restAsset) restListing = holder;
        }
    }

    /// @dev Split the requested piece off listing `listingId` (the market keeps owning it),
    /// re-list the remainders, credit the seller and bill the buyer. Returns the piece's asset
    /// id and, if the piece left a bandwidth remainder, that asset and the listing holding it.
    function _take(
        uint256 listingId,
        Listing memory l,
        BandwidthAssets.Asset memory a,
        uint64 start,
        uint64 expiry,
        uint64 bandwidth,
        Bill memory bill
    ) private returns (uint256 piece, uint256 restListing, uint256 restAsset) {
        uint256 assetId = l.assetId;
        if (a.expiryTime <= block.timestamp) revert ListingExpired(listingId, a.expiryTime);
        if (registry.accountOf(a.isdAs) == address(0)) revert IssuerNotRegistered(listingId, a.isdAs);
        if (start >= expiry || start < a.startTime || expiry > a.expiryTime || bandwidth == 0 || bandwidth > a.bandwidth)
        {
            revert OutsideListing(listingId, start, expiry, bandwidth);
        }
        if (expiry <= block.timestamp) revert WindowInPast(listingId, expiry);

        // Split: front at `start`, tail at `expiry`, then `bandwidth` off the middle piece.
        uint256[3] memory rest;
        uint256 n;
        piece = assetId;
        if (start > a.startTime) {
            uint256 later = assets.splitTime(piece, start);
            rest[n++] = piece;
            piece = later;
        }
        if (expiry < a.expiryTime) rest[n++] = assets.splitTime(piece, expiry);
        if (bandwidth < a.bandwidth) {
            uint256 part = assets.splitBandwidth(piece, bandwidth);
            restAsset = piece;
            rest[n++] = piece;
            piece = part;
        }

        // Remainders: the listing keeps its asset if that remains, else takes the first remainder.
        if (n == 0) {
            _close(listingId, l.openSlot, a);
            emit ListingClosed(listingId);
        } else {
            restListing = _relist(listingId, l, a, rest, restAsset);
        }

        uint256 price = uint256(l.pricePerUnit) * bandwidth * (expiry - start);
        emit Purchased(listingId, msg.sender, piece, start, expiry, bandwidth, price);
        _charge(bill, l.seller, _marketplaces[l.marketplaceId].paymentToken, price);
    }
}
