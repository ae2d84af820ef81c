/**
 * Vows and their chains (library/VOWS.md, "Record formats"): the vow record
 * (`conduct.vow/v1`), its entries (`conduct.entry/v1`), the links between them, and the chain
 * as served (`conduct.chain/v1` head and `conduct.chain_page/v1` pages).
 *
 * @module
 */
import {
  canonicalBytes,
  concat,
  isObject,
  parseObject,
  sha256,
  sha256Hex,
  toHex,
  utf8,
  type Json,
  type JsonObject,
} from "./encoding.js";
import { VerificationError } from "./errors.js";
import { parseVkey, verifySigned, type PinnedKey } from "./signed.js";

/** The type of a vow record. */
export const VOW_TYPE = "conduct.vow/v1";
/** The type of a chain entry (a report-in). */
export const ENTRY_TYPE = "conduct.entry/v1";
/** The type of a chain's head. */
export const CHAIN_TYPE = "conduct.chain/v1";
/** The type of a full page of a chain. */
export const CHAIN_PAGE_TYPE = "conduct.chain_page/v1";
/** Records in a full chain page (VOWS.md: positions `32k .. 32k+31` form page `k`). */
export const CHAIN_PAGE_SIZE = 32;

/**
 * A vow's id (VOWS.md): the first 8 bytes, in hex, of SHA-256 over the length-prefixed strings
 * `conduct.vow_id/v1`, the log origin, the decimal log index, `text_sha256` and `agent`. Each
 * string is prefixed by its UTF-8 length as a big-endian u64 (VOWS.md does not say which
 * prefix; this is the service's, read from its source).
 */
export function vowId(origin: string, logIndex: number, textSha256: string, agent: string): string {
  const parts = ["conduct.vow_id/v1", origin, String(logIndex), textSha256, agent].map((s) => {
    const b = utf8(s);
    const len = new Uint8Array(8);
    new DataView(len.buffer).setBigUint64(0, BigInt(b.length));
    return concat(len, b);
  });
  return toHex(sha256(concat(...parts)).slice(0, 8));
}

/** The hex SHA-256 of a record's leaf bytes (its RFC 8785 form): what the next `prev` names. */
export function recordSha256(record: JsonObject): string {
  return sha256Hex(canonicalBytes(record));
}

const need = (doc: JsonObject, member: string, ok: (v: Json | undefined) => boolean, what: string): void => {
  if (!ok(doc[member])) throw new VerificationError("bad-format", `must be ${what}`, member);
};
const isString = (v: Json | undefined): boolean => typeof v === "string";
const isIndex = (v: Json | undefined): boolean => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
const isHex64 = (v: Json | undefined): boolean => typeof v === "string" && /^[0-9a-f]{64}$/.test(v);
const isInstant = (v: Json | undefined): boolean =>
  typeof v === "string" && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/.test(v) && !Number.isNaN(Date.parse(v));

/**
 * Verify a vow record (VOWS.md): signed by the pinned key, type `conduct.vow/v1`, `vow_id` the
 * id of its origin (the pinned key's name), `log_index`, `text_sha256` and `agent`, `text_sha256`
 * the hash of `text` when the vow is open (a sealed vow carries no `text`), and a sandbox vow
 * saying why (`sandbox_reason`) while a signed one names its wallet and signature.
 *
 * @throws {VerificationError} saying what failed
 */
