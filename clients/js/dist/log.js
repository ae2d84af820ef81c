/**
 * The transparency log (library/VOWS.md, "Durability and verification"): its checkpoint, a C2SP
 * signed note (`GET /log/checkpoint`), and the C2SP tlog-proof of one record
 * (`GET /log/proof/<index>`), checked with RFC 6962 / RFC 9162 hashing. A leaf of the log is the
 * RFC 8785 bytes of a signed object (VOWS.md, "Record formats").
 *
 * @module
 */
import { bytesEqual, canonicalBytes, concat, fromBase64, fromUtf8, sha256 } from "./encoding.js";
import { VerificationError } from "./errors.js";
import { ed25519Verify, keyHash, parseVkey } from "./signed.js";
/**
 * Split a C2SP signed note: one or more non-empty lines, a blank line, then one or more
 * signature lines `— <name> <base64>`, every line ending in `\n`.
 *
 * @throws {VerificationError} `bad-format`
 */
export function parseSignedNote(note) {
    const fail = (why) => {
        throw new VerificationError("bad-format", `not a C2SP signed note: ${why}`);
    };
    if (!note.endsWith("\n"))
        fail("it does not end with a newline");
    const split = note.indexOf("\n\n");
    if (split < 0)
        return fail("no blank line before the signatures");
    const text = note.slice(0, split + 1);
    const sigLines = note.slice(split + 2, -1).split("\n");
    if (text.length === 1)
        fail("empty text");
    const signatures = [];
    for (const line of sigLines) {
        const m = /^\u2014 ([^\s+]+) ([A-Za-z0-9+/=]+)$/u.exec(line);
        if (m === null)
            return fail(`bad signature line ${JSON.stringify(line)}`);
        const raw = fromBase64(m[2]);
        if (raw === undefined || raw.length < 5)
            return fail(`bad signature in ${JSON.stringify(line)}`);
        signatures.push({ name: m[1], keyHash: raw.slice(0, 4), signature: raw.slice(4) });
    }
    return { text, signatures };
}
/**
 * Verify a signed note under the pinned key: the line whose name and key hash are the pinned
 * key's must be there and its Ed25519 signature must verify over the text. Lines of other keys
 * (witness cosignatures, say) are ignored. Returns the signed text.
 *
 * @throws {VerificationError} `bad-format`, `key-id-mismatch` or `bad-signature`
 */
export function verifyNote(note, vkey) {
    const key = parseVkey(vkey);
    const parsed = parseSignedNote(note);
    const hash = keyHash(key.name, key.publicKey);
    const mine = parsed.signatures.filter((s) => s.name === key.name && bytesEqual(s.keyHash, hash));
    if (mine.length === 0)
        throw new VerificationError("key-id-mismatch", `no signature by the pinned key ${key.name}+${key.keyId}`);
    if (mine.length > 1)
        throw new VerificationError("bad-format", "two signatures by the pinned key");
    const sig = mine[0].signature;
    if (sig.length !== 64 || !ed25519Verify(sig, new TextEncoder().encode(parsed.text), key.publicKey))
        throw new VerificationError("bad-signature", "the note's signature does not verify under the pinned key");
    return parsed.text;
}
/**
 * Verify the log's checkpoint (`GET /log/checkpoint`, `log/checkpoint` in the tree): a C2SP
 * signed note by the pinned key whose text is the origin (the pinned key's name), the tree
 * size in decimal and the base64 root hash.
 *
 * @param note - the checkpoint's bytes or text
 * @param vkey - the pinned key
 * @throws {VerificationError} saying what failed
 */
export function verifyCheckpoint(note, vkey) {
    const key = parseVkey(vkey);
    const text = typeof note === "string" ? note : fromUtf8(note);
    const signed = verifyNote(text, key);
    const lines = signed.slice(0, -1).split("\n");
    if (lines.length < 3)
        throw new VerificationError("bad-format", "a checkpoint has an origin, a size and a root");
    const [origin, sizeText, rootText, ...extensions] = lines;
    if (origin !== key.name)
        throw new VerificationError("wrong-origin", `checkpoint of ${JSON.stringify(origin)}, not of ${key.name}`);
    if (!/^(0|[1-9][0-9]{0,15})$/.test(sizeText))
        throw new VerificationError("bad-format", `tree size ${JSON.stringify(sizeText)} is not a decimal`);
    const size = Number(sizeText);
    if (!Number.isSafeInteger(size))
        throw new VerificationError("bad-format", "tree size out of range");
    const root = fromBase64(rootText);
    if (root === undefined || root.length !== 32)
        throw new VerificationError("bad-format", "the root is not base64 of 32 bytes");
    if (extensions.some((e) => e.length === 0))
        throw new VerificationError("bad-format", "an empty extension line");
    return { origin, size, root, extensions, note: text };
}
/** RFC 6962 leaf hash: `SHA-256(0x00 ‖ leaf)`. */
export function leafHash(leaf) {
    return sha256(concat(new Uint8Array([0]), leaf));
}
/** RFC 6962 interior node hash: `SHA-256(0x01 ‖ left ‖ right)`. */
export function nodeHash(left, right) {
    return sha256(concat(new Uint8Array([1]), left, right));
}
/** The RFC 6962 Merkle tree hash of `leaves` (their leaf bytes), for tests and small logs. */
export function merkleRoot(leaves) {
    const hashes = leaves.map(leafHash);
    const mth = (lo, hi) => {
        const n = hi - lo;
        if (n === 0)
            return sha256(new Uint8Array());
        if (n === 1)
            return hashes[lo];
        let k = 1;
        while (k * 2 < n)
            k *= 2;
        return nodeHash(mth(lo, lo + k), mth(lo + k, hi));
    };
    return mth(0, hashes.length);
}
/**
 * Check an RFC 9162 inclusion proof (section 2.1.3.2): the leaf hash at `index` of a tree of
 * `size` leaves, with `proof`, leads to `root`.
 */
