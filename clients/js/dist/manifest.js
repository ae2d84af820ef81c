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
import { isObject, parseObject, sha256Hex } from "./encoding.js";
import { VerificationError } from "./errors.js";
import { verifyNostrEvent } from "./nostr.js";
import { parseVkey, verifySigned, verifySnapshot } from "./signed.js";
import { verifyChainPages } from "./vow.js";
/** The root's type. */
export const MANIFEST_TYPE = "conduct.manifest/v3";
/** The root's type before the chain pages left the listing (same members; still read). */
export const MANIFEST_V2_TYPE = "conduct.manifest/v2";
/** Every root type {@link verifyManifest} reads, oldest first. */
export const MANIFEST_TYPES = [MANIFEST_V2_TYPE, MANIFEST_TYPE];
/** Every other bin's type. */
export const BIN_TYPE = "conduct.manifest-bin/v1";
/** The root's path. */
export const ROOT_PATH = "manifest.json";
/** The one JSON file that is a Nostr event, not a signed snapshot (library/NOSTR.md). */
export const NOSTR_PROFILE = "hive/profile.json";
/**
 * A file's unit (MIRRORS.md, "Units and keys"): its path up to the second `/` or the first `.`
 * after its first component; a path of one component ends at its first `.` (past a leading
 * one), as MIRRORS.md's examples have it (`index.html` is `index`). `vow/<id>.json` and
 * `vow/<id>/chain/3.json` are both `vow/<id>`; `.well-known/x402.json` is `.well-known/x402`.
 */
export function unitOf(path) {
    const slash = path.indexOf("/");
    if (slash < 0) {
        const dot = path.indexOf(".", 1);
        return dot < 0 ? path : path.slice(0, dot);
    }
    const rest = path.slice(slash + 1);
    const m = /[/.]/.exec(rest);
    return path.slice(0, slash + 1 + (m === null ? rest.length : m.index));
}
/** A file's key: the lower-case hex SHA-256 of its unit, 64 digits (MIRRORS.md). */
export function fileKey(path) {
    return sha256Hex(unitOf(path));
}
const CHAIN_PAGE_PATH = /^vow\/([^/]+)\/chain\/(0|[1-9][0-9]*)\.json$/;
const CHAIN_HEAD_PATH = /^vow\/([^/]+)\/chain\.json$/;
/**
 * The vow and page number of a vow chain page's path, `vow/<id>/chain/<k>.json` (`<k>` in
 * decimal, no leading zero), which the manifest does not list (MIRRORS.md, "What it lists");
 * `undefined` for any other path (`vow/<id>/chain/01.json` is an ordinary file the manifest must
 * list). `page` is `NaN` beyond a safe integer: such a page is reached by no head.
 */
export function chainPageOf(path) {
    const m = CHAIN_PAGE_PATH.exec(path);
    if (m === null)
        return undefined;
    const k = Number(m[2]);
    return { vowId: m[1], page: Number.isSafeInteger(k) ? k : NaN };
}
/** The vow of a vow chain head's path, `vow/<id>/chain.json`; `undefined` for any other path. */
export function chainHeadOf(path) {
    return CHAIN_HEAD_PATH.exec(path)?.[1];
}
/** The path of the bin with `prefix` (`""` is the root). */
export function binPath(prefix) {
    return prefix === "" ? ROOT_PATH : `manifest/${prefix}.json`;
}
/**
 * A {@link FileReader} over HTTP: `GET <base>/<path>` (exact file paths, which the service, its
 * nginx configuration and any static mirror serve as they are). 404 is a missing file.
 *
 * @param base - the tree's base URL (`https://mirror.example`)
 * @param fetchImpl - the fetch to use (default `globalThis.fetch`)
 */
