#!/usr/bin/env node
// Conformance check of contracts/ToolRegistry.sol (ERC-8257 agent tool registry) on a throw-away anvil:
//   1. the ERC-165 ids (IToolRegistry 0xf1dc8075, IAccessPredicate 0xbdf9dc18) recomputed from selectors,
//      and the four event topic0 values, against the ERC's published values (pinned below);
//   2. deploy out/ToolRegistry.json (the committed artifact) and check supportsInterface, name, version;
//   3. registerTool (ids 1 then 2, ToolRegistered logs), updateToolMetadata, setAccessPredicate,
//      deregisterTool and their events, and every revert with its named custom error and arguments;
//   4. hasAccess / tryHasAccess: open access, and predicates installed with anvil_setCode as a few bytes
//      of hand-written EVM code (grant, deny, non-canonical word, revert, no return data, gas burner,
//      oversized return, no code at all).
// Prints the gas of each write; exits 0 only when every check passed. Takes about a second.
//
//   node contracts/registry-check.mjs           (after tests/tools.sh or `npm ci` in contracts/)
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startAnvil } from "./anvil.mjs";
import {
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  createWalletClient,
  decodeFunctionResult,
  encodeFunctionData,
  getAddress,
  http,
  parseEventLogs,
  toEventSelector,
  toFunctionSelector,
  zeroAddress,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { foundry } from "viem/chains";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const OUT = path.join(HERE, "out");

// Anvil's well-known public dev keys (accounts 0, 1, 2). Test use only.
const KEYS = [
  "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
  "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
  "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a",
];

// ERC-8257 values, as the ERC publishes them (recomputed once with `cast sig` /
// `cast keccak`). Topic0 values are pinned as prefix…suffix.
const ERC165_ID = "0x01ffc9a7";
const TOOL_REGISTRY_ID = "0xf1dc8075";
const ACCESS_PREDICATE_ID = "0xbdf9dc18";
const TOPICS = {
  "ToolRegistered(uint256,address,address,string,bytes32)": ["0xe7be7fd3", "c397"],
  "ToolMetadataUpdated(uint256,string,bytes32)": ["0x14f92d1a", "a414"],
  "AccessPredicateUpdated(uint256,address)": ["0x53e2d3a3", "d6ff"],
  "ToolDeregistered(uint256)": ["0x9add33e8", "d034"],
};
const ACCESS_PREDICATE_FUNCTIONS = [
  "hasAccess(uint256,address,bytes)",
  "name()",
  "getRequirements(uint256)",
];

// The ERC's free-tool test vector (ERC-8257 "Test Cases").
const URI_1 = "https://tools.example.com/.well-known/ai-tool/nft-price-oracle.json";
const HASH_1 = "0x786620b1a5d903c2ac4eafe964364292ca4b6ed763a13b29423c03ccca905af0";
const URI_2 = "https://tools.example.com/.well-known/ai-tool/premium-analytics.json";
const HASH_2 = "0xa71ef83ee66b702edb44f121510f8969e353df40b1e1587f8288fe6d352b448b";
const HASH_3 = "0x" + "33".repeat(32);
const ZERO_HASH = "0x" + "00".repeat(32);

// Hand-written predicate stand-ins (runtime code for anvil_setCode). Each answers every call the same way.
const word = (n) => n.toString(16).padStart(64, "0");
const returnsWord = (n) => `0x7f${word(n)}60005260206000f3`; // PUSH32 n; MSTORE at 0; RETURN 32 bytes
const MOCKS = {
  grant: returnsWord(1n), // claims ERC-165 and IAccessPredicate, and grants
  deny: returnsWord(0n), // claims nothing (accepted best-effort), denies
  two: returnsWord(2n), // non-canonical bool everywhere
  revert: "0x60006000fd", // REVERT(0, 0)
  stop: "0x00", // succeeds with no return data
  burner: "0x5b600056", // JUMPDEST; PUSH1 0; JUMP: loops until out of gas
  long: "0x600160005260406000f3", // returns 64 bytes (first word 1): not a bool
  // supportsInterface(0x01ffc9a7) -> true; every other call reverts: claims ERC-165, not IAccessPredicate
  erc165Only: "0x60043560e01c6301ffc9a714601357600080fd5b600160005260206000f3",
};
const mockAddress = (i) => getAddress(`0x${"5a".repeat(18)}${i.toString(16).padStart(4, "0")}`);
const NO_CODE = getAddress("0x000000000000000000000000000000000000dEaD");

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
const same = (a, b) => JSON.stringify(a, (_, v) => (typeof v === "bigint" ? v.toString() : v)) ===
  JSON.stringify(b, (_, v) => (typeof v === "bigint" ? v.toString() : v));
const show = (v) => JSON.stringify(v, (_, x) => (typeof x === "bigint" ? x.toString() : x));
const xorIds = (sigs) =>
  "0x" + sigs.reduce((acc, s) => (acc ^ parseInt(toFunctionSelector(s).slice(2), 16)) >>> 0, 0).toString(16).padStart(8, "0");

// The call must revert with custom error `errorName(args...)`, decoded from the artifact ABI.
async function expectError(promise, errorName, args, what) {
  try {
    await promise;
    return check(false, `${what}: expected ${errorName}, but the call succeeded`);
  } catch (e) {
    const rev = e instanceof BaseError ? e.walk((x) => x instanceof ContractFunctionRevertedError) : null;
    const got = rev?.data ? `${rev.data.errorName}(${(rev.data.args ?? []).map(String).join(", ")})` : `not a decoded custom error: ${e.shortMessage ?? e.message}`;
    const want = `${errorName}(${args.map(String).join(", ")})`;
    return check(got === want, `${what}: reverts ${want}${got === want ? "" : ` (got ${got})`}`);
  }
}

// ------------------------------------------------------------------ main
async function main() {
  const artifact = JSON.parse(fs.readFileSync(path.join(OUT, "ToolRegistry.json"), "utf8"));
  const abi = artifact.abi;

  console.log("ERC-165 ids and event topics (offline)");
  const fnSigs = abi
    .filter((e) => e.type === "function" && e.name !== "supportsInterface")
    .map((e) => `${e.name}(${e.inputs.map((i) => i.type).join(",")})`);
  check(fnSigs.length === 10, `artifact ABI has the 10 IToolRegistry functions (+ supportsInterface): ${fnSigs.map((s) => s.split("(")[0]).join(", ")}`);
  const regId = xorIds(fnSigs);
  check(regId === TOOL_REGISTRY_ID, `IToolRegistry interface id = XOR of the artifact's selectors = ${regId} (chain.md ${TOOL_REGISTRY_ID})`);
  const predId = xorIds(ACCESS_PREDICATE_FUNCTIONS);
  check(predId === ACCESS_PREDICATE_ID, `IAccessPredicate interface id = ${predId} (chain.md ${ACCESS_PREDICATE_ID})`);
  const topic0 = {};
  for (const [sig, [pre, suf]] of Object.entries(TOPICS)) {
    const t = toEventSelector(sig);
    const name = sig.split("(")[0];
    topic0[name] = t;
    const inAbi = abi.some((e) => e.type === "event" && `${e.name}(${e.inputs.map((i) => i.type).join(",")})` === sig);
    check(inAbi && t.startsWith(pre) && t.endsWith(suf), `topic0 ${sig} = ${t} (chain.md ${pre}…${suf}${inAbi ? "" : "; MISSING from the ABI"})`);
  }
  const errSigs = abi.filter((e) => e.type === "error").map((e) => `${e.name}(${e.inputs.map((i) => i.type).join(",")})`).sort();
  const wantErrs = ["InvalidAccessPredicate(address)", "InvalidManifestHash()", "InvalidMetadataURI()", "NotToolCreator(uint256,address)", "ToolIsDeregistered(uint256)", "ToolNotFound(uint256)"];
  check(same(errSigs, wantErrs), `errors: ${errSigs.join(", ")}`);

  const t0 = Date.now();
  const { child, url } = await startAnvil();
  console.log(`anvil ${url} (pid ${child.pid}, started in ${Date.now() - t0} ms)`);
  try {
    const transport = http(url);
    const pc = createPublicClient({ chain: foundry, transport });
    const [alice, bob, carol] = KEYS.map((k) => privateKeyToAccount(k)); // alice deploys; carol is a stranger
    const wallet = (acct) => createWalletClient({ account: acct, chain: foundry, transport });
    const gas = {};
    const send = async (acct, functionName, args, what) => {
      const { request } = await pc.simulateContract({ ...reg, account: acct, functionName, args });
      const hash = await wallet(acct).writeContract(request);
      const r = await pc.waitForTransactionReceipt({ hash });
      check(r.status === "success", `${what} (gas ${r.gasUsed})`);
      gas[functionName] ??= r.gasUsed;
      return { receipt: r, events: parseEventLogs({ abi, logs: r.logs }) };
    };
    const sim = (acct, functionName, args) => pc.simulateContract({ ...reg, account: acct, functionName, args });
    const read = (functionName, args = []) => pc.readContract({ ...reg, functionName, args });

    // -------------------------------------------------------------- deploy
    console.log("deploy");
    const dh = await wallet(alice).deployContract({ abi, bytecode: artifact.bytecode });
    const dr = await pc.waitForTransactionReceipt({ hash: dh });
    check(dr.status === "success", `deploy ToolRegistry at ${dr.contractAddress} (gas ${dr.gasUsed})`);
    const reg = { address: getAddress(dr.contractAddress), abi };
    check((await pc.getCode({ address: reg.address })) === artifact.deployedBytecode, "on-chain code = artifact deployedBytecode");
    for (const [id, want, what] of [
      [TOOL_REGISTRY_ID, true, "IToolRegistry"],
      [ERC165_ID, true, "IERC165"],
      [ACCESS_PREDICATE_ID, false, "IAccessPredicate"],
      ["0xffffffff", false, "0xffffffff (ERC-165: must be false)"],
      ["0x00000000", false, "0x00000000"],
    ]) {
      const got = await read("supportsInterface", [id]);
      check(got === want, `supportsInterface(${id}) = ${got} (${what})`);
    }
    const [name, version, count0] = await Promise.all([read("name"), read("version"), read("toolCount")]);
    check(name === "conduct ToolRegistry", `name() = "${name}"`);
    check(version === "0.2", `version() = "${version}"`);
    check(count0 === 0n, `toolCount() = ${count0} before any registration`);

    // -------------------------------------------------------------- register
    console.log("registerTool");
    for (const [i, code] of Object.values(MOCKS).entries()) await pc.request({ method: "anvil_setCode", params: [mockAddress(i), code] });
    const mock = Object.fromEntries(Object.keys(MOCKS).map((k, i) => [k, mockAddress(i)]));

    const r1 = await send(alice, "registerTool", [URI_1, HASH_1, zeroAddress], "alice registers tool 1 (open access)");
    const e1 = r1.events.find((e) => e.eventName === "ToolRegistered");
    check(e1 && same(e1.args, { toolId: 1n, creator: alice.address, accessPredicate: zeroAddress, metadataURI: URI_1, manifestHash: HASH_1 }),
      `ToolRegistered ${show(e1?.args)}`);
    check(r1.receipt.logs.length === 1 && r1.receipt.logs[0].topics[0] === topic0.ToolRegistered, "one log, topic0 = ToolRegistered");
    const r2 = await send(bob, "registerTool", [URI_2, HASH_2, mock.grant], "bob registers tool 2 (predicate claiming IAccessPredicate)");
    const e2 = r2.events.find((e) => e.eventName === "ToolRegistered");
    check(e2?.args.toolId === 2n && e2.args.creator === bob.address && e2.args.accessPredicate === mock.grant, `ToolRegistered toolId 2, creator bob, predicate ${mock.grant}`);
    check((await read("toolCount")) === 2n, "toolCount() = 2");
    check(same(await read("getToolConfig", [1n]), { creator: alice.address, metadataURI: URI_1, manifestHash: HASH_1, accessPredicate: zeroAddress }),
      "getToolConfig(1) = {alice, URI_1, HASH_1, 0x0}");
    const logs = await pc.getLogs({ address: reg.address, event: abi.find((e) => e.name === "ToolRegistered"), fromBlock: 0n });
    check(logs.length === 2 && logs.map((l) => l.args.toolId).join() === "1,2", "eth_getLogs by ToolRegistered returns tools 1, 2");

    await expectError(sim(alice, "registerTool", ["", HASH_1, zeroAddress]), "InvalidMetadataURI", [], "empty metadataURI");
    await expectError(sim(alice, "registerTool", ["h".repeat(2049), HASH_1, zeroAddress]), "InvalidMetadataURI", [], "2,049-byte metadataURI");
    check((await sim(alice, "registerTool", ["h".repeat(2048), HASH_1, zeroAddress])).result === 3n, "2,048-byte metadataURI is accepted (would be id 3)");
    await expectError(sim(alice, "registerTool", [URI_1, ZERO_HASH, zeroAddress]), "InvalidManifestHash", [], "zero manifestHash");
    await expectError(sim(alice, "registerTool", [URI_1, HASH_1, reg.address]), "InvalidAccessPredicate", [reg.address], "predicate = the registry (ERC-165 without IAccessPredicate)");
    await expectError(sim(alice, "registerTool", [URI_1, HASH_1, mock.erc165Only]), "InvalidAccessPredicate", [mock.erc165Only], "predicate claiming ERC-165 whose IAccessPredicate probe reverts");
    // ERC-8257 "Predicate Validation at Registration" steps 2-4: accepted best-effort.
    for (const k of ["deny", "two", "revert", "stop", "burner"])
      check((await sim(alice, "registerTool", [URI_1, HASH_1, mock[k]])).result === 3n, `predicate "${k}" (does not claim ERC-165) is accepted`);
    check((await sim(alice, "registerTool", [URI_1, HASH_1, NO_CODE])).result === 3n, "predicate without code is accepted (ERC-8257 step 2)");

    // -------------------------------------------------------------- updateToolMetadata
    console.log("updateToolMetadata");
    const u = await send(alice, "updateToolMetadata", [1n, URI_2, HASH_3], "alice updates tool 1");
    const ue = u.events.find((e) => e.eventName === "ToolMetadataUpdated");
    check(ue && same(ue.args, { toolId: 1n, newURI: URI_2, newHash: HASH_3 }) && u.receipt.logs[0].topics[0] === topic0.ToolMetadataUpdated, `ToolMetadataUpdated ${show(ue?.args)}`);
    check(same(await read("getToolConfig", [1n]), { creator: alice.address, metadataURI: URI_2, manifestHash: HASH_3, accessPredicate: zeroAddress }), "getToolConfig(1) shows the new URI and hash");
    const same1 = await send(alice, "updateToolMetadata", [1n, URI_2, HASH_3], "identical update");
    check(same1.receipt.logs.length === 0, "identical update emits nothing (ERC: MAY skip)");
    const hashOnly = await send(alice, "updateToolMetadata", [1n, URI_2, HASH_1], "update of the hash alone");
    check(hashOnly.events[0]?.eventName === "ToolMetadataUpdated", "hash-only change emits ToolMetadataUpdated");
    const uriOnly = await send(alice, "updateToolMetadata", [1n, URI_1, HASH_1], "update of the URI alone");
    check(uriOnly.events[0]?.eventName === "ToolMetadataUpdated", "URI-only change emits ToolMetadataUpdated");
    await expectError(sim(carol, "updateToolMetadata", [1n, URI_2, HASH_2]), "NotToolCreator", [1n, carol.address], "update by a stranger");
    await expectError(sim(bob, "updateToolMetadata", [1n, URI_2, HASH_2]), "NotToolCreator", [1n, bob.address], "update of alice's tool by bob");
    await expectError(sim(alice, "updateToolMetadata", [99n, URI_2, HASH_2]), "ToolNotFound", [99n], "update of unknown id 99");
    await expectError(sim(alice, "updateToolMetadata", [0n, URI_2, HASH_2]), "ToolNotFound", [0n], "update of id 0");
    await expectError(sim(alice, "updateToolMetadata", [1n, "", HASH_2]), "InvalidMetadataURI", [], "update to an empty URI");
    await expectError(sim(alice, "updateToolMetadata", [1n, "h".repeat(2049), HASH_2]), "InvalidMetadataURI", [], "update to a 2,049-byte URI");
    await expectError(sim(alice, "updateToolMetadata", [1n, URI_2, ZERO_HASH]), "InvalidManifestHash", [], "update to a zero hash");
    await expectError(sim(carol, "updateToolMetadata", [1n, "", ZERO_HASH]), "NotToolCreator", [1n, carol.address], "stranger with bad arguments: the creator check comes first");

    // -------------------------------------------------------------- access
    console.log("hasAccess / tryHasAccess");
    const access = async (id) => [await read("hasAccess", [id, carol.address, "0x"]), await read("tryHasAccess", [id, carol.address, "0x1234"])];
    let [h, t] = await access(1n);
    check(h === true && same(t, [true, true]), `open tool 1: hasAccess ${h}, tryHasAccess ${show(t)}`);
    [h, t] = await access(2n);
    check(h === true && same(t, [true, true]), `tool 2, predicate answers 1: hasAccess ${h}, tryHasAccess ${show(t)}`);
    for (const [k, wantT] of [
      ["deny", [true, false]],
      ["two", [false, false]],
      ["revert", [false, false]],
      ["stop", [false, false]],
      ["long", [false, false]],
      ["burner", [false, false]],
    ]) {
      const r = await send(bob, "setAccessPredicate", [2n, mock[k]], `bob sets tool 2's predicate to "${k}"`);
      const pe = r.events.find((e) => e.eventName === "AccessPredicateUpdated");
      check(pe && same(pe.args, { toolId: 2n, newPredicate: mock[k] }) && r.receipt.logs[0].topics[0] === topic0.AccessPredicateUpdated, `AccessPredicateUpdated ${show(pe?.args)}`);
      [h, t] = await access(2n);
      check(h === false && same(t, wantT), `predicate "${k}": hasAccess ${h}, tryHasAccess ${show(t)}`);
    }
    // The burner is still set: the registry gives the predicate at most 200,000 gas, so the call
    // returns, and a transaction with 3M gas available spends about that much, not 63/64 of it.
    const data = encodeFunctionData({ abi, functionName: "tryHasAccess", args: [2n, carol.address, "0x"] });
    const { data: ret } = await pc.call({ to: reg.address, data, gas: 3_000_000n });
    check(same(decodeFunctionResult({ abi, functionName: "tryHasAccess", data: ret }), [false, false]), "gas burner: tryHasAccess returns (false, false) in a 3M-gas eth_call");
    const burn = await pc.waitForTransactionReceipt({ hash: await wallet(carol).sendTransaction({ to: reg.address, data, gas: 3_000_000n }) });
    check(burn.status === "success" && burn.gasUsed > 200_000n && burn.gasUsed < 260_000n,
      `gas burner: a 3M-gas transaction calling tryHasAccess succeeds and uses ${burn.gasUsed} gas (predicate cap 200,000)`);
    const idem = await send(bob, "setAccessPredicate", [2n, mock.burner], "setAccessPredicate to the current predicate");
    check(idem.receipt.logs.length === 0, "setting the same predicate emits nothing (ERC: MAY skip)");
    await send(bob, "setAccessPredicate", [2n, NO_CODE], "bob sets tool 2's predicate to an address without code");
    [h, t] = await access(2n);
    check(h === false && same(t, [false, false]), `predicate without code: hasAccess ${h}, tryHasAccess ${show(t)} (malfunction, not open)`);
    await send(bob, "setAccessPredicate", [2n, zeroAddress], "bob opens tool 2 (predicate 0x0)");
    [h, t] = await access(2n);
    check(h === true && same(t, [true, true]), `tool 2 open again: hasAccess ${h}, tryHasAccess ${show(t)}`);
    await expectError(sim(bob, "setAccessPredicate", [2n, reg.address]), "InvalidAccessPredicate", [reg.address], "setAccessPredicate to the registry");
    await expectError(sim(bob, "setAccessPredicate", [2n, mock.erc165Only]), "InvalidAccessPredicate", [mock.erc165Only], "setAccessPredicate to an ERC-165-only contract");
    await expectError(sim(alice, "setAccessPredicate", [2n, mock.grant]), "NotToolCreator", [2n, alice.address], "setAccessPredicate by a non-creator");
    await expectError(sim(bob, "setAccessPredicate", [7n, mock.grant]), "ToolNotFound", [7n], "setAccessPredicate on unknown id 7");
    await expectError(read("hasAccess", [3n, carol.address, "0x"]), "ToolNotFound", [3n], "hasAccess on unknown id 3");
    await expectError(read("tryHasAccess", [3n, carol.address, "0x"]), "ToolNotFound", [3n], "tryHasAccess on unknown id 3");
    await expectError(read("getToolConfig", [0n]), "ToolNotFound", [0n], "getToolConfig(0)");

    // -------------------------------------------------------------- deregister
    console.log("deregisterTool");
    await expectError(sim(carol, "deregisterTool", [1n]), "NotToolCreator", [1n, carol.address], "deregister by a stranger");
    await expectError(sim(alice, "deregisterTool", [5n]), "ToolNotFound", [5n], "deregister of unknown id 5");
    const d = await send(alice, "deregisterTool", [1n], "alice deregisters tool 1");
    const de = d.events.find((e) => e.eventName === "ToolDeregistered");
    check(de && same(de.args, { toolId: 1n }) && d.receipt.logs[0].topics[0] === topic0.ToolDeregistered, `ToolDeregistered ${show(de?.args)}`);
    await expectError(read("getToolConfig", [1n]), "ToolIsDeregistered", [1n], "getToolConfig of a deregistered tool");
    await expectError(read("hasAccess", [1n, carol.address, "0x"]), "ToolIsDeregistered", [1n], "hasAccess on a deregistered tool");
    await expectError(read("tryHasAccess", [1n, carol.address, "0x"]), "ToolIsDeregistered", [1n], "tryHasAccess on a deregistered tool");
    await expectError(sim(alice, "updateToolMetadata", [1n, URI_1, HASH_1]), "ToolIsDeregistered", [1n], "updateToolMetadata on a deregistered tool");
    await expectError(sim(alice, "setAccessPredicate", [1n, mock.grant]), "ToolIsDeregistered", [1n], "setAccessPredicate on a deregistered tool");
    await expectError(sim(alice, "deregisterTool", [1n]), "ToolIsDeregistered", [1n], "deregistering it again");
    await expectError(sim(carol, "updateToolMetadata", [1n, "", ZERO_HASH]), "ToolIsDeregistered", [1n], "a stranger's bad update of it (the tombstone comes first)");
    check((await read("toolCount")) === 2n, "toolCount() still 2 (high-water mark)");
    const r3 = await send(carol, "registerTool", [URI_1, HASH_1, mock.deny], "carol registers a new tool");
    check(r3.events[0]?.args.toolId === 3n, "the next id is 3 (ids are never reused)");
    check((await read("toolCount")) === 3n, "toolCount() = 3");
    check(same(await read("getToolConfig", [2n]), { creator: bob.address, metadataURI: URI_2, manifestHash: HASH_2, accessPredicate: zeroAddress }), "tool 2 is untouched");

    console.log("\ngas (first call of each, on a fresh registry)");
    for (const [k, v] of Object.entries(gas)) console.log(`  ${k.padEnd(20)} ${v}`);
    console.log(`  (registerTool with a ${URI_1.length}-byte URI and no predicate: ${gas.registerTool})`);
  } finally {
    child.kill("SIGTERM");
  }
}

try {
  await main();
} catch (e) {
  failures++;
  console.error(`registry-check: ${e.stack ?? e}`);
}
if (failures) {
  console.log(`\nregistry-check: FAILED (${failures} failure(s))`);
  process.exit(1);
}
console.log("\nregistry-check: all checks passed");
