/**
 * The verifying half of the kit alone: everything offline, no client, no payment library.
 * `import { verifyAttestation } from "@conduct/kit/verify"`.
 *
 * @module
 */
export * from "./errors.js";
export {
  canonicalBytes,
  canonicalText,
  parseJson,
  sha256Hex,
  keccak256Hex,
  toBase64,
  fromBase64,
  type Json,
  type JsonObject,
} from "./encoding.js";
export * from "./signed.js";
export * from "./meter.js";
export * from "./log.js";
export * from "./vow.js";
export * from "./manifest.js";
export * from "./nostr.js";
export * from "./erc8004.js";
