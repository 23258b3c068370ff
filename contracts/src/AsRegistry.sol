// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

/// @title AsRegistry
/// @notice Binds SCION ISD-AS numbers to accounts (seed 000 §4.2, "AS Registration").
/// @dev The registry's owner sets one P-256 root key per ISD. An account registers an ISD-AS by
/// presenting the AS public key, a certificate (the ISD root's signature over the ISD-AS and the
/// AS key) and a proof of possession (the AS key's signature over this registry, the chain id,
/// the registering account and the account's registration nonce). Both signatures are checked
/// with a P256VERIFY-compatible verifier (EIP-7951 / RIP-7212 input layout).
///
/// Signed messages (each is hashed with SHA-256; the verifier gets the digest):
///   certificate:  "aviary-as-cert-v1"     | isdAs (8 bytes) | asKeyX (32) | asKeyY (32)
///   possession:   "aviary-as-register-v1" | registry (20) | chainid (32) | account (20) | nonce (32)
/// (integers big-endian, as `abi.encodePacked` lays them out).
///
/// An ISD-AS is a 64-bit SCION address: 16-bit ISD | 48-bit AS number. ISD 0 and AS 0 (wildcards)
/// cannot be registered, so 0 means "not registered" in every lookup.
contract AsRegistry {
    /// @notice A P-256 public key, affine coordinates.
    struct P256Key {
        bytes32 x;
        bytes32 y;
    }

    /// @notice The account that may set ISD roots and revoke registrations.
    address public owner;
    /// @notice The P256VERIFY precompile (0x100) or a contract with the same calling convention.
    address public immutable p256Verifier;

    mapping(uint16 isd => P256Key) private _isdRoots;
    mapping(address account => uint64 isdAs) private _asOf;
    mapping(uint64 isdAs => address account) private _accountOf;
    mapping(uint64 isdAs => P256Key) private _asKeys;
    mapping(address account => uint256 nonce) private _registrationNonce;

    /// @notice The caller is not the registry's owner.
    error NotOwner(address caller);
    /// @notice The zero address was given where an account is needed.
    error ZeroAddress();
    /// @notice ISD 0 is the wildcard ISD and has no root.
    error InvalidIsd(uint16 isd);
    /// @notice The ISD-AS has ISD 0 or AS 0.
    error InvalidIsdAs(uint64 isdAs);
    /// @notice No root key is set for the ISD of the ISD-AS being registered.
    error UnknownIsdRoot(uint16 isd);
    /// @notice The certificate is not a valid signature of the ISD root over (ISD-AS, AS key).
    error BadCertificate(uint64 isdAs);
    /// @notice The proof of possession is not a valid signature of the AS key over the
    /// registration message of this caller and its current nonce.
    error BadProofOfPossession(uint64 isdAs, address account);
    /// @notice The ISD-AS is already registered to an account.
    error AlreadyRegistered(uint64 isdAs, address account);
    /// @notice The account already holds an ISD-AS.
    error AccountAlreadyRegistered(address account, uint64 isdAs);
    /// @notice The account holds no ISD-AS.
    error NotRegistered(address account);
    /// @notice No account holds this ISD-AS.
    error UnknownIsdAs(uint64 isdAs);

    /// @notice Ownership of the registry moved.
    event OwnershipTransferred(address indexed previousOwner, address indexed newOwner);
    /// @notice The root key of an ISD was set (x = y = 0: removed).
    event IsdRootSet(uint16 indexed isd, bytes32 x, bytes32 y);
    /// @notice An account registered an ISD-AS with an AS key.
    event AsRegistered(uint64 indexed isdAs, address indexed account, bytes32 asKeyX, bytes32 asKeyY, uint256 nonce);
    /// @notice A registration ended (by the AS itself, or revoked by the owner).
    event AsDeregistered(uint64 indexed isdAs, address indexed account, bool revokedByOwner);

    modifier onlyOwner() {
        if (msg.sender != owner) revert NotOwner(msg.sender);
        _;
    }

    /// @param verifier Address of the P-256 verifier: 0x100 where the chain has the precompile.
    constructor(address verifier) {
        if (verifier == address(0)) revert ZeroAddress();
        p256Verifier = verifier;
        owner = msg.sender;
        emit OwnershipTransferred(address(0), msg.sender);
    }

    // ------------------------------------------------------------------ owner

    /// @notice Hand the registry to a new owner.
    /// @param newOwner The new owner; not the zero address.
    function transferOwnership(address newOwner) external onlyOwner {
        if (newOwner == address(0)) revert ZeroAddress();
        emit OwnershipTransferred(owner, newOwner);
        owner = newOwner;
    }

    /// @notice Set (or, with x = y = 0, remove) the P-256 root key of an ISD.
    /// @dev Existing registrations are kept; the root only gates new ones.
    /// @param isd The ISD number (not 0).
    /// @param x Affine x coordinate of the root key.
    /// @param y Affine y coordinate of the root key.
    function setIsdRoot(uint16 isd, bytes32 x, bytes32 y) external onlyOwner {
        if (isd == 0) revert InvalidIsd(isd);
        _isdRoots[isd] = P256Key(x, y);
        emit IsdRootSet(isd, x, y);
    }

    /// @notice Revoke the registration of an ISD-AS (e.g. after its certificate was revoked).
    /// @param isdAs The registered ISD-AS.
    function revoke(uint64 isdAs) external onlyOwner {
        address account = _accountOf[isdAs];
        if (account == address(0)) revert UnknownIsdAs(isdAs);
        _clear(isdAs, account);
        emit AsDeregistered(isdAs, account, true);
    }

    // ------------------------------------------------------------------ registration

    /// @notice Register `isdAs` to the caller.
    /// @dev The proof of possession signs `registrationDigest(msg.sender)`, which includes the
    /// caller's current nonce; a successful registration increments it, so a proof works once.
    /// @param isdAs The ISD-AS (16-bit ISD | 48-bit AS).
    /// @param asKeyX AS public key, x coordinate.
    /// @param asKeyY AS public key, y coordinate.
    /// @param certR Certificate (root signature over `certificateDigest`), r.
    /// @param certS Certificate, s.
    /// @param popR Proof of possession (AS key signature over `registrationDigest`), r.
    /// @param popS Proof of possession, s.
    function register(
        uint64 isdAs,
        bytes32 asKeyX,
        bytes32 asKeyY,
        bytes32 certR,
        bytes32 certS,
        bytes32 popR,
        bytes32 popS
    ) external {
        uint16 isd = uint16(isdAs >> 48);
        if (isd == 0 || isdAs & 0xFFFF_FFFF_FFFF == 0) revert InvalidIsdAs(isdAs);
        address taken = _accountOf[isdAs];
        if (taken != address(0)) revert AlreadyRegistered(isdAs, taken);
        uint64 held = _asOf[msg.sender];
        if (held != 0) revert AccountAlreadyRegistered(msg.sender, held);

        P256Key memory root = _isdRoots[isd];
        if (root.x == 0 && root.y == 0) revert UnknownIsdRoot(isd);
        if (!_verify(certificateDigest(isdAs, asKeyX, asKeyY), certR, certS, root.x, root.y)) {
            revert BadCertificate(isdAs);
        }
        uint256 nonce = _registrationNonce[msg.sender];
        if (!_verify(_registrationDigest(msg.sender, nonce), popR, popS, asKeyX, asKeyY)) {
            revert BadProofOfPossession(isdAs, msg.sender);
        }

        _registrationNonce[msg.sender] = nonce + 1;
        _asOf[msg.sender] = isdAs;
        _accountOf[isdAs] = msg.sender;
        _asKeys[isdAs] = P256Key(asKeyX, asKeyY);
        emit AsRegistered(isdAs, msg.sender, asKeyX, asKeyY, nonce);
    }

    /// @notice Give up the caller's ISD-AS (e.g. to move it to another account or rotate the key).
    function deregister() external {
        uint64 isdAs = _asOf[msg.sender];
        if (isdAs == 0) revert NotRegistered(msg.sender);
        _clear(isdAs, msg.sender);
        emit AsDeregistered(isdAs, msg.sender, false);
    }

    // ------------------------------------------------------------------ lookups

    /// @notice The ISD-AS registered to `account`, 0 if none.
    function asOf(address account) external view returns (uint64) {
        return _asOf[account];
    }

    /// @notice The account holding `isdAs`, the zero address if none.
    function accountOf(uint64 isdAs) external view returns (address) {
        return _accountOf[isdAs];
    }

    /// @notice The AS public key registered for `isdAs` (zeros if none).
    function asKey(uint64 isdAs) external view returns (bytes32 x, bytes32 y) {
        P256Key memory k = _asKeys[isdAs];
        return (k.x, k.y);
    }

    /// @notice The root key of `isd` (zeros if none).
    function isdRoot(uint16 isd) external view returns (bytes32 x, bytes32 y) {
        P256Key memory k = _isdRoots[isd];
        return (k.x, k.y);
    }

    /// @notice The nonce the next proof of possession of `account` must sign.
    function registrationNonce(address account) external view returns (uint256) {
        return _registrationNonce[account];
    }

    /// @notice The SHA-256 digest an ISD root signs to certify (`isdAs`, AS key).
    function certificateDigest(uint64 isdAs, bytes32 asKeyX, bytes32 asKeyY) public pure returns (bytes32) {
        return sha256(abi.encodePacked("aviary-as-cert-v1", isdAs, asKeyX, asKeyY));
    }

    /// @notice The SHA-256 digest the AS key signs so that `account` can register now.
    function registrationDigest(address account) external view returns (bytes32) {
        return _registrationDigest(account, _registrationNonce[account]);
    }

    // ------------------------------------------------------------------ internal

    function _registrationDigest(address account, uint256 nonce) private view returns (bytes32) {
        return sha256(abi.encodePacked("aviary-as-register-v1", address(this), block.chainid, account, nonce));
    }

    function _clear(uint64 isdAs, address account) private {
        delete _asOf[account];
        delete _accountOf[isdAs];
        delete _asKeys[isdAs];
    }

    /// @dev P256VERIFY: input digest | r | s | x | y (160 bytes); output 32 bytes = 1 on success,
    /// empty on failure. A call to an address without the precompile returns empty: failure.
    function _verify(bytes32 digest, bytes32 r, bytes32 s, bytes32 x, bytes32 y) private view returns (bool) {
        (bool ok, bytes memory ret) = p256Verifier.staticcall(abi.encodePacked(digest, r, s, x, y));
        return ok && ret.length == 32 && abi.decode(ret, (uint256)) == 1;
    }
}
