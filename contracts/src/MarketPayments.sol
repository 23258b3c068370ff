// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

/// @notice The part of ERC-20 the market uses.
interface IERC20Payment {
    function transferFrom(address from, address to, uint256 amount) external returns (bool);
    function allowance(address owner, address spender) external view returns (uint256);
    function balanceOf(address account) external view returns (uint256);
    function transfer(address to, uint256 amount) external returns (bool);
}

/// @title MarketPayments
/// @notice How the market is paid and pays (pull payments): a purchase credits each piece's
/// price to its seller's proceeds and bills the buyer per payment token; the buyer's payment is
/// collected into the market once all state changes are done (native: from msg.value, the
/// excess refunded; ERC-20: pulled from the buyer); a seller withdraws its proceeds itself.
/// No seller code runs during a purchase, so a seller that refuses payment only fails its own
/// withdrawal. Also the market's reentrancy lock.
abstract contract MarketPayments {
    /// @dev What a purchase owes per payment token: `count` entries of `tokens` and `amounts`.
    struct Bill {
        address[] tokens;
        uint256[] amounts;
        uint256 count;
    }

    /// @dev Proceeds each seller can withdraw, per payment token (zero: native currency).
    mapping(address seller => mapping(address token => uint256)) private _proceeds;
    bool private transient _locked;

    /// @notice The payment (native: msg.value; ERC-20: min(allowance, balance)) is below the price.
    error PaymentTooLow(uint256 required, uint256 available);
    /// @notice A payment, withdrawal or refund failed.
    error PaymentFailed(address token, address to, uint256 amount);
    /// @notice A state-changing market call re-entered the market.
    error Reentrancy();
    /// @notice The purchase's total in `token` would exceed 2^256 - 1 (`total` so far, `price` to add).
    error PriceSumOverflow(address token, uint256 total, uint256 price);
    /// @notice `seller`'s proceeds in `token` would exceed 2^256 - 1 (only a token whose balances
    /// are not backed by a supply can get there).
    error ProceedsOverflow(address seller, address token, uint256 proceeds, uint256 price);

    /// @notice A seller withdrew its proceeds in `token`.
    event Withdrawn(address indexed seller, address indexed token, uint256 amount);

    modifier nonReentrant() {
        if (_locked) revert Reentrancy();
        _locked = true;
        _;
        _locked = false;
    }

    /// @notice Pay out the caller's proceeds in `token` (zero: native currency) to the caller.
    /// @return amount What was paid (0: nothing was due).
    function withdraw(address token) external nonReentrant returns (uint256 amount) {
        amount = _proceeds[msg.sender][token];
        if (amount == 0) return 0;
        _proceeds[msg.sender][token] = 0;
        if (token == address(0)) {
            _sendNative(msg.sender, amount);
        } else {
            (bool ok, bytes memory ret) = token.call(abi.encodeCall(IERC20Payment.transfer, (msg.sender, amount)));
            if (!_succeeded(ok, ret)) revert PaymentFailed(token, msg.sender, amount);
        }
        emit Withdrawn(msg.sender, token, amount);
    }

    /// @notice What `seller` can withdraw in `token` (zero: native currency).
    function proceedsOf(address seller, address token) external view returns (uint256) {
        return _proceeds[seller][token];
    }

    function _newBill(uint256 capacity) internal pure returns (Bill memory bill) {
        bill.tokens = new address[](capacity);
        bill.amounts = new uint256[](capacity);
    }

    /// @dev Credit `price` in `token` to `seller` and add it to the buyer's bill. Each price
    /// fits (uint128 x uint64 x uint64), but two sums of them need not: the explicit checks name
    /// the overflow where checked arithmetic would revert with Panic(0x11).
    function _charge(Bill memory bill, address seller, address token, uint256 price) internal {
        uint256 proceeds = _proceeds[seller][token];
        if (price > type(uint256).max - proceeds) revert ProceedsOverflow(seller, token, proceeds, price);
        unchecked {
            _proceeds[seller][token] = proceeds + price;
        }
        _addToBill(bill, token, price);
    }

    function _addToBill(Bill memory bill, address token, uint256 amount) private pure {
        for (uint256 k = 0; k < bill.count; ++k) {
            if (bill.tokens[k] == token) {
                uint256 total = bill.amounts[k];
                if (amount > type(uint256).max - total) revert PriceSumOverflow(token, total, amount);
                unchecked {
                    bill.amounts[k] = total + amount;
                }
                return;
            }
        }
        bill.tokens[bill.count] = token;
        bill.amounts[bill.count] = amount;
        ++bill.count;
    }

    /// @dev Take the buyer's payment into the market: the native total from msg.value (the
    /// excess refunded), each ERC-20 total pulled from the buyer. The sellers' proceeds were
    /// credited already; they withdraw them.
    function _collect(Bill memory bill) internal {
        uint256 nativeTotal;
        for (uint256 k = 0; k < bill.count; ++k) {
            if (bill.tokens[k] == address(0)) nativeTotal = bill.amounts[k];
        }
        if (msg.value < nativeTotal) revert PaymentTooLow(nativeTotal, msg.value);
        for (uint256 k = 0; k < bill.count; ++k) {
            if (bill.tokens[k] != address(0) && bill.amounts[k] != 0) _pullToken(bill.tokens[k], bill.amounts[k]);
        }
        if (msg.value > nativeTotal) _sendNative(msg.sender, msg.value - nativeTotal);
    }

    function _sendNative(address to, uint256 amount) private {
        (bool ok,) = to.call{value: amount}("");
        if (!ok) revert PaymentFailed(address(0), to, amount);
    }

    /// @dev Pull `amount` of `token` from the buyer into the market; the market's balance must
    /// grow by `amount` (a token that delivers less would leave proceeds uncovered).
    function _pullToken(address token, uint256 amount) private {
        IERC20Payment t = IERC20Payment(token);
        uint256 available = t.allowance(msg.sender, address(this));
        uint256 balance = t.balanceOf(msg.sender);
        if (balance < available) available = balance;
        if (available < amount) revert PaymentTooLow(amount, available);
        uint256 held = t.balanceOf(address(this));
        // A token reporting a balance that cannot grow by `amount` cannot be paid in.
        if (amount > type(uint256).max - held) revert PaymentFailed(token, address(this), amount);
        (bool ok, bytes memory ret) =
            token.call(abi.encodeCall(IERC20Payment.transferFrom, (msg.sender, address(this), amount)));
        if (!_succeeded(ok, ret) || t.balanceOf(address(this)) != held + amount) {
            revert PaymentFailed(token, address(this), amount);
        }
    }

    /// @dev An ERC-20 call succeeded: no revert, and it returned nothing or true.
    function _succeeded(bool ok, bytes memory ret) private pure returns (bool) {
        return ok && (ret.length == 0 || (ret.length == 32 && abi.decode(ret, (bool))));
    }
}