export function verifyVow(input: Uint8Array | string | JsonObject, vkey: string | PinnedKey): JsonObject {
  const key = parseVkey(vkey);
  const doc = verifySigned(input, key, { type: VOW_TYPE });
  need(doc, "vow_id", (v) => typeof v === "string" && /^[0-9a-f]{16}$/.test(v), "16 lower-case hex digits");
  need(doc, "agent", isString, "a string");
  need(doc, "text_sha256", isHex64, "64 lower-case hex digits");
  need(doc, "log_index", isIndex, "a log index");
  need(doc, "at", isInstant, "an RFC 3339 UTC instant");
  need(doc, "sealed", (v) => typeof v === "boolean", "a boolean");
  need(doc, "sandbox", (v) => typeof v === "boolean", "a boolean");
  need(doc, "cadence_hours", (v) => typeof v === "number" && v > 0, "a positive number");
  const id = vowId(key.name, doc.log_index as number, doc.text_sha256 as string, doc.agent as string);
  if (id !== doc.vow_id)
    throw new VerificationError("hash-mismatch", `is not the id of this vow (expected ${id})`, "vow_id");
  if (doc.sealed === true) {
    if (doc.text !== undefined) throw new VerificationError("bad-format", "a sealed vow publishes no text", "text");
  } else {
    need(doc, "text", isString, "a string (the vow is not sealed)");
    if (sha256Hex(doc.text as string) !== doc.text_sha256)
      throw new VerificationError("hash-mismatch", "is not the SHA-256 of the vow's text", "text_sha256");
  }
  if (doc.sandbox === true) need(doc, "sandbox_reason", isString, "a string (every sandbox vow says why)");
  else {
    need(doc, "wallet", (v) => typeof v === "string" && /^0x[0-9a-fA-F]{40}$/.test(v), "an address (a signed vow)");
    need(doc, "wallet_signature", isString, "a signature (a signed vow)");
  }
  return doc;
}

/**
 * Verify one chain entry alone (VOWS.md): signed by the pinned key, type `conduct.entry/v1`,
 * with its `vow_id`, `seq`, `prev`, `at`, `log_index`, `trace_sha256` and `proof`. Its links to
 * the records before it are {@link verifyChainRecords}'s.
 *
 * @throws {VerificationError} saying what failed
 */
export function verifyEntry(input: Uint8Array | string | JsonObject, vkey: string | PinnedKey): JsonObject {
  const doc = verifySigned(input, vkey, { type: ENTRY_TYPE });
  need(doc, "vow_id", (v) => typeof v === "string" && /^[0-9a-f]{16}$/.test(v), "16 lower-case hex digits");
  need(doc, "seq", (v) => isIndex(v) && (v as number) >= 1, "a whole number from 1");
  need(doc, "prev", isHex64, "64 lower-case hex digits");
  need(doc, "at", isInstant, "an RFC 3339 UTC instant");
  need(doc, "log_index", isIndex, "a log index");
  need(doc, "trace_sha256", isHex64, "64 lower-case hex digits");
  need(doc, "attested", (v) => typeof v === "boolean", "a boolean");
  need(doc, "proof", (v) => isObject(v) && typeof v.kind === "string", "an object with a kind");
  return doc;
}

/** A verified chain: the vow and its entries, in order. */
export interface VerifiedChain {
  /** The vow record (chain position 0). */
  vow: JsonObject;
  /** Its entries, `seq` 1, 2, … (chain position n is entry `seq` n). */
  entries: JsonObject[];
}

/**
 * Verify a vow's records in chain order (VOWS.md, "The chain"): record 0 is the vow
 * ({@link verifyVow}), record n is entry `seq` n ({@link verifyEntry}) of the same `vow_id`,
 * whose `prev` is the hex SHA-256 of record n−1's leaf bytes (entry 1's, the vow record's);
 * `at` never decreases and `log_index` increases along the chain.
 *
 * @throws {VerificationError} naming the record at fault (`records[i]`)
 */
export function verifyChainRecords(records: JsonObject[], vkey: string | PinnedKey): VerifiedChain {
  const key = parseVkey(vkey);
  if (records.length === 0) throw new VerificationError("bad-chain", "a chain holds at least its vow");
  const at = (i: number) => `records[${i}]`;
  let vow: JsonObject;
  try {
    vow = verifyVow(records[0]!, key);
  } catch (e) {
    throw e instanceof VerificationError ? e.at(at(0)) : e;
  }
  const entries: JsonObject[] = [];
  let prev = vow;
  for (let i = 1; i < records.length; i++) {
    let e: JsonObject;
    try {
      e = verifyEntry(records[i]!, key);
    } catch (err) {
      throw err instanceof VerificationError ? err.at(at(i)) : err;
    }
    const broken = (why: string): never => {
      throw new VerificationError("bad-chain", why, at(i));
    };
    if (e.vow_id !== vow.vow_id) broken(`vow_id ${String(e.vow_id)} in the chain of ${String(vow.vow_id)}`);
    if (e.seq !== i) broken(`seq ${String(e.seq)} at chain position ${i}`);
    if (e.prev !== recordSha256(prev)) broken("prev is not the SHA-256 of the record before it");
    if (Date.parse(e.at as string) < Date.parse(prev.at as string)) broken("at goes back in time");
    if ((e.log_index as number) <= (prev.log_index as number)) broken("log_index does not increase");
    entries.push(e);
    prev = e;
  }
  return { vow, entries };
}

