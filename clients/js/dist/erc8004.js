/**
 * ERC-8004 validation credentials (library/ERC8004.md): `POST /erc8004/validation` answers
 * `{credential, credential_hash, how_to_use, scope}`, where `credential` is a signed
 * `conduct.erc8004-validation/v1` and `credential_hash = keccak256(JCS(credential))`.
 *
 * @module
 */
import { canonicalBytes, isObject, keccak256Hex, parseJson } from "./encoding.js";
import { VerificationError } from "./errors.js";
import { checkMeter } from "./meter.js";
import { verifySigned, traceSha256 } from "./signed.js";
/** The type of a validation credential. */
export const CREDENTIAL_TYPE = "conduct.erc8004-validation/v1";
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
export function verifyCredential(input, vkey, trace, options = {}) {
    const answer = input instanceof Uint8Array || typeof input === "string" ? parseJson(input) : input;
    if (!isObject(answer) || !isObject(answer.credential))
        throw new VerificationError("bad-format", "expected {credential, credential_hash, …}");
    let credential;
    try {
        credential = verifySigned(answer.credential, vkey, { type: CREDENTIAL_TYPE });
    }
    catch (e) {
        throw e instanceof VerificationError ? e.at("credential") : e;
    }
    const p = credential.predicate;
    if (!isObject(p) || typeof p.metric !== "string" || typeof p.band !== "string" || !("clears" in p))
        throw new VerificationError("bad-format", "must be {metric, band, clears}", "credential/predicate");
    const s = credential.subject;
    if (!isObject(s) || typeof s.form !== "string" || typeof s.id !== "string")
        throw new VerificationError("bad-format", "must be {form, id}", "credential/subject");
    checkMeter(credential, { meter: options.meter, at: "credential" });
    const hash = keccak256Hex(canonicalBytes(credential));
    if (answer.credential_hash !== hash)
        throw new VerificationError("hash-mismatch", `is not keccak256(JCS(credential)) = ${hash}`, "credential_hash");
    if (trace !== undefined && traceSha256(trace) !== credential.trace_sha256)
        throw new VerificationError("hash-mismatch", "is not the hash of your trace", "credential/trace_sha256");
    return { credential, credentialHash: hash, answer };
}
