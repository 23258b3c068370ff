// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

/// @title MarketIndex
/// @notice The market's index of open listings per side of an AS's interface: (issuing ISD-AS,
/// interface, direction) of the listed asset. A buyer planning a path reads the open listings
/// of the interfaces it needs, not every listing ever created.
/// @dev Each side's open listings are an array kept by swap-and-pop; each indexed listing
/// stores its side's key and its position + 1, so that adding and removing one cost O(1)
/// storage writes. The sides and ISD-ASes that ever had a listing are append-only lists, so a
/// client can enumerate the whole market (`offers` without a filter) in O(sides + open
/// listings). Expired listings stay indexed until someone closes them (`closeExpired`) or their
/// seller delists them: pruning is lazy, and readers skip expired ones.
abstract contract MarketIndex {
    /// @notice One side of an AS's interface.
    struct InterfaceSide {
        uint16 interfaceId;
        bool isIngress;
    }

    mapping(uint256 key => uint256[] listingIds) private _open;
    /// @dev key << 64 | (position in _open[key]) + 1; 0: not indexed.
    mapping(uint256 listingId => uint256 entry) private _openEntry;
    mapping(uint256 key => bool) private _sideKnown;
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
        return _open[_sideKey(isdAs, interfaceId, isIngress)].length;
    }

    /// @dev The ids of open listings `offset` to `offset + limit` (fewer at the end) of a side.
    function _openPage(uint64 isdAs, uint16 interfaceId, bool isIngress, uint256 offset, uint256 limit)
        internal
        view
        returns (uint256[] memory ids)
    {
        uint256[] storage all = _open[_sideKey(isdAs, interfaceId, isIngress)];
        uint256 end = offset + limit < all.length ? offset + limit : all.length;
        ids = new uint256[](end > offset ? end - offset : 0);
        for (uint256 i = 0; i < ids.length; ++i) {
            ids[i] = all[offset + i];
        }
    }

    /// @dev Index a new listing under its asset's side (`_sideKey`).
    function _index(uint256 listingId, uint256 key) internal {
        if (!_sideKnown[key]) _addSide(key);
        uint256[] storage ids = _open[key];
        ids.push(listingId);
        _openEntry[listingId] = (key << 64) | ids.length;
    }

    /// @dev Remove a closed listing from its side (the last one takes its place).
    function _unindex(uint256 listingId) internal {
        uint256 entry = _openEntry[listingId];
        if (entry == 0) return;
        uint256[] storage ids = _open[entry >> 64];
        uint256 position = uint64(entry) - 1;
        uint256 last = ids[ids.length - 1];
        if (last != listingId) {
            ids[position] = last;
            _openEntry[last] = (entry >> 64 << 64) | (position + 1);
        }
        ids.pop();
        delete _openEntry[listingId];
    }

    /// @dev The first listing of a side: record the side (and its ISD-AS, if new).
    function _addSide(uint256 key) private {
        _sideKnown[key] = true;
        uint64 isdAs = uint64(key >> 17);
        if (_sidesOf[isdAs].length == 0) _issuers.push(isdAs);
        _sidesOf[isdAs].push(InterfaceSide(uint16(key >> 1), key & 1 == 1));
    }

    /// @dev A side's key: ISD-AS (64 bits) | interface (16) | ingress (1).
    function _sideKey(uint64 isdAs, uint16 interfaceId, bool isIngress) internal pure returns (uint256) {
        return (uint256(isdAs) << 17) | (uint256(interfaceId) << 1) | (isIngress ? 1 : 0);
    }
}
