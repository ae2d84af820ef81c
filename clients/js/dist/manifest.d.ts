/**
 * The site manifest (library/MIRRORS.md, "The manifest" and "Checking a mirror"): a 16-way trie
 * of signed bins whose root, `manifest.json` (`conduct.manifest/v2`), names its children by
 * length and SHA-256, down to leaves (`conduct.manifest-bin/v1`) listing every file outside
 * `log/` with its length and SHA-256.
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
export declare const MANIFEST_TYPE = "conduct.manifest/v2";
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
     * completeness is checked by counting: the files outside `log/` and the manifest are exactly
     * those the trie lists, every file under `manifest/` is a bin the trie names, and no path
     * holds a dotfile but `.well-known/`. HTTP offers no listing, so leave it out there.
     */
    listFiles?: () => Promise<Iterable<string> | AsyncIterable<string>>;
    /** Also verify every listed `.json` file as a signed snapshot (default true). */
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
    /** How many bins the trie has, the root included. */
    bins: number;
    /** How many files the copy holds outside `log/` and the manifest (when listed), else `undefined`. */
    counted: number | undefined;
}
/**
 * Verify a copy of the tree against its manifest (MIRRORS.md, "What `verify-site` checks"),
 * stopping at the first failure, which names the path at fault:
 *
 * - the root verifies under the pinned key, has type `conduct.manifest/v2` and has not expired;
 * - each bin, depth first, has exactly the length and SHA-256 its parent gives, verifies, has
 *   type `conduct.manifest-bin/v1` and the prefix its path names, and lists as many files as
 *   its parent says: either files whose key starts with its prefix, or its children, each one
 *   hex digit longer;
 * - every listed file is there with exactly the listed length and SHA-256, and (by default)
 *   each `.json` file is a signed snapshot that verifies (`hive/profile.json`, the Nostr
 *   profile, a verified kind-0 event instead);
 * - with {@link ManifestOptions.listFiles}, completeness by counting.
 *
 * The log (`log/`) is not the manifest's: check it with `verifyCheckpoint` and
 * `verifyInclusion`.
 *
 * @param readFile - reads a file of the tree by path
 * @param vkey - the pinned key
 * @throws {VerificationError} saying what failed, `path` naming the file
 */
export declare function verifyManifest(readFile: FileReader, vkey: string | PinnedKey, options?: ManifestOptions): Promise<ManifestReport>;
