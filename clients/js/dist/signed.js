/**
 * The pinned key and signed objects (library/ATTESTATION.md): every JSON object the service
 * signs carries `signature`, base64 of the Ed25519 signature over the RFC 8785 bytes of the
 * object without `signature`, and `key_id`, the C2SP key id of the signing key.
 *
 * @module
 */
import { ed25519 } from "@noble/curves/ed25519.js";
import { canonicalBytes, concat, fromBase64, isObject, parseJson, sha256, sha256Hex, toHex, utf8, } from "./encoding.js";
import { VerificationError } from "./errors.js";
import { checkMeter } from "./meter.js";
/** The Ed25519 signature type byte of a C2SP signed-note key. */
const ED25519_ALG = 0x01;
/**
 * The C2SP signed-note key id of an Ed25519 key: the first 4 bytes of
 * `SHA-256(name ‖ 0x0A ‖ 0x01 ‖ public_key)`, as 8 hex characters (ATTESTATION.md).
 */
export function keyIdOf(name, publicKey) {
    return toHex(keyHash(name, publicKey));
}
/** The 4 key-hash bytes behind {@link keyIdOf}. */
export function keyHash(name, publicKey) {
    return sha256(concat(utf8(name), new Uint8Array([0x0a, ED25519_ALG]), publicKey)).slice(0, 4);
}
/**
 * Read a C2SP vkey, `name+key_id+base64(0x01 ‖ public_key)` (ATTESTATION.md), and check that
 * its key id is the id of its key. A {@link PinnedKey} passes through.
 *
 * @throws {VerificationError} `bad-key`
 */
export function parseVkey(vkey) {
    if (typeof vkey !== "string")
        return vkey;
    const fail = (why) => {
        throw new VerificationError("bad-key", `not a C2SP Ed25519 vkey (${why})`);
    };
    // The name holds no "+" (C2SP note names cannot), but the base64 key may.
    const i = vkey.indexOf("+");
    const j = i > 0 ? vkey.indexOf("+", i + 1) : -1;
    if (j < 0)
        return fail("expected name+key_id+key");
    const name = vkey.slice(0, i);
    const keyId = vkey.slice(i + 1, j);
    if (/\s/u.test(name))
        fail("the name holds a space");
    if (!/^[0-9a-f]{8}$/.test(keyId))
        fail("the key id is not 8 lower-case hex digits");
    const raw = fromBase64(vkey.slice(j + 1));
    if (raw === undefined)
        return fail("the key is not base64");
    if (raw.length !== 33 || raw[0] !== ED25519_ALG)
        fail("the key is not 0x01 and 32 bytes");
    const publicKey = raw.slice(1);
    if (keyIdOf(name, publicKey) !== keyId)
        fail("its key id is not the id of its key");
    return { name, keyId, publicKey, vkey };
}
/** Verify an Ed25519 signature strictly (RFC 8032, not ZIP-215). */
export function ed25519Verify(signature, message, publicKey) {
    try {
        return ed25519.verify(signature, message, publicKey, { zip215: false });
    }
    catch {
        return false;
    }
}
/** The scope statement every `conduct.*` object carries: exactly these four members and texts (ATTESTATION.md, "The scope statement"). */
export const SCOPE = {
    no_meter_is_immune: "An agent optimizing against this output can learn to write clean traces. A low coupling is not proof of good conduct.",
    not_trade_advice: "Not trade advice: no signal, no market model, no risk sizing.",
    off_meter_blind_spot: "Only channels present in the trace are read. What the agent did off the trace is outside the meter.",
    trace_provenance_is_the_callers: "The service attests that it scored this trace. It does not attest that the trace faithfully records what the agent did.",
};
/** The four members of {@link SCOPE}, sorted. */
export const SCOPE_KEYS = Object.keys(SCOPE).sort();
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
export function verifySigned(input, vkey, options = {}) {
    const key = parseVkey(vkey);
    const doc = input instanceof Uint8Array || typeof input === "string" ? parseJson(input) : input;
    if (!isObject(doc))
        throw new VerificationError("bad-format", "a signed object must be a JSON object");
    const sigMember = options.signatureMember ?? "signature";
    const idMember = options.keyIdMember ?? "key_id";
    const sigText = doc[sigMember];
    if (typeof sigText !== "string")
        throw new VerificationError("bad-signature", `no ${sigMember}`, sigMember);
    const sig = fromBase64(sigText);
    if (sig === undefined || sig.length !== 64)
        throw new VerificationError("bad-signature", "not base64 of 64 bytes", sigMember);
    const keyId = doc[idMember];
    if (keyId !== key.keyId)
        throw new VerificationError("key-id-mismatch", `${JSON.stringify(keyId ?? null)}, not the pinned key's ${key.keyId}`, idMember);
    const type = doc.type;
    if (typeof type === "string" && type.startsWith("conduct."))
        checkScope(doc.scope);
    const body = {};
    for (const [k, v] of Object.entries(doc)) {
        if (k !== sigMember)
            Object.defineProperty(body, k, { value: v, enumerable: true });
    }
    if (!ed25519Verify(sig, canonicalBytes(body), key.publicKey))
        throw new VerificationError("bad-signature", "the Ed25519 signature does not verify under the pinned key");
    const want = options.type;
    if (want !== undefined && !(typeof want === "string" ? type === want : typeof type === "string" && want.includes(type)))
        throw new VerificationError("wrong-type", `type ${JSON.stringify(type ?? null)}, expected ${typeof want === "string" ? JSON.stringify(want) : want.map((t) => JSON.stringify(t)).join(" or ")}`, "type");
    return doc;
}
function checkScope(scope) {
    if (!isObject(scope))
        throw new VerificationError("scope", "the scope statement is missing", "scope");
    const keys = Object.keys(scope).sort();
    const ok = keys.length === SCOPE_KEYS.length && keys.every((k, i) => k === SCOPE_KEYS[i]);
    if (!ok)
        throw new VerificationError("scope", `the scope statement must be exactly ${SCOPE_KEYS.join(", ")}`, "scope");
    for (const k of SCOPE_KEYS)
        if (scope[k] !== SCOPE[k])
            throw new VerificationError("scope", `the scope statement's ${k} is not the published text (ATTESTATION.md)`, "scope");
}
/**
 * Verify a signed JSON file of the rendered tree (library/MIRRORS.md, "Checking a mirror"):
 * {@link verifySigned}, or, for a document with no `signature` but an `x-signature` (the
 * OpenAPI document, whose format allows only `x-` members to be added), the same check on
 * `x-signature` and `x-key-id`.
 */
