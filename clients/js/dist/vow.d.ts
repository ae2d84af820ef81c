/**
 * Vows and their chains (library/VOWS.md, "Record formats"): the vow record
 * (`conduct.vow/v1`), its entries (`conduct.entry/v1`), the links between them, and the chain
 * as served (`conduct.chain/v1` head and `conduct.chain_page/v1` pages); and the public index
 * of every vow, in the order taken (`conduct.vows/v2` head and `conduct.vows_page/v1` pages).
 *
 * @module
 */
import { type JsonObject } from "./encoding.js";
import { type PinnedKey } from "./signed.js";
/** The type of a vow record. */
export declare const VOW_TYPE = "conduct.vow/v1";
/** The type of a chain entry (a report-in). */
export declare const ENTRY_TYPE = "conduct.entry/v1";
/** The type of a chain's head. */
export declare const CHAIN_TYPE = "conduct.chain/v1";
/** The type of a full page of a chain. */
export declare const CHAIN_PAGE_TYPE = "conduct.chain_page/v1";
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
 * with its `vow_id`, `seq`, `prev`, `at`, `log_index`, `trace_sha256` and `proof`. Its links to
 * the records before it are {@link verifyChainRecords}'s.
 *
 * @throws {VerificationError} saying what failed
 */
export declare function verifyEntry(input: Uint8Array | string | JsonObject, vkey: string | PinnedKey): JsonObject;
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
 * `vow/<id>/chain/<k>.json`) or the index of vows' (`/vows/<k>`, `vows/<k>.json`).
 */
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
