// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC165} from "./IERC165.sol";
import {IAccessPredicate} from "./IAccessPredicate.sol";
import {IToolRegistry, ToolConfig} from "./IToolRegistry.sol";

/// @title ToolRegistry: conduct's own implementation of the ERC-8257 agent tool registry.
/// @notice Written for this repository from the ERC text (ethereum/ERCs ERCS/erc-8257.md, Draft); it
///         shares no code with the OpenSea reference implementation and has no dependencies.
///         It follows ERC-8257 v0.2 as deployed (the registry whose `version()` is "0.2" and which
///         accepts predicates advertising IAccessPredicate 0xbdf9dc18), hence `version()` = "0.2".
/// @dev Behaviour, rule by rule:
///      - Ids are assigned 1, 2, 3, ... from a counter that starts at zero storage, so the contract
///        needs no initialiser (it is also correct behind a proxy); id 0 is never assigned.
///      - `metadataURI` must be 1..2,048 bytes (InvalidMetadataURI); `manifestHash` non-zero
///        (InvalidManifestHash).
///      - A predicate is checked with the ERC's best-effort ERC-165 ladder (`_checkPredicate`):
///        address(0), an address without code, and a contract that does not claim ERC-165 are
///        accepted; a contract that claims ERC-165 but not IAccessPredicate is refused with
///        InvalidAccessPredicate (this refuses the registry itself, for example).
///      - Mutations check, in order: the id is live (ToolIsDeregistered, then ToolNotFound), the
///        caller is the creator (NotToolCreator), then the arguments.
///      - A no-op update (same URI and hash, or same predicate) writes nothing and emits nothing.
///      - Deregistration deletes the configuration and leaves a tombstone; every later call on the
///        id, reads included, reverts with ToolIsDeregistered.
///      - The predicate is called with STATICCALL and at most 200,000 gas; only a 32-byte answer of
///        exactly 0 or 1 counts (strict ABI bool), anything else is a malfunction, never a grant.
contract ToolRegistry is IToolRegistry, IERC165 {
    /// @dev ERC-8257 "Metadata URI Length Cap": at most 2,048 bytes.
    uint256 private constant MAX_URI_BYTES = 2048;
    /// @dev Gas given to one predicate `hasAccess` call (the ERC leaves the cap to implementations).
    uint256 private constant PREDICATE_GAS = 200_000;
    /// @dev Gas given to one `supportsInterface` probe: ERC-165 promises an answer in under 30,000.
    uint256 private constant PROBE_GAS = 30_000;

    /// @dev Number of ids assigned so far; the next registration gets `_assigned + 1`.
    uint256 private _assigned;
    /// @dev Live tools; `creator == address(0)` means "not live" (never registered, or deregistered).
    mapping(uint256 toolId => ToolConfig) private _config;
    /// @dev Tombstones of deregistered ids.
    mapping(uint256 toolId => bool) private _deregistered;

    // ------------------------------------------------------------------ writes

    /// @inheritdoc IToolRegistry
    function registerTool(string calldata metadataURI, bytes32 manifestHash, address accessPredicate)
        external
        returns (uint256 toolId)
    {
        _checkMetadata(metadataURI, manifestHash);
        _checkPredicate(accessPredicate);

        toolId = ++_assigned;
        ToolConfig storage cfg = _config[toolId];
        cfg.creator = msg.sender;
        cfg.metadataURI = metadataURI;
        cfg.manifestHash = manifestHash;
        cfg.accessPredicate = accessPredicate;

        emit ToolRegistered(toolId, msg.sender, accessPredicate, metadataURI, manifestHash);
    }

    /// @inheritdoc IToolRegistry
    function deregisterTool(uint256 toolId) external {
        _ownedBySender(toolId);
        delete _config[toolId];
        _deregistered[toolId] = true;
        emit ToolDeregistered(toolId);
    }

    /// @inheritdoc IToolRegistry
    function updateToolMetadata(uint256 toolId, string calldata newURI, bytes32 newHash) external {
        ToolConfig storage cfg = _ownedBySender(toolId);
        _checkMetadata(newURI, newHash);

        // Compare the hash first: it is one word, and when it differs the URI need not be read.
        if (cfg.manifestHash == newHash && keccak256(bytes(cfg.metadataURI)) == keccak256(bytes(newURI))) return;

        cfg.metadataURI = newURI;
        cfg.manifestHash = newHash;
        emit ToolMetadataUpdated(toolId, newURI, newHash);
    }

    /// @inheritdoc IToolRegistry
    function setAccessPredicate(uint256 toolId, address newPredicate) external {
        ToolConfig storage cfg = _ownedBySender(toolId);
        if (cfg.accessPredicate == newPredicate) return;

        _checkPredicate(newPredicate);
        cfg.accessPredicate = newPredicate;
        emit AccessPredicateUpdated(toolId, newPredicate);
    }

    // ------------------------------------------------------------------ reads

    /// @inheritdoc IToolRegistry
    function getToolConfig(uint256 toolId) external view returns (ToolConfig memory) {
        return _live(toolId);
    }

    /// @inheritdoc IToolRegistry
    function hasAccess(uint256 toolId, address account, bytes calldata data) external view returns (bool) {
        (bool ok, bool granted) = _ask(toolId, account, data);
        return ok && granted;
    }

    /// @inheritdoc IToolRegistry
    function tryHasAccess(uint256 toolId, address account, bytes calldata data)
        external
        view
        returns (bool ok, bool granted)
    {
        return _ask(toolId, account, data);
    }

    /// @inheritdoc IToolRegistry
    function toolCount() external view returns (uint256) {
        return _assigned;
    }

    /// @inheritdoc IToolRegistry
    function name() external pure returns (string memory) {
        return "conduct ToolRegistry";
    }

    /// @inheritdoc IToolRegistry
    /// @dev "0.2": the ERC-8257 revision deployed as v0.2 (IToolRegistry 0xf1dc8075, predicates
    ///      advertising IAccessPredicate 0xbdf9dc18), which this contract implements.
    function version() external pure returns (string memory) {
        return "0.2";
    }

    /// @notice ERC-165: true for IERC165 (0x01ffc9a7) and IToolRegistry (0xf1dc8075) only.
    /// @dev Not IAccessPredicate: the registry must never pass as a predicate (ERC-8257 step 5).
    function supportsInterface(bytes4 interfaceId) external pure returns (bool) {
        return interfaceId == type(IERC165).interfaceId || interfaceId == type(IToolRegistry).interfaceId;
    }

    // ------------------------------------------------------------------ internals

    /// @dev The live configuration of `toolId`, or the ERC's revert for a removed or unknown id.
    function _live(uint256 toolId) private view returns (ToolConfig storage cfg) {
        if (_deregistered[toolId]) revert ToolIsDeregistered(toolId);
        cfg = _config[toolId];
        if (cfg.creator == address(0)) revert ToolNotFound(toolId);
    }

    /// @dev `_live`, and the caller must be the creator.
    function _ownedBySender(uint256 toolId) private view returns (ToolConfig storage cfg) {
        cfg = _live(toolId);
        if (cfg.creator != msg.sender) revert NotToolCreator(toolId, msg.sender);
    }

    function _checkMetadata(string calldata uri, bytes32 hash) private pure {
        uint256 len = bytes(uri).length;
        if (len == 0 || len > MAX_URI_BYTES) revert InvalidMetadataURI();
        if (hash == bytes32(0)) revert InvalidManifestHash();
    }

    /// @dev ERC-8257 "Predicate Validation at Registration", steps 1 to 5:
    ///      1. address(0): open access, accepted;
    ///      2. no code: accepted (unverifiable; such a tool answers "malfunction" until code exists);
    ///      3./4. `supportsInterface(0x01ffc9a7)` reverts, runs out of gas, answers anything but a
    ///         canonical true: the contract does not claim ERC-165, accepted;
    ///      5. it claims ERC-165: `supportsInterface(0xbdf9dc18)` must answer a canonical true,
    ///         otherwise (false, revert, malformed answer) InvalidAccessPredicate.
    function _checkPredicate(address predicate) private view {
        if (predicate == address(0) || predicate.code.length == 0) return;
        if (!_claims(predicate, type(IERC165).interfaceId)) return;
        if (!_claims(predicate, type(IAccessPredicate).interfaceId)) revert InvalidAccessPredicate(predicate);
    }

    /// @dev True only if `target.supportsInterface(id)` returned exactly one word equal to 1 within
    ///      PROBE_GAS. Low-level on purpose: a `try` would revert the caller on a malformed bool.
    function _claims(address target, bytes4 id) private view returns (bool yes) {
        bytes memory probe = abi.encodeCall(IERC165.supportsInterface, (id));
        assembly ("memory-safe") {
            mstore(0x00, 0)
            let ok := staticcall(PROBE_GAS, target, add(probe, 0x20), mload(probe), 0x00, 0x20)
            yes := and(and(ok, eq(returndatasize(), 0x20)), eq(mload(0x00), 1))
        }
    }

    /// @dev The shared body of hasAccess / tryHasAccess. Reverts only for an unknown or removed id.
    function _ask(uint256 toolId, address account, bytes calldata data)
        private
        view
        returns (bool ok, bool granted)
    {
        address predicate = _live(toolId).accessPredicate;
        if (predicate == address(0)) return (true, true);

        bytes memory call_ = abi.encodeCall(IAccessPredicate.hasAccess, (toolId, account, data));
        uint256 word;
        assembly ("memory-safe") {
            // Copy at most one word back (scratch space), so a predicate that returns megabytes costs
            // the caller nothing extra; the full size is still visible through returndatasize().
            mstore(0x00, 0)
            let success := staticcall(PREDICATE_GAS, predicate, add(call_, 0x20), mload(call_), 0x00, 0x20)
            ok := and(success, eq(returndatasize(), 0x20))
            word := mload(0x00)
        }
        // Strict ABI bool: the one word must be 0 (denied) or 1 (granted). A call to an address
        // without code "succeeds" with no return data, and lands here as a malfunction.
        if (!ok || word > 1) return (false, false);
        return (true, word == 1);
    }
}
