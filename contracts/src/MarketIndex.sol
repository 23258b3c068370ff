// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

/// @title MarketIndex
/// @notice The market's index of open listings per side of an AS's interface: (issuing ISD-AS,
/// interface, direction) of the listed asset. A buyer planning a path reads the open listings
/// of the interfaces it needs, not every listing ever created.
/// @dev Each side's open listings are a list kept by swap-and-pop: adding or removing one costs
/// O(1) storage writes. Each listing stores its position + 1 (its "slot") in the listing's
/// own first storage slot (Market.Listing.openSlot, free space beside seller and marketplace),
/// so indexing adds no storage slot per listing. Positions past a side's count keep stale ids
/// (never zeroed): a side whose listings open and close rewrites non-zero slots (2 900 gas)
/// instead of filling fresh ones (22 100). The sides and ISD-ASes that ever had a listing are
/// append-only lists, so a client can enumerate the whole market (`offers` without a filter)
/// in O(sides + open listings). Expired listings stay indexed until someone closes them
/// (`closeExpired`) or their seller delists them: pruning is lazy, and readers skip them.
abstract contract MarketIndex {
    /// @notice One side of an AS's interface.
    struct InterfaceSide {
        uint16 interfaceId;
        bool isIngress;
    }

    /// @dev A side's open listings: ids[0 .. countPlusOne - 1). countPlusOne is 0 for a side
    /// that never had a listing and never returns to 0, so a side that empties and fills
    /// again rewrites a non-zero slot.
    struct OpenSet {
        uint256 countPlusOne;
        mapping(uint256 position => uint256 listingId) ids;
    }

    mapping(uint256 key => OpenSet) private _open;
    mapping(uint64 isdAs => InterfaceSide[]) private _sidesOf;
    uint64[] private _issuers;

    /// @notice The ISD-ASes whose assets were ever listed, in order of their first listing.
    function listedIssuers() external view returns (uint64[] memory) {
        return _issuers;
    }

    /// @notice The interface sides of `isdAs` that ever had a listing, in order of their first.
    function listedSidesOf(uint64 isdAs) external view returns (InterfaceSide[] memory) {
        return _sidesOf[isdAs];
    }

    /// @notice How many listings of this interface side are open (expired ones included until
    /// they are closed).
    function openListingCount(uint64 isdAs, uint16 interfaceId, bool isIngress) external view returns (uint256) {
        uint256 c = _open[_sideKey(isdAs, interfaceId, isIngress)].countPlusOne;
        return c == 0 ? 0 : c - 1;
    }

    /// @dev The ids of open listings `offset` to `offset + limit` (fewer at the end) of a side.
    function _openPage(uint64 isdAs, uint16 interfaceId, bool isIngress, uint256 offset, uint256 limit)
        internal
        view
        returns (uint256[] memory ids)
    {
        OpenSet storage set = _open[_sideKey(isdAs, interfaceId, isIngress)];
        uint256 count = set.countPlusOne == 0 ? 0 : set.countPlusOne - 1;
        uint256 end = offset + limit < count ? offset + limit : count;
        ids = new uint256[](end > offset ? end - offset : 0);
        for (uint256 i = 0; i < ids.length; ++i) {
            ids[i] = set.ids[offset + i];
        }
    }

    /// @dev Add a new listing to side `key`; returns its slot (position + 1) for the listing.
    function _index(uint256 key, uint256 listingId) internal returns (uint32 slot) {
        OpenSet storage set = _open[key];
        uint256 c = set.countPlusOne;
        if (c == 0) {
            _addSide(key);
            c = 1;
        }
        set.ids[c - 1] = listingId;
        set.countPlusOne = c + 1;
        // 2^32 - 1 open listings on one side would cost more gas than exists.
        slot = uint32(c);
    }

    /// @dev Remove the listing at `slot` from side `key`; the last one takes its place. Returns
    /// that listing (0: the removed one was the last), whose slot the caller sets to `slot`.
    function _unindex(uint256 key, uint32 slot) internal returns (uint256 moved) {
        OpenSet storage set = _open[key];
        uint256 last = set.countPlusOne - 2;
        if (slot - 1 != last) {
            moved = set.ids[last];
            set.ids[slot - 1] = moved;
        }
        set.countPlusOne = last + 1;
    }

    /// @dev The first listing of a side: record the side (and its ISD-AS, if new).
    function _addSide(uint256 key) private {
        uint64 isdAs = uint64(key >> 17);
        if (_sidesOf[isdAs].length == 0) _issuers.push(isdAs);
        _sidesOf[isdAs].push(InterfaceSide(uint16(key >> 1), key & 1 == 1));
    }

    /// @dev A side's key: ISD-AS (64 bits) | interface (16) | ingress (1).
    function _sideKey(uint64 isdAs, uint16 interfaceId, bool isIngress) internal pure returns (uint256) {
        return (uint256(isdAs) << 17) | (uint256(interfaceId) << 1) | (isIngress ? 1 : 0);
    }
}
