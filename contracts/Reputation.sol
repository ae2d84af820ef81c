// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title Reputation: a soulbound reputation record (one score per address).
/// @notice A score can only be earned from market outcomes and lost by rulings; nothing else moves it.
///         - There are no transfer, approve or delegate functions: a score belongs to its address.
///         - Nothing is payable and there is no `receive` or `fallback`, so plain ETH sent to this
///           contract reverts, and so does any call to a function it does not have (for example an
///           ERC-1155 or ERC-721 safe transfer's acceptance callback: those tokens cannot land here).
///         - An ERC-20 `transfer` to this address does not call it at all, so it cannot touch a score.
///         - Only a market that governance authorized may `credit` (a market outcome), and only an
///           arbiter that governance authorized may `slash` (a ruling).
/// @dev Rules:
///      - `meets(who)` is `scoreOf(who) >= threshold`. The threshold starts at 0, and a threshold of 0
///        means the gate is open: every address meets it, including one that was never credited.
///      - `slash` floors at 0. The `amount` in `Slashed` is what was actually removed
///        (`min(requested, score)`), so replaying the events reproduces every score exactly:
///        score = sum(Credited.amount) - sum(Slashed.amount).
///      - `credit` and `slash` refuse the zero address and a zero amount. A credit that would overflow
///        uint256 reverts (checked arithmetic).
///      - `setMarket`, `setArbiter` and `setThreshold` always emit their event, also when the value does
///        not change, so the latest event always states the current setting.
///      - Governance is a single address (a multisig or a governor contract in production) and is moved
///        in one step with `transferGovernance`; it can never be the zero address.
contract Reputation {
    /// @notice The address allowed to authorize markets and arbiters, set the threshold and hand over.
    address public governance;
    /// @notice The score `meets` compares with (inclusive). 0 means every address meets it.
    uint256 public threshold;
    /// @notice Markets allowed to `credit`.
    mapping(address market => bool) public isMarket;
    /// @notice Arbiters allowed to `slash`.
    mapping(address arbiter => bool) public isArbiter;

    mapping(address who => uint256) private _score;

    event Credited(address indexed who, address indexed market, uint256 amount, uint256 newScore, bytes32 outcome);
    event Slashed(address indexed who, address indexed arbiter, uint256 amount, uint256 newScore, bytes32 ruling);
    event MarketSet(address indexed market, bool authorized);
    event ArbiterSet(address indexed arbiter, bool authorized);
    event ThresholdSet(uint256 threshold);
    event GovernanceTransferred(address indexed from, address indexed to);

    /// @notice The caller is not governance.
    error NotGovernance(address caller);
    /// @notice The caller is not an authorized market.
    error NotMarket(address caller);
    /// @notice The caller is not an authorized arbiter.
    error NotArbiter(address caller);
    /// @notice An address argument was the zero address.
    error ZeroAddress();
    /// @notice `credit` or `slash` with amount 0.
    error ZeroAmount();

    constructor(address governance_) {
        if (governance_ == address(0)) revert ZeroAddress();
        governance = governance_;
        emit GovernanceTransferred(address(0), governance_);
    }

    modifier onlyGovernance() {
        if (msg.sender != governance) revert NotGovernance(msg.sender);
        _;
    }

    // ------------------------------------------------------------------ reads
    /// @notice The current score of `who` (0 if never credited).
    function scoreOf(address who) external view returns (uint256) {
        return _score[who];
    }

    /// @notice Whether `who` reaches the threshold: `scoreOf(who) >= threshold` (always true at threshold 0).
    function meets(address who) external view returns (bool) {
        return _score[who] >= threshold;
    }

    // ------------------------------------------------------------------ market outcomes and rulings
    /// @notice Add `amount` to `who`'s score for the market outcome `outcome`. Authorized markets only.
    function credit(address who, uint256 amount, bytes32 outcome) external {
        if (!isMarket[msg.sender]) revert NotMarket(msg.sender);
        if (who == address(0)) revert ZeroAddress();
        if (amount == 0) revert ZeroAmount();
        uint256 newScore = _score[who] + amount;
        _score[who] = newScore;
        emit Credited(who, msg.sender, amount, newScore, outcome);
    }

    /// @notice Remove up to `amount` from `who`'s score for the ruling `ruling` (floors at 0). Authorized
    ///         arbiters only. The event carries the amount actually removed.
    function slash(address who, uint256 amount, bytes32 ruling) external {
        if (!isArbiter[msg.sender]) revert NotArbiter(msg.sender);
        if (who == address(0)) revert ZeroAddress();
        if (amount == 0) revert ZeroAmount();
        uint256 old = _score[who];
        uint256 removed = amount < old ? amount : old;
        uint256 newScore = old - removed;
        _score[who] = newScore;
        emit Slashed(who, msg.sender, removed, newScore, ruling);
    }

    // ------------------------------------------------------------------ governance
    /// @notice Authorize (true) or deauthorize (false) a market contract.
    function setMarket(address market, bool authorized) external onlyGovernance {
        if (market == address(0)) revert ZeroAddress();
        isMarket[market] = authorized;
        emit MarketSet(market, authorized);
    }

    /// @notice Authorize (true) or deauthorize (false) an arbiter.
    function setArbiter(address arbiter, bool authorized) external onlyGovernance {
        if (arbiter == address(0)) revert ZeroAddress();
        isArbiter[arbiter] = authorized;
        emit ArbiterSet(arbiter, authorized);
    }

    /// @notice Set the threshold `meets` uses (inclusive; 0 opens the gate to every address).
    function setThreshold(uint256 threshold_) external onlyGovernance {
        threshold = threshold_;
        emit ThresholdSet(threshold_);
    }

    /// @notice Hand governance to `to` (one step; never the zero address).
    function transferGovernance(address to) external onlyGovernance {
        if (to == address(0)) revert ZeroAddress();
        emit GovernanceTransferred(governance, to);
        governance = to;
    }
}
