/**
 * The site manifest (library/MIRRORS.md, "The manifest" and "Checking a mirror"): a 16-way trie
 * of signed bins whose root, `manifest.json` (`conduct.manifest/v3`), names its children by
 * length and SHA-256, down to leaves (`conduct.manifest-bin/v1`) listing every file outside
 * `log/` but the vow chain pages (`vow/<id>/chain/<k>.json`) with its length and SHA-256. A chain
 * page is proven by its vow's chain head (`vow/<id>/chain.json`, listed): the head pins the last
 * full page, each page the one before it (VOWS.md). A `conduct.manifest/v2` root (the same
 * members, its leaves listing the chain pages too) is still read: a tree mid-upgrade.
 *
 * {@link verifyManifest} reads files through a {@link FileReader}, so the same walk checks a
 * directory (Node: `dirReader` of `@conduct/kit/node`) or a mirror over HTTP ({@link httpReader},
 * also in browsers).
 *
 * @module
 */
import { type JsonObject } from "./encoding.js";
import { type PinnedKey } from "./signed.js";
/** The root's type. */
export declare const MANIFEST_TYPE = "conduct.manifest/v3";
/** The root's type before the chain pages left the listing (same members; still read). */
export declare const MANIFEST_V2_TYPE = "conduct.manifest/v2";
/** Every root type {@link verifyManifest} reads, oldest first. */
export declare const MANIFEST_TYPES: readonly string[];
/** Every other bin's type. */
export declare const BIN_TYPE = "conduct.manifest-bin/v1";
/** The root's path. */
export declare const ROOT_PATH = "manifest.json";
/** The one JSON file that is a Nostr event, not a signed snapshot (library/NOSTR.md). */
export declare const NOSTR_PROFILE = "hive/profile.json";
/**
 * A file's unit (MIRRORS.md, "Units and keys"): its path up to the second `/` or the first `.`
 * after its first component; a path of one component ends at its first `.` (past a leading
 * one), as MIRRORS.md's examples have it (`index.html` is `index`). `vow/<id>.json` and
 * `vow/<id>/chain/3.json` are both `vow/<id>`; `.well-known/x402.json` is `.well-known/x402`.
 */
export declare function unitOf(path: string): string;
/** A file's key: the lower-case hex SHA-256 of its unit, 64 digits (MIRRORS.md). */
export declare function fileKey(path: string): string;
/**
 * The vow and page number of a vow chain page's path, `vow/<id>/chain/<k>.json` (`<k>` in
 * decimal, no leading zero), which the manifest does not list (MIRRORS.md, "What it lists");
 * `undefined` for any other path (`vow/<id>/chain/01.json` is an ordinary file the manifest must
 * list). `page` is `NaN` beyond a safe integer: such a page is reached by no head.
 */
export declare function chainPageOf(path: string): {
    vowId: string;
    page: number;
} | undefined;
/** The vow of a vow chain head's path, `vow/<id>/chain.json`; `undefined` for any other path. */
export declare function chainHeadOf(path: string): string | undefined;
/** The path of the bin with `prefix` (`""` is the root). */
export declare function binPath(prefix: string): string;
/**
 * Reads one file of the tree by its path (`vow/<id>.json`); resolves to `undefined` when there
 * is no such file. Any other failure should reject.
 */
export type FileReader = (path: string) => Promise<Uint8Array | undefined>;
/**
 * A {@link FileReader} over HTTP: `GET <base>/<path>` (exact file paths, which the service, its
 * nginx configuration and any static mirror serve as they are). 404 is a missing file.
 *
 * @param base - the tree's base URL (`https://mirror.example`)
 * @param fetchImpl - the fetch to use (default `globalThis.fetch`)
 */
export declare function httpReader(base: string, fetchImpl?: typeof fetch): FileReader;
/** Options of {@link verifyManifest}. */
export interface ManifestOptions {
    /** The instant the root must not have expired at (default: now). */
    now?: Date;
    /**
     * Every file of the copy, as paths relative to its root (a directory listing). When given,
     * completeness is checked by counting: the files outside `log/`, the manifest and the chain
     * pages are exactly those the trie lists less the chain pages it lists, the chain pages are
     * exactly those the listed chain heads reach, every file under `manifest/` is a bin the trie
     * names, and no path holds a dotfile but `.well-known/`. HTTP offers no listing, so leave it
     * out there.
     */
    listFiles?: () => Promise<Iterable<string> | AsyncIterable<string>>;
    /**
     * Also verify every listed `.json` file as a signed snapshot (default true). The listed chain
     * heads and the pages they reach are verified whatever it says: they are what proves the pages.
     */
    checkJson?: boolean;
    /** Called with each listed file's path once it is checked. */
    onFile?: (path: string) => void;
}
/** What {@link verifyManifest} checked. */
export interface ManifestReport {
    /** The verified root (`manifest.json`). */
    root: JsonObject;
    /** How many files the trie lists (each found, with its listed length and SHA-256). */
    files: number;
    /** How many of those are chain pages (a tree mid-upgrade; none under a tree past it). */
    listedChainPages: number;
    /** How many chain pages the listed chain heads reach (each found and checked). */
    chainPages: number;
    /** How many bins the trie has, the root included. */
    bins: number;
    /**
     * How many files the copy holds outside `log/`, the manifest and the chain pages (when
     * listed: `files − listedChainPages`), else `undefined`.
     */
    counted: number | undefined;
}
/**
 * Verify a copy of the tree against its manifest (MIRRORS.md, "What `verify-site` checks"),
 * stopping at the first failure, which names the path at fault:
 *
 * - the root verifies under the pinned key, has type `conduct.manifest/v3` (or
 *   `conduct.manifest/v2`) and has not expired;
 * - each bin, depth first, has exactly the length and SHA-256 its parent gives, verifies, has
 *   type `conduct.manifest-bin/v1` and the prefix its path names, and lists as many files as
 *   its parent says: either files whose key starts with its prefix, or its children, each one
 *   hex digit longer;
 * - every listed file is there with exactly the listed length and SHA-256, and (by default)
 *   each `.json` file is a signed snapshot that verifies (`hive/profile.json`, the Nostr
 *   profile, a verified kind-0 event instead);
 * - every listed chain head (`vow/<id>/chain.json`) is a verified head of vow `<id>` and its
 *   pages are there and hold (`verifyChainPages`: a `conduct.chain/v2` head's `last_page` by
 *   its pin, each page before it by its successor's `prev_page_sha256`; a `conduct.chain/v1`
 *   head's pages by its pins; each page signed, numbered and of the vow), listed or not;
 * - with {@link ManifestOptions.listFiles}, completeness by counting (the chain pages apart:
 *   each one on disk must be a page a listed head reaches).
 *
 * The log (`log/`) is not the manifest's: check it with `verifyCheckpoint` and
 * `verifyInclusion`.
 *
 * @param readFile - reads a file of the tree by path
 * @param vkey - the pinned key
 * @throws {VerificationError} saying what failed, `path` naming the file
 */
export declare function verifyManifest(readFile: FileReader, vkey: string | PinnedKey, options?: ManifestOptions): Promise<ManifestReport>;
