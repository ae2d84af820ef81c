// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @dev The three ERC-721 reads the owner-or-operator check needs from an ERC-8004 identity registry.
interface IAgentIdentity {
    function ownerOf(uint256 agentId) external view returns (address);
    function getApproved(uint256 agentId) external view returns (address);
    function isApprovedForAll(address owner, address operator) external view returns (bool);
}

/// @title ValidationRegistry: conduct's own minimal ERC-8004 validation registry.
/// @notice Written for this repository from the ERC text (ethereum/ERCs ERCS/erc-8004.md, "Validation
///         Registry"); no dependencies. The functions, events and read functions are the ERC's, with the
///         ERC's exact signatures (string requestURI/responseURI/tag, uint8 response, bytes32 hashes).
///         conduct puts `keccak256(JCS(credential))` in `requestHash` / `responseHash`.
/// @dev Decisions where the ERC leaves room:
///      - The identity registry is a constructor argument (the ERC's proxies use `initialize`), read
///        back with `getIdentityRegistry()`. If it is an ERC-721 (non-zero), `validationRequest` MUST
///        come from the agent's owner, its `getApproved` address or an `isApprovedForAll` operator, as
///        the ERC requires; an agent whose `ownerOf` reverts is AgentNotFound. If it is address(0)
///        (the test chains have no identity registry), that check is skipped: anyone may request.
///      - `requestHash` identifies a request: it must be non-zero and can be requested only once
///        (RequestExists); the validator must be non-zero.
///      - `validationResponse` needs a known request (RequestNotFound), the named validator as caller
///        (NotValidator), and `response <= 100` (ResponseOutOfRange). It may be called again; each call
///        overwrites response, responseHash and tag and emits ValidationResponse.
///      - `getValidationStatus` reverts RequestNotFound for an unknown hash. Before any response it
///        returns response 0, responseHash 0, tag "" and lastUpdate = the request's block timestamp;
///        `hasResponse(requestHash)` (our addition) tells "not answered yet" from "answered 0 (failed)".
///      - `getSummary` averages (rounding down) only answered requests; an empty `validatorAddresses`
///        or an empty `tag` means no filter on it.
contract ValidationRegistry {
    struct Status {
        address validatorAddress;
        uint8 response;
        bool answered;
        uint256 agentId;
        bytes32 responseHash;
        uint256 lastUpdate;
        string tag;
    }

    uint8 private constant MAX_RESPONSE = 100;

    address private immutable _identityRegistry;
    mapping(bytes32 requestHash => Status) private _status;
    mapping(uint256 agentId => bytes32[]) private _agentRequests;
    mapping(address validatorAddress => bytes32[]) private _validatorRequests;

    event ValidationRequest(
        address indexed validatorAddress, uint256 indexed agentId, string requestURI, bytes32 indexed requestHash
    );
    event ValidationResponse(
        address indexed validatorAddress,
        uint256 indexed agentId,
        bytes32 indexed requestHash,
        uint8 response,
        string responseURI,
        bytes32 responseHash,
        string tag
    );

    /// @notice `validatorAddress` was the zero address.
    error InvalidValidator();
    /// @notice `requestHash` was zero.
    error InvalidRequestHash();
    /// @notice A request with this hash already exists.
    error RequestExists(bytes32 requestHash);
    /// @notice No request has this hash.
    error RequestNotFound(bytes32 requestHash);
    /// @notice The caller is not the validator named in the request.
    error NotValidator(bytes32 requestHash, address caller);
    /// @notice `response` was above 100.
    error ResponseOutOfRange(uint8 response);
    /// @notice The identity registry's `ownerOf(agentId)` reverted.
    error AgentNotFound(uint256 agentId);
    /// @notice The caller is neither the agent's owner nor an approved operator.
    error NotAgentOwnerOrOperator(uint256 agentId, address caller);

    constructor(address identityRegistry_) {
        _identityRegistry = identityRegistry_;
    }

    /// @notice The ERC-721 identity registry whose owners may request (address(0): no check).
    function getIdentityRegistry() external view returns (address identityRegistry) {
        return _identityRegistry;
    }

    // ------------------------------------------------------------------ writes
    /// @notice Ask `validatorAddress` to validate agent `agentId`'s work described at `requestURI`,
    ///         committed to by `requestHash`.
    function validationRequest(address validatorAddress, uint256 agentId, string calldata requestURI, bytes32 requestHash)
        external
    {
        if (validatorAddress == address(0)) revert InvalidValidator();
        if (requestHash == bytes32(0)) revert InvalidRequestHash();
        if (_status[requestHash].validatorAddress != address(0)) revert RequestExists(requestHash);
        if (_identityRegistry != address(0)) _checkOwnerOrOperator(agentId);

        Status storage s = _status[requestHash];
        s.validatorAddress = validatorAddress;
        s.agentId = agentId;
        s.lastUpdate = block.timestamp;
        _agentRequests[agentId].push(requestHash);
        _validatorRequests[validatorAddress].push(requestHash);
        emit ValidationRequest(validatorAddress, agentId, requestURI, requestHash);
    }

    /// @notice The named validator answers `requestHash` with `response` (0..100). Repeatable.
    function validationResponse(
        bytes32 requestHash,
        uint8 response,
        string calldata responseURI,
        bytes32 responseHash,
        string calldata tag
    ) external {
        Status storage s = _status[requestHash];
        address validator = s.validatorAddress;
        if (validator == address(0)) revert RequestNotFound(requestHash);
        if (msg.sender != validator) revert NotValidator(requestHash, msg.sender);
        if (response > MAX_RESPONSE) revert ResponseOutOfRange(response);

        s.response = response;
        s.answered = true;
        s.responseHash = responseHash;
        s.tag = tag;
        s.lastUpdate = block.timestamp;
        emit ValidationResponse(validator, s.agentId, requestHash, response, responseURI, responseHash, tag);
    }

    // ------------------------------------------------------------------ reads
    /// @notice The stored state of a request (reverts RequestNotFound for an unknown hash).
    function getValidationStatus(bytes32 requestHash)
        external
        view
        returns (
            address validatorAddress,
            uint256 agentId,
            uint8 response,
            bytes32 responseHash,
            string memory tag,
            uint256 lastUpdate
        )
    {
        Status storage s = _status[requestHash];
        if (s.validatorAddress == address(0)) revert RequestNotFound(requestHash);
        return (s.validatorAddress, s.agentId, s.response, s.responseHash, s.tag, s.lastUpdate);
    }

    /// @notice Whether the validator has answered `requestHash` at least once (reverts for an unknown hash).
    function hasResponse(bytes32 requestHash) external view returns (bool) {
        Status storage s = _status[requestHash];
        if (s.validatorAddress == address(0)) revert RequestNotFound(requestHash);
        return s.answered;
    }

    /// @notice Count and average response (rounded down) of `agentId`'s answered requests, optionally
    ///         only from `validatorAddresses` and only with `tag` (empty = no filter).
    function getSummary(uint256 agentId, address[] calldata validatorAddresses, string calldata tag)
        external
        view
        returns (uint64 count, uint8 averageResponse)
    {
        bytes32[] storage hashes = _agentRequests[agentId];
        bytes32 tagHash = keccak256(bytes(tag));
        bool anyTag = bytes(tag).length == 0;
        uint256 total;
        for (uint256 i = 0; i < hashes.length; i++) {
            Status storage s = _status[hashes[i]];
            if (!s.answered) continue;
            if (!anyTag && keccak256(bytes(s.tag)) != tagHash) continue;
            if (validatorAddresses.length != 0) {
                bool listed = false;
                for (uint256 j = 0; j < validatorAddresses.length; j++) {
                    if (validatorAddresses[j] == s.validatorAddress) {
                        listed = true;
                        break;
                    }
                }
                if (!listed) continue;
            }
            total += s.response;
            count++;
        }
        averageResponse = count == 0 ? 0 : uint8(total / count);
    }

    /// @notice Every request hash made for `agentId`, oldest first.
    function getAgentValidations(uint256 agentId) external view returns (bytes32[] memory requestHashes) {
        return _agentRequests[agentId];
    }

    /// @notice Every request hash addressed to `validatorAddress`, oldest first.
    function getValidatorRequests(address validatorAddress) external view returns (bytes32[] memory requestHashes) {
        return _validatorRequests[validatorAddress];
    }

    function _checkOwnerOrOperator(uint256 agentId) private view {
        IAgentIdentity ids = IAgentIdentity(_identityRegistry);
        address owner;
        try ids.ownerOf(agentId) returns (address o) {
            owner = o;
        } catch {
            revert AgentNotFound(agentId);
        }
        if (msg.sender == owner) return;
        if (ids.getApproved(agentId) == msg.sender) return;
        if (ids.isApprovedForAll(owner, msg.sender)) return;
        revert NotAgentOwnerOrOperator(agentId, msg.sender);
    }
}
