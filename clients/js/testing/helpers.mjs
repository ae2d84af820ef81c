// Helpers of the kit's test suite (test/*.test.mjs): a throw-away signing key that signs
// objects, notes and manifests exactly as library/ATTESTATION.md, VOWS.md and MIRRORS.md say,
// the measured part of attestations and entries (meter blocks and profiles of either meter),
// the live stack's coordinates, and the tamper loop. Kept outside test/ so that the test runner
// does not count it as a test file.
import { ed25519 } from "@noble/curves/ed25519.js";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { canonicalBytes, keyIdOf, toBase64, sha256Hex, recordSha256, vowId, VerificationError } from "../dist/index.js";

/** The captured real bytes (see captured.json's `about`). */
export const captured = JSON.parse(readFileSync(new URL("./captured.json", import.meta.url), "utf8"));

/** The scope statement every conduct.* object carries, as library/ATTESTATION.md prints it (the kit compares it exactly). */
export const SCOPE = {
  no_meter_is_immune:
    "An agent optimizing against this output can learn to write clean traces. A low coupling is not proof of good conduct.",
  not_trade_advice:
    "Not trade advice: no signal, no market model, no risk sizing.",
  off_meter_blind_spot:
    "Only channels present in the trace are read. What the agent did off the trace is outside the meter.",
  trace_provenance_is_the_callers:
    "The service attests that it scored this trace. It does not attest that the trace faithfully records what the agent did.",
};

/** The two meter blocks, exactly as library/ATTESTATION.md ("The meter") lists them. */
export const METER_BLOCKS = {
  "meter/1": { d_clean: ["clean"], m_symbols: "lexicon/1", p_exact_max_tables: 20000, p_monte_carlo_samples: 1000, version: "meter/1" },
  "meter/2": {
    d_clean: ["clean"],
    m_symbols: "lexicon/2",
    p_exact_max_tables: 20000,
    p_exact_max_work: 200000,
    p_monte_carlo_samples: 1000,
    stratified_by: "Y",
    version: "meter/2",
  },
};

/** The meter block of `version`; `stored`: as an entry carries it (VOWS.md: with `labels: "stored-labels/1"`). */
export function meterBlock(version = "meter/2", { stored = false } = {}) {
  const block = structuredClone(METER_BLOCKS[version]);
  if (stored) block.labels = "stored-labels/1";
  return block;
}

/** One quantity (METER.md section 10.5's numbers); under `meter/2` with `stratified`. */
export function quantity(columns, version = "meter/2") {
  const q = {
    n: 40,
    columns,
    table: [[2, 18], [8, 12]],
    bits: 0.091305030437,
    emi: 0.019136060444,
    adjusted: 0.072168969993,
    ami: 0.081408601942,
    p: 0.064833161607,
    p_method: "exact",
  };
  if (version === "meter/2")
    q.stratified = {
      by: "Y",
      strata: 20,
      n: 40,
      table: [[2, 18], [8, 12]],
      margins: [[12, 1, [[1, 2]]], [6, 1, [[0, 1], [1, 1]]], [2, 1, [[0, 2]]]],
      p: 0.03125,
      p_method: "exact",
    };
  return q;
}

/** The four quantities of a profile measured by `version`, with stored labels. */
export function profile(version = "meter/2") {
  const m = version === "meter/2" ? ["plain", "tied"] : ["aware", "plain"];
  return {
    i_c_d: { ...quantity(["clean", "d#1"], version), direction: -0.3 },
    i_c_m: quantity(m, version),
    i_c_m_given_d_clean: quantity(m, version),
    i_c_dm: quantity([`clean|${m[0]}`, `d#1|${m[1]}`], version),
  };
}

/** A one-quantity profile of `version`'s shape, small enough that chains of many entries stay quick to tamper with. */
export function briefProfile(version = "meter/2") {
  const q = { n: 4, columns: ["clean", "d#1"], table: [[2, 0], [1, 1]] };
  if (version === "meter/2") q.stratified = { by: "Y", strata: 2, n: 4 };
  return { i_c_d: q };
}

/** A `conduct.attestation/v1` measured by `version`, signed by `key`; `members` replace or add members before it is signed. */
export function attestation(key, version = "meter/2", members = {}) {
  return key.sign({
    type: "conduct.attestation/v1",
    context_key: "monitored",
    n_turns: 40,
    issued_at: "2026-01-01T00:00:00Z",
    trace_sha256: "0".repeat(64),
    meter: meterBlock(version),
    profile: profile(version),
    ...members,
  });
}

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

/** A vow chain page's path, `vow/<id>/chain/<k>.json` (MIRRORS.md: the manifest does not list them). */
export const CHAIN_PAGE_PATH = /^vow\/[^/]+\/chain\/[0-9]+\.json$/;

/**
 * Build a manifest trie over `files` (path -> bytes) signed by `key`, splitting any leaf of more
 * than `split` files of more than one unit (MIRRORS.md, "Growth"). The root has type `type`
 * (`conduct.manifest/v3` by default); the trie lists the files `listed` says (by default every
 * file, but the chain pages under a `v3` root). Returns the tree: every file, the bins and the
 * root, path -> bytes.
 */
