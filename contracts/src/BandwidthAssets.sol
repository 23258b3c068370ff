// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

import {AsRegistry} from "./AsRegistry.sol";

/// @title BandwidthAssets
/// @notice Hummingbird bandwidth assets (the Hummingbird paper, §4.2): owned tokens, each a voucher for
/// `bandwidth` kbit/s through one interface of one AS, as ingress or as egress, during
/// [startTime, expiryTime). Assets split and fuse in time and bandwidth; a matching ingress and
/// egress pair of one AS is redeemed for a reservation, which that AS delivers sealed to the
/// requester's ephemeral X25519 key.
/// @dev Time grid: every asset boundary is a multiple of the asset's `timeGranularity` in Unix
/// seconds (absolute grid). Issue requires start and expiry on it; splitTime requires the split
/// point on it. Bandwidth: every asset has `bandwidth >= minBandwidth` and `bandwidth > 0`.
/// Conservation: split and fuse keep the sum of bandwidth x duration over an AS's assets; transfer
/// and redeem do not change any asset's attributes; only delivery (burn) removes volume.
/// An escrowed asset (one held in a redeem request) is owned by this contract and cannot be
/// transferred, split, fused or redeemed again.
/// Nothing is stranded: a request carries a delivery deadline; a delivery after it reverts, and
/// after it the requester takes the escrowed assets back (reclaim). A delivery must have the
/// sealed format's length and a non-zero encapsulated key. An asset sent to a contract by
/// someone other than that contract remembers its sender (senderOf), so the market can give
/// back an asset sent to it outside createListing.
contract BandwidthAssets {
    /// @notice One bandwidth asset. Two storage slots.
    struct Asset {
        address owner; // zero: no such asset; this contract: escrowed in a redeem request
        uint64 isdAs;
        uint16 interfaceId;
        bool isIngress;
        uint64 bandwidth; // kbit/s
        uint64 startTime; // Unix s, inclusive
        uint64 expiryTime; // Unix s, exclusive
        uint32 timeGranularity; // s
        uint32 minBandwidth; // kbit/s
    }

    /// @notice Lifecycle of a redeem request.
    enum RequestStatus {
        None,
        Pending,
        Delivered,
        Reclaimed
    }

    /// @notice A redeem request: two escrowed assets waiting for the issuing AS until `deadline`.
    /// Three storage slots (asset ids below 2^96: they count up from 1).
    struct RedeemRequest {
        address requester; // who receives the reservation (the assets' owner, or the buyer on a path purchase)
        uint64 isdAs;
        RequestStatus status;
        uint96 ingressId;
        uint96 egressId;
        uint64 deadline; // Unix s: the AS delivers at or before it; after it, the requester may reclaim
        bytes32 ephemeralPubKey; // X25519
    }

    /// @notice The longest delivery window a request may ask for (s).
    uint32 public constant MAX_DELIVERY_WINDOW = 1 days;
    /// @notice The length of a sealed reservation: HPKE enc (32) || ciphertext of the 32-byte
    /// reservation || AEAD tag (16).
    uint256 public constant SEALED_RESERVATION_LENGTH = 80;

    /// @notice The registry that says which account speaks for which ISD-AS.
    AsRegistry public immutable registry;

    /// @notice The id the next new asset gets (ids start at 1).
    uint256 public nextAssetId = 1;
    /// @notice The id the next redeem request gets (ids start at 1).
    uint256 public nextRequestId = 1;

    mapping(uint256 id => Asset) private _assets;
    mapping(uint256 id => address) private _approved;
    mapping(address owner => mapping(address operator => bool)) private _operators;
    mapping(uint256 requestId => RedeemRequest) private _requests;
    mapping(uint256 requestId => bytes) private _reservations;
    mapping(uint256 id => address) private _senders;

    // ------------------------------------------------------------------ errors

    /// @notice The caller is not the registered account of the ISD-AS it issues for.
    error NotIssuingAs(uint64 isdAs, address caller);
    /// @notice No asset has this id (never existed, fused away or burnt).
    error UnknownAsset(uint256 id);
    /// @notice The caller is neither the asset's owner nor approved by it.
    error NotAssetOwner(uint256 id, address caller);
    /// @notice The asset is escrowed in a redeem request.
    error AssetUnavailable(uint256 id);
    /// @notice Assets cannot go to the zero address or to this contract.
    error InvalidRecipient(address to);
    /// @notice A boundary is not a multiple of the time granularity.
    error OffGranularity(uint64 time, uint32 timeGranularity);
    /// @notice The time granularity is zero.
    error ZeroGranularity();
    /// @notice start >= expiry.
    error EmptyInterval(uint64 startTime, uint64 expiryTime);
    /// @notice A split point is not strictly inside the asset's interval.
    error SplitOutsideInterval(uint64 time, uint64 startTime, uint64 expiryTime);
    /// @notice A (resulting) bandwidth is zero or below the asset's minimum bandwidth.
    error BelowMinBandwidth(uint64 bandwidth, uint32 minBandwidth);
    /// @notice The two assets differ in an attribute that must match (or overflow when fused).
    error IncompatibleAssets(uint256 a, uint256 b);
    /// @notice fuseTime: the first asset does not end where the second starts.
    error NotAdjacent(uint256 a, uint256 b);
    /// @notice The same asset was given twice.
    error SameAsset(uint256 id);
    /// @notice The two assets have different owners.
    error DifferentOwners(uint256 a, uint256 b);
    /// @notice redeem: the first asset is not an ingress asset.
    error NotIngress(uint256 id);
    /// @notice redeem: the second asset is not an egress asset.
    error NotEgress(uint256 id);
    /// @notice redeem: the asset has already expired.
    error AssetExpired(uint256 id, uint64 expiryTime);
    /// @notice No redeem request has this id.
    error UnknownRequest(uint256 requestId);
    /// @notice The request was already delivered.
    error RequestNotPending(uint256 requestId);
    /// @notice Only the account registered for the request's ISD-AS delivers.
    error NotRequestAs(uint256 requestId, address caller);
    /// @notice redeem: the delivery window is zero or longer than MAX_DELIVERY_WINDOW.
    error BadDeliveryWindow(uint32 deliveryWindow);
    /// @notice deliverReservation after the request's deadline (the requester may reclaim).
    error DeliveryTooLate(uint256 requestId, uint64 deadline);
    /// @notice deliverReservation: the blob is not a sealed reservation (wrong length, or a zero
    /// encapsulated key).
    error MalformedReservation(uint256 requestId, uint256 length);
    /// @notice reclaim: only the request's requester reclaims.
    error NotRequester(uint256 requestId, address caller);
    /// @notice reclaim before the request's deadline has passed, while its AS is still registered.
    error DeadlineNotPassed(uint256 requestId, uint64 deadline);
    /// @notice redeem: no account is registered for the assets' ISD-AS (deregistered, revoked
    /// or its certificate expired): nobody could deliver the reservation.
    error IssuerNotRegistered(uint64 isdAs);

    // ------------------------------------------------------------------ events

    /// @notice A new asset was issued by its AS (followed by Transfer from the zero address).
    event Issued(
        uint256 indexed id,
        uint64 indexed isdAs,
        address indexed owner,
        uint16 interfaceId,
        bool isIngress,
        uint64 bandwidth,
        uint64 startTime,
        uint64 expiryTime,
        uint32 timeGranularity,
        uint32 minBandwidth
    );
    /// @notice Ownership moved; from = 0: created (issue, split), to = 0: destroyed (fuse, delivery).
    event Transfer(address indexed from, address indexed to, uint256 indexed id);
    /// @notice The owner approved one account for one asset (zero: cleared).
    event Approval(address indexed owner, address indexed approved, uint256 indexed id);
    /// @notice The owner (dis)approved an operator for all its assets.
    event ApprovalForAll(address indexed owner, address indexed operator, bool approved);
    /// @notice `id` now ends at `time`; `newId` covers [time, old expiry).
    event SplitTime(uint256 indexed id, uint256 indexed newId, uint64 time);
    /// @notice `newId` got `newBandwidth` of `id`'s bandwidth; `id` keeps the rest.
    event SplitBandwidth(uint256 indexed id, uint256 indexed newId, uint64 newBandwidth);
    /// @notice `burnedId` (adjacent, later) was fused into `id`, which now expires at `expiryTime`.
    event FusedTime(uint256 indexed id, uint256 indexed burnedId, uint64 expiryTime);
    /// @notice `burnedId` (same interval) was fused into `id`, which now has `bandwidth`.
    event FusedBandwidth(uint256 indexed id, uint256 indexed burnedId, uint64 bandwidth);
    /// @notice A redeem request for the AS `isdAs` (which answers with deliverReservation).
    event RedeemRequested(
        uint256 indexed requestId,
        uint64 indexed isdAs,
        address indexed requester,
        uint256 ingressId,
        uint256 egressId,
        uint16 ingressInterface,
        uint16 egressInterface,
        uint64 bandwidth,
        uint64 startTime,
        uint64 expiryTime,
        bytes32 ephemeralPubKey,
        uint64 deadline
    );
    /// @notice The AS delivered the sealed reservation; both assets are burnt.
    event ReservationDelivered(
        uint256 indexed requestId, uint64 indexed isdAs, address indexed requester, bytes sealedReservation
    );
    /// @notice The deadline passed without a delivery: both assets went back to the requester.
    event Reclaimed(uint256 indexed requestId, address indexed requester, uint256 ingressId, uint256 egressId);

    /// @param registry_ The AS registry consulted by issue and deliverReservation.
    constructor(AsRegistry registry_) {
        registry = registry_;
    }

    // ------------------------------------------------------------------ issue and ownership

    /// @notice Issue a new asset for the caller's own ISD-AS; the caller owns it.
    /// @param isdAs The caller's registered ISD-AS.
    /// @param interfaceId The SCION interface id (0 allowed: traffic from or to the AS itself).
    /// @param isIngress True for an ingress asset, false for an egress asset.
    /// @param bandwidth Bandwidth in kbit/s (>= minBandwidth, > 0).
    /// @param startTime Start, Unix s, a multiple of timeGranularity.
    /// @param expiryTime Expiry, Unix s, a multiple of timeGranularity, > startTime.
    /// @param timeGranularity The time grid in s (> 0).
    /// @param minBandwidth The smallest bandwidth a split may leave, kbit/s.
    /// @return id The new asset's id.
    function issue(
        uint64 isdAs,
        uint16 interfaceId,
        bool isIngress,
        uint64 bandwidth,
        uint64 startTime,
        uint64 expiryTime,
        uint32 timeGranularity,
        uint32 minBandwidth
    ) external returns (uint256 id) {
        if (isdAs == 0 || registry.asOf(msg.sender) != isdAs) revert NotIssuingAs(isdAs, msg.sender);
        if (timeGranularity == 0) revert ZeroGranularity();
        if (startTime % timeGranularity != 0) revert OffGranularity(startTime, timeGranularity);
        if (expiryTime % timeGranularity != 0) revert OffGranularity(expiryTime, timeGranularity);
        if (startTime >= expiryTime) revert EmptyInterval(startTime, expiryTime);
        if (bandwidth == 0 || bandwidth < minBandwidth) revert BelowMinBandwidth(bandwidth, minBandwidth);

        id = nextAssetId++;
        _assets[id] = Asset({
            owner: msg.sender,
            isdAs: isdAs,
            interfaceId: interfaceId,
            isIngress: isIngress,
            bandwidth: bandwidth,
            startTime: startTime,
            expiryTime: expiryTime,
            timeGranularity: timeGranularity,
            minBandwidth: minBandwidth
        });
        emit Issued(
            id, isdAs, msg.sender, interfaceId, isIngress, bandwidth, startTime, expiryTime, timeGranularity, minBandwidth
        );
        emit Transfer(address(0), msg.sender, id);
    }

    /// @notice Move asset `id` from `from` to `to`. Caller: the owner, its approved account for
    /// `id`, or an operator of the owner.
    function transferFrom(address from, address to, uint256 id) external {
        address owner = _authorized(id);
        if (owner != from) revert NotAssetOwner(id, from);
        if (to == address(0) || to == address(this)) revert InvalidRecipient(to);
        _move(owner, to, id);
        // Sent to a contract that did not take it itself: remember who sent it, so that
        // contract (the market) can give it back.
        if (msg.sender != to && to.code.length != 0) _senders[id] = owner;
    }

    /// @notice Approve `approved` (zero: nobody) to transfer, split, fuse or redeem asset `id`.
    /// Only the owner or one of its operators may do so. Cleared on every transfer.
    function approve(address approved, uint256 id) external {
        address owner = _assets[id].owner;
        if (owner == address(0)) revert UnknownAsset(id);
        if (owner == address(this)) revert AssetUnavailable(id);
        if (msg.sender != owner && !_operators[owner][msg.sender]) revert NotAssetOwner(id, msg.sender);
        _approved[id] = approved;
        emit Approval(owner, approved, id);
    }

    /// @notice Let `operator` act on all of the caller's assets (or stop it).
    function setApprovalForAll(address operator, bool approved) external {
        _operators[msg.sender][operator] = approved;
        emit ApprovalForAll(msg.sender, operator, approved);
    }

    // ------------------------------------------------------------------ split and fuse

    /// @notice Split asset `id` in time at `time`: `id` keeps [start, time), a new asset (same
    /// owner) gets [time, expiry). `time` must be on the granularity grid, strictly inside.
    /// @return newId The id of the later part.
    function splitTime(uint256 id, uint64 time) external returns (uint256 newId) {
        address owner = _authorized(id);
        Asset storage a = _assets[id];
        uint64 start = a.startTime;
        uint64 expiry = a.expiryTime;
        if (time <= start || time >= expiry) revert SplitOutsideInterval(time, start, expiry);
        uint32 gran = a.timeGranularity;
        if (time % gran != 0) revert OffGranularity(time, gran);

        Asset memory later = a;
        later.startTime = time;
        a.expiryTime = time;
        newId = nextAssetId++;
        _assets[newId] = later;
        emit SplitTime(id, newId, time);
        emit Transfer(address(0), owner, newId);
    }

    /// @notice Split asset `id` in bandwidth: a new asset (same owner, same interval) gets
    /// `newBandwidth`, `id` keeps the rest. Both parts must be >= minBandwidth and > 0.
    /// @return newId The id of the part with `newBandwidth`.
    function splitBandwidth(uint256 id, uint64 newBandwidth) external returns (uint256 newId) {
        address owner = _authorized(id);
        Asset storage a = _assets[id];
        uint64 total = a.bandwidth;
        uint32 minBw = a.minBandwidth;
        if (newBandwidth == 0 || newBandwidth < minBw) revert BelowMinBandwidth(newBandwidth, minBw);
        if (newBandwidth >= total || total - newBandwidth < minBw) {
            revert BelowMinBandwidth(newBandwidth >= total ? 0 : total - newBandwidth, minBw);
        }

        Asset memory part = a;
        part.bandwidth = newBandwidth;
        a.bandwidth = total - newBandwidth;
        newId = nextAssetId++;
        _assets[newId] = part;
        emit SplitBandwidth(id, newId, newBandwidth);
        emit Transfer(address(0), owner, newId);
    }

    /// @notice Fuse `b` into `a` in time: same owner, same attributes except time, and
    /// a.expiry == b.start. `a` then covers both intervals; `b` is destroyed.
    function fuseTime(uint256 a, uint256 b) external {
        (Asset storage x, Asset storage y, address owner) = _pair(a, b);
        if (x.bandwidth != y.bandwidth) revert IncompatibleAssets(a, b);
        if (x.expiryTime != y.startTime) revert NotAdjacent(a, b);
        uint64 expiry = y.expiryTime;
        x.expiryTime = expiry;
        _burn(owner, b);
        emit FusedTime(a, b, expiry);
    }

    /// @notice Fuse `b` into `a` in bandwidth: same owner, same attributes and same interval.
    /// `a` then has the sum of both bandwidths; `b` is destroyed.
    function fuseBandwidth(uint256 a, uint256 b) external {
        (Asset storage x, Asset storage y, address owner) = _pair(a, b);
        if (x.startTime != y.startTime || x.expiryTime != y.expiryTime) revert IncompatibleAssets(a, b);
        uint256 sum = uint256(x.bandwidth) + y.bandwidth;
        if (sum > type(uint64).max) revert IncompatibleAssets(a, b);
        x.bandwidth = uint64(sum);
        _burn(owner, b);
        emit FusedBandwidth(a, b, uint64(sum));
    }

    // ------------------------------------------------------------------ redemption

    /// @notice Redeem an ingress and an egress asset of one AS for a reservation addressed to the
    /// assets' owner. See redeemFor.
    /// @return requestId The new redeem request.
    function redeem(uint256 ingressId, uint256 egressId, bytes32 ephemeralPubKey, uint32 deliveryWindow)
        external
        returns (uint256 requestId)
    {
        return _redeem(ingressId, egressId, ephemeralPubKey, deliveryWindow, _assets[ingressId].owner);
    }

    /// @notice Redeem an ingress and an egress asset of one AS for a reservation addressed to
    /// `requester` (the market uses this to file requests for a buyer). Caller: owner of both
    /// assets or approved for both. Both must be of the same AS, one ingress and one egress, with
    /// equal bandwidth and equal interval, and not expired. They move into escrow (owned by this
    /// contract) until the AS delivers.
    /// @param ingressId The ingress asset (its interface is the reservation's In).
    /// @param egressId The egress asset (its interface is the reservation's Eg).
    /// @param ephemeralPubKey The requester's ephemeral X25519 public key for HPKE.
    /// @param deliveryWindow How long the AS has to deliver, s (1 to MAX_DELIVERY_WINDOW): the
    /// request's deadline is now + deliveryWindow.
    /// @param requester The account recorded as the request's owner (not zero); it alone may
    /// reclaim the assets after the deadline.
    /// @return requestId The new redeem request.
    function redeemFor(
        uint256 ingressId,
        uint256 egressId,
        bytes32 ephemeralPubKey,
        uint32 deliveryWindow,
        address requester
    ) external returns (uint256 requestId) {
        if (requester == address(0) || requester == address(this)) revert InvalidRecipient(requester);
        return _redeem(ingressId, egressId, ephemeralPubKey, deliveryWindow, requester);
    }

    /// @notice Deliver the sealed reservation (HPKE of ResInfo and A_K to the request's key) for
    /// a pending request, at or before its deadline. Caller: the account registered for the
    /// request's ISD-AS. The blob must be SEALED_RESERVATION_LENGTH bytes with a non-zero
    /// encapsulated key (what is cheap to check here; the buyer's client checks that it opens).
    /// Burns both assets; the blob is stored (reservationOf) and emitted.
    function deliverReservation(uint256 requestId, bytes calldata sealedReservation) external {
        RedeemRequest storage r = _requests[requestId];
        RequestStatus status = r.status;
        if (status == RequestStatus.None) revert UnknownRequest(requestId);
        if (status != RequestStatus.Pending) revert RequestNotPending(requestId);
        uint64 isdAs = r.isdAs;
        if (registry.accountOf(isdAs) != msg.sender) revert NotRequestAs(requestId, msg.sender);
        uint64 deadline = r.deadline;
        if (block.timestamp > deadline) revert DeliveryTooLate(requestId, deadline);
        if (sealedReservation.length != SEALED_RESERVATION_LENGTH || bytes32(sealedReservation[:32]) == 0) {
            revert MalformedReservation(requestId, sealedReservation.length);
        }

        r.status = RequestStatus.Delivered;
        _burn(address(this), r.ingressId);
        _burn(address(this), r.egressId);
        _reservations[requestId] = sealedReservation;
        emit ReservationDelivered(requestId, isdAs, r.requester, sealedReservation);
    }

    /// @notice After the deadline of an undelivered request, or as soon as no account is
    /// registered for its ISD-AS (deregistered, revoked or expired: nobody can deliver it), its
    /// requester takes both escrowed assets back (to redeem again, resell or let expire). The
    /// payment of a market purchase stays with the sellers: what was bought is returned, not
    /// refunded. Once per request.
    function reclaim(uint256 requestId) external {
        RedeemRequest storage r = _requests[requestId];
        RequestStatus status = r.status;
        if (status == RequestStatus.None) revert UnknownRequest(requestId);
        if (status != RequestStatus.Pending) revert RequestNotPending(requestId);
        address requester = r.requester;
        if (msg.sender != requester) revert NotRequester(requestId, msg.sender);
        uint64 deadline = r.deadline;
        if (block.timestamp <= deadline && registry.accountOf(r.isdAs) != address(0)) {
            revert DeadlineNotPassed(requestId, deadline);
        }

        r.status = RequestStatus.Reclaimed;
        uint256 ingressId = r.ingressId;
        uint256 egressId = r.egressId;
        _move(address(this), requester, ingressId);
        _move(address(this), requester, egressId);
        emit Reclaimed(requestId, requester, ingressId, egressId);
    }

    // ------------------------------------------------------------------ views

    /// @notice The asset `id` (owner zero if there is none).
    function assetOf(uint256 id) external view returns (Asset memory) {
        return _assets[id];
    }

    /// @notice The owner of asset `id`; this contract while escrowed.
    function ownerOf(uint256 id) external view returns (address owner) {
        owner = _assets[id].owner;
        if (owner == address(0)) revert UnknownAsset(id);
    }

    /// @notice The account approved for asset `id` (zero if none).
    function getApproved(uint256 id) external view returns (address) {
        return _approved[id];
    }

    /// @notice Whether `operator` may act on all of `owner`'s assets.
    function isApprovedForAll(address owner, address operator) external view returns (bool) {
        return _operators[owner][operator];
    }

    /// @notice The redeem request `requestId` (status None if there is none).
    function requestOf(uint256 requestId) external view returns (RedeemRequest memory) {
        return _requests[requestId];
    }

    /// @notice Who sent asset `id` to the contract that owns it now, when that contract did not
    /// take it itself (zero otherwise): the account the market gives a stray asset back to.
    function senderOf(uint256 id) external view returns (address) {
        return _senders[id];
    }

    /// @notice The sealed reservation delivered for `requestId` (empty until delivered).
    function reservationOf(uint256 requestId) external view returns (bytes memory) {
        return _reservations[requestId];
    }

    // ------------------------------------------------------------------ internal

    /// @dev Checks that the caller may act on `id` (owner, approved, or operator) and returns the
    /// owner. Escrowed assets are unavailable to everyone.
    function _authorized(uint256 id) private view returns (address owner) {
        owner = _assets[id].owner;
        if (owner == address(0)) revert UnknownAsset(id);
        if (owner == address(this)) revert AssetUnavailable(id);
        if (msg.sender != owner && _approved[id] != msg.sender && !_operators[owner][msg.sender]) {
            revert NotAssetOwner(id, msg.sender);
        }
    }

    /// @dev Two distinct assets the caller may act on, with one owner and equal static attributes.
    function _pair(uint256 a, uint256 b) private view returns (Asset storage x, Asset storage y, address owner) {
        if (a == b) revert SameAsset(a);
        owner = _authorized(a);
        if (_authorized(b) != owner) revert DifferentOwners(a, b);
        x = _assets[a];
        y = _assets[b];
        if (
            x.isdAs != y.isdAs || x.interfaceId != y.interfaceId || x.isIngress != y.isIngress
                || x.timeGranularity != y.timeGranularity || x.minBandwidth != y.minBandwidth
        ) revert IncompatibleAssets(a, b);
    }

    function _move(address from, address to, uint256 id) private {
        _assets[id].owner = to;
        if (_approved[id] != address(0)) delete _approved[id];
        if (_senders[id] != address(0)) delete _senders[id];
        emit Transfer(from, to, id);
    }

    function _burn(address owner, uint256 id) private {
        delete _assets[id];
        if (_approved[id] != address(0)) delete _approved[id];
        emit Transfer(owner, address(0), id);
    }

    function _redeem(
        uint256 ingressId,
        uint256 egressId,
        bytes32 ephemeralPubKey,
        uint32 deliveryWindow,
        address requester
    ) private returns (uint256 requestId) {
        if (deliveryWindow == 0 || deliveryWindow > MAX_DELIVERY_WINDOW) revert BadDeliveryWindow(deliveryWindow);
        if (ingressId == egressId) revert SameAsset(ingressId);
        address owner = _authorized(ingressId);
        if (_authorized(egressId) != owner) revert DifferentOwners(ingressId, egressId);
        Asset storage i = _assets[ingressId];
        Asset storage e = _assets[egressId];
        if (!i.isIngress) revert NotIngress(ingressId);
        if (e.isIngress) revert NotEgress(egressId);
        if (
            i.isdAs != e.isdAs || i.bandwidth != e.bandwidth || i.startTime != e.startTime
                || i.expiryTime != e.expiryTime
        ) revert IncompatibleAssets(ingressId, egressId);
        uint64 expiry = i.expiryTime;
        if (expiry <= block.timestamp) revert AssetExpired(ingressId, expiry);
        if (registry.accountOf(i.isdAs) == address(0)) revert IssuerNotRegistered(i.isdAs);

        _move(owner, address(this), ingressId);
        _move(owner, address(this), egressId);
        requestId = nextRequestId++;
        uint64 deadline = uint64(block.timestamp) + deliveryWindow;
        _requests[requestId] = RedeemRequest({
            requester: requester,
            isdAs: i.isdAs,
            status: RequestStatus.Pending,
            ingressId: uint96(ingressId),
            egressId: uint96(egressId),
            deadline: deadline,
            ephemeralPubKey: ephemeralPubKey
        });
        emit RedeemRequested(
            requestId,
            i.isdAs,
            requester,
            ingressId,
            egressId,
            i.interfaceId,
            e.interfaceId,
            i.bandwidth,
            i.startTime,
            expiry,
            ephemeralPubKey,
            deadline
        );
    }
}