export function inclusionProofValid(leaf, index, size, proof, root) {
    if (index < 0 || index >= size)
        return false;
    let fn = index;
    let sn = size - 1;
    let r = leaf;
    for (const p of proof) {
        if (p.length !== 32 || sn === 0)
            return false;
        if (fn % 2 === 1 || fn === sn) {
            r = nodeHash(p, r);
            while (fn % 2 === 0 && fn !== 0) {
                fn = Math.floor(fn / 2);
                sn = Math.floor(sn / 2);
            }
        }
        else {
            r = nodeHash(r, p);
        }
        fn = Math.floor(fn / 2);
        sn = Math.floor(sn / 2);
    }
    return sn === 0 && bytesEqual(r, root);
}
/**
 * Read a C2SP tlog-proof: `c2sp.org/tlog-proof@v1`, an optional `extra <base64>` line,
 * `index <n>`, one base64 hash a line, a blank line, then the checkpoint.
 *
 * @throws {VerificationError} `bad-format`
 */
export function parseTlogProof(proof) {
    const text = typeof proof === "string" ? proof : fromUtf8(proof);
    const fail = (why) => {
        throw new VerificationError("bad-format", `not a C2SP tlog-proof: ${why}`);
    };
    const split = text.indexOf("\n\n");
    if (split < 0)
        return fail("no blank line before the checkpoint");
    const lines = text.slice(0, split).split("\n");
    if (lines.shift() !== "c2sp.org/tlog-proof@v1")
        fail("the first line is not c2sp.org/tlog-proof@v1");
    let extra;
    if (lines[0]?.startsWith("extra ")) {
        extra = fromBase64(lines.shift().slice(6));
        if (extra === undefined)
            fail("the extra data is not base64");
    }
    const m = /^index (0|[1-9][0-9]{0,15})$/.exec(lines.shift() ?? "");
    if (m === null)
        return fail("no index line");
    const index = Number(m[1]);
    const hashes = lines.map((l) => {
        const h = fromBase64(l);
        if (h === undefined || h.length !== 32)
            return fail(`${JSON.stringify(l)} is not base64 of 32 bytes`);
        return h;
    });
    return { index, hashes, extra, checkpoint: text.slice(split + 2) };
}
/**
 * Verify that a record is in the log: the tlog-proof's checkpoint verifies under the pinned
 * key, and the record's leaf (its RFC 8785 bytes), at the proof's index, leads to the
 * checkpoint's root. When the record is a JSON object with a `log_index`, that must be the
 * proof's index (VOWS.md: `log_index` is the record's own position in the log).
 *
 * @param record - the leaf's bytes, or the signed object (its RFC 8785 bytes are the leaf)
 * @param proof - the body of `GET /log/proof/<index>`
 * @param vkey - the pinned key
 * @throws {VerificationError} saying what failed
 */
export function verifyInclusion(record, proof, vkey) {
    const key = parseVkey(vkey);
    const p = parseTlogProof(proof);
    const checkpoint = verifyCheckpoint(p.checkpoint, key);
    let leaf;
    if (record instanceof Uint8Array)
        leaf = record;
    else {
        if (record.log_index !== undefined && record.log_index !== p.index)
            throw new VerificationError("bad-proof", `the record says log_index ${JSON.stringify(record.log_index)}, the proof is for index ${p.index}`, "log_index");
        leaf = canonicalBytes(record);
    }
    if (p.index >= checkpoint.size)
        throw new VerificationError("bad-proof", `index ${p.index} is beyond the checkpoint's size ${checkpoint.size}`);
    if (!inclusionProofValid(leafHash(leaf), p.index, checkpoint.size, p.hashes, checkpoint.root))
        throw new VerificationError("bad-proof", `the record at index ${p.index} does not lead to the root of the checkpoint of size ${checkpoint.size}`);
    return { index: p.index, checkpoint };
}
