// Helpers of the kit's test suite (test/*.test.mjs): a throw-away signing key that signs
// objects, notes and manifests exactly as library/ATTESTATION.md, VOWS.md and MIRRORS.md say,
// the live stack's coordinates, and the tamper loop. Kept outside test/ so that the test runner
// does not count it as a test file.
import { ed25519 } from "@noble/curves/ed25519.js";
import { readFileSync } from "node:fs";
import { canonicalBytes, keyIdOf, toBase64, sha256Hex } from "../dist/index.js";

/** The captured real bytes (see captured.json's `about`). */
export const captured = JSON.parse(readFileSync(new URL("./captured.json", import.meta.url), "utf8"));

/** A scope statement: the four members every conduct.* object carries. */
export const SCOPE = {
  no_meter_is_immune: "a",
  not_trade_advice: "b",
  off_meter_blind_spot: "c",
  trace_provenance_is_the_callers: "d",
};

/** A throw-away service key named `name` (the log origin). */
export function testKey(name = "example.org/log", seed = 7) {
  const secret = new Uint8Array(32).fill(seed);
  const publicKey = ed25519.getPublicKey(secret);
  const keyId = keyIdOf(name, publicKey);
  const vkey = `${name}+${keyId}+${toBase64(new Uint8Array([1, ...publicKey]))}`;
  return {
    name,
    keyId,
    publicKey,
    vkey,
    /** Sign a JSON object: add key_id (and scope for a conduct.* type), sign its RFC 8785 bytes. */
    sign(obj, { scope = true } = {}) {
      const body = { ...obj, key_id: keyId };
      if (scope && typeof obj.type === "string" && obj.type.startsWith("conduct.")) body.scope = SCOPE;
      const signature = toBase64(ed25519.sign(canonicalBytes(body), secret));
      return { ...body, signature };
    },
    /** Sign note text (lines ending in \n) as a C2SP signed note. */
    note(text, extraLines = []) {
      const hash = Uint8Array.from(Buffer.from(keyId, "hex"));
      const sig = ed25519.sign(new TextEncoder().encode(text), secret);
      const line = `\u2014 ${name} ${toBase64(new Uint8Array([...hash, ...sig]))}\n`;
      return text + "\n" + extraLines.join("") + line;
    },
  };
}

/** The live stack's coordinates (set by tests/tests/kits.rs), or null when not set. */
export function liveEnv() {
  const e = process.env;
  if (!e.CONDUCT_URL || !e.CONDUCT_VKEY) return null;
  return {
    url: e.CONDUCT_URL,
    vkey: e.CONDUCT_VKEY,
    site: e.CONDUCT_SITE,
    rpc: e.CONDUCT_RPC,
    token: e.CONDUCT_TOKEN,
    payerKey: e.CONDUCT_PAYER_KEY,
  };
}

/**
 * Call `check(mutated)` for every byte position of `bytes`, with the byte XOR `mask`; returns
 * the positions where `check` did NOT throw (each one a tampered byte that was accepted).
 */
export function acceptedTampers(bytes, check, mask = 0x01) {
  const accepted = [];
  for (let i = 0; i < bytes.length; i++) {
    const t = Uint8Array.from(bytes);
    t[i] ^= mask;
    try {
      check(t);
      accepted.push(i);
    } catch {
      // refused: as it must be
    }
  }
  return accepted;
}

/** RFC 6962 PATH(m, D[n]): the inclusion proof of leaf m among `hashes` (leaf hashes), for tests. */
export function inclusionPath(m, hashes, node) {
  const n = hashes.length;
  if (n <= 1) return [];
  let k = 1;
  while (k * 2 < n) k *= 2;
  const mth = (hs) => {
    if (hs.length === 1) return hs[0];
    let kk = 1;
    while (kk * 2 < hs.length) kk *= 2;
    return node(mth(hs.slice(0, kk)), mth(hs.slice(kk)));
  };
  if (m < k) return [...inclusionPath(m, hashes.slice(0, k), node), mth(hashes.slice(k))];
  return [...inclusionPath(m - k, hashes.slice(k), node), mth(hashes.slice(0, k))];
}

/**
 * Build a manifest trie over `files` (path -> bytes) signed by `key`, splitting any leaf of more
 * than `split` files of more than one unit (MIRRORS.md, "Growth"). Returns the tree: every file,
 * the bins and the root, path -> bytes.
 */
export function buildTree(key, files, { split = 4, expires = "2999-01-01T00:00:00Z", fileKey } = {}) {
  const tree = new Map(Object.entries(files).map(([p, b]) => [p, typeof b === "string" ? new TextEncoder().encode(b) : b]));
  const enc = (o) => canonicalBytes(o);
  const bin = (prefix, paths) => {
    const keys = new Set(paths.map(fileKey));
    let doc;
    if (paths.length > split && keys.size > 1) {
      const kids = {};
      for (const d of "0123456789abcdef") {
        const sub = paths.filter((p) => fileKey(p)[prefix.length] === d);
        if (sub.length > 0) kids[`manifest/${prefix}${d}.json`] = bin(prefix + d, sub);
      }
      doc = key.sign({ type: "conduct.manifest-bin/v1", prefix, bins: kids });
    } else {
      const listed = {};
      for (const p of paths) listed[p] = { len: tree.get(p).length, sha256: sha256Hex(tree.get(p)) };
      doc = key.sign({ type: "conduct.manifest-bin/v1", prefix, files: listed });
    }
    const bytes = enc(doc);
    tree.set(`manifest/${prefix}.json`, bytes);
    return { files: paths.length, len: bytes.length, sha256: sha256Hex(bytes) };
  };
  const all = Object.keys(files);
  const bins = {};
  for (const d of "0123456789abcdef") {
    const sub = all.filter((p) => fileKey(p)[0] === d);
    if (sub.length > 0) bins[`manifest/${d}.json`] = bin(d, sub);
  }
  const root = key.sign({
    type: "conduct.manifest/v2",
    version: 1,
    as_of: "2026-01-01T00:00:00Z",
    expires,
    bins,
  });
  tree.set("manifest.json", enc(root));
  return tree;
}
