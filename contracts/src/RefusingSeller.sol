// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

/// @title RefusingSeller
/// @notice A test account that refuses every native payment: its deployer makes it call any
/// contract (register as an AS, become a seller, issue and list assets), and any value sent to
/// it reverts. Tests use it as a hostile seller: a market that pushes payment to sellers
/// cannot complete a purchase from it.
contract RefusingSeller {
    /// @notice Who may make this account call.
    address public immutable controller;

    /// @notice The caller is not the controller.
    error NotController(address caller);
    /// @notice Native payment refused.
    error PaymentRefused(address from, uint256 amount);

    constructor() {
        controller = msg.sender;
    }

    /// @notice Call `to` with `data` as this account; returns the call's output. A revert of
    /// the call reverts with the same data, so callers see the callee's named error.
    function execute(address to, bytes calldata data) external returns (bytes memory) {
        if (msg.sender != controller) revert NotController(msg.sender);
        (bool ok, bytes memory out) = to.call(data);
        if (!ok) {
            assembly ("memory-safe") {
                revert(add(out, 32), mload(out))
            }
        }
        return out;
    }

    receive() external payable {
        revert PaymentRefused(msg.sender, msg.value);
    }
}