/** Reads one page of a chain: the bytes of `/vow/<id>/chain/<k>` (`vow/<id>/chain/<k>.json`). */
export type PageReader = (k: number) => Promise<Uint8Array>;

/** A verified chain as served, with its head. */
export interface VerifiedChainDocument extends VerifiedChain {
  /** The verified head (`conduct.chain/v1`). */
  head: JsonObject;
}

/**
 * Verify a vow's whole chain as served (VOWS.md, "`/vow/<id>/chain`"): the head
 * (`conduct.chain/v1`, signed) pins each full page by the SHA-256 of its file; each page
 * (`conduct.chain_page/v1`, signed) holds positions `32k .. 32k+31`; the head's `tail` holds the
 * records from `tail_from_position`; then the records are checked as one chain
 * ({@link verifyChainRecords}). The head's `length` (entries) and `head_sha256` (the last
 * record's hash) are checked when present.
 *
 * @param head - the head's bytes or parsed object
 * @param readPage - reads page k's file (only called when the head lists full pages)
 * @param vkey - the pinned key
 * @throws {VerificationError} saying what failed
 */
export async function verifyChain(
  head: Uint8Array | string | JsonObject,
  readPage: PageReader,
  vkey: string | PinnedKey,
): Promise<VerifiedChainDocument> {
  const key = parseVkey(vkey);
  const h = verifySigned(head, key, { type: CHAIN_TYPE });
  const pages = h.pages;
  const tail = h.tail;
  if (!Array.isArray(pages)) throw new VerificationError("bad-format", "must be a list", "pages");
  if (!Array.isArray(tail) || !tail.every(isObject))
    throw new VerificationError("bad-format", "must be a list of records", "tail");
  const records: JsonObject[] = [];
  for (let k = 0; k < pages.length; k++) {
    const pin = pages[k];
    const where = `pages[${k}]`;
    if (!isObject(pin) || !isHex64(pin.sha256))
      throw new VerificationError("bad-format", "must carry the page file's sha256", where);
    const bytes = await readPage(k);
    if (sha256Hex(bytes) !== pin.sha256)
      throw new VerificationError("hash-mismatch", "the page's file is not the one the head pins", where);
    let page: JsonObject;
    try {
      page = verifySigned(parseObject(bytes), key, { type: CHAIN_PAGE_TYPE });
    } catch (e) {
      throw e instanceof VerificationError ? e.at(where) : e;
    }
    const recs = page.records;
    if (!Array.isArray(recs) || recs.length !== CHAIN_PAGE_SIZE || !recs.every(isObject))
      throw new VerificationError("bad-format", `a full page holds ${CHAIN_PAGE_SIZE} records`, where);
    if (page.vow_id !== undefined && page.vow_id !== h.vow_id)
      throw new VerificationError("bad-chain", "a page of another vow", where);
    records.push(...recs);
  }
  if (h.tail_from_position !== undefined && h.tail_from_position !== records.length)
    throw new VerificationError(
      "bad-chain",
      `the tail starts at position ${String(h.tail_from_position)}, after ${records.length} paged records`,
      "tail_from_position",
    );
  records.push(...tail);
  const chain = verifyChainRecords(records, key);
  if (h.vow_id !== undefined && h.vow_id !== chain.vow.vow_id)
    throw new VerificationError("bad-chain", "the head names another vow", "vow_id");
  if (h.length !== undefined && h.length !== chain.entries.length)
    throw new VerificationError("bad-chain", `says ${String(h.length)} entries, the chain holds ${chain.entries.length}`, "length");
  if (h.head_sha256 !== undefined && h.head_sha256 !== recordSha256(records[records.length - 1]!))
    throw new VerificationError("hash-mismatch", "is not the SHA-256 of the chain's last record", "head_sha256");
  return { ...chain, head: h };
}