export function httpReader(base, fetchImpl = globalThis.fetch) {
    const root = base.endsWith("/") ? base : base + "/";
    return async (path) => {
        const url = root + path.split("/").map(encodeURIComponent).join("/");
        const res = await fetchImpl(url);
        if (res.status === 404)
            return undefined;
        if (!res.ok)
            throw new Error(`GET ${url}: HTTP ${res.status}`);
        return new Uint8Array(await res.arrayBuffer());
    };
}
const isCount = (v) => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
const isHex64 = (v) => typeof v === "string" && /^[0-9a-f]{64}$/.test(v);
function pin(v, where) {
    if (!isObject(v) || !isCount(v.files) || v.files === 0 || !isCount(v.len) || !isHex64(v.sha256))
        throw new VerificationError("bad-format", "must be {files (at least 1), len, sha256}", where);
    return { files: v.files, len: v.len, sha256: v.sha256 };
}
/** A path a manifest may list: relative, no empty, `.` or `..` segment, outside `log/` and the manifest. */
function listable(path) {
    if (path === ROOT_PATH || path.startsWith("manifest/") || path.startsWith("log/"))
        return false;
    return path.split("/").every((s) => s !== "" && s !== "." && s !== "..");
}
/** A path segment that makes a dotfile (only `.well-known` may start with a dot). */
function dotfile(path) {
    return path.split("/").some((s) => s.startsWith(".") && s !== ".well-known");
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
export async function verifyManifest(readFile, vkey, options = {}) {
    const key = parseVkey(vkey);
    const now = options.now ?? new Date();
    const checkJson = options.checkJson ?? true;
    const listed = new Set();
    const bins = new Set([ROOT_PATH]);
    /** The full pages each listed chain head reaches, by vow. */
    const reached = new Map();
    let chainPages = 0;
    let listedChainPages = 0;
    const read = async (path) => {
        const bytes = await readFile(path);
        if (bytes === undefined)
            throw new VerificationError("missing-file", "listed but not there", path);
        return bytes;
    };
    /** A failure `e` said of the file `path` (the member it named inside the file kept in its message). */
    const of = (path, e) => e instanceof VerificationError && e.path !== path ? new VerificationError(e.code, e.message, path) : e;
    const within = (path, f) => {
        try {
            return f();
        }
        catch (e) {
            throw of(path, e);
        }
    };
    /** Walk the pages of the listed chain head `path` of vow `id` (its bytes checked already). */
    const walkChain = async (path, id, bytes) => {
        const pagePath = (k) => `vow/${id}/chain/${k}.json`;
        const head = within(path, () => parseObject(bytes));
        if (head.vow_id !== id)
            throw new VerificationError("bad-chain", `the chain head of vow ${typeof head.vow_id === "string" ? head.vow_id : JSON.stringify(head.vow_id ?? null)}, at vow ${id}'s path`, path);
        let n;
        try {
            n = (await verifyChainPages(head, (k) => readFile(pagePath(k)), key, { name: pagePath })).pages;
        }
        catch (e) {
            // A failure in a page names the page already; one in the head is said of the head's file.
            const inPage = e instanceof VerificationError && e.path !== undefined && chainPageOf(e.path)?.vowId === id;
            throw inPage ? e : of(path, e);
        }
        reached.set(id, n);
        chainPages += n;
    };
    const rootBytes = await read(ROOT_PATH);
    const root = within(ROOT_PATH, () => {
        const r = verifySigned(rootBytes, key, { type: MANIFEST_TYPES });
        const expires = typeof r.expires === "string" ? Date.parse(r.expires) : NaN;
        if (typeof r.as_of !== "string" || Number.isNaN(Date.parse(r.as_of)))
            throw new VerificationError("bad-format", "as_of must be an RFC 3339 instant");
        if (Number.isNaN(expires))
            throw new VerificationError("bad-format", "expires must be an RFC 3339 instant");
        if (expires <= now.getTime())
            throw new VerificationError("expired", `the manifest expired at ${String(r.expires)}`);
        return r;
    });
    /** Check the children `entries` of the bin `prefix` (at `where`) and walk each; returns files under it. */
    const walkChildren = async (prefix, where, entries) => {
        if (!isObject(entries) || Object.keys(entries).length === 0)
            throw new VerificationError("bad-format", "bins must name at least one child", where);
        let total = 0;
        for (const [childPath, v] of Object.entries(entries)) {
            const m = /^manifest\/([0-9a-f]+)\.json$/.exec(childPath);
            if (m === null || m[1].length !== prefix.length + 1 || !m[1].startsWith(prefix))
                throw new VerificationError("bad-format", `${childPath} is not a child of this bin`, where);
            const p = pin(v, `${where}: ${childPath}`);
            total += p.files;
            await walkBin(m[1], childPath, p);
        }
        return total;
    };
    const walkBin = async (prefix, path, expected) => {
        bins.add(path);
        const bytes = await read(path);
        if (bytes.length !== expected.len)
            throw new VerificationError("hash-mismatch", `${bytes.length} bytes, its parent says ${expected.len}`, path);
        if (sha256Hex(bytes) !== expected.sha256)
            throw new VerificationError("hash-mismatch", "not the bin its parent names (SHA-256)", path);
        const bin = within(path, () => verifySigned(parseObject(bytes), key, { type: BIN_TYPE }));
        if (bin.prefix !== prefix)
            throw new VerificationError("bad-format", `prefix ${JSON.stringify(bin.prefix)}, its path names ${prefix}`, path);
        const hasFiles = bin.files !== undefined;
        if (hasFiles === (bin.bins !== undefined))
            throw new VerificationError("bad-format", "a bin lists either files or bins", path);
        if (!hasFiles) {
            const n = await walkChildren(prefix, path, bin.bins);
            if (n !== expected.files)
                throw new VerificationError("bad-format", `its children hold ${n} files, its parent says ${expected.files}`, path);
            return;
        }
        const files = bin.files;
        if (!isObject(files))
            throw new VerificationError("bad-format", "files must be an object", path);
        const names = Object.keys(files);
        if (names.length !== expected.files)
            throw new VerificationError("bad-format", `lists ${names.length} files, its parent says ${expected.files}`, path);
        for (const file of names) {
            if (!listable(file))
                throw new VerificationError("bad-format", `lists ${JSON.stringify(file)}`, path);
            if (!fileKey(file).startsWith(prefix))
                throw new VerificationError("bad-format", `lists ${file}, whose key is not under prefix ${prefix}`, path);
            const want = files[file];
            if (!isObject(want) || !isCount(want.len) || !isHex64(want.sha256))
                throw new VerificationError("bad-format", `${file} must have len and sha256`, path);
            listed.add(file);
            const data = await read(file);
            if (data.length !== want.len)
                throw new VerificationError("hash-mismatch", `${data.length} bytes, the manifest lists ${want.len}`, file);
            if (sha256Hex(data) !== want.sha256)
                throw new VerificationError("hash-mismatch", "its SHA-256 is not the one the manifest lists", file);
            if (checkJson && file.endsWith(".json"))
                within(file, () => (file === NOSTR_PROFILE ? verifyNostrEvent(data, 0) : verifySnapshot(data, key)));
            if (chainPageOf(file) !== undefined)
                listedChainPages++;
            const vow = chainHeadOf(file);
            if (vow !== undefined)
                await walkChain(file, vow, data);
            options.onFile?.(file);
        }
    };
    const total = await walkChildren("", ROOT_PATH, root.bins);
    let counted;
    if (options.listFiles !== undefined) {
        counted = 0;
        let binFiles = 0;
        let pageFiles = 0;
        for await (const file of await options.listFiles()) {
            if (file.startsWith("log/") || file === ROOT_PATH)
                continue;
            if (dotfile(file))
                throw new VerificationError("unlisted-file", "a dotfile", file);
            if (file.startsWith("manifest/")) {
                if (!bins.has(file))
                    throw new VerificationError("unlisted-file", "a bin the trie does not name", file);
                binFiles++;
                continue;
            }
            const page = chainPageOf(file);
            if (page !== undefined) {
                const n = reached.get(page.vowId);
                if (n === undefined)
                    throw new VerificationError("unlisted-file", `a chain page, but the manifest lists no chain head of vow ${page.vowId}`, file);
                if (!(page.page < n))
                    throw new VerificationError("unlisted-file", `a chain page its head does not reach (vow ${page.vowId} has ${n} full pages)`, file);
                pageFiles++;
                continue;
            }
            counted++;
            if (!listed.has(file))
                throw new VerificationError("unlisted-file", "not listed in the manifest", file);
        }
        const want = total - listedChainPages;
        if (counted !== want)
            throw new VerificationError("missing-file", `the copy holds ${counted} files besides the chain pages, the manifest lists ${want}` +
                (listedChainPages > 0 ? ` (${total} less ${listedChainPages} chain pages)` : ""));
        if (pageFiles !== chainPages)
            throw new VerificationError("missing-file", `the copy holds ${pageFiles} chain pages, the listed chain heads reach ${chainPages}`);
        if (binFiles !== bins.size - 1)
            throw new VerificationError("missing-file", `the copy holds ${binFiles} bins, the trie names ${bins.size - 1}`);
    }
    return { root, files: total, listedChainPages, chainPages, bins: bins.size, counted };
}
