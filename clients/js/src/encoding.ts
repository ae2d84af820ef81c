/**
 * Bytes, text, hashes and RFC 8785: the small primitives every check shares. Browser-safe
 * (no Node API): SHA-256 and Keccak-256 come from `@noble/hashes`, RFC 8785 from
 * `canonicalize`.
 *
 * @module
 */
import { sha256 as nobleSha256 } from "@noble/hashes/sha2.js";
import { keccak_256 } from "@noble/hashes/sha3.js";
import canonicalize from "canonicalize";
import { VerificationError } from "./errors.js";

/** A JSON value as the kit parses it. */
export type Json = null | boolean | number | string | Json[] | JsonObject;
/** A JSON object. */
export interface JsonObject {
  [member: string]: Json;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** UTF-8 bytes of `s`. */
export function utf8(s: string): Uint8Array {
  return encoder.encode(s);
}

/** The text of UTF-8 `bytes`; throws `not-json`-free `bad-format` on invalid UTF-8. */
export function fromUtf8(bytes: Uint8Array): string {
  try {
    return decoder.decode(bytes);
  } catch {
    throw new VerificationError("bad-format", "not valid UTF-8");
  }
}

/** Lower-case hex of `bytes`. */
export function toHex(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += b.toString(16).padStart(2, "0");
  return s;
}

/** The bytes of lower-case hex `s` of exactly `length` bytes, or `undefined`. */
export function fromHexStrict(s: string, length: number): Uint8Array | undefined {
  if (s.length !== length * 2 || !/^[0-9a-f]*$/.test(s)) return undefined;
  const out = new Uint8Array(length);
  for (let i = 0; i < length; i++) out[i] = parseInt(s.slice(2 * i, 2 * i + 2), 16);
  return out;
}

/** SHA-256 of `data` (a string is hashed as UTF-8). */
export function sha256(data: Uint8Array | string): Uint8Array {
  return nobleSha256(typeof data === "string" ? utf8(data) : data);
}

/** Lower-case hex SHA-256 of `data` (a string is hashed as UTF-8). */
export function sha256Hex(data: Uint8Array | string): string {
  return toHex(sha256(data));
}

/** `0x`-prefixed lower-case hex Keccak-256 of `data`. */
export function keccak256Hex(data: Uint8Array | string): string {
  return "0x" + toHex(keccak_256(typeof data === "string" ? utf8(data) : data));
}

/** Concatenate byte arrays. */
export function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let i = 0;
  for (const p of parts) {
    out.set(p, i);
    i += p.length;
  }
  return out;
}

/** True when `a` and `b` hold the same bytes. */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= a[i]! ^ b[i]!;
  return d === 0;
}

const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const B64_INDEX = new Map([...B64].map((c, i) => [c, i]));

/** Standard base64 (RFC 4648, with padding) of `bytes`. */
export function toBase64(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | ((bytes[i + 1] ?? 0) << 8) | (bytes[i + 2] ?? 0);
    s += B64[(n >> 18) & 63]! + B64[(n >> 12) & 63]!;
    s += i + 1 < bytes.length ? B64[(n >> 6) & 63]! : "=";
    s += i + 2 < bytes.length ? B64[n & 63]! : "=";
  }
  return s;
}

/**
 * Decode standard base64 strictly: the RFC 4648 alphabet with `=` padding, and only the
 * canonical spelling (unused bits zero), so no two strings decode to the same bytes. Returns
 * `undefined` for anything else.
 */
export function fromBase64(s: string): Uint8Array | undefined {
  if (s.length % 4 !== 0) return undefined;
  const pad = s.endsWith("==") ? 2 : s.endsWith("=") ? 1 : 0;
  const out = new Uint8Array((s.length / 4) * 3 - pad);
  let o = 0;
  for (let i = 0; i < s.length; i += 4) {
    let n = 0;
    for (let j = 0; j < 4; j++) {
      const c = s[i + j]!;
      const last = i + 4 === s.length;
      if (c === "=" && last && j >= 4 - pad) {
        n <<= 6;
        continue;
      }
      const v = B64_INDEX.get(c);
      if (v === undefined) return undefined;
      n = (n << 6) | v;
    }
    out[o++] = (n >> 16) & 255;
    if (o < out.length) out[o++] = (n >> 8) & 255;
    if (o < out.length) out[o++] = n & 255;
  }
  return toBase64(out) === s ? out : undefined;
}

/**
 * RFC 8785 (JCS) canonical text of a JSON value: members sorted by UTF-16 code units, no
 * whitespace, numbers in ECMAScript shortest form, minimal string escapes.
 */
export function canonicalText(value: unknown): string {
  let text: string | undefined;
  try {
    text = canonicalize(value);
  } catch (e) {
    throw new VerificationError("bad-format", `cannot canonicalize: ${(e as Error).message}`);
  }
  if (text === undefined) throw new VerificationError("bad-format", "cannot canonicalize: not a JSON value");
  return text;
}

/** RFC 8785 (JCS) canonical UTF-8 bytes of a JSON value (ATTESTATION.md, "The signature"). */
export function canonicalBytes(value: unknown): Uint8Array {
  return utf8(canonicalText(value));
}

/**
 * Parse one JSON document strictly (RFC 8259 and I-JSON, RFC 7493, which RFC 8785 requires):
 * valid UTF-8, no duplicate member names, no lone surrogate escapes, nothing after the value.
 * `JSON.parse` silently keeps the last of two equal names, so a verifier cannot use it alone.
 *
 * @throws {VerificationError} `not-json`, naming the byte offset where reading stopped.
 */
