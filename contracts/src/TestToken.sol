// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

/// @title TestToken
/// @notice A minimal ERC-20 for tests and demos of ERC-20 marketplaces. Anyone may mint.
contract TestToken {
    /// @notice Token name.
    string public name;
    /// @notice Token symbol.
    string public symbol;
    /// @notice Decimals (18).
    uint8 public constant decimals = 18;
    /// @notice Total minted.
    uint256 public totalSupply;
    /// @notice Balance of each account.
    mapping(address account => uint256) public balanceOf;
    /// @notice Allowance of each (owner, spender).
    mapping(address owner => mapping(address spender => uint256)) public allowance;

    /// @notice The sender's balance is below the amount.
    error InsufficientBalance(address account, uint256 balance, uint256 needed);
    /// @notice The spender's allowance is below the amount.
    error InsufficientAllowance(address owner, address spender, uint256 allowance, uint256 needed);
    /// @notice Tokens cannot go to the zero address.
    error InvalidRecipient(address to);

    /// @notice ERC-20 Transfer (from zero: minted).
    event Transfer(address indexed from, address indexed to, uint256 value);
    /// @notice ERC-20 Approval.
    event Approval(address indexed owner, address indexed spender, uint256 value);

    /// @param name_ Token name.
    /// @param symbol_ Token symbol.
    constructor(string memory name_, string memory symbol_) {
        name = name_;
        symbol = symbol_;
    }

    /// @notice Mint `amount` to `to` (open to anyone: test token).
    function mint(address to, uint256 amount) external {
        if (to == address(0)) revert InvalidRecipient(to);
        totalSupply += amount;
        balanceOf[to] += amount;
        emit Transfer(address(0), to, amount);
    }

    /// @notice ERC-20 transfer.
    function transfer(address to, uint256 amount) external returns (bool) {
        _transfer(msg.sender, to, amount);
        return true;
    }

    /// @notice ERC-20 approve.
    function approve(address spender, uint256 amount) external returns (bool) {
        allowance[msg.sender][spender] = amount;
        emit Approval(msg.sender, spender, amount);
        return true;
    }

    /// @notice ERC-20 transferFrom (an allowance of 2^256-1 is not decreased).
    function transferFrom(address from, address to, uint256 amount) external returns (bool) {
        uint256 allowed = allowance[from][msg.sender];
        if (allowed != type(uint256).max) {
            if (allowed < amount) revert InsufficientAllowance(from, msg.sender, allowed, amount);
            allowance[from][msg.sender] = allowed - amount;
        }
        _transfer(from, to, amount);
        return true;
    }

    function _transfer(address from, address to, uint256 amount) private {
        if (to == address(0)) revert InvalidRecipient(to);
        uint256 balance = balanceOf[from];
        if (balance < amount) revert InsufficientBalance(from, balance, amount);
        balanceOf[from] = balance - amount;
        balanceOf[to] += amount;
        emit Transfer(from, to, amount);
    }
}
