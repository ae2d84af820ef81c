// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @notice One machine-readable access requirement (ERC-8257 `IAccessPredicate.getRequirements`).
/// @dev `kind` is an ERC-165-style marker id (for example 0xbdf8c428 = IERC721Holding), `data` is
///      laid out as that kind defines, `label` is a human hint.
struct AccessRequirement {
    bytes4 kind;
    bytes data;
    string label;
}

/// @notice How a predicate combines its requirements.
enum RequirementLogic {
    AND,
    OR
}

/// @title IAccessPredicate: the gate an ERC-8257 tool may point at.
/// @dev ERC-165 interface id 0xbdf9dc18 = hasAccess ^ name ^ getRequirements. A predicate that
///      answers `supportsInterface(0x01ffc9a7)` with true must also answer true for 0xbdf9dc18, or
///      ToolRegistry refuses it. This repository ships no predicate; the interface is here so that
///      ToolRegistry can name the call it makes and the id it probes for.
interface IAccessPredicate {
    /// @return Whether `account` may use tool `toolId`; `data` is opaque caller context.
    function hasAccess(uint256 toolId, address account, bytes calldata data) external view returns (bool);

    /// @return A non-empty human-readable name of the predicate implementation.
    function name() external view returns (string memory);

    /// @return requirements What it takes to pass, for planning (advisory; `hasAccess` decides).
    /// @return logic Whether all (AND) or any (OR) of the requirements must hold.
    function getRequirements(uint256 toolId)
        external
        view
        returns (AccessRequirement[] memory requirements, RequirementLogic logic);
}
