// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC165} from "./IERC165.sol";

/// @dev The ERC-1155 token receiver callbacks (`onERC1155Received` 0xf23a6e61,
///      `onERC1155BatchReceived` 0xbc197c81: each callback's magic value is its own selector).
interface IERC1155TokenReceiver {
    function onERC1155Received(address operator, address from, uint256 id, uint256 value, bytes calldata data)
        external
        returns (bytes4);
    function onERC1155BatchReceived(
        address operator,
        address from,
        uint256[] calldata ids,
        uint256[] calldata values,
        bytes calldata data
    ) external returns (bytes4);
}

/// @title TicketCopies: conduct's own ERC-1155 "copies" contract (one token id per game).
/// @notice Written for this repository from the ERC-1155 text (and the ERC-6093 error names); no
///         dependencies. The owner lists a game with `setGame(id, price, open)`; anyone buys copies of an
///         open game with `buy(id, amount)`, which pulls `price * amount` of the payment token (an ERC-20
///         such as TestUSD) from the buyer to the payee with `transferFrom` (so the buyer `approve`s this
///         contract first) and mints `amount` copies of `id` to the buyer. Copies are ordinary ERC-1155
///         tokens afterwards: transferable, batch-transferable, with operators.
/// @dev Decisions:
///      - token, payee and owner are fixed at construction (owner = deployer); redeploy to change them.
///        The token must be a contract.
///      - One URI template for every id, given at construction, with the ERC's `{id}` substitution
///        (clients replace `{id}` with the id as 64 lowercase hex digits). `URI(template, id)` is emitted
///        the first time a game id is listed.
///      - `buy` refuses an unlisted or closed game (GameNotOpen) and amount 0 (ZeroAmount). The payment
///        comes first; a token revert (for example TestUSD's "ERC20: transfer amount exceeds allowance")
///        comes back unchanged, and a token that answers `false` gives PaymentFailed. Price 0 is allowed
///        and then no token call is made.
///      - Minting follows the transfer rules: TransferSingle(operator = buyer, from = 0, to = buyer), then
///        the acceptance check if the buyer is a contract.
///      - The acceptance check: if the receiver has code it is called; a revert with data is re-thrown
///        as is, and a revert without data or any answer other than exactly the magic value (one
///        32-byte word) is ERC1155InvalidReceiver(to). Addresses without code are not called.
///      - `balanceOf` of the zero address is 0 (no revert); `setApprovalForAll` accepts any operator.
contract TicketCopies is IERC165 {
    struct Game {
        uint256 price; // in the payment token's smallest unit, per copy
        bool open; // whether `buy` is allowed
        bool listed; // whether `setGame` was ever called for this id
    }

    bytes4 private constant ERC165_ID = 0x01ffc9a7;
    bytes4 private constant ERC1155_ID = 0xd9b67a26;
    bytes4 private constant ERC1155_METADATA_URI_ID = 0x0e89341c;
    bytes4 private constant ON_RECEIVED = 0xf23a6e61;
    bytes4 private constant ON_BATCH_RECEIVED = 0xbc197c81;

    /// @notice The ERC-20 copies are paid in.
    address public immutable token;
    /// @notice Who receives the payments.
    address public immutable payee;
    /// @notice Who may call `setGame`.
    address public immutable owner;
    /// @notice Each game's price, whether it is open, and whether it was ever listed.
    mapping(uint256 id => Game) public games;

    string private _uri;
    mapping(uint256 id => mapping(address account => uint256)) private _balances;
    mapping(address account => mapping(address operator => bool)) private _operators;

    // ERC-1155
    event TransferSingle(
        address indexed operator, address indexed from, address indexed to, uint256 id, uint256 value
    );
    event TransferBatch(
        address indexed operator, address indexed from, address indexed to, uint256[] ids, uint256[] values
    );
    event ApprovalForAll(address indexed account, address indexed operator, bool approved);
    event URI(string value, uint256 indexed id);
    // this contract
    event GameSet(uint256 indexed id, uint256 price, bool open);
    event Bought(address indexed buyer, uint256 indexed id, uint256 amount, uint256 paid);

    // ERC-6093 (ERC-1155 errors)
    error ERC1155InsufficientBalance(address sender, uint256 balance, uint256 needed, uint256 tokenId);
    error ERC1155InvalidReceiver(address receiver);
    error ERC1155MissingApprovalForAll(address operator, address owner);
    error ERC1155InvalidArrayLength(uint256 idsLength, uint256 valuesLength);
    // this contract
    /// @notice The caller of `setGame` is not the owner.
    error NotOwner(address caller);
    /// @notice The game is not listed or not open.
    error GameNotOpen(uint256 id);
    /// @notice `buy` with amount 0.
    error ZeroAmount();
    /// @notice The payment token answered `transferFrom` with something other than true.
    error PaymentFailed();
    /// @notice A constructor address was zero, or the token has no code.
    error InvalidAddress(address value);

    constructor(address token_, address payee_, string memory uri_) {
        if (token_.code.length == 0) revert InvalidAddress(token_);
        if (payee_ == address(0)) revert InvalidAddress(payee_);
        token = token_;
        payee = payee_;
        owner = msg.sender;
        _uri = uri_;
    }

    // ------------------------------------------------------------------ games and sales
    /// @notice List or update game `id`: its price per copy and whether copies can be bought. Owner only.
    function setGame(uint256 id, uint256 price, bool open) external {
        if (msg.sender != owner) revert NotOwner(msg.sender);
        Game storage g = games[id];
        bool first = !g.listed;
        g.price = price;
        g.open = open;
        g.listed = true;
        emit GameSet(id, price, open);
        if (first) emit URI(_uri, id);
    }

    /// @notice Buy `amount` copies of game `id`: pays `price * amount` from the caller to the payee
    ///         (needs an allowance for this contract) and mints the copies to the caller.
    function buy(uint256 id, uint256 amount) external {
        Game storage g = games[id];
        if (!g.open) revert GameNotOpen(id);
        if (amount == 0) revert ZeroAmount();
        uint256 cost = g.price * amount;
        if (cost != 0) _pull(msg.sender, cost);
        _balances[id][msg.sender] += amount;
        emit TransferSingle(msg.sender, address(0), msg.sender, id, amount);
        emit Bought(msg.sender, id, amount, cost);
        _checkReceived(msg.sender, address(0), msg.sender, id, amount, "");
    }

    // ------------------------------------------------------------------ ERC-1155
    function balanceOf(address account, uint256 id) external view returns (uint256) {
        return _balances[id][account];
    }

    function balanceOfBatch(address[] calldata accounts, uint256[] calldata ids)
        external
        view
        returns (uint256[] memory balances)
    {
        if (accounts.length != ids.length) revert ERC1155InvalidArrayLength(ids.length, accounts.length);
        balances = new uint256[](accounts.length);
        for (uint256 i = 0; i < accounts.length; i++) {
            balances[i] = _balances[ids[i]][accounts[i]];
        }
    }

    function setApprovalForAll(address operator, bool approved) external {
        _operators[msg.sender][operator] = approved;
        emit ApprovalForAll(msg.sender, operator, approved);
    }

    function isApprovedForAll(address account, address operator) public view returns (bool) {
        return _operators[account][operator];
    }

    function safeTransferFrom(address from, address to, uint256 id, uint256 value, bytes calldata data) external {
        _authorize(from, to);
        _move(from, to, id, value);
        emit TransferSingle(msg.sender, from, to, id, value);
        _checkReceived(msg.sender, from, to, id, value, data);
    }

    function safeBatchTransferFrom(
        address from,
        address to,
        uint256[] calldata ids,
        uint256[] calldata values,
        bytes calldata data
    ) external {
        if (ids.length != values.length) revert ERC1155InvalidArrayLength(ids.length, values.length);
        _authorize(from, to);
        for (uint256 i = 0; i < ids.length; i++) {
            _move(from, to, ids[i], values[i]);
        }
        emit TransferBatch(msg.sender, from, to, ids, values);
        if (to.code.length == 0) return;
        _answerIs(
            to,
            abi.encodeCall(IERC1155TokenReceiver.onERC1155BatchReceived, (msg.sender, from, ids, values, data)),
            ON_BATCH_RECEIVED
        );
    }

    /// @notice ERC-1155 metadata: the URI template (the same for every id; `{id}` is substituted by clients).
    function uri(uint256) external view returns (string memory) {
        return _uri;
    }

    /// @notice ERC-165: true for ERC-165, ERC-1155 and the ERC-1155 metadata URI extension.
    function supportsInterface(bytes4 interfaceId) external pure returns (bool) {
        return interfaceId == ERC165_ID || interfaceId == ERC1155_ID || interfaceId == ERC1155_METADATA_URI_ID;
    }

    // ------------------------------------------------------------------ internals
    function _authorize(address from, address to) private view {
        if (to == address(0)) revert ERC1155InvalidReceiver(address(0));
        if (from != msg.sender && !_operators[from][msg.sender]) revert ERC1155MissingApprovalForAll(msg.sender, from);
    }

    function _move(address from, address to, uint256 id, uint256 value) private {
        uint256 balance = _balances[id][from];
        if (balance < value) revert ERC1155InsufficientBalance(from, balance, value, id);
        _balances[id][from] = balance - value;
        _balances[id][to] += value;
    }

    function _checkReceived(address operator, address from, address to, uint256 id, uint256 value, bytes memory data)
        private
    {
        if (to.code.length == 0) return;
        _answerIs(
            to, abi.encodeCall(IERC1155TokenReceiver.onERC1155Received, (operator, from, id, value, data)), ON_RECEIVED
        );
    }

    /// @dev Call the receiver hook; accept only exactly one 32-byte word holding `magic`.
    function _answerIs(address to, bytes memory callData, bytes4 magic) private {
        (bool ok, bytes memory ret) = to.call(callData);
        if (!ok) {
            if (ret.length == 0) revert ERC1155InvalidReceiver(to);
            assembly ("memory-safe") {
                revert(add(ret, 32), mload(ret))
            }
        }
        if (ret.length != 32 || bytes32(ret) != bytes32(magic)) revert ERC1155InvalidReceiver(to);
    }

    /// @dev transferFrom(from, payee, amount) on the payment token; a revert is re-thrown as is.
    function _pull(address from, uint256 amount) private {
        (bool ok, bytes memory ret) = token.call(abi.encodeWithSelector(0x23b872dd, from, payee, amount));
        if (!ok) {
            assembly ("memory-safe") {
                revert(add(ret, 32), mload(ret))
            }
        }
        if (ret.length != 0 && (ret.length != 32 || abi.decode(ret, (uint256)) != 1)) revert PaymentFailed();
    }
}
