/**
 * The transparency log (library/VOWS.md, "Durability and verification"): its checkpoint, a C2SP
 * signed note (`GET /log/checkpoint`), and the C2SP tlog-proof of one record
 * (`GET /log/proof/<index>`), checked with RFC 6962 / RFC 9162 hashing. A leaf of the log is the
 * RFC 8785 bytes of a signed object (VOWS.md, "Record formats").
 *
 * @module
 */
import { type JsonObject } from "./encoding.js";
import { type PinnedKey } from "./signed.js";
/** One signature line of a signed note: `— <name> base64(key hash ‖ signature)`. */
export interface NoteSignature {
    /** The key name the line gives. */
    name: string;
    /** The first 4 bytes of the decoded signature: the key hash (C2SP key id). */
    keyHash: Uint8Array;
    /** The rest: the signature. */
    signature: Uint8Array;
}
/** A signed note split into its text (what is signed) and its signature lines. */
export interface SignedNote {
    /** The note's text, every line ending in a newline: exactly the signed bytes. */
    text: string;
    /** Its signature lines, in order. */
    signatures: NoteSignature[];
}
/**
 * Split a C2SP signed note: one or more non-empty lines, a blank line, then one or more
 * signature lines `— <name> <base64>`, every line ending in `\n`.
 *
 * @throws {VerificationError} `bad-format`
 */
export declare function parseSignedNote(note: string): SignedNote;
/**
 * Verify a signed note under the pinned key: the line whose name and key hash are the pinned
 * key's must be there and its Ed25519 signature must verify over the text. Lines of other keys
 * (witness cosignatures, say) are ignored. Returns the signed text.
 *
 * @throws {VerificationError} `bad-format`, `key-id-mismatch` or `bad-signature`
 */
export declare function verifyNote(note: string, vkey: string | PinnedKey): string;
/** A verified checkpoint (C2SP tlog-checkpoint): the log's size and root. */
export interface Checkpoint {
    /** The log's origin: the pinned key's name. */
    origin: string;
    /** How many leaves the log holds. */
    size: number;
    /** The RFC 6962 root hash of those leaves (32 bytes). */
    root: Uint8Array;
    /** Extension lines after the root, if any. */
    extensions: string[];
    /** The whole note, as given. */
    note: string;
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
export declare function verifyCheckpoint(note: Uint8Array | string, vkey: string | PinnedKey): Checkpoint;
/** RFC 6962 leaf hash: `SHA-256(0x00 ‖ leaf)`. */
export declare function leafHash(leaf: Uint8Array): Uint8Array;
/** RFC 6962 interior node hash: `SHA-256(0x01 ‖ left ‖ right)`. */
export declare function nodeHash(left: Uint8Array, right: Uint8Array): Uint8Array;
/** The RFC 6962 Merkle tree hash of `leaves` (their leaf bytes), for tests and small logs. */
export declare function merkleRoot(leaves: Uint8Array[]): Uint8Array;
/**
 * Check an RFC 9162 inclusion proof (section 2.1.3.2): the leaf hash at `index` of a tree of
 * `size` leaves, with `proof`, leads to `root`.
 */
export declare function inclusionProofValid(leaf: Uint8Array, index: number, size: number, proof: Uint8Array[], root: Uint8Array): boolean;
/** A parsed C2SP tlog-proof (`c2sp.org/tlog-proof@v1`). */
export interface TlogProof {
    /** The record's index in the log. */
    index: number;
    /** The inclusion proof's hashes, leaf to root. */
    hashes: Uint8Array[];
    /** Opaque extra data (`extra` line), if any. */
    extra: Uint8Array | undefined;
    /** The checkpoint the proof leads to (a signed note), not yet verified. */
    checkpoint: string;
}
/**
 * Read a C2SP tlog-proof: `c2sp.org/tlog-proof@v1`, an optional `extra <base64>` line,
 * `index <n>`, one base64 hash a line, a blank line, then the checkpoint.
 *
 * @throws {VerificationError} `bad-format`
 */
export declare function parseTlogProof(proof: Uint8Array | string): TlogProof;
/** What {@link verifyInclusion} proved. */
export interface Inclusion {
    /** The record's index in the log. */
    index: number;
    /** The verified checkpoint the record is included in. */
    checkpoint: Checkpoint;
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
export declare function verifyInclusion(record: Uint8Array | JsonObject, proof: Uint8Array | string, vkey: string | PinnedKey): Inclusion;
