/**
 * The service's Nostr profile (library/NOSTR.md, "`/hive/profile`"): a NIP-01 kind-0 event,
 * the one JSON file of the tree that carries no Ed25519 `signature` (its bytes are pinned by
 * the manifest like every file's; its own BIP-340 signature authenticates it).
 *
 * @module
 */
import { schnorr } from "@noble/curves/secp256k1.js";
import { fromHexStrict, isObject, parseJson, sha256Hex, type JsonObject } from "./encoding.js";
import { VerificationError } from "./errors.js";

const EVENT_MEMBERS = ["content", "created_at", "id", "kind", "pubkey", "sig", "tags"];

/**
 * Verify a NIP-01 event: exactly its seven members, `id` the SHA-256 of the compact JSON
 * `[0, pubkey, created_at, kind, tags, content]`, and `sig` a valid BIP-340 signature of the
 * id by `pubkey`. With `kind`, the event must be of that kind (0 for a profile).
 *
 * @throws {VerificationError} saying what failed
 */
export function verifyNostrEvent(input: Uint8Array | string | JsonObject, kind?: number): JsonObject {
  const ev = input instanceof Uint8Array || typeof input === "string" ? parseJson(input) : input;
  const fail = (why: string): never => {
    throw new VerificationError("bad-signature", `not a verified Nostr event: ${why}`);
  };
  if (!isObject(ev)) return fail("not an object");
  const members = Object.keys(ev).sort();
  if (members.join() !== EVENT_MEMBERS.join()) fail(`members ${members.join(", ")}`);
  const { id, pubkey, created_at, tags, content, sig } = ev;
  if (typeof ev.kind !== "number" || (kind !== undefined && ev.kind !== kind)) fail(`kind ${String(ev.kind)}`);
  if (typeof id !== "string" || typeof pubkey !== "string" || typeof sig !== "string") return fail("id, pubkey, sig");
  if (typeof created_at !== "number" || typeof content !== "string" || !Array.isArray(tags)) return fail("shape");
  const serial = JSON.stringify([0, pubkey, created_at, ev.kind, tags, content]);
  if (sha256Hex(serial) !== id) fail("its id is not the hash of its fields");
  const idBytes = fromHexStrict(id, 32);
  const pub = fromHexStrict(pubkey, 32);
  const s = fromHexStrict(sig, 64);
  if (idBytes === undefined || pub === undefined || s === undefined) return fail("not lower-case hex");
  let ok = false;
  try {
    ok = schnorr.verify(s, idBytes, pub);
  } catch {
    ok = false;
  }
  if (!ok) fail("its BIP-340 signature does not verify");
  return ev;
}
