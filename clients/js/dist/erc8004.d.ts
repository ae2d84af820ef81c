/**
 * ERC-8004 validation credentials (library/ERC8004.md): `POST /erc8004/validation` answers
 * `{credential, credential_hash, how_to_use, scope}`, where `credential` is a signed
 * `conduct.erc8004-validation/v1` and `credential_hash = keccak256(JCS(credential))`.
 *
 * @module
 */
import { type JsonObject } from "./encoding.js";
import { type MeasuredOptions, type PinnedKey, type Trace } from "./signed.js";
/** The type of a validation credential. */
export declare const CREDENTIAL_TYPE = "conduct.erc8004-validation/v1";
/** A verified validation credential. */
export interface VerifiedCredential {
    /** The signed credential. */
    credential: JsonObject;
    /** `0x` and 64 hex digits: keccak256 of the credential's RFC 8785 bytes (its `requestHash`). */
    credentialHash: string;
    /** The whole answer, as served. */
    answer: JsonObject;
}
/**
 * Verify the answer of `POST /erc8004/validation` (ERC8004.md, "The credential"): the
 * credential is signed by the pinned key, of type `conduct.erc8004-validation/v1`, carries a
 * `predicate` `{metric, band, clears}` (never the numbers) and a `subject` `{form, id}`, and
 * `credential_hash` is keccak256 of its RFC 8785 bytes (signature included). With your own
 * copy of the trace, its hash must be the credential's `trace_sha256`. Its `meter` block is
 * checked as an attestation's ({@link checkMeter}; with `options.meter`, it must be that meter).
 *
 * @throws {VerificationError} saying what failed
 */
export declare function verifyCredential(input: Uint8Array | string | JsonObject, vkey: string | PinnedKey, trace?: Trace, options?: MeasuredOptions): VerifiedCredential;
