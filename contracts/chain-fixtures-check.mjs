#!/usr/bin/env node
// Behaviour check of the issue-15/16 chain fixtures on a throw-away anvil:
//   Reputation.sol + TestMarket.sol (soulbound score, credited by authorized markets, slashed by
//   authorized arbiters, threshold gate), ValidationRegistry.sol (ERC-8004 validation registry) and
//   TicketCopies.sol (ERC-1155 copies paid in TestUSD).
//   1. offline: the ABIs (no transfer/payable/receive/fallback in Reputation; the ERC-8004 signatures;
//      the ERC-1155 and metadata interface ids recomputed from the selectors);
//   2. deploy TestUSD, Reputation, TestMarket, ValidationRegistry, TicketCopies from dev account 0 in
//      that order (nonces 0..4) and check the deterministic addresses;
//   3. every behaviour, each revert with its decoded custom error (or revert string) and arguments,
//      and every event with its arguments.
// Receivers and the ERC-721 identity registry stand-in are a few bytes of hand-written EVM code
// installed with anvil_setCode, so no mock contract needs an artifact. Exits 0 only when every check
// passed; takes a few seconds.
//
//   node contracts/chain-fixtures-check.mjs     (after tests/tools.sh or `npm ci` in contracts/)
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startAnvil } from "./anvil.mjs";
import {
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  createWalletClient,
  encodeFunctionData,
  getAddress,
  getContractAddress,
  http,
  keccak256,
  parseEventLogs,
  toBytes,
  toEventSelector,
  toFunctionSelector,
  zeroAddress,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { foundry } from "viem/chains";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const OUT = path.join(HERE, "out");
const load = (name) => JSON.parse(fs.readFileSync(path.join(OUT, `${name}.json`), "utf8"));

// Anvil's well-known public dev keys (accounts 0..4). Test use only.
const KEYS = [
  "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
  "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
  "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a",
  "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6",
  "0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a",
];

// The fixed deployment order from account 0 on a fresh anvil (nonce = index).
const ORDER = ["TestUSD", "Reputation", "TestMarket", "ValidationRegistry", "TicketCopies"];
const PAYEE = getAddress("0x000000000000000000000000000000000000fee5");
const COPIES_URI = "https://conduct.example/copies/{id}.json";
const ZERO_HASH = "0x" + "00".repeat(32);
const tag32 = (s) => "0x" + Buffer.from(s).toString("hex").padEnd(64, "0"); // a readable bytes32

// RFC 8785 (JCS) for plain JSON values: ES2015 JSON.stringify for strings and numbers, object keys
// sorted by UTF-16 code units (what Array.prototype.sort does). Enough for the fixture credential.
const jcs = (v) =>
  Array.isArray(v)
    ? `[${v.map(jcs).join(",")}]`
    : v && typeof v === "object"
      ? `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${jcs(v[k])}`).join(",")}}`
      : JSON.stringify(v);

// ------------------------------------------------------------------ hand-written EVM stand-ins
// asm(): hex chunks, {label} (a JUMPDEST there) and {to: label} (PUSH2 of the label's offset).
function asm(items) {
  const at = {};
  let pos = 0;
  for (const it of items) {
    if (typeof it === "string") pos += it.length / 2;
    else if (it.label) (at[it.label] = pos), (pos += 1);
    else pos += 3;
  }
  return "0x" + items.map((it) => (typeof it === "string" ? it : it.label ? "5b" : "61" + at[it.to].toString(16).padStart(4, "0"))).join("");
}
const RETURN_WORD_AT_0 = "600052" + "60206000f3"; // MSTORE(0, top); RETURN(0, 32)
const addr20 = (a) => "73" + a.slice(2).toLowerCase(); // PUSH20 a
// An ERC-1155 receiver that accepts everything: returns its own calldata selector left-aligned, which
// is the magic value of both hooks.
const ACCEPTOR = asm(["600035", "60e01c", "60e01b", RETURN_WORD_AT_0]);
// Returns onERC1155Received's magic value to every call: accepts single transfers, not batches.
const SINGLE_ONLY = asm(["7f", "f23a6e61".padEnd(64, "0"), RETURN_WORD_AT_0]);
// Returns 1 to every call: a wrong answer to both hooks.
const WRONG_ANSWER = asm(["6001", RETURN_WORD_AT_0]);
// An ERC-721 identity registry with one agent (id 1) owned by `owner`; getApproved(anything) = `approved`;
// isApprovedForAll(anything, op) = (op == `operator`); ownerOf(other id) and unknown selectors revert.
const identityMock = (owner, approved, operator) =>
  asm([
    "600035", "60e01c", // selector
    "80", "636352211e", "14", { to: "ownerOf" }, "57",
    "80", "63081812fc", "14", { to: "getApproved" }, "57",
    "80", "63e985e9c5", "14", { to: "isApprovedForAll" }, "57",
    { label: "fail" }, "6000", "80", "fd",
    { label: "ownerOf" }, "600435", "6001", "14", "15", { to: "fail" }, "57", addr20(owner), RETURN_WORD_AT_0,
    { label: "getApproved" }, addr20(approved), RETURN_WORD_AT_0,
    { label: "isApprovedForAll" }, "602435", addr20(operator), "14", RETURN_WORD_AT_0,
  ]);
const mockAddress = (i) => getAddress(`0x${"5b".repeat(18)}${i.toString(16).padStart(4, "0")}`);

// ------------------------------------------------------------------ helpers
let failures = 0;
function check(cond, what) {
  if (cond) console.log(`  ok   ${what}`);
  else {
    failures++;
    console.log(`  FAIL ${what}`);
  }
  return cond;
}
// JSON with bigints as strings and object keys sorted (event args come in viem's order, not the ABI's).
const show = (v) =>
  JSON.stringify(v, (_, x) =>
    typeof x === "bigint" ? x.toString() : x && typeof x === "object" && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : 1))) : x);
const same = (a, b) => show(a) === show(b);
// On-chain runtime code equals the artifact's except where the artifact holds zero bytes (the
// immutables, which the constructor fills in: TestMarket's reputation and owner, TicketCopies' token,
// payee and owner, ValidationRegistry's identity registry).
const sameCode = (chain, artifact) =>
  chain.length === artifact.length && [...Array((chain.length - 2) / 2).keys()].every((i) => {
    const a = artifact.slice(2 + 2 * i, 4 + 2 * i);
    return a === "00" || a === chain.slice(2 + 2 * i, 4 + 2 * i);
  });
const sig = (e) => `${e.name}(${e.inputs.map((i) => i.type).join(",")})`;
const xorIds = (sigs) =>
  "0x" + sigs.reduce((acc, s) => (acc ^ parseInt(toFunctionSelector(s).slice(2), 16)) >>> 0, 0).toString(16).padStart(8, "0");

// The call must revert with `errorName(args...)`, decoded with the ABI it was made with (a revert
// string decodes as Error(reason)).
async function expectError(promise, errorName, args, what) {
  try {
    await promise;
    return check(false, `${what}: expected ${errorName}, but the call succeeded`);
  } catch (e) {
    const rev = e instanceof BaseError ? e.walk((x) => x instanceof ContractFunctionRevertedError) : null;
    const got = rev?.data ? `${rev.data.errorName}(${(rev.data.args ?? []).map(String).join(", ")})` : `not a decoded error: ${e.shortMessage ?? e.message}`;
    const want = `${errorName}(${args.map(String).join(", ")})`;
    return check(got === want, `${what}: reverts ${want}${got === want ? "" : ` (got ${got})`}`);
  }
}
// The call must revert, with no particular data (plain ETH, an unknown selector).
async function expectRevert(promise, what) {
  try {
    await promise;
    return check(false, `${what}: expected a revert, but it succeeded`);
  } catch (e) {
    return check(/revert/i.test(`${e.shortMessage ?? ""} ${e.details ?? ""} ${e.message}`), `${what}: reverts`);
  }
}

// ------------------------------------------------------------------ main
async function main() {
  const art = Object.fromEntries(ORDER.map((n) => [n, load(n)]));
  const repAbi = art.Reputation.abi;
  const valAbi = art.ValidationRegistry.abi;
  const tixAbi = art.TicketCopies.abi;
  const errorsOf = (abi) => abi.filter((e) => e.type === "error");

  // -------------------------------------------------------------- offline
  console.log("ABIs (offline)");
  const repFns = repAbi.filter((e) => e.type === "function").map(sig).sort();
  check(same(repFns, [
    "credit(address,uint256,bytes32)", "governance()", "isArbiter(address)", "isMarket(address)", "meets(address)",
    "scoreOf(address)", "setArbiter(address,bool)", "setMarket(address,bool)", "setThreshold(uint256)",
    "slash(address,uint256,bytes32)", "threshold()", "transferGovernance(address)",
  ]), `Reputation functions: ${repFns.join(", ")}`);
  check(!repAbi.some((e) => e.type === "function" && /^(transfer|transferFrom|approve|safeTransferFrom|setApprovalForAll)$/.test(e.name)),
    "Reputation has no transfer/approve function (soulbound)");
  check(!repAbi.some((e) => e.type === "receive" || e.type === "fallback" || e.stateMutability === "payable"),
    "Reputation has no receive, no fallback and nothing payable (constructor included)");
  const repEvents = repAbi.filter((e) => e.type === "event").map((e) => `${e.name}(${e.inputs.map((i) => `${i.type}${i.indexed ? " indexed" : ""}`).join(",")})`).sort();
  check(same(repEvents, [
    "ArbiterSet(address indexed,bool)",
    "Credited(address indexed,address indexed,uint256,uint256,bytes32)",
    "GovernanceTransferred(address indexed,address indexed)",
    "MarketSet(address indexed,bool)",
    "Slashed(address indexed,address indexed,uint256,uint256,bytes32)",
    "ThresholdSet(uint256)",
  ]), `Reputation events: ${repEvents.join("; ")}`);
  const valFns = valAbi.filter((e) => e.type === "function").map((e) => `${sig(e)}->(${e.outputs.map((o) => o.type).join(",")})`).sort();
  check(same(valFns, [
    "getAgentValidations(uint256)->(bytes32[])",
    "getIdentityRegistry()->(address)",
    "getSummary(uint256,address[],string)->(uint64,uint8)",
    "getValidationStatus(bytes32)->(address,uint256,uint8,bytes32,string,uint256)",
    "getValidatorRequests(address)->(bytes32[])",
    "hasResponse(bytes32)->(bool)",
    "validationRequest(address,uint256,string,bytes32)->()",
    "validationResponse(bytes32,uint8,string,bytes32,string)->()",
  ]), "ValidationRegistry functions are ERC-8004's (+ hasResponse)");
  for (const [s, idx] of [
    ["ValidationRequest(address,uint256,string,bytes32)", [true, true, false, true]],
    ["ValidationResponse(address,uint256,bytes32,uint8,string,bytes32,string)", [true, true, true, false, false, false, false]],
  ]) {
    const ev = valAbi.find((e) => e.type === "event" && sig(e) === s);
    check(ev && same(ev.inputs.map((i) => !!i.indexed), idx), `event ${s} (topic0 ${toEventSelector(s)}), indexed as in ERC-8004`);
  }
  const erc1155 = ["safeTransferFrom(address,address,uint256,uint256,bytes)", "safeBatchTransferFrom(address,address,uint256[],uint256[],bytes)",
    "balanceOf(address,uint256)", "balanceOfBatch(address[],uint256[])", "setApprovalForAll(address,bool)", "isApprovedForAll(address,address)"];
  const tixSigs = tixAbi.filter((e) => e.type === "function").map(sig);
  check(erc1155.every((s) => tixSigs.includes(s)), "TicketCopies has the six ERC-1155 functions");
  check(xorIds(erc1155) === "0xd9b67a26", `ERC-1155 interface id = XOR of its selectors = ${xorIds(erc1155)}`);
  check(tixSigs.includes("uri(uint256)") && toFunctionSelector("uri(uint256)") === "0x0e89341c", "ERC-1155 metadata: uri(uint256) = 0x0e89341c");
  for (const [s, t] of [
    ["TransferSingle(address,address,address,uint256,uint256)", "0xc3d58168c5ae7397731d063d5bbf3d657854427343f4c083240f7aacaa2d0f62"],
    ["TransferBatch(address,address,address,uint256[],uint256[])", "0x4a39dc06d4c0dbc64b70af90fd698a233a518aa5d07e595d983b8c0526c8f7fb"],
    ["ApprovalForAll(address,address,bool)", "0x17307eab39ab6107e8899845ad3d59bd9653f200f220920489ca2b5937696c31"],
    ["URI(string,uint256)", "0x6bb7ff708619ba0610cba295a58592e0451dee2622938c8755667688daf3529b"],
  ])
    check(tixAbi.some((e) => e.type === "event" && sig(e) === s) && toEventSelector(s) === t, `ERC-1155 event ${s} topic0 ${t.slice(0, 10)}…`);

  const t0 = Date.now();
  const { child, url } = await startAnvil();
  console.log(`anvil ${url} (pid ${child.pid}, started in ${Date.now() - t0} ms)`);
  try {
    const transport = http(url);
    const pc = createPublicClient({ chain: foundry, transport, pollingInterval: 50 });
    const [deployer, alice, bob, arbiter, stranger] = KEYS.map((k) => privateKeyToAccount(k));
    const wallet = (acct) => createWalletClient({ account: acct, chain: foundry, transport });
    const gas = {};
    const send = async (c, acct, functionName, args, what) => {
      const { request } = await pc.simulateContract({ ...c, account: acct, functionName, args });
      const r = await pc.waitForTransactionReceipt({ hash: await wallet(acct).writeContract(request) });
      check(r.status === "success", `${what} (gas ${r.gasUsed})`);
      gas[`${c.name}.${functionName}`] ??= r.gasUsed;
      return { receipt: r, events: parseEventLogs({ abi: c.abi, logs: r.logs }) };
    };
    const sim = (c, acct, functionName, args) => pc.simulateContract({ ...c, account: acct, functionName, args });
    const read = (c, functionName, args = []) => pc.readContract({ ...c, functionName, args });
    const deploy = async (name, acct, args) => {
      const r = await pc.waitForTransactionReceipt({ hash: await wallet(acct).deployContract({ abi: art[name].abi, bytecode: art[name].bytecode, args }) });
      return { receipt: r, c: { name, address: getAddress(r.contractAddress), abi: art[name].abi } };
    };
    // one event of a receipt, from `c`, with exactly `args`
    const hasEvent = (res, c, eventName, args, what) => {
      const evs = res.events.filter((e) => e.eventName === eventName && getAddress(e.address) === c.address);
      return check(evs.length === 1 && same(evs[0].args, args), `${what ?? eventName} ${show(evs[0]?.args ?? "none")}`);
    };

    // -------------------------------------------------------------- deploy
    console.log("deploy (account 0, fixed order)");
    const usd = (await deploy("TestUSD", deployer, [])).c;
    const repDeploy = await deploy("Reputation", deployer, [deployer.address]);
    const rep = repDeploy.c;
    const market = (await deploy("TestMarket", deployer, [rep.address])).c;
    const val = (await deploy("ValidationRegistry", deployer, [zeroAddress])).c;
    const tix = (await deploy("TicketCopies", deployer, [usd.address, PAYEE, COPIES_URI])).c;
    for (const [i, c] of [usd, rep, market, val, tix].entries()) {
      const want = getContractAddress({ from: deployer.address, nonce: BigInt(i) });
      check(c.address === want, `${c.name.padEnd(18)} at ${c.address} (account 0, nonce ${i})`);
      check(sameCode(await pc.getCode({ address: c.address }), art[c.name].deployedBytecode), `${c.name}: on-chain code = artifact deployedBytecode (immutables filled in)`);
    }
    const withErrors = (c, other) => ({ ...c, abi: [...c.abi, ...errorsOf(other.abi)] });
    const marketR = withErrors(market, rep); // settle bubbles Reputation's errors

    // -------------------------------------------------------------- Reputation
    console.log("Reputation: governance and threshold 0");
    const ctorEvents = parseEventLogs({ abi: repAbi, logs: repDeploy.receipt.logs });
    check(ctorEvents.length === 1 && ctorEvents[0].eventName === "GovernanceTransferred" && same(ctorEvents[0].args, { from: zeroAddress, to: deployer.address }),
      `constructor emits GovernanceTransferred ${show(ctorEvents[0]?.args)}`);
    check((await read(rep, "governance")) === deployer.address, "governance() = account 0");
    check((await read(rep, "threshold")) === 0n, "threshold() = 0 at start");
    check((await read(rep, "meets", [stranger.address])) === true, "threshold 0: an address never credited meets it (open gate)");
    check((await read(market, "reputation")) === rep.address && (await read(market, "owner")) === deployer.address, "TestMarket: reputation() and owner() = account 0");
    await expectError(sim(rep, deployer, "transferGovernance", [zeroAddress]), "ZeroAddress", [], "transferGovernance(0)");

    console.log("Reputation: credit through an authorized market");
    const OUT1 = tag32("market-1:alice-won");
    await expectError(sim(marketR, deployer, "settle", [alice.address, 10n, OUT1]), "NotMarket", [market.address], "settle before the market is authorized");
    await expectError(sim(rep, alice, "setMarket", [market.address, true]), "NotGovernance", [alice.address], "setMarket by a non-governance address");
    await expectError(sim(rep, deployer, "setMarket", [zeroAddress, true]), "ZeroAddress", [], "setMarket(0, true)");
    let res = await send(rep, deployer, "setMarket", [market.address, true], "governance authorizes TestMarket");
    hasEvent(res, rep, "MarketSet", { market: market.address, authorized: true });
    check((await read(rep, "isMarket", [market.address])) === true, "isMarket(TestMarket) = true");
    res = await send(market, deployer, "settle", [alice.address, 10n, OUT1], "TestMarket.settle(alice, 10)");
    res.events = parseEventLogs({ abi: repAbi, logs: res.receipt.logs });
    hasEvent(res, rep, "Credited", { who: alice.address, market: market.address, amount: 10n, newScore: 10n, outcome: OUT1 });
    check((await read(rep, "scoreOf", [alice.address])) === 10n, "scoreOf(alice) = 10");
    await expectError(sim(marketR, alice, "settle", [alice.address, 10n, OUT1]), "NotOwner", [alice.address], "settle by someone other than the market's owner");
    await expectError(sim(rep, stranger, "credit", [stranger.address, 1n, OUT1]), "NotMarket", [stranger.address], "credit by an EOA that is not a market");
    await expectError(sim(rep, deployer, "credit", [alice.address, 1n, OUT1]), "NotMarket", [deployer.address], "credit by governance itself (governance is not a market)");
    const market2 = (await deploy("TestMarket", bob, [rep.address])).c; // from account 2: account 0's nonces stay as above
    await expectError(sim(withErrors(market2, rep), bob, "settle", [bob.address, 5n, OUT1]), "NotMarket", [market2.address], "settle through an unauthorized TestMarket");
    await expectError(sim(marketR, deployer, "settle", [alice.address, 0n, OUT1]), "ZeroAmount", [], "settle with amount 0");
    await expectError(sim(marketR, deployer, "settle", [zeroAddress, 1n, OUT1]), "ZeroAddress", [], "settle crediting the zero address");
    await expectError(sim(marketR, deployer, "settle", [alice.address, 2n ** 256n - 1n, OUT1]), "Panic", [17], "a credit that would overflow");
    check((await read(rep, "scoreOf", [bob.address])) === 0n, "scoreOf(bob) still 0");

    console.log("Reputation: ETH and tokens cannot move a score");
    await expectRevert(pc.call({ account: stranger, to: rep.address, value: 1n }), "plain ETH to Reputation (eth_call)");
    const ethTx = await pc.waitForTransactionReceipt({ hash: await wallet(stranger).sendTransaction({ to: rep.address, value: 10n ** 18n, gas: 100_000n }) });
    check(ethTx.status === "reverted", `a 1 ETH transaction to Reputation is mined as reverted`);
    check((await pc.getBalance({ address: rep.address })) === 0n, "Reputation's ETH balance is 0");
    await expectRevert(pc.call({ account: stranger, to: rep.address, value: 1n, data: encodeFunctionData({ abi: repAbi, functionName: "scoreOf", args: [alice.address] }) }),
      "ETH with a call to scoreOf (non-payable)");
    await expectRevert(pc.call({ account: stranger, to: rep.address, data: "0xa9059cbb" + "00".repeat(64) }), "a call with transfer(address,uint256)'s selector (no fallback)");
    await send(usd, alice, "mint", [alice.address, 100_000_000n], "mint 100 TestUSD to alice");
    const before = await Promise.all([alice, bob, stranger].map((a) => read(rep, "scoreOf", [a.address])));
    res = await send(usd, alice, "transfer", [rep.address, 5_000_000n], "alice transfers 5 TestUSD to the Reputation contract");
    check(res.receipt.logs.every((l) => getAddress(l.address) === usd.address), "the transfer's logs are all TestUSD's (Reputation is not called)");
    const after = await Promise.all([alice, bob, stranger].map((a) => read(rep, "scoreOf", [a.address])));
    check(same(before, after) && (await read(rep, "scoreOf", [rep.address])) === 0n, `scores unchanged after the token transfer (${show(after)}; the contract's own 0)`);
    check((await read(usd, "balanceOf", [rep.address])) === 5_000_000n, "the tokens just sit at the contract (TestUSD balance 5)");

    console.log("Reputation: threshold");
    await expectError(sim(rep, alice, "setThreshold", [1n]), "NotGovernance", [alice.address], "setThreshold by a non-governance address");
    await send(market, deployer, "settle", [alice.address, 5n, tag32("market-2")], "alice +5 (score 15)");
    res = await send(rep, deployer, "setThreshold", [15n], "setThreshold(15)");
    hasEvent(res, rep, "ThresholdSet", { threshold: 15n });
    check((await read(rep, "meets", [alice.address])) === true, "score 15, threshold 15: meets");
    check((await read(rep, "meets", [stranger.address])) === false, "score 0, threshold 15: does not meet");
    await send(rep, deployer, "setThreshold", [16n], "setThreshold(16)");
    check((await read(rep, "meets", [alice.address])) === false, "score 15, threshold 16: does not meet");
    await send(market, deployer, "settle", [alice.address, 1n, tag32("market-3")], "alice +1 (score 16)");
    check((await read(rep, "meets", [alice.address])) === true, "score 16, threshold 16: meets");
    await send(rep, deployer, "setThreshold", [0n], "setThreshold(0)");
    check((await read(rep, "meets", [stranger.address])) === true, "threshold 0 again: a score of 0 meets");
    await send(rep, deployer, "setThreshold", [16n], "setThreshold(16)");

    console.log("Reputation: slash by arbiters");
    const RUL = tag32("ruling-1");
    await expectError(sim(rep, arbiter, "slash", [alice.address, 4n, RUL]), "NotArbiter", [arbiter.address], "slash before the arbiter is authorized");
    await expectError(sim(rep, deployer, "slash", [alice.address, 4n, RUL]), "NotArbiter", [deployer.address], "slash by governance itself");
    await expectError(sim(rep, alice, "setArbiter", [arbiter.address, true]), "NotGovernance", [alice.address], "setArbiter by a non-governance address");
    res = await send(rep, deployer, "setArbiter", [arbiter.address, true], "governance authorizes an arbiter (account 3)");
    hasEvent(res, rep, "ArbiterSet", { arbiter: arbiter.address, authorized: true });
    await expectError(sim(rep, stranger, "slash", [alice.address, 4n, RUL]), "NotArbiter", [stranger.address], "slash by a non-arbiter");
    await expectError(sim(rep, arbiter, "slash", [alice.address, 0n, RUL]), "ZeroAmount", [], "slash with amount 0");
    await expectError(sim(rep, arbiter, "credit", [alice.address, 1n, RUL]), "NotMarket", [arbiter.address], "an arbiter cannot credit");
    res = await send(rep, arbiter, "slash", [alice.address, 4n, RUL], "arbiter slashes alice by 4");
    hasEvent(res, rep, "Slashed", { who: alice.address, arbiter: arbiter.address, amount: 4n, newScore: 12n, ruling: RUL });
    check((await read(rep, "scoreOf", [alice.address])) === 12n && (await read(rep, "meets", [alice.address])) === false, "scoreOf(alice) = 12, no longer meets 16");
    const RUL2 = tag32("ruling-2");
    res = await send(rep, arbiter, "slash", [alice.address, 100n, RUL2], "arbiter slashes alice by 100");
    hasEvent(res, rep, "Slashed", { who: alice.address, arbiter: arbiter.address, amount: 12n, newScore: 0n, ruling: RUL2 }, "floors at 0 (amount = what was removed):");
    res = await send(rep, arbiter, "slash", [alice.address, 3n, RUL2], "slash of a zero score");
    hasEvent(res, rep, "Slashed", { who: alice.address, arbiter: arbiter.address, amount: 0n, newScore: 0n, ruling: RUL2 });
    await send(market, deployer, "settle", [bob.address, 7n, tag32("market-4")], "bob +7");

    console.log("Reputation: deauthorization and governance transfer");
    res = await send(rep, deployer, "setMarket", [market.address, false], "governance deauthorizes TestMarket");
    hasEvent(res, rep, "MarketSet", { market: market.address, authorized: false });
    await expectError(sim(marketR, deployer, "settle", [alice.address, 1n, OUT1]), "NotMarket", [market.address], "the deauthorized market can no longer credit");
    res = await send(rep, deployer, "setArbiter", [arbiter.address, false], "governance deauthorizes the arbiter");
    hasEvent(res, rep, "ArbiterSet", { arbiter: arbiter.address, authorized: false });
    await expectError(sim(rep, arbiter, "slash", [bob.address, 1n, RUL]), "NotArbiter", [arbiter.address], "the deauthorized arbiter can no longer slash");
    await expectError(sim(rep, stranger, "transferGovernance", [stranger.address]), "NotGovernance", [stranger.address], "transferGovernance by a stranger");
    res = await send(rep, deployer, "transferGovernance", [alice.address], "governance hands over to alice");
    hasEvent(res, rep, "GovernanceTransferred", { from: deployer.address, to: alice.address });
    await expectError(sim(rep, deployer, "setThreshold", [1n]), "NotGovernance", [deployer.address], "the old governance is refused");
    await send(rep, alice, "setMarket", [market.address, true], "the new governance re-authorizes TestMarket");
    await send(market, deployer, "settle", [bob.address, 2n, tag32("market-5")], "bob +2 (score 9)");
    // Replaying every Credited and Slashed log reproduces every score.
    const logs = await pc.getLogs({ address: rep.address, fromBlock: 0n });
    const evs = parseEventLogs({ abi: repAbi, logs });
    const sum = {};
    for (const e of evs) {
      if (e.eventName === "Credited") sum[e.args.who] = (sum[e.args.who] ?? 0n) + e.args.amount;
      if (e.eventName === "Slashed") sum[e.args.who] = (sum[e.args.who] ?? 0n) - e.args.amount;
    }
    const scores = Object.fromEntries(await Promise.all([alice, bob].map(async (a) => [a.address, await read(rep, "scoreOf", [a.address])])));
    check(same(sum, scores) && scores[bob.address] === 9n, `sum(Credited) - sum(Slashed) per address = scoreOf: ${show(scores)}`);

    // -------------------------------------------------------------- ValidationRegistry
    console.log("ValidationRegistry (no identity registry)");
    const validator = bob;
    const credential = { type: "conduct.credential", subject: alice.address.toLowerCase(), issued: "2026-01-01T00:00:00Z", score: 16 };
    const REQ = keccak256(toBytes(jcs(credential)));
    const RESP = keccak256(toBytes(jcs({ ...credential, verdict: "valid" })));
    const REQ_URI = "https://conduct.example/credentials/1.json";
    check((await read(val, "getIdentityRegistry")) === zeroAddress, "getIdentityRegistry() = 0x0 (owner check off)");
    await expectError(sim(val, alice, "validationRequest", [zeroAddress, 7n, REQ_URI, REQ]), "InvalidValidator", [], "request with validator 0x0");
    await expectError(sim(val, alice, "validationRequest", [validator.address, 7n, REQ_URI, ZERO_HASH]), "InvalidRequestHash", [], "request with a zero hash");
    await expectError(read(val, "getValidationStatus", [REQ]), "RequestNotFound", [REQ], "status of an unknown hash");
    await expectError(sim(val, validator, "validationResponse", [REQ, 100, "", ZERO_HASH, ""]), "RequestNotFound", [REQ], "response to an unknown hash");
    res = await send(val, alice, "validationRequest", [validator.address, 7n, REQ_URI, REQ], `alice requests validation of keccak256(JCS(credential)) = ${REQ.slice(0, 10)}…`);
    hasEvent(res, val, "ValidationRequest", { validatorAddress: validator.address, agentId: 7n, requestURI: REQ_URI, requestHash: REQ });
    const reqBlock = await pc.getBlock({ blockNumber: res.receipt.blockNumber });
    check(same(await read(val, "getValidationStatus", [REQ]), [validator.address, 7n, 0, ZERO_HASH, "", reqBlock.timestamp]),
      "status before any response: (validator, 7, 0, 0x0, \"\", request time)");
    check((await read(val, "hasResponse", [REQ])) === false, "hasResponse = false");
    await expectError(sim(val, stranger, "validationRequest", [validator.address, 8n, REQ_URI, REQ]), "RequestExists", [REQ], "a second request with the same hash");
    await expectError(sim(val, stranger, "validationResponse", [REQ, 100, "", RESP, ""]), "NotValidator", [REQ, stranger.address], "response by someone else");
    await expectError(sim(val, alice, "validationResponse", [REQ, 100, "", RESP, ""]), "NotValidator", [REQ, alice.address], "response by the requester");
    await expectError(sim(val, validator, "validationResponse", [REQ, 101, "", RESP, ""]), "ResponseOutOfRange", [101], "response 101");
    const RESP_URI = "https://validator.example/r/1.json";
    res = await send(val, validator, "validationResponse", [REQ, 100, RESP_URI, RESP, "hard-finality"], "the named validator answers 100");
    hasEvent(res, val, "ValidationResponse", { validatorAddress: validator.address, agentId: 7n, requestHash: REQ, response: 100, responseURI: RESP_URI, responseHash: RESP, tag: "hard-finality" });
    let blk = await pc.getBlock({ blockNumber: res.receipt.blockNumber });
    check(same(await read(val, "getValidationStatus", [REQ]), [validator.address, 7n, 100, RESP, "hard-finality", blk.timestamp]),
      "status: (validator, 7, 100, responseHash, \"hard-finality\", response time)");
    check((await read(val, "hasResponse", [REQ])) === true, "hasResponse = true");
    res = await send(val, validator, "validationResponse", [REQ, 40, "", ZERO_HASH, "soft"], "the validator answers again (40, \"soft\")");
    blk = await pc.getBlock({ blockNumber: res.receipt.blockNumber });
    check(same(await read(val, "getValidationStatus", [REQ]), [validator.address, 7n, 40, ZERO_HASH, "soft", blk.timestamp]), "a repeated response overwrites the status");
    const REQ2 = keccak256(toBytes(jcs({ ...credential, score: 1 })));
    await send(val, alice, "validationRequest", [validator.address, 7n, "ipfs://x", REQ2], "a second request for agent 7");
    check(same(await read(val, "getSummary", [7n, [], ""]), [1n, 40]), "getSummary(7) counts only answered requests: (1, 40)");
    await send(val, validator, "validationResponse", [REQ2, 0, "", ZERO_HASH, "soft"], "the validator answers 0 (failed)");
    check((await read(val, "hasResponse", [REQ2])) === true, "an answer of 0 is a response (hasResponse = true)");
    check(same(await read(val, "getSummary", [7n, [], ""]), [2n, 20]), "getSummary(7, [], \"\") = (2, 20)");
    check(same(await read(val, "getSummary", [7n, [stranger.address], ""]), [0n, 0]), "getSummary filtered by another validator = (0, 0)");
    check(same(await read(val, "getSummary", [7n, [stranger.address, validator.address], "soft"]), [2n, 20]), "getSummary filtered by [other, validator] and tag \"soft\" = (2, 20)");
    check(same(await read(val, "getSummary", [7n, [], "hard-finality"]), [0n, 0]), "getSummary with a tag no current answer has = (0, 0)");
    check(same(await read(val, "getAgentValidations", [7n]), [REQ, REQ2]), "getAgentValidations(7) = [REQ, REQ2]");
    check(same(await read(val, "getValidatorRequests", [validator.address]), [REQ, REQ2]), "getValidatorRequests(validator) = [REQ, REQ2]");

    console.log("ValidationRegistry with an ERC-721 identity registry (owner or operator only)");
    const ID_MOCK = mockAddress(0);
    await pc.request({ method: "anvil_setCode", params: [ID_MOCK, identityMock(alice.address, arbiter.address, bob.address)] });
    const valId = (await deploy("ValidationRegistry", bob, [ID_MOCK])).c;
    check((await read(valId, "getIdentityRegistry")) === ID_MOCK, "getIdentityRegistry() = the stand-in (agent 1 owned by alice)");
    const h = (n) => keccak256(toBytes(`request ${n}`));
    await send(valId, alice, "validationRequest", [validator.address, 1n, "", h(1)], "the owner requests");
    await send(valId, arbiter, "validationRequest", [validator.address, 1n, "", h(2)], "the getApproved address requests");
    await send(valId, bob, "validationRequest", [validator.address, 1n, "", h(3)], "an isApprovedForAll operator requests");
    await expectError(sim(valId, stranger, "validationRequest", [validator.address, 1n, "", h(4)]), "NotAgentOwnerOrOperator", [1n, stranger.address], "a stranger's request");
    await expectError(sim(valId, alice, "validationRequest", [validator.address, 2n, "", h(5)]), "AgentNotFound", [2n], "a request for an agent whose ownerOf reverts");

    // -------------------------------------------------------------- TicketCopies
    console.log("TicketCopies: ERC-165, games");
    for (const [id, want] of [["0x01ffc9a7", true], ["0xd9b67a26", true], ["0x0e89341c", true], ["0xffffffff", false], ["0x80ac58cd", false]])
      check((await read(tix, "supportsInterface", [id])) === want, `supportsInterface(${id}) = ${want}`);
    check((await read(tix, "token")) === usd.address && (await read(tix, "payee")) === PAYEE && (await read(tix, "owner")) === deployer.address,
      "token() = TestUSD, payee() = 0x…fee5, owner() = account 0");
    const PRICE = 2_500_000n; // 2.50 test dollars
    await expectError(sim(tix, alice, "setGame", [1n, PRICE, true]), "NotOwner", [alice.address], "setGame by a non-owner");
    res = await send(tix, deployer, "setGame", [1n, PRICE, true], "owner lists game 1 at 2.50");
    hasEvent(res, tix, "GameSet", { id: 1n, price: PRICE, open: true });
    hasEvent(res, tix, "URI", { value: COPIES_URI, id: 1n }, "first listing emits URI");
    res = await send(tix, deployer, "setGame", [1n, PRICE, false], "owner closes game 1");
    check(res.events.length === 1 && res.events[0].eventName === "GameSet", "a relisting emits GameSet only (no second URI)");
    check(same(await read(tix, "games", [1n]), [PRICE, false, true]), "games(1) = (2.50, closed, listed)");
    check((await read(tix, "uri", [1n])) === COPIES_URI, `uri(1) = "${COPIES_URI}"`);
    await expectError(sim(tix, alice, "buy", [1n, 1n]), "GameNotOpen", [1n], "buy of a closed game");
    await expectError(sim(tix, alice, "buy", [9n, 1n]), "GameNotOpen", [9n], "buy of an unlisted game");
    await send(tix, deployer, "setGame", [1n, PRICE, true], "owner reopens game 1");
    await expectError(sim(tix, alice, "buy", [1n, 0n]), "ZeroAmount", [], "buy of 0 copies");

    console.log("TicketCopies: buy");
    await expectError(sim(tix, alice, "buy", [1n, 3n]), "Error", ["ERC20: transfer amount exceeds allowance"], "buy without an allowance");
    await send(usd, alice, "approve", [tix.address, 3n * PRICE - 1n], "alice approves 7.499999");
    await expectError(sim(tix, alice, "buy", [1n, 3n]), "Error", ["ERC20: transfer amount exceeds allowance"], "buy with an allowance 1 unit short");
    await send(usd, alice, "approve", [tix.address, 3n * PRICE], "alice approves exactly 7.50");
    const [aUsd0, pUsd0] = await Promise.all([read(usd, "balanceOf", [alice.address]), read(usd, "balanceOf", [PAYEE])]);
    res = await send(tix, alice, "buy", [1n, 3n], "alice buys 3 copies of game 1");
    hasEvent(res, tix, "TransferSingle", { operator: alice.address, from: zeroAddress, to: alice.address, id: 1n, value: 3n }, "mint:");
    hasEvent(res, tix, "Bought", { buyer: alice.address, id: 1n, amount: 3n, paid: 3n * PRICE });
    const usdEvs = parseEventLogs({ abi: usd.abi, logs: res.receipt.logs.filter((l) => getAddress(l.address) === usd.address) });
    check(usdEvs.length === 1 && usdEvs[0].eventName === "Transfer" && same(usdEvs[0].args, { from: alice.address, to: PAYEE, value: 3n * PRICE }),
      `TestUSD Transfer ${show(usdEvs[0]?.args)} (alice -> payee, 7.50)`);
    const [aUsd1, pUsd1] = await Promise.all([read(usd, "balanceOf", [alice.address]), read(usd, "balanceOf", [PAYEE])]);
    check(aUsd0 - aUsd1 === 3n * PRICE && pUsd1 - pUsd0 === 3n * PRICE, `exactly price*amount = ${3n * PRICE} moved from alice to the payee`);
    check((await read(usd, "allowance", [alice.address, tix.address])) === 0n, "the allowance is used up");
    check((await read(tix, "balanceOf", [alice.address, 1n])) === 3n, "balanceOf(alice, 1) = 3");
    await send(tix, deployer, "setGame", [2n, 1_000_000n, true], "owner lists game 2 at 1.00");
    await send(usd, alice, "approve", [tix.address, 2_000_000n], "alice approves 2.00");
    await send(tix, alice, "buy", [2n, 2n], "alice buys 2 copies of game 2");
    await send(tix, deployer, "setGame", [3n, 0n, true], "owner lists game 3 for free");
    res = await send(tix, stranger, "buy", [3n, 1n], "a stranger without tokens or allowance takes a free copy");
    check(res.receipt.logs.every((l) => getAddress(l.address) === tix.address), "a free copy makes no token call");

    console.log("TicketCopies: transfers");
    res = await send(tix, alice, "safeTransferFrom", [alice.address, bob.address, 1n, 1n, "0x"], "alice gives bob 1 copy of game 1");
    hasEvent(res, tix, "TransferSingle", { operator: alice.address, from: alice.address, to: bob.address, id: 1n, value: 1n });
    check(same(await read(tix, "balanceOfBatch", [[alice.address, bob.address, alice.address, bob.address], [1n, 1n, 2n, 2n]]), [2n, 1n, 2n, 0n]),
      "balanceOfBatch([alice, bob, alice, bob], [1, 1, 2, 2]) = [2, 1, 2, 0]");
    await expectError(read(tix, "balanceOfBatch", [[alice.address], [1n, 2n]]), "ERC1155InvalidArrayLength", [2n, 1n], "balanceOfBatch with 1 account and 2 ids");
    await expectError(sim(tix, alice, "safeTransferFrom", [alice.address, bob.address, 1n, 5n, "0x"]), "ERC1155InsufficientBalance", [alice.address, 2n, 5n, 1n], "transfer of 5 copies out of 2");
    await expectError(sim(tix, stranger, "safeTransferFrom", [alice.address, stranger.address, 1n, 1n, "0x"]), "ERC1155MissingApprovalForAll", [stranger.address, alice.address], "transfer by a non-operator");
    await expectError(sim(tix, alice, "safeTransferFrom", [alice.address, zeroAddress, 1n, 1n, "0x"]), "ERC1155InvalidReceiver", [zeroAddress], "transfer to 0x0");
    await expectError(sim(tix, alice, "safeTransferFrom", [alice.address, rep.address, 1n, 1n, "0x"]), "ERC1155InvalidReceiver", [rep.address], "transfer to a contract without the hook (Reputation)");
    res = await send(tix, alice, "setApprovalForAll", [stranger.address, true], "alice approves an operator");
    hasEvent(res, tix, "ApprovalForAll", { account: alice.address, operator: stranger.address, approved: true });
    check((await read(tix, "isApprovedForAll", [alice.address, stranger.address])) === true, "isApprovedForAll(alice, operator) = true");
    res = await send(tix, stranger, "safeTransferFrom", [alice.address, bob.address, 2n, 1n, "0x"], "the operator moves 1 copy of game 2 to bob");
    hasEvent(res, tix, "TransferSingle", { operator: stranger.address, from: alice.address, to: bob.address, id: 2n, value: 1n });
    await send(tix, alice, "setApprovalForAll", [stranger.address, false], "alice revokes the operator");
    await expectError(sim(tix, stranger, "safeTransferFrom", [alice.address, bob.address, 2n, 1n, "0x"]), "ERC1155MissingApprovalForAll", [stranger.address, alice.address], "the revoked operator");

    const [ACC, SINGLE, WRONG] = [mockAddress(1), mockAddress(2), mockAddress(3)];
    for (const [a, code] of [[ACC, ACCEPTOR], [SINGLE, SINGLE_ONLY], [WRONG, WRONG_ANSWER]]) await pc.request({ method: "anvil_setCode", params: [a, code] });
    await send(tix, alice, "safeTransferFrom", [alice.address, ACC, 1n, 1n, "0xbeef"], "transfer to a contract that accepts");
    await expectError(sim(tix, alice, "safeTransferFrom", [alice.address, WRONG, 1n, 1n, "0x"]), "ERC1155InvalidReceiver", [WRONG], "transfer to a contract answering a wrong value");
    await send(tix, alice, "safeTransferFrom", [alice.address, SINGLE, 2n, 1n, "0x"], "transfer to a contract accepting single transfers only");
    await expectError(sim(tix, bob, "safeBatchTransferFrom", [bob.address, SINGLE, [1n, 2n], [1n, 1n], "0x"]), "ERC1155InvalidReceiver", [SINGLE], "batch to it (wrong batch magic)");
    await expectError(sim(tix, bob, "safeBatchTransferFrom", [bob.address, alice.address, [1n, 2n], [1n], "0x"]), "ERC1155InvalidArrayLength", [2n, 1n], "batch with 2 ids and 1 value");
    res = await send(tix, bob, "safeBatchTransferFrom", [bob.address, ACC, [1n, 2n], [1n, 1n], "0x"], "bob batch-transfers [1, 2] x [1, 1] to the accepting contract");
    hasEvent(res, tix, "TransferBatch", { operator: bob.address, from: bob.address, to: ACC, ids: [1n, 2n], values: [1n, 1n] });
    check(same(await read(tix, "balanceOfBatch", [[alice.address, bob.address, ACC, SINGLE, alice.address, bob.address, ACC, SINGLE], [1n, 1n, 1n, 1n, 2n, 2n, 2n, 2n]]), [1n, 0n, 2n, 0n, 0n, 0n, 1n, 1n]),
      "final balances: game 1 alice 1, bob 0, acceptor 2; game 2 alice 0, bob 0, acceptor 1, single-only 1");

    console.log("\ngas (first call of each)");
    for (const [k, v] of Object.entries(gas)) console.log(`  ${k.padEnd(34)} ${v}`);
  } finally {
    child.kill("SIGTERM");
  }
}

try {
  await main();
} catch (e) {
  failures++;
  console.error(`chain-fixtures-check: ${e.stack ?? e}`);
}
if (failures) {
  console.log(`\nchain-fixtures-check: FAILED (${failures} failure(s))`);
  process.exit(1);
}
console.log("\nchain-fixtures-check: all checks passed");
