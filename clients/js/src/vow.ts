/**
 * Vows and their chains (library/VOWS.md, "Record formats"): the vow record
 * (`conduct.vow/v1`), its entries (`conduct.entry/v1`), the links between them, and the chain
 * as served (`conduct.chain/v2` head and `conduct.chain_page/v2` pages, linked back from the
 * head's `last_page`; the earlier `conduct.chain/v1` head, which pinned every
 * `conduct.chain_page/v1` page, is read too); and the public index of every vow, in the order
 * taken (`conduct.vows/v2` head and `conduct.vows_page/v1` pages).
 *
 * @module
 */
import {
  canonicalBytes,
  concat,
  isObject,
  sha256,
  sha256Hex,
  toHex,
  utf8,
  type Json,
  type JsonObject,
} from "./encoding.js";
import { VerificationError } from "./errors.js";
import { checkMeter } from "./meter.js";
import { parseVkey, verifySigned, type MeasuredOptions, type PinnedKey } from "./signed.js";

/** The type of a vow record. */
export const VOW_TYPE = "conduct.vow/v1";
/** The type of a chain entry (a report-in). */
export const ENTRY_TYPE = "conduct.entry/v1";
/** The type of a chain's head (VOWS.md: pins the last full page, each page the one before it). */
export const CHAIN_TYPE = "conduct.chain/v2";
/** The type of a full page of a chain (with `prev_page_sha256`, the link to the page before it). */
export const CHAIN_PAGE_TYPE = "conduct.chain_page/v2";
/** The type of a chain's head before the linked pages: it pinned every full page (`pages`). Still read. */
export const CHAIN_V1_TYPE = "conduct.chain/v1";
/** The type of a full page under a `conduct.chain/v1` head (no `prev_page_sha256`). Still read. */
export const CHAIN_PAGE_V1_TYPE = "conduct.chain_page/v1";
/** Every chain head type the kit reads, oldest first. */
export const CHAIN_TYPES: readonly string[] = [CHAIN_V1_TYPE, CHAIN_TYPE];
/** Every chain page type the kit reads, oldest first. */
export const CHAIN_PAGE_TYPES: readonly string[] = [CHAIN_PAGE_V1_TYPE, CHAIN_PAGE_TYPE];
/** Records in a full chain page (VOWS.md: positions `32k .. 32k+31` form page `k`). */
export const CHAIN_PAGE_SIZE = 32;
/** The type of the index of vows' head (`/vows`). */
export const VOWS_TYPE = "conduct.vows/v2";
/** The type of a full page of the index of vows (`/vows/<k>`). */
export const VOWS_PAGE_TYPE = "conduct.vows_page/v1";
/** Vows in a full page of the index (`/vows/<k>` holds the vows taken `256k .. 256k+255`). */
export const VOWS_PAGE_SIZE = 256;

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
/** A failure `e` said of `where` (a record, a page's path), keeping what it said (the member at fault). */
const said = (e: unknown, where: string): unknown =>
  e instanceof VerificationError && e.path !== where ? new VerificationError(e.code, e.message, where) : e;

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
 * with its `vow_id`, `seq`, `prev`, `at`, `log_index`, `trace_sha256`, `proof` and `profile`,
 * and its meter ({@link checkMeter}): the `meter` block exactly that of a meter the kit knows,
 * stored (`"labels": "stored-labels/1"`), the one `options.meter` names when given, and the
 * profile's quantities of that meter's shape. The entries of one chain may name different
 * meters. Its links to the records before it are {@link verifyChainRecords}'s.
 *
 * @throws {VerificationError} saying what failed
 */
