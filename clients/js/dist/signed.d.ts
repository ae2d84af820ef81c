import { type Json, type JsonObject } from "./encoding.js";
import { type Meter } from "./meter.js";
/** A key pinned from a C2SP vkey (`GET /pubkey`, member `vkey`). */
export interface PinnedKey {
    /** The key's name: the log origin (`localhost:8402/log`). */
    readonly name: string;
    /** The C2SP key id, 8 lower-case hex characters. */
    readonly keyId: string;
    /** The 32-byte Ed25519 public key. */
    readonly publicKey: Uint8Array;
    /** The vkey it was read from. */
    readonly vkey: string;
}
/**
 * The C2SP signed-note key id of an Ed25519 key: the first 4 bytes of
 * `SHA-256(name ‖ 0x0A ‖ 0x01 ‖ public_key)`, as 8 hex characters (ATTESTATION.md).
 */
export declare function keyIdOf(name: string, publicKey: Uint8Array): string;
/** The 4 key-hash bytes behind {@link keyIdOf}. */
export declare function keyHash(name: string, publicKey: Uint8Array): Uint8Array;
/**
 * Read a C2SP vkey, `name+key_id+base64(0x01 ‖ public_key)` (ATTESTATION.md), and check that
 * its key id is the id of its key. A {@link PinnedKey} passes through.
 *
 * @throws {VerificationError} `bad-key`
 */
export declare function parseVkey(vkey: string | PinnedKey): PinnedKey;
/** Verify an Ed25519 signature strictly (RFC 8032, not ZIP-215). */
export declare function ed25519Verify(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean;
/** The scope statement every `conduct.*` object carries: exactly these four members and texts (ATTESTATION.md, "The scope statement"). */
export declare const SCOPE: {
    readonly no_meter_is_immune: "An agent optimizing against this output can learn to write clean traces. A low coupling is not proof of good conduct.";
    readonly not_trade_advice: "Not trade advice: no signal, no market model, no risk sizing.";
    readonly off_meter_blind_spot: "Only channels present in the trace are read. What the agent did off the trace is outside the meter.";
    readonly trace_provenance_is_the_callers: "The service attests that it scored this trace. It does not attest that the trace faithfully records what the agent did.";
};
/** The four members of {@link SCOPE}, sorted. */
export declare const SCOPE_KEYS: readonly (keyof typeof SCOPE)[];
/** Options of {@link verifySigned}. */
export interface SignedOptions {
    /** The type the object must have (its `type` member), or the types it may have (any one of them). */
    type?: string | readonly string[];
    /** The member holding the signature (default `signature`; the OpenAPI document uses `x-signature`). */
    signatureMember?: string;
    /** The member holding the key id (default `key_id`; the OpenAPI document uses `x-key-id`). */
    keyIdMember?: string;
}
/**
 * Verify one signed JSON object (ATTESTATION.md, "The signature") and return it:
 *
 * 1. parse it (strictly: UTF-8, no duplicate member names);
 * 2. remove `signature` (base64 of 64 bytes), and nothing else;
 * 3. canonicalize the rest with RFC 8785;
 * 4. verify the Ed25519 signature over those bytes with the pinned key;
 * 5. check that `key_id` is the id of the pinned key;
 *
 * and, for a `conduct.*` type, that the scope statement is there (its four members, each a
 * text; the signature covers their words).
 *
 * @param input - the object's bytes or text as served, or an object already parsed
 * @param vkey - the pinned key (a C2SP vkey, or {@link parseVkey}'s result)
 * @throws {VerificationError} saying what failed
 */
export declare function verifySigned(input: Uint8Array | string | JsonObject, vkey: string | PinnedKey, options?: SignedOptions): JsonObject;
/**
 * Verify a signed JSON file of the rendered tree (library/MIRRORS.md, "Checking a mirror"):
 * {@link verifySigned}, or, for a document with no `signature` but an `x-signature` (the
 * OpenAPI document, whose format allows only `x-` members to be added), the same check on
 * `x-signature` and `x-key-id`.
 */
export declare function verifySnapshot(input: Uint8Array | string | JsonObject, vkey: string | PinnedKey): JsonObject;
/** A trace as `POST /profile` takes it: its conditioning flag and its turns (METER.md). */
export interface Trace {
    context_key: string;
    turns: Json[];
    [member: string]: unknown;
}
/**
 * The trace hash (ATTESTATION.md, "The trace hash"): lower-case hex SHA-256 of the RFC 8785
 * bytes of `{"context_key": …, "turns": […]}`, any other member (such as `disclosure`) left out.
 */
export declare function traceSha256(trace: Trace): string;
/** The type of an attestation. */
export declare const ATTESTATION_TYPE = "conduct.attestation/v1";
/** Options of {@link verifyAttestation} (and of the credential and entry verifiers). */
export interface MeasuredOptions {
    /** The meter the object must name (`meter/1` or `meter/2`): the one you asked for. */
    meter?: Meter;
}
/**
 * Verify an attestation (ATTESTATION.md): a signed object ({@link verifySigned}) of type
 * `conduct.attestation/v1`; when you pass your own copy of the trace, that its
 * `trace_sha256` is the hash of that trace; and its meter ({@link checkMeter}): the `meter`
 * block is exactly that of a meter the kit knows (`options.meter`, when given) and the
 * quantities of its `profile` have that meter's shape.
 *
 * @param input - the attestation's bytes or text as served, or the parsed object
 * @param vkey - the pinned key
 * @param trace - your copy of the trace, to compare with `trace_sha256`
 * @param options - `meter`: the meter the attestation must name
 * @throws {VerificationError} saying what failed (`meter` for the meter)
 */
export declare function verifyAttestation(input: Uint8Array | string | JsonObject, vkey: string | PinnedKey, trace?: Trace, options?: MeasuredOptions): JsonObject;
