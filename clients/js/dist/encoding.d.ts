/** A JSON value as the kit parses it. */
export type Json = null | boolean | number | string | Json[] | JsonObject;
/** A JSON object. */
export interface JsonObject {
    [member: string]: Json;
}
/** UTF-8 bytes of `s`. */
export declare function utf8(s: string): Uint8Array;
/** The text of UTF-8 `bytes`; throws `not-json`-free `bad-format` on invalid UTF-8. */
export declare function fromUtf8(bytes: Uint8Array): string;
/** Lower-case hex of `bytes`. */
export declare function toHex(bytes: Uint8Array): string;
/** The bytes of lower-case hex `s` of exactly `length` bytes, or `undefined`. */
export declare function fromHexStrict(s: string, length: number): Uint8Array | undefined;
/** SHA-256 of `data` (a string is hashed as UTF-8). */
export declare function sha256(data: Uint8Array | string): Uint8Array;
/** Lower-case hex SHA-256 of `data` (a string is hashed as UTF-8). */
export declare function sha256Hex(data: Uint8Array | string): string;
/** `0x`-prefixed lower-case hex Keccak-256 of `data`. */
export declare function keccak256Hex(data: Uint8Array | string): string;
/** Concatenate byte arrays. */
export declare function concat(...parts: Uint8Array[]): Uint8Array;
/** True when `a` and `b` hold the same bytes. */
export declare function bytesEqual(a: Uint8Array, b: Uint8Array): boolean;
/** Standard base64 (RFC 4648, with padding) of `bytes`. */
export declare function toBase64(bytes: Uint8Array): string;
/**
 * Decode standard base64 strictly: the RFC 4648 alphabet with `=` padding, and only the
 * canonical spelling (unused bits zero), so no two strings decode to the same bytes. Returns
 * `undefined` for anything else.
 */
export declare function fromBase64(s: string): Uint8Array | undefined;
/**
 * RFC 8785 (JCS) canonical text of a JSON value: members sorted by UTF-16 code units, no
 * whitespace, numbers in ECMAScript shortest form, minimal string escapes.
 */
export declare function canonicalText(value: unknown): string;
/** RFC 8785 (JCS) canonical UTF-8 bytes of a JSON value (ATTESTATION.md, "The signature"). */
export declare function canonicalBytes(value: unknown): Uint8Array;
/**
 * Parse one JSON document strictly (RFC 8259 and I-JSON, RFC 7493, which RFC 8785 requires):
 * valid UTF-8, no duplicate member names, no lone surrogate escapes, nothing after the value.
 * `JSON.parse` silently keeps the last of two equal names, so a verifier cannot use it alone.
 *
 * @throws {VerificationError} `not-json`, naming the byte offset where reading stopped.
 */
export declare function parseJson(input: Uint8Array | string): Json;
/** Parse `input` strictly ({@link parseJson}) and require a JSON object. */
export declare function parseObject(input: Uint8Array | string): JsonObject;
/** True for a JSON object (not an array, not null). */
export declare function isObject(v: unknown): v is JsonObject;
