// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title IERC165: standard interface detection (ERC-165).
/// @dev `supportsInterface(0x01ffc9a7)` must answer true and `supportsInterface(0xffffffff)` false,
///      using less than 30,000 gas.
interface IERC165 {
    function supportsInterface(bytes4 interfaceId) external view returns (bool);
}
