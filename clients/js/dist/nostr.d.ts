import { type JsonObject } from "./encoding.js";
/**
 * Verify a NIP-01 event: exactly its seven members, `id` the SHA-256 of the compact JSON
 * `[0, pubkey, created_at, kind, tags, content]`, and `sig` a valid BIP-340 signature of the
 * id by `pubkey`. With `kind`, the event must be of that kind (0 for a profile).
 *
 * @throws {VerificationError} saying what failed
 */
export declare function verifyNostrEvent(input: Uint8Array | string | JsonObject, kind?: number): JsonObject;
