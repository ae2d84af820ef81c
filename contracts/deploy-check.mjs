#!/usr/bin/env node
// Self-contained smoke check of the x402 on-chain fixtures, and a reference for the Rust integration:
//   1. start anvil (the pinned npm binary, or $ANVIL_BIN) on a free loopback port;
//   2. deploy TestUSD from the committed artifact contracts/out/TestUSD.json and mint to the payer;
//   3. EIP-3009: payer signs TransferWithAuthorization (viem signTypedData), facilitator submits it
//      (both the (v,r,s) and the `bytes signature` overloads), plus the refusals (replay, high-s,
//      not-yet-valid, expired), receiveWithAuthorization and cancelAuthorization;
//   4. EIP-2612: payer signs a Permit giving Permit2 an allowance, facilitator submits it;
//   5. Permit2: anvil_setCode the vendored runtime at 0x000000000022D473030F116dDEE9F6B43aC78BA3;
//   6. x402ExactPermit2Proxy: the vendored init code through the CREATE2 deployer with x402's salt,
//      landing at 0x402085c248EeA27D92E8b30b2C58ed07f9E20001; then one x402 "exact"/permit2 payment
//      (PermitWitnessTransferFrom signed by the payer, proxy.settle sent by the facilitator).
// Prints addresses and balances; exits 0 only when every step and check passed.
//
//   node contracts/deploy-check.mjs            (after tests/tools.sh or `npm ci` in contracts/)
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startAnvil } from "./anvil.mjs";
import {
  createPublicClient,
  createWalletClient,
  http,
  keccak256,
  concat,
  getAddress,
  getContractAddress,
  hashDomain,
  parseAbi,
  parseSignature,
  serializeSignature,
  maxUint256,
  toHex,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { foundry } from "viem/chains";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const OUT = path.join(HERE, "out");

// Canonical addresses and pinned hashes (see out/SOURCES.md).
const PERMIT2 = "0x000000000022D473030F116dDEE9F6B43aC78BA3";
const CREATE2_DEPLOYER = "0x4e59b44847b379578588920cA78FbF26c0B4956C";
const X402_EXACT_PROXY = "0x402085c248EeA27D92E8b30b2C58ed07f9E20001";
const X402_EXACT_SALT = "0x0000000000000000000000000000000000000000000000003000000007263b0e";
const PERMIT2_RUNTIME_KECCAK = "0xc67d1657868aa5146eaf24fb879fb1fdec3d2d493b3683a61c9c2f4fb2851131";
const PROXY_INITCODE_KECCAK = "0xe774d1d5a07218946ab54efe010b300481478b86861bb17d69c98a57f68a604c";

// Anvil's well-known public dev keys (accounts 0, 1, 2). Test use only.
const FACILITATOR_KEY = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
const PAYER_KEY = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";
const PAY_TO_KEY = "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a";

const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

const PROXY_ABI = parseAbi([
  "function PERMIT2() view returns (address)",
  "function WITNESS_TYPEHASH() view returns (bytes32)",
  "function WITNESS_TYPE_STRING() view returns (string)",
  "function settle(((address token,uint256 amount) permitted,uint256 nonce,uint256 deadline) permit,address owner,(address to,uint256 validAfter) witness,bytes signature)",
  "function settleWithPermit((uint256 value,uint256 deadline,bytes32 r,bytes32 s,uint8 v) permit2612,((address token,uint256 amount) permitted,uint256 nonce,uint256 deadline) permit,address owner,(address to,uint256 validAfter) witness,bytes signature)",
  "event Settled()",
  "event SettledWithPermit()",
  "error InvalidAmount()",
  "error InvalidDestination()",
  "error InvalidOwner()",
  "error InvalidPermit2Address()",
  "error PaymentTooEarly()",
  "error Permit2612AmountMismatch()",
  "error ReentrancyGuardReentrantCall()",
  // Permit2's errors, which bubble up through the proxy
  "error InvalidSigner()",
  "error InvalidNonce()",
  "error InvalidSignature()",
  "error InvalidSignatureLength()",
  "error InvalidContractSignature()",
  "error SignatureExpired(uint256 signatureDeadline)",
  "error InvalidAmount(uint256 maxAmount)",
]);
const PERMIT2_ABI = parseAbi([
  "function DOMAIN_SEPARATOR() view returns (bytes32)",
  "function nonceBitmap(address, uint256) view returns (uint256)",
]);

const TRANSFER_WITH_AUTHORIZATION_TYPES = {
  TransferWithAuthorization: [
    { name: "from", type: "address" },
    { name: "to", type: "address" },
    { name: "value", type: "uint256" },
    { name: "validAfter", type: "uint256" },
    { name: "validBefore", type: "uint256" },
    { name: "nonce", type: "bytes32" },
  ],
};
const RECEIVE_WITH_AUTHORIZATION_TYPES = {
  ReceiveWithAuthorization: TRANSFER_WITH_AUTHORIZATION_TYPES.TransferWithAuthorization,
};
const CANCEL_AUTHORIZATION_TYPES = {
  CancelAuthorization: [
    { name: "authorizer", type: "address" },
    { name: "nonce", type: "bytes32" },
  ],
};
const PERMIT_TYPES = {
  Permit: [
    { name: "owner", type: "address" },
    { name: "spender", type: "address" },
    { name: "value", type: "uint256" },
    { name: "nonce", type: "uint256" },
    { name: "deadline", type: "uint256" },
  ],
};
// x402 `exact` scheme, assetTransferMethod "permit2" (x402 specs/schemes/exact/scheme_exact_evm.md).
const PERMIT2_WITNESS_TYPES = {
  PermitWitnessTransferFrom: [
    { name: "permitted", type: "TokenPermissions" },
    { name: "spender", type: "address" },
    { name: "nonce", type: "uint256" },
    { name: "deadline", type: "uint256" },
    { name: "witness", type: "Witness" },
  ],
  TokenPermissions: [
    { name: "token", type: "address" },
    { name: "amount", type: "uint256" },
  ],
  Witness: [
    { name: "to", type: "address" },
    { name: "validAfter", type: "uint256" },
  ],
};

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
function die(msg) {
  throw new Error(msg);
}
const readHex = (f) => {
  const t = fs.readFileSync(path.join(OUT, f), "utf8").trim();
  if (!/^0x([0-9a-f]{2})+$/i.test(t)) die(`${f}: not a 0x-prefixed hex string`);
  return t.toLowerCase();
};
const randomBytes32 = () => toHex(crypto.getRandomValues(new Uint8Array(32)));
const fmtUsd = (v) => `${v / 1_000_000n}.${(v % 1_000_000n).toString().padStart(6, "0")}`;

async function expectRevert(promise, reason, what) {
  try {
    await promise;
    return check(false, `${what} (expected revert "${reason}", but the call succeeded)`);
  } catch (e) {
    const msg = `${e.shortMessage ?? ""}\n${e.message ?? e}`;
    return check(msg.includes(reason), `${what} reverts with "${reason}"${msg.includes(reason) ? "" : ` (got: ${e.shortMessage ?? e.message})`}`);
  }
}

// ------------------------------------------------------------------ main
async function main() {
  const artifact = JSON.parse(fs.readFileSync(path.join(OUT, "TestUSD.json"), "utf8"));
  const permit2Runtime = readHex("Permit2.runtime.hex");
  const proxyInitCode = readHex("X402ExactPermit2Proxy.initcode.hex");
  check(keccak256(permit2Runtime) === PERMIT2_RUNTIME_KECCAK, `out/Permit2.runtime.hex keccak256 = ${PERMIT2_RUNTIME_KECCAK}`);
  check(keccak256(proxyInitCode) === PROXY_INITCODE_KECCAK, `out/X402ExactPermit2Proxy.initcode.hex keccak256 = ${PROXY_INITCODE_KECCAK}`);
  check(
    getContractAddress({ opcode: "CREATE2", from: CREATE2_DEPLOYER, salt: X402_EXACT_SALT, bytecode: proxyInitCode }) === X402_EXACT_PROXY,
    `CREATE2(deployer, salt, initcode) = ${X402_EXACT_PROXY}`,
  );

  const t0 = Date.now();
  const { child, url } = await startAnvil();
  console.log(`anvil ${url} (pid ${child.pid}, started in ${Date.now() - t0} ms)`);
  try {
    const transport = http(url);
    const pc = createPublicClient({ chain: foundry, transport });
    const facilitator = privateKeyToAccount(FACILITATOR_KEY);
    const payer = privateKeyToAccount(PAYER_KEY);
    const payTo = privateKeyToAccount(PAY_TO_KEY);
    const fc = createWalletClient({ account: facilitator, chain: foundry, transport });
    const payToClient = createWalletClient({ account: payTo, chain: foundry, transport });
    const send = async (p, what) => {
      const hash = await p;
      const r = await pc.waitForTransactionReceipt({ hash });
      check(r.status === "success", `${what} (tx ${hash}, gas ${r.gasUsed})`);
      return r;
    };
    const chainId = await pc.getChainId();
    check(chainId === 31337, `chain id ${chainId}`);
    const now = async () => (await pc.getBlock()).timestamp;

    // -------------------------------------------------------------- TestUSD
    console.log("TestUSD");
    const dep = await send(fc.deployContract({ abi: artifact.abi, bytecode: artifact.bytecode }), "deploy TestUSD");
    const token = getAddress(dep.contractAddress);
    const usd = { address: token, abi: artifact.abi };
    const read = (functionName, args = []) => pc.readContract({ ...usd, functionName, args });
    const write = (client, functionName, args) => client.writeContract({ ...usd, functionName, args });
    check((await pc.getCode({ address: token })) === artifact.deployedBytecode, "on-chain code = artifact deployedBytecode");
    const [name, version, decimals, symbol] = await Promise.all([read("name"), read("version"), read("decimals"), read("symbol")]);
    check(name === "USD Coin" && version === "2" && decimals === 6, `name "${name}", version "${version}", decimals ${decimals}, symbol ${symbol}`);
    const domain = { name, version, chainId, verifyingContract: token };
    check((await read("DOMAIN_SEPARATOR")) === hashDomain({ domain, types: { EIP712Domain: [
      { name: "name", type: "string" }, { name: "version", type: "string" },
      { name: "chainId", type: "uint256" }, { name: "verifyingContract", type: "address" }] } }), "DOMAIN_SEPARATOR = EIP-712 hash of {USD Coin, 2, chainId, token}");

    await send(write(fc, "mint", [payer.address, 10_000_000n]), "mint 10 USDC to payer");
    check((await read("balanceOf", [payer.address])) === 10_000_000n, "payer balance 10.000000");

    // -------------------------------------------------------------- EIP-3009
    console.log("EIP-3009");
    const authMsg = async (value, extra = {}) => ({
      from: payer.address,
      to: payTo.address,
      value,
      validAfter: 0n,
      validBefore: (await now()) + 600n,
      nonce: randomBytes32(),
      ...extra,
    });
    const signAuth = (message, types = TRANSFER_WITH_AUTHORIZATION_TYPES) =>
      payer.signTypedData({ domain, types, primaryType: Object.keys(types)[0], message });
    const args6 = (m) => [m.from, m.to, m.value, m.validAfter, m.validBefore, m.nonce];

    const a1 = await authMsg(100_000n);
    const sig1 = await signAuth(a1);
    const { r, s, v } = parseSignature(sig1);
    const tw = await send(write(fc, "transferWithAuthorization", [...args6(a1), Number(v), r, s]), "transferWithAuthorization(v,r,s) 0.100000 payer -> payTo");
    check(tw.logs.length === 2, "emits AuthorizationUsed + Transfer");
    check((await read("authorizationState", [payer.address, a1.nonce])) === true, "authorizationState(payer, nonce) = true");
    await expectRevert(
      pc.simulateContract({ ...usd, account: facilitator, functionName: "transferWithAuthorization", args: [...args6(a1), sig1] }),
      "FiatTokenV2: authorization is used or canceled", "replay of the same nonce");

    const a2 = await authMsg(100_000n);
    await send(write(fc, "transferWithAuthorization", [...args6(a2), await signAuth(a2)]), "transferWithAuthorization(bytes signature) 0.100000");

    const a3 = await authMsg(1n);
    const p3 = parseSignature(await signAuth(a3));
    const highS = serializeSignature({ r: p3.r, s: toHex(SECP256K1_N - BigInt(p3.s), { size: 32 }), yParity: 1 - p3.yParity });
    await expectRevert(
      pc.simulateContract({ ...usd, account: facilitator, functionName: "transferWithAuthorization", args: [...args6(a3), highS] }),
      "ECRecover: invalid signature 's' value", "high-s (malleated) signature");
    await expectRevert(
      pc.simulateContract({ ...usd, account: facilitator, functionName: "transferWithAuthorization", args: [...args6(a3), 29, p3.r, p3.s] }),
      "ECRecover: invalid signature 'v' value", "v = 29");
    const wrongTo = { ...a3, to: facilitator.address };
    await expectRevert(
      pc.simulateContract({ ...usd, account: facilitator, functionName: "transferWithAuthorization", args: [...args6(wrongTo), await signAuth(a3)] }),
      "FiatTokenV2: invalid signature", "recipient changed after signing");
    const future = await authMsg(1n, { validAfter: (await now()) + 3600n, validBefore: (await now()) + 7200n });
    await expectRevert(
      pc.simulateContract({ ...usd, account: facilitator, functionName: "transferWithAuthorization", args: [...args6(future), await signAuth(future)] }),
      "FiatTokenV2: authorization is not yet valid", "validAfter in the future");
    const expired = await authMsg(1n, { validBefore: (await now()) - 1n });
    await expectRevert(
      pc.simulateContract({ ...usd, account: facilitator, functionName: "transferWithAuthorization", args: [...args6(expired), await signAuth(expired)] }),
      "FiatTokenV2: authorization is expired", "validBefore in the past");

    const a4 = await authMsg(50_000n);
    const sig4 = await signAuth(a4, RECEIVE_WITH_AUTHORIZATION_TYPES);
    await expectRevert(
      pc.simulateContract({ ...usd, account: facilitator, functionName: "receiveWithAuthorization", args: [...args6(a4), sig4] }),
      "FiatTokenV2: caller must be the payee", "receiveWithAuthorization sent by a third party");
    await send(write(payToClient, "receiveWithAuthorization", [...args6(a4), sig4]), "receiveWithAuthorization 0.050000 sent by the payee");

    const cancelNonce = randomBytes32();
    const cancelSig = await payer.signTypedData({ domain, types: CANCEL_AUTHORIZATION_TYPES, primaryType: "CancelAuthorization",
      message: { authorizer: payer.address, nonce: cancelNonce } });
    await send(write(fc, "cancelAuthorization", [payer.address, cancelNonce, cancelSig]), "cancelAuthorization");
    const a5 = await authMsg(1n, { nonce: cancelNonce });
    await expectRevert(
      pc.simulateContract({ ...usd, account: facilitator, functionName: "transferWithAuthorization", args: [...args6(a5), await signAuth(a5)] }),
      "FiatTokenV2: authorization is used or canceled", "transfer with a canceled nonce");

    // -------------------------------------------------------------- EIP-2612
    console.log("EIP-2612");
    const permitNonce = await read("nonces", [payer.address]);
    const deadline = (await now()) + 600n;
    const permitSig = await payer.signTypedData({ domain, types: PERMIT_TYPES, primaryType: "Permit",
      message: { owner: payer.address, spender: PERMIT2, value: maxUint256, nonce: permitNonce, deadline } });
    const pp = parseSignature(permitSig);
    await send(write(fc, "permit", [payer.address, PERMIT2, maxUint256, deadline, Number(pp.v), pp.r, pp.s]),
      "permit(payer -> Permit2, max) via (v,r,s), sent by the facilitator");
    check((await read("allowance", [payer.address, PERMIT2])) === maxUint256, "allowance(payer, Permit2) = max");
    check((await read("nonces", [payer.address])) === permitNonce + 1n, "nonces(payer) incremented");
    await expectRevert(
      pc.simulateContract({ ...usd, account: facilitator, functionName: "permit", args: [payer.address, PERMIT2, maxUint256, deadline, permitSig] }),
      "EIP2612: invalid signature", "permit replay (stale nonce)");

    // -------------------------------------------------------------- Permit2 + x402ExactPermit2Proxy
    console.log("Permit2 + x402ExactPermit2Proxy");
    await pc.request({ method: "anvil_setCode", params: [PERMIT2, permit2Runtime] });
    const p2code = await pc.getCode({ address: PERMIT2 });
    check(keccak256(p2code) === PERMIT2_RUNTIME_KECCAK, `Permit2 code at ${PERMIT2} (${(p2code.length - 2) / 2} bytes, Ethereum mainnet codehash)`);
    const p2ds = await pc.readContract({ address: PERMIT2, abi: PERMIT2_ABI, functionName: "DOMAIN_SEPARATOR" });
    const p2domain = { name: "Permit2", chainId, verifyingContract: PERMIT2 };
    check(p2ds === hashDomain({ domain: p2domain, types: { EIP712Domain: [
      { name: "name", type: "string" }, { name: "chainId", type: "uint256" }, { name: "verifyingContract", type: "address" }] } }),
      "Permit2 DOMAIN_SEPARATOR = EIP-712 hash of {Permit2, chainId, 0x…22D4…8BA3}");

    check((await pc.getCode({ address: CREATE2_DEPLOYER })) !== undefined, `CREATE2 deployer present at ${CREATE2_DEPLOYER}`);
    if ((await pc.getCode({ address: X402_EXACT_PROXY })) === undefined) {
      await send(fc.sendTransaction({ to: CREATE2_DEPLOYER, data: concat([X402_EXACT_SALT, proxyInitCode]) }),
        "CREATE2 deploy of x402ExactPermit2Proxy (salt ‖ initcode to the deterministic deployer)");
    }
    const proxyCode = await pc.getCode({ address: X402_EXACT_PROXY });
    check(proxyCode !== undefined && proxyCode.length > 2, `x402ExactPermit2Proxy code at ${X402_EXACT_PROXY} (${proxyCode ? (proxyCode.length - 2) / 2 : 0} bytes, keccak ${proxyCode ? keccak256(proxyCode) : "-"})`);
    const proxy = { address: X402_EXACT_PROXY, abi: PROXY_ABI };
    check(getAddress(await pc.readContract({ ...proxy, functionName: "PERMIT2" })) === PERMIT2, "proxy.PERMIT2() = canonical Permit2");
    const wts = await pc.readContract({ ...proxy, functionName: "WITNESS_TYPE_STRING" });
    check(wts === "Witness witness)TokenPermissions(address token,uint256 amount)Witness(address to,uint256 validAfter)", `proxy.WITNESS_TYPE_STRING = "${wts}"`);

    // One x402 exact/permit2 payment: the payer signs, the facilitator settles through the proxy.
    const before = { payer: await read("balanceOf", [payer.address]), payTo: await read("balanceOf", [payTo.address]) };
    const t = await now();
    const permit = { permitted: { token, amount: 250_000n }, nonce: BigInt(randomBytes32()), deadline: t + 600n };
    const witness = { to: payTo.address, validAfter: t - 60n };
    const p2sig = await payer.signTypedData({ domain: p2domain, types: PERMIT2_WITNESS_TYPES, primaryType: "PermitWitnessTransferFrom",
      message: { ...permit, spender: X402_EXACT_PROXY, witness } });
    await expectRevert(
      pc.simulateContract({ ...proxy, account: facilitator, functionName: "settle", args: [permit, payer.address, { ...witness, to: facilitator.address }, p2sig] }),
      "InvalidSigner", "proxy.settle with the witness recipient changed (Permit2 refuses the signature)");
    await send(pc.simulateContract({ ...proxy, account: facilitator, functionName: "settle", args: [permit, payer.address, witness, p2sig] })
      .then(({ request }) => fc.writeContract(request)), "proxy.settle: 0.250000 payer -> payTo via Permit2 witness transfer");
    const after = { payer: await read("balanceOf", [payer.address]), payTo: await read("balanceOf", [payTo.address]) };
    check(before.payer - after.payer === 250_000n && after.payTo - before.payTo === 250_000n, "balances moved by exactly 0.250000");
    await expectRevert(
      pc.simulateContract({ ...proxy, account: facilitator, functionName: "settle", args: [permit, payer.address, witness, p2sig] }),
      "InvalidNonce", "replay of the Permit2 nonce");

    // -------------------------------------------------------------- summary
    const bal = async (a) => fmtUsd(await read("balanceOf", [a]));
    console.log("\naddresses");
    console.log(`  rpc                    ${url} (chain ${chainId})`);
    console.log(`  TestUSD                ${token}`);
    console.log(`  Permit2                ${PERMIT2}`);
    console.log(`  x402ExactPermit2Proxy  ${X402_EXACT_PROXY}`);
    console.log(`  CREATE2 deployer       ${CREATE2_DEPLOYER}`);
    console.log(`  facilitator (acct 0)   ${facilitator.address}`);
    console.log(`  payer       (acct 1)   ${payer.address}`);
    console.log(`  payTo       (acct 2)   ${payTo.address}`);
    console.log("balances (USDC, 6 decimals)");
    console.log(`  payer                  ${await bal(payer.address)}`);
    console.log(`  payTo                  ${await bal(payTo.address)}`);
    console.log(`  totalSupply            ${fmtUsd(await read("totalSupply"))}`);
  } finally {
    child.kill("SIGTERM");
  }
}

try {
  await main();
} catch (e) {
  failures++;
  console.error(`deploy-check: ${e.stack ?? e}`);
}
if (failures) {
  console.log(`\ndeploy-check: FAILED (${failures} failure(s))`);
  process.exit(1);
}
console.log("\ndeploy-check: all checks passed");
