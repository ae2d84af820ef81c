// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @notice What the registry stores for one tool (ERC-8257 section 1).
struct ToolConfig {
    address creator; // msg.sender of registerTool; never changes
    string metadataURI; // where the tool manifest (JSON) is served
    bytes32 manifestHash; // keccak256 of the RFC 8785 (JCS) bytes of that manifest
    address accessPredicate; // address(0) = open access; otherwise the IAccessPredicate gate
}

/// @title IToolRegistry: the ERC-8257 agent tool registry, as written in the ERC (Draft).
/// @dev ERC-165 interface id 0xf1dc8075: the XOR of the ten function selectors below. The registry
///      also answers ERC-165 itself (0x01ffc9a7); that function is deliberately not part of this
///      interface, so it does not enter the id. Changing any function here changes the id.
interface IToolRegistry {
    // ------------------------------------------------------------------ events
    event ToolRegistered(
        uint256 indexed toolId,
        address indexed creator,
        address indexed accessPredicate,
        string metadataURI,
        bytes32 manifestHash
    );
    event ToolMetadataUpdated(uint256 indexed toolId, string newURI, bytes32 newHash);
    event AccessPredicateUpdated(uint256 indexed toolId, address indexed newPredicate);
    event ToolDeregistered(uint256 indexed toolId);

    // ------------------------------------------------------------------ errors
    /// @notice No tool was ever registered under `toolId`.
    error ToolNotFound(uint256 toolId);
    /// @notice Only the tool's creator may change or deregister it.
    error NotToolCreator(uint256 toolId, address caller);
    /// @notice The metadata URI is empty or longer than 2,048 bytes.
    error InvalidMetadataURI();
    /// @notice The manifest hash is bytes32(0).
    error InvalidManifestHash();
    /// @notice The predicate advertises ERC-165 but not IAccessPredicate (0xbdf9dc18).
    error InvalidAccessPredicate(address predicate);
    /// @notice The tool was deregistered by its creator (irreversible).
    error ToolIsDeregistered(uint256 toolId);

    // ------------------------------------------------------------------ writes
    /// @notice Register a tool; the caller becomes its creator. Ids are 1, 2, 3, ... and never reused.
    function registerTool(string calldata metadataURI, bytes32 manifestHash, address accessPredicate)
        external
        returns (uint256 toolId);

    /// @notice Remove a tool for good (creator only). Every later call on the id reverts with
    ///         ToolIsDeregistered; toolCount() still counts it.
    function deregisterTool(uint256 toolId) external;

    /// @notice Replace a tool's metadata URI and manifest hash together (creator only).
    function updateToolMetadata(uint256 toolId, string calldata newURI, bytes32 newHash) external;

    /// @notice Replace a tool's access predicate (creator only); address(0) opens it to everyone.
    function setAccessPredicate(uint256 toolId, address newPredicate) external;

    // ------------------------------------------------------------------ reads
    /// @notice The stored configuration; reverts ToolNotFound / ToolIsDeregistered.
    function getToolConfig(uint256 toolId) external view returns (ToolConfig memory);

    /// @notice True only if the tool is open, or its predicate answered a canonical ABI `true`.
    function hasAccess(uint256 toolId, address account, bytes calldata data) external view returns (bool);

    /// @notice (true, granted) when the predicate answered canonically (or the tool is open),
    ///         (false, false) when the predicate call failed or answered anything else.
    function tryHasAccess(uint256 toolId, address account, bytes calldata data)
        external
        view
        returns (bool ok, bool granted);

    /// @notice The highest id assigned so far (ids run 1..=toolCount, deregistered ones included).
    function toolCount() external view returns (uint256);

    function name() external view returns (string memory);

    function version() external view returns (string memory);
}
