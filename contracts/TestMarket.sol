// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Reputation} from "./Reputation.sol";

/// @title TestMarket: the smallest market contract that settles into Reputation (test use only).
/// @notice Its owner (the deployer) calls `settle`, and the market calls `Reputation.credit`, so in the
///         tests a credit comes from a market contract, as in production, and `Credited.market` is this
///         contract's address. The Reputation contract decides whether this market may credit; a
///         revert there (NotMarket, ZeroAddress, ZeroAmount) comes back unchanged from `settle`.
contract TestMarket {
    /// @notice The Reputation record this market settles into.
    Reputation public immutable reputation;
    /// @notice The only address allowed to call `settle`.
    address public immutable owner;

    /// @notice The caller of `settle` is not the owner.
    error NotOwner(address caller);

    constructor(Reputation reputation_) {
        reputation = reputation_;
        owner = msg.sender;
    }

    /// @notice Settle a market: credit `winner` with `amount` for `outcome`.
    function settle(address winner, uint256 amount, bytes32 outcome) external {
        if (msg.sender != owner) revert NotOwner(msg.sender);
        reputation.credit(winner, amount, outcome);
    }
}