export function buildTree(
  key,
  files,
  { split = 4, expires = "2999-01-01T00:00:00Z", fileKey, type = "conduct.manifest/v3", listed } = {},
) {
  const lists = listed ?? ((p) => type !== "conduct.manifest/v3" || !CHAIN_PAGE_PATH.test(p));
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
  const all = Object.keys(files).filter(lists);
  const bins = {};
  for (const d of "0123456789abcdef") {
    const sub = all.filter((p) => fileKey(p)[0] === d);
    if (sub.length > 0) bins[`manifest/${d}.json`] = bin(d, sub);
  }
  const root = key.sign({
    type,
    version: 1,
    as_of: "2026-01-01T00:00:00Z",
    expires,
    bins,
  });
  tree.set("manifest.json", enc(root));
  return tree;
}

/**
 * A vow and `n` entries signed by `key`, linked as VOWS.md says (chain positions 0 .. n). `text`
 * and `agent` make the vow (another text, another vow id); log indexes start at `logBase`; entry
 * `seq` is measured by `meters[(seq - 1) % meters.length]` (a chain may mix meters).
 */
export function chainRecords(
  key,
  n,
  { text = "Summarise reports honestly.", agent = "bot", logBase = 0, sealed = false, meters = ["meter/2"] } = {},
) {
  const textSha = sha256Hex(text);
  const vow = key.sign({
    type: "conduct.vow/v1",
    vow_id: vowId(key.name, logBase, textSha, agent),
    agent,
    ...(sealed ? {} : { text }),
    text_sha256: textSha,
    cadence_hours: 24,
    sealed,
    sandbox: true,
    sandbox_reason: "no wallet signature was offered",
    wallet: null,
    wallet_signature: null,
    at: "2026-01-01T00:00:00Z",
    log_index: logBase,
  });
  const records = [vow];
  for (let seq = 1; seq <= n; seq++) {
    records.push(
      key.sign({
        type: "conduct.entry/v1",
        vow_id: vow.vow_id,
        seq,
        prev: recordSha256(records[seq - 1]),
        at: `2026-01-01T${String(Math.floor(seq / 3600)).padStart(2, "0")}:${String(Math.floor(seq / 60) % 60).padStart(2, "0")}:${String(seq % 60).padStart(2, "0")}Z`,
        log_index: logBase + seq * 2,
        trace_sha256: sha256Hex(`trace ${seq}`),
        attested: false,
        proof: { kind: "sandbox-open" },
        profile: briefProfile(meters[(seq - 1) % meters.length]),
        meter: meterBlock(meters[(seq - 1) % meters.length], { stored: true }),
      }),
    );
  }
  return records;
}

/** A signed file as the service writes it: the RFC 8785 bytes of the signed object, then one `\n`. */
export function signedFile(key, doc) {
  const b = canonicalBytes(key.sign(doc));
  const out = new Uint8Array(b.length + 1);
  out.set(b);
  out[b.length] = 0x0a;
  return out;
}

/**
 * A vow's chain as served (VOWS.md, "`/vow/<id>/chain`"), from its `records`: the full pages of
 * 32 records and the head, signed by `key`. `version` 2: `conduct.chain/v2` head pinning the last
 * page, each `conduct.chain_page/v2` page pinning the one before it; `version` 1:
 * `conduct.chain/v1` head pinning every `conduct.chain_page/v1` page. `page(k, doc)` and
 * `head(doc)` may change a document before it is signed (to build a broken chain that is
 * signed and linked as a real one is). Returns `{id, head, pages}` (bytes).
 */
export function buildChain(key, records, { version = 2, page = (_k, d) => d, head = (d) => d } = {}) {
  const id = records[0].vow_id;
  const n = Math.floor(records.length / 32);
  const pages = [];
  const pinOf = (k) => ({ href: `/vow/${id}/chain/${k}`, from_position: 32 * k, records: 32, sha256: sha256Hex(pages[k]) });
  for (let k = 0; k < n; k++) {
    const doc = {
      type: `conduct.chain_page/v${version}`,
      vow_id: id,
      page: k,
      from_position: 32 * k,
      head: `/vow/${id}/chain`,
      ...(version === 2 ? { prev_page_sha256: k === 0 ? null : sha256Hex(pages[k - 1]) } : {}),
      records: records.slice(32 * k, 32 * (k + 1)),
    };
    pages.push(signedFile(key, page(k, doc)));
  }
  const doc = {
    type: `conduct.chain/v${version}`,
    vow_id: id,
    length: records.length - 1,
    head_sha256: recordSha256(records[records.length - 1]),
    page_size: 32,
    ...(version === 2
      ? { full_pages: n, last_page: n === 0 ? null : pinOf(n - 1) }
      : { pages: pages.map((_, k) => pinOf(k)) }),
    tail_from_position: 32 * n,
    tail: records.slice(32 * n),
    how_to_verify: "walk back from the head",
  };
  return { id, head: signedFile(key, head(doc)), pages };
}

/** Await `p` and require it to fail with a VerificationError of `code` (and `path` and a message matching `message`, when given). */
export async function refusesAsync(p, code, path, message) {
  await assert.rejects(p, (e) => {
    assert.ok(e instanceof VerificationError, `not a VerificationError: ${e}`);
    assert.equal(e.code, code, `got ${e.code}: ${e.message}`);
    if (path !== undefined) assert.equal(e.path, path, e.message);
    if (message !== undefined) assert.match(e.message, message);
    return true;
  });
}
