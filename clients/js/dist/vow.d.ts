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
import { type JsonObject } from "./encoding.js";
import { type MeasuredOptions, type PinnedKey } from "./signed.js";
/** The type of a vow record. */
export declare const VOW_TYPE = "conduct.vow/v1";
/** The type of a chain entry (a report-in). */
export declare const ENTRY_TYPE = "conduct.entry/v1";
/** The type of a chain's head (VOWS.md: pins the last full page, each page the one before it). */
export declare const CHAIN_TYPE = "conduct.chain/v2";
/** The type of a full page of a chain (with `prev_page_sha256`, the link to the page before it). */
export declare const CHAIN_PAGE_TYPE = "conduct.chain_page/v2";
/** The type of a chain's head before the linked pages: it pinned every full page (`pages`). Still read. */
export declare const CHAIN_V1_TYPE = "conduct.chain/v1";
/** The type of a full page under a `conduct.chain/v1` head (no `prev_page_sha256`). Still read. */
export declare const CHAIN_PAGE_V1_TYPE = "conduct.chain_page/v1";
/** Every chain head type the kit reads, oldest first. */
export declare const CHAIN_TYPES: readonly string[];
/** Every chain page type the kit reads, oldest first. */
export declare const CHAIN_PAGE_TYPES: readonly string[];
/** Records in a full chain page (VOWS.md: positions `32k .. 32k+31` form page `k`). */
export declare const CHAIN_PAGE_SIZE = 32;
/** The type of the index of vows' head (`/vows`). */
export declare const VOWS_TYPE = "conduct.vows/v2";
/** The type of a full page of the index of vows (`/vows/<k>`). */
export declare const VOWS_PAGE_TYPE = "conduct.vows_page/v1";
/** Vows in a full page of the index (`/vows/<k>` holds the vows taken `256k .. 256k+255`). */
export declare const VOWS_PAGE_SIZE = 256;
/**
 * A vow's id (VOWS.md): the first 8 bytes, in hex, of SHA-256 over the length-prefixed strings
 * `conduct.vow_id/v1`, the log origin, the decimal log index, `text_sha256` and `agent`. Each
 * string is prefixed by its UTF-8 length as a big-endian u64 (VOWS.md does not say which
 * prefix; this is the service's, read from its source).
 */
export declare function vowId(origin: string, logIndex: number, textSha256: string, agent: string): string;
/** The hex SHA-256 of a record's leaf bytes (its RFC 8785 form): what the next `prev` names. */
export declare function recordSha256(record: JsonObject): string;
/**
 * Verify a vow record (VOWS.md): signed by the pinned key, type `conduct.vow/v1`, `vow_id` the
 * id of its origin (the pinned key's name), `log_index`, `text_sha256` and `agent`, `text_sha256`
 * the hash of `text` when the vow is open (a sealed vow carries no `text`), and a sandbox vow
 * saying why (`sandbox_reason`) while a signed one names its wallet and signature.
 *
 * @throws {VerificationError} saying what failed
 */
export declare function verifyVow(input: Uint8Array | string | JsonObject, vkey: string | PinnedKey): JsonObject;
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
export declare function verifyEntry(input: Uint8Array | string | JsonObject, vkey: string | PinnedKey, options?: MeasuredOptions): JsonObject;
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
export declare function verifyChainRecords(records: JsonObject[], vkey: string | PinnedKey): VerifiedChain;
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
export declare function verifyChainHead(input: Uint8Array | string | JsonObject, vkey: string | PinnedKey): JsonObject;
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
export declare function verifyChainPage(input: Uint8Array | string | JsonObject, vkey: string | PinnedKey, options?: ChainPageOptions): JsonObject;
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
export declare function verifyChainPages(head: Uint8Array | string | JsonObject, readPage: PageReader, vkey: string | PinnedKey, options?: ChainPagesOptions): Promise<{
    head: JsonObject;
    pages: number;
}>;
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
export declare function verifyChain(head: Uint8Array | string | JsonObject, readPage: PageReader, vkey: string | PinnedKey): Promise<VerifiedChainDocument>;
/**
 * Verify the head of the index of vows (`/vows`, `conduct.vows/v2`; VOWS.md, "The index of
 * vows"): signed by the pinned key; `tail_from` where the `pages` full pages of `page_size` end;
 * `count` = `tail_from` + the tail; `last_page` a pin of page `pages − 1` (`null` when no page is
 * full); every vow of the tail, in the order taken. {@link verifyVowsIndex} reads every vow.
 *
 * @throws {VerificationError} saying what failed
 */
export declare function verifyVowsHead(input: Uint8Array | string | JsonObject, vkey: string | PinnedKey): JsonObject;
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
export declare function verifyVowsPage(input: Uint8Array | string | JsonObject, vkey: string | PinnedKey, options?: VowsPageOptions): JsonObject;
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
export declare function verifyVowsIndex(head: Uint8Array | string | JsonObject, readPage: PageReader, vkey: string | PinnedKey): Promise<VerifiedVowsIndex>;
