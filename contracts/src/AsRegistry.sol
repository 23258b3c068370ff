// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

/// @title AsRegistry
/// @notice Binds SCION ISD-AS numbers to accounts (seed 000 §4.2, "AS Registration").
/// @dev The registry's owner sets one P-256 root key per ISD. An account registers an ISD-AS by
/// presenting the AS public key, a certificate (the ISD root's signature over the ISD-AS, the
/// AS key and the certificate's expiry `notAfter`) and a proof of possession (the AS key's
/// signature over this registry, the chain id, the registering account and the account's
/// registration nonce). Both signatures are checked with a P256VERIFY-compatible verifier
/// (EIP-7951 / RIP-7212 input layout).
///
/// Signed messages (each is hashed with SHA-256; the verifier gets the digest):
///   certificate:  "aviary-as-cert-v2"     | isdAs (8 bytes) | asKeyX (32) | asKeyY (32) | notAfter (8)
///   possession:   "aviary-as-register-v1" | registry (20) | chainid (32) | account (20) | nonce (32)
/// (integers big-endian, as `abi.encodePacked` lays them out).
///
/// A registration lasts while its certificate does: from `notAfter` on (Unix s) every lookup
/// answers as if the ISD-AS were not registered, and the ISD-AS and the account are free to
/// register again (with another certificate). The owner revokes certificates by digest: a
/// revoked certificate ends the registration that uses it and can never be registered again.
///
/// An ISD-AS is a 64-bit SCION address: 16-bit ISD | 48-bit AS number. ISD 0 and AS 0 (wildcards)
/// cannot be registered, so 0 means "not registered" in every lookup.
contract AsRegistry {
    /// @notice A P-256 public key, affine coordinates.
    struct P256Key {
        bytes32 x;
        bytes32 y;
    }

    /// @notice Who holds an ISD-AS, and until when (one storage slot).
    struct Holder {
        address account; // zero: none
        uint64 notAfter; // Unix s: the certificate's expiry; the registration ends then
    }

    /// @notice The account that may set ISD roots and revoke certificates.
    address public owner;
    /// @notice The P256VERIFY precompile (0x100) or a contract with the same calling convention.
    address public immutable p256Verifier;

    mapping(uint16 isd => P256Key) private _isdRoots;
    mapping(address account => uint64 isdAs) private _asOf;
    mapping(uint64 isdAs => Holder) private _holders;
    mapping(uint64 isdAs => P256Key) private _asKeys;
    mapping(address account => uint256 nonce) private _registrationNonce;
    mapping(uint64 isdAs => bytes32 digest) private _certificates;
    mapping(bytes32 digest => bool) private _revoked;

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
    /// @notice The certificate's expiry is not after now.
    error CertificateExpired(uint64 isdAs, uint64 notAfter);
    /// @notice The owner revoked this certificate.
    error CertificateRevoked(uint64 isdAs, bytes32 digest);

    /// @notice Ownership of the registry moved.
    event OwnershipTransferred(address indexed previousOwner, address indexed newOwner);
    /// @notice The root key of an ISD was set (x = y = 0: removed).
    event IsdRootSet(uint16 indexed isd, bytes32 x, bytes32 y);
    /// @notice An account registered an ISD-AS with an AS key, until `notAfter`.
    event AsRegistered(
        uint64 indexed isdAs, address indexed account, bytes32 asKeyX, bytes32 asKeyY, uint64 notAfter, uint256 nonce
    );
    /// @notice A registration ended (by the AS itself, revoked by the owner, or expired and
    /// cleared by a new registration of the ISD-AS or the account).
    event AsDeregistered(uint64 indexed isdAs, address indexed account, bool revokedByOwner);
    /// @notice The owner revoked the certificate with this digest (of `isdAs`).
    event CertificateRevokedByOwner(uint64 indexed isdAs, bytes32 indexed digest);

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

    /// @notice Revoke the certificate the registration of `isdAs` uses (expired or not): the
    /// registration ends and that certificate cannot be registered again (a new one can).
    /// @param isdAs The registered ISD-AS.
    function revoke(uint64 isdAs) external onlyOwner {
        if (_holders[isdAs].account == address(0)) revert UnknownIsdAs(isdAs);
        _revoke(isdAs, _certificates[isdAs]);
    }

    /// @notice Revoke a certificate, registered or not (the owner names what the ISD root
    /// signed): it can never be registered, and a registration that uses it ends.
    function revokeCertificate(uint64 isdAs, bytes32 asKeyX, bytes32 asKeyY, uint64 notAfter) external onlyOwner {
        _revoke(isdAs, certificateDigest(isdAs, asKeyX, asKeyY, notAfter));
    }

    // ------------------------------------------------------------------ registration

    /// @notice Register `isdAs` to the caller.
    /// @dev The proof of possession signs `registrationDigest(msg.sender)`, which includes the
    /// caller's current nonce; a successful registration increments it, so a proof works once.
    /// @param isdAs The ISD-AS (16-bit ISD | 48-bit AS).
    /// @param asKeyX AS public key, x coordinate.
    /// @param asKeyY AS public key, y coordinate.
    /// @param notAfter The certificate's expiry (Unix s), after now.
    /// @param certR Certificate (root signature over `certificateDigest`), r.
    /// @param certS Certificate, s.
    /// @param popR Proof of possession (AS key signature over `registrationDigest`), r.
    /// @param popS Proof of possession, s.
    function register(
        uint64 isdAs,
        bytes32 asKeyX,
        bytes32 asKeyY,
        uint64 notAfter,
        bytes32 certR,
        bytes32 certS,
        bytes32 popR,
        bytes32 popS
    ) external {
        uint16 isd = uint16(isdAs >> 48);
        if (isd == 0 || isdAs & 0xFFFF_FFFF_FFFF == 0) revert InvalidIsdAs(isdAs);
        if (notAfter <= block.timestamp) revert CertificateExpired(isdAs, notAfter);
        Holder memory taken = _holders[isdAs];
        if (taken.account != address(0)) {
            if (taken.notAfter > block.timestamp) revert AlreadyRegistered(isdAs, taken.account);
            _clearExpired(isdAs, taken.account);
        }
        uint64 held = _asOf[msg.sender];
        if (held != 0) {
            if (_holders[held].notAfter > block.timestamp) revert AccountAlreadyRegistered(msg.sender, held);
            _clearExpired(held, msg.sender);
        }

        P256Key memory root = _isdRoots[isd];
        if (root.x == 0 && root.y == 0) revert UnknownIsdRoot(isd);
        bytes32 digest = certificateDigest(isdAs, asKeyX, asKeyY, notAfter);
        if (_revoked[digest]) revert CertificateRevoked(isdAs, digest);
        if (!_verify(digest, certR, certS, root.x, root.y)) revert BadCertificate(isdAs);
        uint256 nonce = _registrationNonce[msg.sender];
        if (!_verify(_registrationDigest(msg.sender, nonce), popR, popS, asKeyX, asKeyY)) {
            revert BadProofOfPossession(isdAs, msg.sender);
        }

        _registrationNonce[msg.sender] = nonce + 1;
        _asOf[msg.sender] = isdAs;
        _holders[isdAs] = Holder(msg.sender, notAfter);
        _asKeys[isdAs] = P256Key(asKeyX, asKeyY);
        _certificates[isdAs] = digest;
        emit AsRegistered(isdAs, msg.sender, asKeyX, asKeyY, notAfter, nonce);
    }

    /// @notice Give up the caller's ISD-AS (e.g. to move it to another account or rotate the key).
    /// An expired registration may be given up too.
    function deregister() external {
        uint64 isdAs = _asOf[msg.sender];
        if (isdAs == 0) revert NotRegistered(msg.sender);
        _clear(isdAs, msg.sender);
        emit AsDeregistered(isdAs, msg.sender, false);
    }

    // ------------------------------------------------------------------ lookups

    /// @notice The ISD-AS registered to `account`, 0 if none (or its certificate has expired).
    function asOf(address account) external view returns (uint64 isdAs) {
        isdAs = _asOf[account];
        if (isdAs != 0 && _holders[isdAs].notAfter <= block.timestamp) isdAs = 0;
    }

    /// @notice The account holding `isdAs`, the zero address if none (or its certificate has
    /// expired). The asset contract and the market ask this at issue, purchase, redeem and
    /// delivery.
    function accountOf(uint64 isdAs) external view returns (address) {
        Holder memory h = _holders[isdAs];
        return h.notAfter > block.timestamp ? h.account : address(0);
    }

    /// @notice The AS public key registered for `isdAs` (zeros if none or expired).
    function asKey(uint64 isdAs) external view returns (bytes32 x, bytes32 y) {
        if (_holders[isdAs].notAfter <= block.timestamp) return (0, 0);
        P256Key memory k = _asKeys[isdAs];
        return (k.x, k.y);
    }

    /// @notice The certificate the registration of `isdAs` uses: its digest and expiry (zeros
    /// if none; an expired one is returned until the ISD-AS registers again).
    function certificateOf(uint64 isdAs) external view returns (bytes32 digest, uint64 notAfter) {
        return (_certificates[isdAs], _holders[isdAs].notAfter);
    }

    /// @notice Whether the owner revoked the certificate with this digest.
    function isRevoked(bytes32 digest) external view returns (bool) {
        return _revoked[digest];
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

    /// @notice The SHA-256 digest an ISD root signs to certify (`isdAs`, AS key) until `notAfter`.
    function certificateDigest(uint64 isdAs, bytes32 asKeyX, bytes32 asKeyY, uint64 notAfter)
        public
        pure
        returns (bytes32)
    {
        return sha256(abi.encodePacked("aviary-as-cert-v2", isdAs, asKeyX, asKeyY, notAfter));
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
        delete _holders[isdAs];
        delete _asKeys[isdAs];
        delete _certificates[isdAs];
    }

    function _clearExpired(uint64 isdAs, address account) private {
        _clear(isdAs, account);
        emit AsDeregistered(isdAs, account, false);
    }

    function _revoke(uint64 isdAs, bytes32 digest) private {
        _revoked[digest] = true;
        emit CertificateRevokedByOwner(isdAs, digest);
        address account = _holders[isdAs].account;
        if (account != address(0) && _certificates[isdAs] == digest) {
            _clear(isdAs, account);
            emit AsDeregistered(isdAs, account, true);
        }
    }

    /// @dev P256VERIFY: input digest | r | s | x | y (160 bytes); output 32 bytes = 1 on success,
    /// empty on failure. A call to an address without the precompile returns empty: failure.
    function _verify(bytes32 digest, bytes32 r, bytes32 s, bytes32 x, bytes32 y) private view returns (bool) {
        (bool ok, bytes memory ret) = p256Verifier.staticcall(abi.encodePacked(digest, r, s, x, y));
        return ok && ret.length == 32 && abi.decode(ret, (uint256)) == 1;
    }
}