export function verifyEntry(
  input: Uint8Array | string | JsonObject,
  vkey: string | PinnedKey,
  options: MeasuredOptions = {},
): JsonObject {
  const doc = verifySigned(input, vkey, { type: ENTRY_TYPE });
  need(doc, "vow_id", (v) => typeof v === "string" && /^[0-9a-f]{16}$/.test(v), "16 lower-case hex digits");
  need(doc, "seq", (v) => isIndex(v) && (v as number) >= 1, "a whole number from 1");
  need(doc, "prev", isHex64, "64 lower-case hex digits");
  need(doc, "at", isInstant, "an RFC 3339 UTC instant");
  need(doc, "log_index", isIndex, "a log index");
  need(doc, "trace_sha256", isHex64, "64 lower-case hex digits");
  need(doc, "attested", (v) => typeof v === "boolean", "a boolean");
  need(doc, "proof", (v) => isObject(v) && typeof v.kind === "string", "an object with a kind");
  need(doc, "profile", isObject, "an object (the four quantities)");
  checkMeter(doc, { meter: options.meter, stored: true });
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
    throw said(e, at(0));
  }
  const entries: JsonObject[] = [];
  let prev = vow;
  for (let i = 1; i < records.length; i++) {
    let e: JsonObject;
    try {
      e = verifyEntry(records[i]!, key);
    } catch (err) {
      throw said(err, at(i));
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

/**
 * Reads page `k` of a paged document, as served: a chain's (`/vow/<id>/chain/<k>`,
 * `vow/<id>/chain/<k>.json`) or the index of vows' (`/vows/<k>`, `vows/<k>.json`). Resolving to
 * `undefined` says the page is not there (a verifier then fails with `missing-file`).
 */
export type PageReader = (k: number) => Promise<Uint8Array | undefined>;

/** A verified chain as served, with its head. */
export interface VerifiedChainDocument extends VerifiedChain {
  /** The verified head (`conduct.chain/v2`, or `conduct.chain/v1`). */
  head: JsonObject;
}

const isVowId = (v: Json | undefined): boolean => typeof v === "string" && /^[0-9a-f]{16}$/.test(v);

/**
 * The pin of page `k` in the chain head of vow `id` (`member` names it): its `sha256`. `strict`
 * (a `v2` head): `href`, `from_position` and `records` must be there; else each is checked when there.
 */
function chainPin(pin: Json | undefined, id: string | undefined, k: number, member: string, strict: boolean): string {
  if (!isObject(pin)) throw new VerificationError("bad-format", "must be a page pin", member);
  if (!isHex64(pin.sha256)) throw new VerificationError("bad-format", "must be 64 lower-case hex digits", `${member}.sha256`);
  const href = id === undefined ? undefined : `/vow/${id}/chain/${k}`;
  const wants: [string, Json | undefined, Json | undefined][] = [
    ["href", pin.href, href],
    ["from_position", pin.from_position, k * CHAIN_PAGE_SIZE],
    ["records", pin.records, CHAIN_PAGE_SIZE],
  ];
  for (const [m, got, want] of wants) {
    if (want === undefined || (!strict && got === undefined)) continue;
    if (got !== want)
      throw new VerificationError("bad-chain", `${JSON.stringify(got ?? null)} where page ${k} is ${JSON.stringify(want)}`, `${member}.${m}`);
  }
  return pin.sha256 as string;
}

/**
 * Verify a chain's head alone (VOWS.md, "`/vow/<id>/chain`"), and return it: signed by the
 * pinned key, of type `conduct.chain/v2` (or `conduct.chain/v1`), its `tail` a list of records.
 *
 * - `conduct.chain/v2`: `vow_id`, `length` (entries), `head_sha256`, `page_size` 32, `full_pages`
 *   `n` = ⌊(`length` + 1) / 32⌋, `last_page` `null` when `n` is 0, else the pin of page `n − 1`
 *   (`href` `/vow/<id>/chain/<n−1>`, `from_position` 32(n−1), `records` 32, `sha256`),
 *   `tail_from_position` 32n, and `length + 1` records in all.
 * - `conduct.chain/v1`: `pages`, a pin per full page (its `sha256`; `href`, `from_position`
 *   and `records` checked when there), `tail_from_position` 32 × the pages; `vow_id`, `length`
 *   and `head_sha256` checked when there.
 *
 * The pages themselves, and the records, are {@link verifyChainPages}' and {@link verifyChain}'s.
 *
 * @throws {VerificationError} saying what failed
 */
export function verifyChainHead(input: Uint8Array | string | JsonObject, vkey: string | PinnedKey): JsonObject {
  const h = verifySigned(input, vkey, { type: CHAIN_TYPES });
  const tail = h.tail;
  if (!Array.isArray(tail) || !tail.every(isObject))
    throw new VerificationError("bad-format", "must be a list of records", "tail");
  const v2 = h.type === CHAIN_TYPE;
  if (v2 || h.vow_id !== undefined) need(h, "vow_id", isVowId, "16 lower-case hex digits");
  if (v2 || h.length !== undefined) need(h, "length", isIndex, "a whole number (the entries)");
  if (v2 || h.head_sha256 !== undefined) need(h, "head_sha256", isHex64, "64 lower-case hex digits");
  if ((v2 || h.page_size !== undefined) && h.page_size !== CHAIN_PAGE_SIZE)
    throw new VerificationError("bad-format", `must be ${CHAIN_PAGE_SIZE}`, "page_size");
  const id = h.vow_id as string | undefined;
  let n: number;
  if (v2) {
    need(h, "full_pages", isIndex, "a whole number");
    n = h.full_pages as number;
    if (!("last_page" in h)) throw new VerificationError("bad-format", "is missing", "last_page");
    if (n === 0) {
      if (h.last_page !== null) throw new VerificationError("bad-chain", "pins a page where no page is full", "last_page");
    } else if (h.last_page === null) throw new VerificationError("bad-chain", `is null where ${n} pages are full`, "last_page");
    else chainPin(h.last_page, id, n - 1, "last_page", true);
  } else {
    const pages = h.pages;
    if (!Array.isArray(pages)) throw new VerificationError("bad-format", "must be a list", "pages");
    pages.forEach((pin, k) => chainPin(pin, id, k, `pages[${k}]`, false));
    n = pages.length;
  }
  if ((v2 || h.tail_from_position !== undefined) && h.tail_from_position !== n * CHAIN_PAGE_SIZE)
    throw new VerificationError(
      "bad-chain",
      `the tail starts at position ${String(h.tail_from_position)}, after ${n} full pages (${n * CHAIN_PAGE_SIZE} records)`,
      "tail_from_position",
    );
  if (h.length !== undefined && (h.length as number) + 1 !== n * CHAIN_PAGE_SIZE + tail.length)
    throw new VerificationError(
      "bad-chain",
      `says ${String(h.length)} entries (${(h.length as number) + 1} records), the head holds ${n} full pages and ${tail.length} records in its tail`,
      "length",
    );
  if (v2 && tail.length >= CHAIN_PAGE_SIZE)
    throw new VerificationError("bad-chain", `${tail.length} records: a full page's worth belongs in a page`, "tail");
  return h;
}

/** Options of {@link verifyChainPage}. */
export interface ChainPageOptions {
  /** The page's number, when known (its `page` must be it). */
  page?: number;
  /** The vow, when known (its `vow_id` must be it). */
  vowId?: string;
}

/**
 * Verify one full page of a chain alone (`/vow/<id>/chain/<k>`), and return it: signed by the
 * pinned key, of type `conduct.chain_page/v2` (or `conduct.chain_page/v1`), its number `page`,
 * exactly 32 records. A `v2` page also has its `vow_id`, `from_position` 32k, `head`
 * `/vow/<id>/chain` and `prev_page_sha256`, `null` on page 0 and 64 hex digits on any other (a
 * `v1` page's `vow_id`, `from_position` and `head` are checked when there). Its bytes against the
 * pin naming it are {@link verifyChainPages}'.
 *
 * @throws {VerificationError} saying what failed
 */
export function verifyChainPage(
  input: Uint8Array | string | JsonObject,
  vkey: string | PinnedKey,
  options: ChainPageOptions = {},
): JsonObject {
  const p = verifySigned(input, vkey, { type: CHAIN_PAGE_TYPES });
  const v2 = p.type === CHAIN_PAGE_TYPE;
  need(p, "page", isIndex, "a whole number");
  const k = p.page as number;
  if (options.page !== undefined && k !== options.page)
    throw new VerificationError("bad-chain", `is page ${k}, not page ${options.page}`, "page");
  if (v2 || p.vow_id !== undefined) need(p, "vow_id", isVowId, "16 lower-case hex digits");
  if (options.vowId !== undefined && p.vow_id !== undefined && p.vow_id !== options.vowId)
    throw new VerificationError("bad-chain", `a page of vow ${String(p.vow_id)}, not of ${options.vowId}`, "vow_id");
  if ((v2 || p.from_position !== undefined) && p.from_position !== k * CHAIN_PAGE_SIZE)
    throw new VerificationError("bad-chain", `${String(p.from_position)} where page ${k} starts at ${k * CHAIN_PAGE_SIZE}`, "from_position");
  if ((v2 || p.head !== undefined) && p.head !== `/vow/${String(p.vow_id)}/chain`)
    throw new VerificationError("bad-chain", `must be /vow/${String(p.vow_id)}/chain`, "head");
  const recs = p.records;
  if (!Array.isArray(recs) || !recs.every(isObject))
    throw new VerificationError("bad-format", "must be a list of records", "records");
  if (recs.length !== CHAIN_PAGE_SIZE)
    throw new VerificationError("bad-chain", `a full page holds ${CHAIN_PAGE_SIZE} records, this one ${recs.length}`, "records");
  if (v2) {
    if (!("prev_page_sha256" in p)) throw new VerificationError("bad-format", "is missing", "prev_page_sha256");
    if (k === 0) {
      if (p.prev_page_sha256 !== null)
        throw new VerificationError("bad-chain", "page 0 pins no page before it", "prev_page_sha256");
    } else if (!isHex64(p.prev_page_sha256))
      throw new VerificationError("bad-format", `must be 64 lower-case hex digits (the SHA-256 of page ${k - 1})`, "prev_page_sha256");
  }
  return p;
}

/** Options of {@link verifyChainPages}. */
export interface ChainPagesOptions {
  /**
   * Names page `k` in errors (default: `/vow/<id>/chain/<k>`, as served; a directory walk gives
   * `vow/<id>/chain/<k>.json`).
   */
  name?: (k: number) => string;
  /** Called with each page once it is checked (a `v2` head's newest first, a `v1` head's oldest first). */
  onPage?: (k: number, page: JsonObject) => void;
}

/** Walk the pages of a verified head `h` (see {@link verifyChainPages}); returns how many. */
async function walkChainPages(h: JsonObject, key: PinnedKey, readPage: PageReader, options: ChainPagesOptions): Promise<number> {
  const id = h.vow_id as string | undefined;
  const name = options.name ?? ((k: number) => (id === undefined ? `pages[${k}]` : `/vow/${id}/chain/${k}`));
  const check = async (k: number, pin: string, pinnedBy: string, type: string): Promise<JsonObject> => {
    const where = name(k);
    const bytes = await readPage(k);
    if (bytes === undefined)
      throw new VerificationError("missing-file", `not there, though ${pinnedBy} pins it`, where);
    if (sha256Hex(bytes) !== pin)
      throw new VerificationError("hash-mismatch", `the page's file is not the one ${pinnedBy} pins`, where);
    try {
      const page = verifyChainPage(bytes, key, id === undefined ? { page: k } : { page: k, vowId: id });
      if (page.type !== type)
        throw new VerificationError("wrong-type", `type ${JSON.stringify(page.type)} under a ${String(h.type)} head, expected ${JSON.stringify(type)}`, "type");
      options.onPage?.(k, page);
      return page;
    } catch (e) {
      throw said(e, where);
    }
  };
  if (h.type === CHAIN_TYPE) {
    const n = h.full_pages as number;
    let pin = n > 0 ? ((h.last_page as JsonObject).sha256 as string) : "";
    for (let k = n - 1; k >= 0; k--) {
      const page = await check(k, pin, k === n - 1 ? "the head's last_page" : `page ${k + 1}'s prev_page_sha256`, CHAIN_PAGE_TYPE);
      pin = page.prev_page_sha256 as string;
    }
    return n;
  }
  const pages = h.pages as JsonObject[];
  for (let k = 0; k < pages.length; k++) await check(k, pages[k]!.sha256 as string, `the head's pages[${k}]`, CHAIN_PAGE_V1_TYPE);
  return pages.length;
}

/**
 * Verify a chain head ({@link verifyChainHead}) and every full page it reaches, without
 * reading the records as a chain (what a mirror check needs; {@link verifyChain} does both).
 * From a `conduct.chain/v2` head: `last_page`, its file's SHA-256 against the pin, then each
 * page's predecessor by its `prev_page_sha256`, down to page 0 (`null`); from a
 * `conduct.chain/v1` head, each page by its pin in `pages`. Each page is verified
 * ({@link verifyChainPage}: signed, its number, of the head's vow, 32 records) and of the
 * head's version.
 *
 * @param head - the head's bytes or parsed object
 * @param readPage - reads page k's file; a `v2` head's pages are read newest first
 * @param vkey - the pinned key
 * @returns the verified head and the number of full pages read
 * @throws {VerificationError} saying what failed, `path` naming the page at fault
 */
export async function verifyChainPages(
  head: Uint8Array | string | JsonObject,
  readPage: PageReader,
  vkey: string | PinnedKey,
  options: ChainPagesOptions = {},
): Promise<{ head: JsonObject; pages: number }> {
  const key = parseVkey(vkey);
  const h = verifyChainHead(head, key);
  return { head: h, pages: await walkChainPages(h, key, readPage, options) };
}

/**
 * Verify a vow's whole chain as served (VOWS.md, "`/vow/<id>/chain`"): the head and its pages
 * ({@link verifyChainPages}: a `conduct.chain/v2` head's `last_page`, then each page's
 * predecessor by its `prev_page_sha256`; a `conduct.chain/v1` head's pin of each page); the
 * records are the pages' in page order, then the head's `tail`, checked as one chain
 * ({@link verifyChainRecords}). The head's `vow_id`, `length` (entries) and `head_sha256` (the
 * last record's hash) must be the chain's.
 *
 * @param head - the head's bytes or parsed object
 * @param readPage - reads page k's file (only called when the head has full pages; a `v2`
 *   head's newest first, each page once)
 * @param vkey - the pinned key
 * @throws {VerificationError} saying what failed (a page's `path` is `/vow/<id>/chain/<k>`)
 */
export async function verifyChain(
  head: Uint8Array | string | JsonObject,
  readPage: PageReader,
  vkey: string | PinnedKey,
): Promise<VerifiedChainDocument> {
  const key = parseVkey(vkey);
  const paged: JsonObject[][] = [];
  const { head: h } = await verifyChainPages(head, readPage, key, {
    onPage: (k, page) => {
      paged[k] = page.records as JsonObject[];
    },
  });
  const inPages = paged.length * CHAIN_PAGE_SIZE;
  const records = [...paged.flat(), ...(h.tail as JsonObject[])];
  let chain: VerifiedChain;
  try {
    chain = verifyChainRecords(records, key);
  } catch (e) {
    // `records[i]` (chain position i) said of the page that holds it, or of the head's tail.
    const m = e instanceof VerificationError && e.path !== undefined ? /^records\[(\d+)\]$/.exec(e.path) : null;
    if (m === null || !(e instanceof VerificationError)) throw e;
    const i = Number(m[1]);
    const what = e.message.slice(e.path!.length + 2);
    const id = typeof h.vow_id === "string" ? h.vow_id : undefined;
    if (i >= inPages) throw new VerificationError(e.code, `tail[${i - inPages}] (chain position ${i}): ${what}`, "tail");
    const p = Math.floor(i / CHAIN_PAGE_SIZE);
    throw new VerificationError(
      e.code,
      `records[${i % CHAIN_PAGE_SIZE}] (chain position ${i}): ${what}`,
      id === undefined ? `pages[${p}]` : `/vow/${id}/chain/${p}`,
    );
  }
  if (h.vow_id !== undefined && h.vow_id !== chain.vow.vow_id)
    throw new VerificationError("bad-chain", "the head names another vow", "vow_id");
  if (h.length !== undefined && h.length !== chain.entries.length)
    throw new VerificationError("bad-chain", `says ${String(h.length)} entries, the chain holds ${chain.entries.length}`, "length");
  if (h.head_sha256 !== undefined && h.head_sha256 !== recordSha256(records[records.length - 1]!))
    throw new VerificationError("hash-mismatch", "is not the SHA-256 of the chain's last record", "head_sha256");
  return { ...chain, head: h };
}

// ---- the index of vows ---------------------------------------------------------------------

/**
 * Check one vow as the index lists it (`where` names it): its `vow_id` the id of its origin (the
 * pinned key's name), `log_index`, `text_sha256` and `agent`; `text_sha256` the hash of `text`
 * when open, no `text` when sealed; `href` its page.
 */
function checkListedVow(v: Json | undefined, key: PinnedKey, where: string): JsonObject {
  if (!isObject(v)) throw new VerificationError("bad-format", "must be an object", where);
  const at = (m: string): string => `${where}.${m}`;
  const want = (m: string, ok: (x: Json | undefined) => boolean, what: string): void => {
    if (!ok(v[m])) throw new VerificationError("bad-format", `must be ${what}`, at(m));
  };
  want("vow_id", (x) => typeof x === "string" && /^[0-9a-f]{16}$/.test(x), "16 lower-case hex digits");
  want("agent", isString, "a string");
  want("log_index", isIndex, "a log index");
  want("text_sha256", isHex64, "64 lower-case hex digits");
  want("sealed", (x) => typeof x === "boolean", "a boolean");
  want("sandbox", (x) => typeof x === "boolean", "a boolean");
  want("taken_at", isInstant, "an RFC 3339 UTC instant");
  const id = vowId(key.name, v.log_index as number, v.text_sha256 as string, v.agent as string);
  if (id !== v.vow_id) throw new VerificationError("hash-mismatch", `is not the id of this vow (expected ${id})`, at("vow_id"));
  if (v.href !== `/vow/${id}`) throw new VerificationError("bad-format", `must be /vow/${id}`, at("href"));
  if (v.sealed === true) {
    if (v.text !== undefined) throw new VerificationError("bad-format", "a sealed vow publishes no text", at("text"));
  } else {
    want("text", isString, "a string (the vow is not sealed)");
    if (sha256Hex(v.text as string) !== v.text_sha256)
      throw new VerificationError("hash-mismatch", "is not the SHA-256 of the vow's text", at("text_sha256"));
  }
  return v;
}

/** Check a run of listed vows (`member` of a document, ranks from `first`): each one, log indexes increasing. */
function checkListedVows(list: Json | undefined, key: PinnedKey, member: string, first: number): JsonObject[] {
  if (!Array.isArray(list)) throw new VerificationError("bad-format", "must be a list of vows", member);
  const out: JsonObject[] = [];
  list.forEach((v, n) => {
    const vow = checkListedVow(v, key, `${member}[${n}]`);
    const last = out[out.length - 1];
    if (last !== undefined && (vow.log_index as number) <= (last.log_index as number))
      throw new VerificationError(
        "bad-chain",
        `vow ${first + n}: log_index ${String(vow.log_index)} is not after ${String(last.log_index)} (the order taken)`,
        `${member}[${n}]`,
      );
    out.push(vow);
  });
  return out;
}

/** The SHA-256 a page pin (`{href: "/vows/<k>", page: k, sha256}`, member `member`) names for page `k`. */
function pagePin(pin: Json | undefined, k: number, member: string): string {
  if (pin === null || pin === undefined)
    throw new VerificationError("bad-chain", `is null where page ${k} is full`, member);
  if (!isObject(pin)) throw new VerificationError("bad-format", "must be a page pin", member);
  if (pin.page !== k || pin.href !== `/vows/${k}`)
    throw new VerificationError("bad-chain", `names page ${JSON.stringify(pin.page ?? null)}, not page ${k} (/vows/${k})`, member);
  if (!isHex64(pin.sha256)) throw new VerificationError("bad-format", "must be 64 lower-case hex digits", `${member}.sha256`);
  return pin.sha256 as string;
}

/**
 * Verify the head of the index of vows (`/vows`, `conduct.vows/v2`; VOWS.md, "The index of
 * vows"): signed by the pinned key; `tail_from` where the `pages` full pages of `page_size` end;
 * `count` = `tail_from` + the tail; `last_page` a pin of page `pages − 1` (`null` when no page is
 * full); every vow of the tail, in the order taken. {@link verifyVowsIndex} reads every vow.
 *
 * @throws {VerificationError} saying what failed
 */
export function verifyVowsHead(input: Uint8Array | string | JsonObject, vkey: string | PinnedKey): JsonObject {
  const key = parseVkey(vkey);
  const h = verifySigned(input, key, { type: VOWS_TYPE });
  need(h, "page_size", (v) => isIndex(v) && (v as number) > 0, "a positive whole number");
  need(h, "pages", isIndex, "a whole number");
  need(h, "tail_from", isIndex, "a whole number");
  need(h, "count", isIndex, "a whole number");
  const size = h.page_size as number;
  const pages = h.pages as number;
  if (h.tail_from !== pages * size)
    throw new VerificationError("bad-chain", `${String(h.tail_from)} where ${pages} pages of ${size} end at ${pages * size}`, "tail_from");
  const tail = checkListedVows(h.tail, key, "tail", pages * size);
  if (h.count !== pages * size + tail.length)
    throw new VerificationError("bad-chain", `${String(h.count)}, but ${pages} pages of ${size} and ${tail.length} in the tail`, "count");
  pinUnlessFirst(h, "last_page", pages, "pins a page where no page is full");
  return h;
}

/** `doc[member]` is `null` when `k` is 0 (`why` says so otherwise), else a pin of page `k − 1`. */
function pinUnlessFirst(doc: JsonObject, member: string, k: number, why: string): void {
  if (!(member in doc)) throw new VerificationError("bad-format", "is missing", member);
  if (k === 0) {
    if (doc[member] !== null) throw new VerificationError("bad-chain", why, member);
  } else pagePin(doc[member], k - 1, member);
}

/** Options of {@link verifyVowsPage}. */
export interface VowsPageOptions {
  /** The page's number, when known (its `page` must be it). */
  page?: number;
  /** Vows in a full page (the head's `page_size`; default {@link VOWS_PAGE_SIZE}). */
  pageSize?: number;
}

/**
 * Verify one full page of the index of vows (`/vows/<k>`, `conduct.vows_page/v1`): signed by the
 * pinned key; its number `page`; `from` = `page_size × k`; exactly `page_size` vows, each as the
 * index lists them, in the order taken; `prev` `null` on page 0, else a pin of page `k − 1`. Its
 * bytes against the pin naming it are {@link verifyVowsIndex}'s.
 *
 * @throws {VerificationError} saying what failed
 */
export function verifyVowsPage(
  input: Uint8Array | string | JsonObject,
  vkey: string | PinnedKey,
  options: VowsPageOptions = {},
): JsonObject {
  const key = parseVkey(vkey);
  const size = options.pageSize ?? VOWS_PAGE_SIZE;
  const p = verifySigned(input, key, { type: VOWS_PAGE_TYPE });
  need(p, "page", isIndex, "a whole number");
  const k = p.page as number;
  if (options.page !== undefined && k !== options.page)
    throw new VerificationError("bad-chain", `is page ${k}, not page ${options.page}`, "page");
  if (p.from !== k * size)
    throw new VerificationError("bad-chain", `${String(p.from)} where page ${k} starts at ${k * size}`, "from");
  const vows = checkListedVows(p.vows, key, "vows", k * size);
  if (vows.length !== size)
    throw new VerificationError("bad-chain", `a full page holds ${size} vows, this one ${vows.length}`, "vows");
  pinUnlessFirst(p, "prev", k, "page 0 pins no page before it");
  return p;
}

/** The whole index of vows, verified. */
export interface VerifiedVowsIndex {
  /** The verified head (`conduct.vows/v2`). */
  head: JsonObject;
  /** Every vow, in the order taken, oldest first. */
  vows: JsonObject[];
}

/**
 * Verify the whole index of vows as served (VOWS.md, "The index of vows"): the head
 * ({@link verifyVowsHead}), then, walking back from its `last_page` pin, each full page's bytes
 * against the SHA-256 pinning them, each page verified ({@link verifyVowsPage}) before the pin in
 * its `prev` is trusted for the page before it, down to page 0; log indexes increase across the
 * pages and into the tail.
 *
 * @param head - the head's bytes or parsed object
 * @param readPage - reads page k's file, as served (`/vows/<k>`); called newest page first
 * @param vkey - the pinned key
 * @throws {VerificationError} saying what failed (its `path` names the page, `/vows/<k>`)
 */
export async function verifyVowsIndex(
  head: Uint8Array | string | JsonObject,
  readPage: PageReader,
  vkey: string | PinnedKey,
): Promise<VerifiedVowsIndex> {
  const key = parseVkey(vkey);
  const h = verifyVowsHead(head, key);
  const size = h.page_size as number;
  const count = h.pages as number;
  const listed: JsonObject[][] = [];
  let want = count > 0 ? pagePin(h.last_page, count - 1, "last_page") : undefined;
  for (let k = count - 1; k >= 0; k--) {
    const where = `/vows/${k}`;
    const bytes = await readPage(k);
    if (bytes === undefined) throw new VerificationError("missing-file", "not there, though the index reaches it", where);
    if (sha256Hex(bytes) !== want)
      throw new VerificationError(
        "hash-mismatch",
        `the page's file is not the one ${k === count - 1 ? "the head's last_page" : `page ${k + 1}'s prev`} pins`,
        where,
      );
    let page: JsonObject;
    try {
      page = verifyVowsPage(bytes, key, { page: k, pageSize: size });
    } catch (e) {
      throw e instanceof VerificationError ? new VerificationError(e.code, e.message, where) : e;
    }
    listed.unshift(page.vows as JsonObject[]);
    want = k > 0 ? pagePin(page.prev, k - 1, "prev") : undefined;
  }
  const vows = [...listed.flat(), ...(h.tail as JsonObject[])];
  // Within a page and within the tail the order is checked already; here, across them.
  for (let r = size; r < vows.length; r += size) {
    if ((vows[r]!.log_index as number) <= (vows[r - 1]!.log_index as number))
      throw new VerificationError(
        "bad-chain",
        `vow ${r}: log_index ${String(vows[r]!.log_index)} is not after ${String(vows[r - 1]!.log_index)} (the order taken)`,
        r < count * size ? `/vows/${r / size}` : "tail",
      );
  }
  return { head: h, vows };
}