export function parseJson(input: Uint8Array | string): Json {
  let text: string;
  if (typeof input === "string") text = input;
  else {
    try {
      text = decoder.decode(input);
    } catch {
      throw new VerificationError("not-json", "not valid UTF-8");
    }
  }
  return new Parser(text).document();
}

/** Parse `input` strictly ({@link parseJson}) and require a JSON object. */
export function parseObject(input: Uint8Array | string): JsonObject {
  const v = parseJson(input);
  if (!isObject(v)) throw new VerificationError("bad-format", "not a JSON object");
  return v;
}

/** True for a JSON object (not an array, not null). */
export function isObject(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

class Parser {
  private i = 0;
  constructor(private readonly s: string) {}

  document(): Json {
    this.ws();
    const v = this.value(0);
    this.ws();
    if (this.i !== this.s.length) this.fail("text after the JSON value");
    return v;
  }

  private fail(what: string): never {
    throw new VerificationError("not-json", `${what} at character ${this.i}`);
  }

  private ws(): void {
    const s = this.s;
    while (this.i < s.length) {
      const c = s.charCodeAt(this.i);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) this.i++;
      else break;
    }
  }

  private value(depth: number): Json {
    if (depth > 512) this.fail("nesting too deep");
    const c = this.s[this.i];
    switch (c) {
      case "{":
        return this.object(depth);
      case "[":
        return this.array(depth);
      case '"':
        return this.string();
      case "t":
        return this.word("true", true);
      case "f":
        return this.word("false", false);
      case "n":
        return this.word("null", null);
      default:
        if (c === "-" || (c !== undefined && c >= "0" && c <= "9")) return this.number();
        return this.fail(c === undefined ? "unexpected end" : `unexpected ${JSON.stringify(c)}`);
    }
  }

  private word<T extends Json>(w: string, v: T): T {
    if (this.s.startsWith(w, this.i)) {
      this.i += w.length;
      return v;
    }
    return this.fail("unexpected token");
  }

  private number(): number {
    const m = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
    m.lastIndex = this.i;
    const r = m.exec(this.s);
    if (r === null) return this.fail("bad number");
    this.i += r[0].length;
    const n = Number(r[0]);
    if (!Number.isFinite(n)) this.fail("number out of range");
    return n;
  }

  private string(): string {
    const s = this.s;
    this.i++; // opening quote
    let out = "";
    let start = this.i;
    for (;;) {
      if (this.i >= s.length) this.fail("unterminated string");
      const c = s.charCodeAt(this.i);
      if (c === 0x22) {
        out += s.slice(start, this.i);
        this.i++;
        break;
      }
      if (c < 0x20) this.fail("control character in a string");
      if (c === 0x5c) {
        out += s.slice(start, this.i);
        this.i++;
        const e = s[this.i];
        this.i++;
        switch (e) {
          case '"':
            out += '"';
            break;
          case "\\":
            out += "\\";
            break;
          case "/":
            out += "/";
            break;
          case "b":
            out += "\b";
            break;
          case "f":
            out += "\f";
            break;
          case "n":
            out += "\n";
            break;
          case "r":
            out += "\r";
            break;
          case "t":
            out += "\t";
            break;
          case "u": {
            const u = this.hex4();
            if (u >= 0xd800 && u <= 0xdbff) {
              if (s[this.i] !== "\\" || s[this.i + 1] !== "u") this.fail("lone surrogate escape");
              this.i += 2;
              const lo = this.hex4();
              if (lo < 0xdc00 || lo > 0xdfff) this.fail("lone surrogate escape");
              out += String.fromCharCode(u, lo);
            } else if (u >= 0xdc00 && u <= 0xdfff) {
              this.fail("lone surrogate escape");
            } else out += String.fromCharCode(u);
            break;
          }
          default:
            this.fail("bad escape");
        }
        start = this.i;
        continue;
      }
      this.i++;
    }
    return out;
  }

  private hex4(): number {
    const h = this.s.slice(this.i, this.i + 4);
    if (!/^[0-9a-fA-F]{4}$/.test(h)) this.fail("bad \\u escape");
    this.i += 4;
    return parseInt(h, 16);
  }

  private array(depth: number): Json[] {
    this.i++;
    const out: Json[] = [];
    this.ws();
    if (this.s[this.i] === "]") {
      this.i++;
      return out;
    }
    for (;;) {
      this.ws();
      out.push(this.value(depth + 1));
      this.ws();
      const c = this.s[this.i++];
      if (c === "]") return out;
      if (c !== ",") {
        this.i--;
        this.fail("expected , or ]");
      }
    }
  }

  private object(depth: number): JsonObject {
    this.i++;
    const out: JsonObject = {};
    const seen = new Set<string>();
    this.ws();
    if (this.s[this.i] === "}") {
      this.i++;
      return out;
    }
    for (;;) {
      this.ws();
      if (this.s[this.i] !== '"') this.fail("expected a member name");
      const k = this.string();
      if (seen.has(k)) this.fail(`duplicate member ${JSON.stringify(k)}`);
      seen.add(k);
      this.ws();
      if (this.s[this.i] !== ":") this.fail("expected :");
      this.i++;
      this.ws();
      const v = this.value(depth + 1);
      // defineProperty, so a member named "__proto__" is a member, not the prototype.
      Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
      this.ws();
      const c = this.s[this.i++];
      if (c === "}") return out;
      if (c !== ",") {
        this.i--;
        this.fail("expected , or }");
      }
    }
  }
}
