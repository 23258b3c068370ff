// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

import {AsRegistry} from "./AsRegistry.sol";
import {BandwidthAssets} from "./BandwidthAssets.sol";

/// @notice The part of ERC-20 the market uses.
interface IERC20Payment {
    function transferFrom(address from, address to, uint256 amount) external returns (bool);
    function allowance(address owner, address spender) external view returns (uint256);
    function balanceOf(address account) external view returns (uint256);
}

/// @title Market
/// @notice Posted-price marketplaces for bandwidth assets (seed 000 §4.2, §6): registered ASes
/// list assets at a price per bandwidth-time unit; buyers take the whole listed asset or any
/// sub-rectangle of it (time x bandwidth); a path's pieces are bought and redeemed atomically.
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
contract Market {
    /// @notice A marketplace: a payment token (zero: native currency) and its sellers.
    struct Marketplace {
        address paymentToken;
        address creator; // zero: no such marketplace
    }

    /// @notice A listing: one asset escrowed in the market, offered at a posted price.
    struct Listing {
        address seller; // zero: no such listing
        uint64 marketplaceId;
        uint128 pricePerUnit; // per kbit/s x s
        uint128 assetId;
    }

    /// @notice One hop of a path purchase: the ingress and egress pieces of one AS, both
    /// [startTime, expiryTime) x bandwidth, from two listings.
    struct PathPurchase {
        uint256 ingressListingId;
        uint256 egressListingId;
        uint64 startTime;
        uint64 expiryTime;
        uint64 bandwidth;
    }

    /// @dev A payment owed to a seller, made after all state changes.
    struct Payout {
        address token;
        address to;
        uint256 amount;
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
    mapping(uint64 marketplaceId => mapping(address seller => uint64 isdAs)) private _sellers;
    mapping(uint256 listingId => Listing) private _listings;
    bool private transient _locked;

    // ------------------------------------------------------------------ errors

    /// @notice The payment token is neither zero (native) nor a contract.
    error InvalidPaymentToken(address token);
    /// @notice No marketplace has this id.
    error UnknownMarketplace(uint64 marketplaceId);
    /// @notice The caller is not a registered AS.
    error NotRegisteredAs(address account);
    /// @notice The caller is already a seller in this marketplace.
    error AlreadySeller(uint64 marketplaceId, address account);
    /// @notice The caller is not a seller in this marketplace.
    error NotSeller(uint64 marketplaceId, address account);
    /// @notice The caller does not own the asset it wants to list.
    error NotAssetOwner(uint256 assetId, address caller);
    /// @notice The market is not approved to take the asset (approve or setApprovalForAll first).
    error MarketNotApproved(uint256 assetId);
    /// @notice No listing has this id (never existed, sold out or delisted).
    error UnknownListing(uint256 listingId);
    /// @notice Only the listing's seller may do this.
    error NotListingSeller(uint256 listingId, address caller);
    /// @notice The requested rectangle is empty or not inside the listed asset.
    error OutsideListing(uint256 listingId, uint64 startTime, uint64 expiryTime, uint64 bandwidth);
    /// @notice The payment (native: msg.value; ERC-20: min(allowance, balance)) is below the price.
    error PaymentTooLow(uint256 required, uint256 available);
    /// @notice A payment, payout or refund failed.
    error PaymentFailed(address token, address to, uint256 amount);
    /// @notice A path purchase with no hops.
    error EmptyPath();
    /// @notice A state-changing market call re-entered the market.
    error Reentrancy();

    // ------------------------------------------------------------------ events

    /// @notice A marketplace was created.
    event MarketplaceCreated(uint64 indexed marketplaceId, address indexed paymentToken, address indexed creator);
    /// @notice A registered AS became a seller in a marketplace.
    event SellerRegistered(uint64 indexed marketplaceId, address indexed seller, uint64 indexed isdAs);
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
    /// @notice A listing's price changed.
    event PriceChanged(uint256 indexed listingId, uint128 pricePerUnit);
    /// @notice The seller took its asset back.
    event Delisted(uint256 indexed listingId, uint256 assetId);
    /// @notice A piece of a listing was bought (on a path purchase it goes straight into a redeem
    /// request for the buyer).
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

    modifier nonReentrant() {
        if (_locked) revert Reentrancy();
        _locked = true;
        _;
        _locked = false;
    }

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

    /// @notice Become a seller in a marketplace. The caller must be a registered AS.
    function registerSeller(uint64 marketplaceId) external {
        _marketplace(marketplaceId);
        uint64 isdAs = registry.asOf(msg.sender);
        if (isdAs == 0) revert NotRegisteredAs(msg.sender);
        if (_sellers[marketplaceId][msg.sender] != 0) revert AlreadySeller(marketplaceId, msg.sender);
        _sellers[marketplaceId][msg.sender] = isdAs;
        emit SellerRegistered(marketplaceId, msg.sender, isdAs);
    }

    // ------------------------------------------------------------------ listings

    /// @notice List an asset the caller owns; the market takes it into escrow. The caller must be
    /// a seller of the marketplace and have approved the market for the asset.
    /// @param pricePerUnit Price per kbit/s x s in the marketplace's payment token.
    /// @return listingId The new listing's id.
    function createListing(uint64 marketplaceId, uint256 assetId, uint128 pricePerUnit)
        external
        nonReentrant
        returns (uint256 listingId)
    {
        _marketplace(marketplaceId);
        if (_sellers[marketplaceId][msg.sender] == 0) revert NotSeller(marketplaceId, msg.sender);
        if (assets.ownerOf(assetId) != msg.sender) revert NotAssetOwner(assetId, msg.sender);
        if (assets.getApproved(assetId) != address(this) && !assets.isApprovedForAll(msg.sender, address(this))) {
            revert MarketNotApproved(assetId);
        }
        assets.transferFrom(msg.sender, address(this), assetId);
        listingId = _list(msg.sender, marketplaceId, pricePerUnit, assetId, 0);
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
        delete _listings[listingId];
        assets.transferFrom(address(this), msg.sender, assetId);
        emit Delisted(listingId, assetId);
    }

    // ------------------------------------------------------------------ buying

    /// @notice Buy [startTime, expiryTime) x bandwidth of a listing (the whole listing or any
    /// sub-rectangle on the asset's time grid, leaving at least minBandwidth in any remainder).
    /// Native currency: msg.value must cover the price; the excess is refunded. ERC-20: the
    /// market pulls the price with transferFrom (approve it first); any msg.value is refunded.
    /// @return assetId The bought asset, now owned by the caller.
    function buy(uint256 listingId, uint64 startTime, uint64 expiryTime, uint64 bandwidth)
        external
        payable
        nonReentrant
        returns (uint256 assetId)
    {
        Payout[] memory payouts = new Payout[](1);
        uint256 count;
        (assetId, count) = _take(listingId, startTime, expiryTime, bandwidth, payouts, count);
        assets.transferFrom(address(this), msg.sender, assetId);
        _pay(payouts, count);
    }

    /// @notice Atomically buy the ingress and egress piece of every hop and file one redeem
    /// request per hop for the caller, all with `ephemeralPubKey`. Any failure reverts all.
    /// Native payment is checked once against the total of the native-currency pieces; the
    /// excess is refunded. ERC-20 pieces are pulled from the caller piece by piece.
    /// @return requestIds The redeem requests, in hop order.
    function buyAndRedeemPath(PathPurchase[] calldata hops, bytes32 ephemeralPubKey)
        external
        payable
        nonReentrant
        returns (uint256[] memory requestIds)
    {
        uint256 n = hops.length;
        if (n == 0) revert EmptyPath();
        requestIds = new uint256[](n);
        Payout[] memory payouts = new Payout[](2 * n);
        uint256 count;
        for (uint256 i = 0; i < n; ++i) {
            PathPurchase calldata h = hops[i];
            uint256 ingress;
            uint256 egress;
            (ingress, count) = _take(h.ingressListingId, h.startTime, h.expiryTime, h.bandwidth, payouts, count);
            (egress, count) = _take(h.egressListingId, h.startTime, h.expiryTime, h.bandwidth, payouts, count);
            requestIds[i] = assets.redeemFor(ingress, egress, ephemeralPubKey, msg.sender);
        }
        emit PathPurchased(msg.sender, requestIds);
        _pay(payouts, count);
    }

    // ------------------------------------------------------------------ views

    /// @notice The marketplace `marketplaceId` (creator zero if there is none).
    function marketplaceOf(uint64 marketplaceId) external view returns (Marketplace memory) {
        return _marketplaces[marketplaceId];
    }

    /// @notice The ISD-AS `account` registered as seller with in `marketplaceId` (0: not a seller).
    function sellerAs(uint64 marketplaceId, address account) external view returns (uint64) {
        return _sellers[marketplaceId][account];
    }

    /// @notice The listing `listingId` (seller zero if there is none).
    function listingOf(uint256 listingId) external view returns (Listing memory) {
        return _listings[listingId];
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

    function _list(address seller, uint64 marketplaceId, uint128 pricePerUnit, uint256 assetId, uint256 parent)
        private
        returns (uint256 listingId)
    {
        listingId = nextListingId++;
        _listings[listingId] = Listing(seller, marketplaceId, pricePerUnit, uint128(assetId));
        emit Listed(listingId, marketplaceId, seller, assetId, pricePerUnit, parent);
    }

    /// @dev Split the requested piece off listing `listingId` (the market keeps owning it),
    /// re-list the remainders, and append the seller's payout. Returns the piece's asset id.
    function _take(
        uint256 listingId,
        uint64 start,
        uint64 expiry,
        uint64 bandwidth,
        Payout[] memory payouts,
        uint256 count
    ) private returns (uint256 piece, uint256 newCount) {
        Listing memory l = _listing(listingId);
        uint256 assetId = l.assetId;
        BandwidthAssets.Asset memory a = assets.assetOf(assetId);
        if (start >= expiry || start < a.startTime || expiry > a.expiryTime || bandwidth == 0 || bandwidth > a.bandwidth)
        {
            revert OutsideListing(listingId, start, expiry, bandwidth);
        }

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
            rest[n++] = piece;
            piece = part;
        }

        // Remainders: the listing keeps its asset if that remains, else takes the first remainder.
        if (n == 0) {
            delete _listings[listingId];
            emit ListingClosed(listingId);
        } else {
            for (uint256 k = 0; k < n; ++k) {
                uint256 r = rest[k];
                if (r == assetId) continue;
                if (piece == assetId && k == 0) {
                    _listings[listingId].assetId = uint128(r);
                    emit ListingAssetChanged(listingId, r);
                } else {
                    _list(l.seller, l.marketplaceId, l.pricePerUnit, r, listingId);
                }
            }
        }

        uint256 price = uint256(l.pricePerUnit) * bandwidth * (expiry - start);
        emit Purchased(listingId, msg.sender, piece, start, expiry, bandwidth, price);

        // Payout, merged with the previous one if it goes to the same seller in the same token.
        address token = _marketplaces[l.marketplaceId].paymentToken;
        if (count > 0 && payouts[count - 1].to == l.seller && payouts[count - 1].token == token) {
            payouts[count - 1].amount += price;
            newCount = count;
        } else {
            payouts[count] = Payout(token, l.seller, price);
            newCount = count + 1;
        }
    }

    /// @dev Pay the sellers: native pieces from msg.value (checked once against their total,
    /// excess refunded), ERC-20 pieces pulled from the buyer.
    function _pay(Payout[] memory payouts, uint256 count) private {
        uint256 nativeTotal;
        for (uint256 i = 0; i < count; ++i) {
            if (payouts[i].token == address(0)) nativeTotal += payouts[i].amount;
        }
        if (msg.value < nativeTotal) revert PaymentTooLow(nativeTotal, msg.value);
        for (uint256 i = 0; i < count; ++i) {
            Payout memory p = payouts[i];
            if (p.amount == 0) continue;
            if (p.token == address(0)) _sendNative(p.to, p.amount);
            else _pullToken(p.token, p.to, p.amount);
        }
        if (msg.value > nativeTotal) _sendNative(msg.sender, msg.value - nativeTotal);
    }

    function _sendNative(address to, uint256 amount) private {
        (bool ok,) = to.call{value: amount}("");
        if (!ok) revert PaymentFailed(address(0), to, amount);
    }

    function _pullToken(address token, address to, uint256 amount) private {
        IERC20Payment t = IERC20Payment(token);
        uint256 available = t.allowance(msg.sender, address(this));
        uint256 balance = t.balanceOf(msg.sender);
        if (balance < available) available = balance;
        if (available < amount) revert PaymentTooLow(amount, available);
        (bool ok, bytes memory ret) = token.call(abi.encodeCall(IERC20Payment.transferFrom, (msg.sender, to, amount)));
        if (!ok || (ret.length != 0 && (ret.length != 32 || !abi.decode(ret, (bool))))) {
            revert PaymentFailed(token, to, amount);
        }
    }
}