export function verifySnapshot(input, vkey) {
    const doc = input instanceof Uint8Array || typeof input === "string" ? parseJson(input) : input;
    if (!isObject(doc))
        throw new VerificationError("bad-format", "a signed snapshot must be a JSON object");
    if (doc.signature === undefined && doc["x-signature"] !== undefined)
        return verifySigned(doc, vkey, { signatureMember: "x-signature", keyIdMember: "x-key-id" });
    return verifySigned(doc, vkey);
}
/**
 * The trace hash (ATTESTATION.md, "The trace hash"): lower-case hex SHA-256 of the RFC 8785
 * bytes of `{"context_key": …, "turns": […]}`, any other member (such as `disclosure`) left out.
 */
export function traceSha256(trace) {
    return sha256Hex(canonicalBytes({ context_key: trace.context_key, turns: trace.turns }));
}
/** The type of an attestation. */
export const ATTESTATION_TYPE = "conduct.attestation/v1";
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
export function verifyAttestation(input, vkey, trace, options = {}) {
    const doc = verifySigned(input, vkey, { type: ATTESTATION_TYPE });
    if (typeof doc.trace_sha256 !== "string" || !/^[0-9a-f]{64}$/.test(doc.trace_sha256))
        throw new VerificationError("bad-format", "not 64 lower-case hex digits", "trace_sha256");
    if (trace !== undefined) {
        const mine = traceSha256(trace);
        if (mine !== doc.trace_sha256)
            throw new VerificationError("hash-mismatch", `attests trace ${doc.trace_sha256}, but your trace hashes to ${mine}`, "trace_sha256");
    }
    checkMeter(doc, { meter: options.meter });
    return doc;
}
