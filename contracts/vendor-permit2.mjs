#!/usr/bin/env node
// Re-derive contracts/out/Permit2.runtime.hex from its published source (see out/SOURCES.md) and
// compare it with the committed file. Manual audit tool; the tests never run it.
//
//   cd "$(mktemp -d)" && npm pack @uniswap/v4-periphery@1.0.3 && tar xzf uniswap-v4-periphery-1.0.3.tgz
//   node /path/to/contracts/vendor-permit2.mjs "$PWD/package"          # compare (exit 1 on mismatch)
//   node /path/to/contracts/vendor-permit2.mjs "$PWD/package" --write  # rewrite out/Permit2.runtime.hex
import fs from "node:fs";
import path from "node:path";
import crypto from "node:crypto";
import { fileURLToPath } from "node:url";
import { keccak256, encodeAbiParameters, toHex } from "viem";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const TARGET = path.join(HERE, "out", "Permit2.runtime.hex");
const PERMIT2 = "0x000000000022D473030F116dDEE9F6B43aC78BA3";
// Where Foundry deployed Permit2 in the test run that produced the upstream constant (chain 31337).
const FORGE_TEST_ADDRESS = "0xF62849F9A0B5Bf2913b396098F7c7019b51A820a";
const MAINNET_CODEHASH = "0xc67d1657868aa5146eaf24fb879fb1fdec3d2d493b3683a61c9c2f4fb2851131";

const [pkgDir, flag] = process.argv.slice(2);
if (!pkgDir || (flag && flag !== "--write")) {
  console.error("usage: node contracts/vendor-permit2.mjs <unpacked @uniswap/v4-periphery@1.0.3 package dir> [--write]");
  process.exit(2);
}
const srcFile = path.join(pkgDir, "lib/permit2/test/utils/DeployPermit2.sol");
const src = fs.readFileSync(srcFile);
const literals = [...src.toString("utf8").matchAll(/hex"([0-9a-fA-F]+)"/g)];
if (literals.length !== 1) throw new Error(`${srcFile}: expected exactly one hex"..." literal, found ${literals.length}`);
const upstream = literals[0][1].toLowerCase();

const word = (n) => n.toString(16).padStart(64, "0");
const DOMAIN_TYPEHASH = keccak256(toHex("EIP712Domain(string name,uint256 chainId,address verifyingContract)"));
const domainSeparator = (chainId, address) =>
  keccak256(
    encodeAbiParameters(
      [{ type: "bytes32" }, { type: "bytes32" }, { type: "uint256" }, { type: "address" }],
      [DOMAIN_TYPEHASH, keccak256(toHex("Permit2")), chainId, address],
    ),
  ).slice(2);

// EIP712.DOMAIN_SEPARATOR(): CHAINID PUSH32 <_CACHED_CHAIN_ID> SUB PUSH2 .. JUMPI PUSH32 <_CACHED_DOMAIN_SEPARATOR>
const from = "467f" + word(31337n) + "03611b69577f" + domainSeparator(31337n, FORGE_TEST_ADDRESS);
const to = "467f" + word(1n) + "03611b69577f" + domainSeparator(1n, PERMIT2);
if (upstream.split(from).length !== 2) throw new Error("the immutable pattern was not found exactly once");
const patched = "0x" + upstream.replace(from, to);
const sha256 = (s) => crypto.createHash("sha256").update(s).digest("hex");

console.log(`source        ${srcFile} (sha256 ${sha256(src)})`);
console.log(`upstream      ${upstream.length / 2} bytes, keccak256 ${keccak256("0x" + upstream)}`);
console.log(`patched at    byte ${upstream.indexOf(from) / 2} (cached chain id 31337 -> 1, cached domain separator -> mainnet)`);
console.log(`result        keccak256 ${keccak256(patched)} (mainnet Permit2 codehash ${MAINNET_CODEHASH})`);
if (keccak256(patched) !== MAINNET_CODEHASH) {
  console.error("result does not match the Ethereum mainnet Permit2 codehash");
  process.exit(1);
}
if (flag === "--write") {
  fs.writeFileSync(TARGET, patched + "\n");
  console.log(`wrote ${TARGET}`);
} else {
  const have = fs.readFileSync(TARGET, "utf8");
  if (have !== patched + "\n") {
    console.error(`${TARGET} differs from the re-derived bytecode`);
    process.exit(1);
  }
  console.log(`${path.relative(process.cwd(), TARGET) || TARGET} matches`);
}
