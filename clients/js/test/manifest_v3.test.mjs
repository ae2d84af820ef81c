// Offline: the manifest that leaves the vow chain pages to their heads (library/MIRRORS.md, "What
// it lists", "What `verify-site` checks" and "Upgrading to linked chain pages"). A `conduct.manifest/v3`
// root lists every file outside `log/` but `vow/<id>/chain/<k>.json`; each listed chain head
// (`vow/<id>/chain.json`) proves its pages, which are walked and counted apart. Trees built here and
// signed with a throw-away key, as the renderer writes them, mid-upgrade ones too. No network.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  MANIFEST_TYPE,
  MANIFEST_TYPES,
  VerificationError,
  chainHeadOf,
  chainPageOf,
  fileKey,
  parseJson,
  verifyManifest,
} from "../dist/index.js";
import { CHAIN_PAGE_PATH, buildChain, buildTree, chainRecords, signedFile, testKey, refusesAsync } from "../testing/helpers.mjs";

const k = testKey();


/** The files of one vow whose chain holds `records` (its page, reading, chain head and pages). */
function vowFiles(records, version = 2) {
  const c = buildChain(k, records, { version });
  const id = c.id;
  const files = {
    [`vow/${id}.json`]: signedFile(k, { type: "conduct.vow_page/v1", vow_id: id, chain: { length: records.length - 1 } }),
    [`vow/${id}.html`]: `<h1>${id}</h1>`,
    [`vow/${id}/reading.json`]: signedFile(k, { type: "conduct.reading/v1", vow_id: id }),
    [`vow/${id}/chain.json`]: c.head,
  };
  c.pages.forEach((b, p) => (files[`vow/${id}/chain/${p}.json`] = b));
  return { id, files, pages: c.pages.length };
}

// Vow A: 3 full pages and a tail; B: no full page; C: one full page and a tail.
const A = chainRecords(k, 100, { text: "Vow A.", agent: "a" });
const B = chainRecords(k, 4, { text: "Vow B.", agent: "b", logBase: 1000 });
const C = chainRecords(k, 39, { text: "Vow C.", agent: "c", logBase: 2000 });

/** A tree: the site's root files and vows A, B, C (`versions` their chains' versions). */
function files(versions = [2, 2, 2]) {
  const vows = [A, B, C].map((r, i) => vowFiles(r, versions[i]));
  const out = { "index.json": signedFile(k, { type: "conduct.index/v1" }), "robots.txt": "User-agent: *\n" };
  for (const v of vows) Object.assign(out, v.files);
  return { files: out, ids: vows.map((v) => v.id) };
}
const { files: FILES, ids: [IA, IB, IC] } = files();
const TREE = buildTree(k, FILES, { fileKey });
const readerOf = (tree) => async (p) => tree.get(p);
const listOf = (tree, more = []) => ({ listFiles: async () => [...tree.keys(), ...more] });
const v = (tree, opts = listOf(tree)) => verifyManifest(readerOf(tree), k.vkey, opts);
const PAGES = Object.keys(FILES).filter((p) => CHAIN_PAGE_PATH.test(p));

/** Every file the trie's leaves list. */
function listedIn(tree) {
  const out = [];
  for (const [p, b] of tree) if (p.startsWith("manifest/")) out.push(...Object.keys(parseJson(b).files ?? {}));
  return out;
}

test("chain page and head paths are told apart as MIRRORS.md has them", () => {
  assert.deepEqual(chainPageOf("vow/ab12/chain/3.json"), { vowId: "ab12", page: 3 });
  assert.deepEqual(chainPageOf("vow/ab12/chain/0.json"), { vowId: "ab12", page: 0 });
  assert.equal(chainPageOf("vow/ab12/chain/01.json"), undefined, "not a page number: an ordinary file");
  for (const p of ["vow/ab12/chain.json", "vow/ab12/chain.html", "vow/ab12/chain/3.html", "vow/ab12/chain/x.json", "vow/ab12/chain/.json", "vow//chain/1.json", "vow/a/b/chain/1.json", "vows/1.json"])
    assert.equal(chainPageOf(p), undefined, p);
  assert.equal(chainHeadOf("vow/ab12/chain.json"), "ab12");
  assert.equal(chainHeadOf("vow/ab12/chain/1.json"), undefined);
  assert.equal(chainHeadOf("vow/a/b/chain.json"), undefined);
  assert.equal(MANIFEST_TYPE, "conduct.manifest/v3");
  assert.deepEqual(MANIFEST_TYPES, ["conduct.manifest/v2", "conduct.manifest/v3"]);
});

test("a v3 tree verifies: its chain pages, unlisted, are proven by their heads and counted apart", async () => {
  assert.equal(PAGES.length, 4, "A has 3 full pages, B none, C one");
  assert.equal(parseJson(TREE.get("manifest.json")).type, "conduct.manifest/v3");
  const listed = listedIn(TREE);
  assert.equal(listed.filter((p) => CHAIN_PAGE_PATH.test(p)).length, 0, "no chain page listed");
  assert.ok(listed.includes(`vow/${IA}/chain.json`), "the heads are listed");
  const r = await v(TREE);
  assert.equal(r.files, Object.keys(FILES).length - PAGES.length);
  assert.equal(r.counted, r.files);
  assert.equal(r.chainPages, 4);
  assert.equal(r.listedChainPages, 0);
  // Over HTTP (no listing): the pages are walked all the same, with no count.
  const read = [];
  const http = await verifyManifest(async (p) => (read.push(p), TREE.get(p)), k.vkey);
  assert.equal(http.counted, undefined);
  assert.equal(http.chainPages, 4);
  for (const p of PAGES) assert.ok(read.includes(p), `${p} read through its head`);
  const aPages = read.filter((p) => p.startsWith(`vow/${IA}/chain/`));
  assert.deepEqual(aPages, [2, 1, 0].map((p) => `vow/${IA}/chain/${p}.json`), "from the head's last_page back");
});

test("a stray chain page is refused, naming it", async () => {
  const strays = [
    [`vow/${IA}/chain/3.json`, /does not reach \(vow [0-9a-f]+ has 3 full pages\)/],
    [`vow/${IB}/chain/0.json`, /has 0 full pages/],
    [`vow/${IA}/chain/01.json`, /not listed in the manifest/],
    ["vow/0123456789abcdef/chain/0.json", /lists no chain head of vow 0123456789abcdef/],
  ];
  for (const [stray, message] of strays) {
    const t = new Map(TREE);
    t.set(stray, TREE.get(`vow/${IA}/chain/2.json`));
    await refusesAsync(v(t), "unlisted-file", stray, message);
    // Without a listing nothing is counted, and the stray is never read.
    assert.equal((await v(t, {})).chainPages, 4);
  }
  // The count of pages on disk, when the listing holds a page the reader does not.
  const t = new Map(TREE);
  await refusesAsync(v(t, listOf(t, [`vow/${IC}/chain/1.json`])), "unlisted-file", `vow/${IC}/chain/1.json`);
});

test("a missing or changed chain page is refused, naming it", async () => {
  for (const p of PAGES) {
    const gone = new Map(TREE);
    gone.delete(p);
    await refusesAsync(v(gone), "missing-file", p, /not there, though/);
    await refusesAsync(v(gone, {}), "missing-file", p);
    const changed = new Map(TREE);
    const b = Uint8Array.from(TREE.get(p));
    b[b.length >> 1] ^= 1;
    changed.set(p, b);
    await refusesAsync(v(changed), "hash-mismatch", p, /pins/);
  }
  // A listing that leaves out a page the heads reach (the reader still has it).
  const without = `vow/${IA}/chain/1.json`;
  await refusesAsync(
    v(TREE, { listFiles: async () => [...TREE.keys()].filter((p) => p !== without) }),
    "missing-file",
    undefined,
    /holds 3 chain pages, the listed chain heads reach 4/,
  );
  // A page signed and linked as a real one, but of another vow.
  const mixed = new Map(TREE);
  const other = buildChain(k, C, { page: (p, d) => (p === 0 ? { ...d, vow_id: IA } : d) });
  mixed.set(`vow/${IC}/chain/0.json`, other.pages[0]);
  mixed.set(`vow/${IC}/chain.json`, other.head);
  const t = buildTree(k, Object.fromEntries([...mixed].filter(([p]) => !p.startsWith("manifest"))), { fileKey });
  await refusesAsync(v(t), "bad-chain", `vow/${IC}/chain/0.json`, new RegExp(`a page of vow ${IA}, not of ${IC}`));
});

test("a chain head is checked where the manifest lists it: signed, of the vow its path names", async () => {
  // B's head at C's path (listed with its bytes, so only the walk can tell).
  const swapped = { ...FILES, [`vow/${IC}/chain.json`]: FILES[`vow/${IB}/chain.json`] };
  delete swapped[`vow/${IC}/chain/0.json`];
  await refusesAsync(v(buildTree(k, swapped, { fileKey })), "bad-chain", `vow/${IC}/chain.json`, new RegExp(`vow ${IB}`));
  // A head whose pin is malformed names the head's file (and the member).
  const bad = buildChain(k, A, { head: (h) => ({ ...h, last_page: { ...h.last_page, records: 31 } }) });
  const t = buildTree(k, { ...FILES, [`vow/${IA}/chain.json`]: bad.head }, { fileKey });
  await refusesAsync(v(t), "bad-chain", `vow/${IA}/chain.json`, /last_page\.records/);
  await refusesAsync(v(t, { checkJson: false }), "bad-chain", `vow/${IA}/chain.json`);
});

test("mid-upgrade trees verify: a v2 root listing the pages of v1 heads, a v3 root still listing some", async () => {
  // The v2 root, every chain page listed; A and C still v1 heads, B already v2.
  const { files: old } = files([1, 2, 1]);
  const t2 = buildTree(k, old, { fileKey, type: "conduct.manifest/v2" });
  assert.equal(parseJson(t2.get("manifest.json")).type, "conduct.manifest/v2");
  assert.equal(listedIn(t2).filter((p) => CHAIN_PAGE_PATH.test(p)).length, 4);
  const r2 = await v(t2);
  assert.equal(r2.listedChainPages, 4);
  assert.equal(r2.chainPages, 4);
  assert.equal(r2.counted, r2.files - r2.listedChainPages);
  assert.equal((await v(t2, {})).chainPages, 4);
  // A v3 root whose re-render has reached C (v2 head, page unlisted) but not A (v1 head, pages listed).
  const { files: mid } = files([1, 2, 2]);
  const t3 = buildTree(k, mid, { fileKey, listed: (p) => !CHAIN_PAGE_PATH.test(p) || p.startsWith(`vow/${IA}/`) });
  const r3 = await v(t3);
  assert.equal(r3.listedChainPages, 3);
  assert.equal(r3.chainPages, 4);
  assert.equal(r3.counted, r3.files - 3);
  // A listed page is checked like any listed file, and through its head.
  const changed = new Map(t2);
  const b = Uint8Array.from(t2.get(`vow/${IA}/chain/1.json`));
  b[100] ^= 1;
  changed.set(`vow/${IA}/chain/1.json`, b);
  await refusesAsync(v(changed), "hash-mismatch", `vow/${IA}/chain/1.json`);
  // A listed page that no head reaches is a stray all the same.
  const extra = buildTree(k, { ...old, [`vow/${IA}/chain/3.json`]: old[`vow/${IA}/chain/2.json`] }, { fileKey, type: "conduct.manifest/v2" });
  await refusesAsync(v(extra), "unlisted-file", `vow/${IA}/chain/3.json`);
  // A listed page missing is missing.
  const gone = new Map(t2);
  gone.delete(`vow/${IC}/chain/0.json`);
  await refusesAsync(v(gone), "missing-file", `vow/${IC}/chain/0.json`);
});

test("other roots are refused: the single-file manifest (v1), an unknown version", async () => {
  for (const type of ["conduct.manifest/v1", "conduct.manifest/v4"]) {
    const t = buildTree(k, FILES, { fileKey, type });
    await refusesAsync(v(t), "wrong-type", "manifest.json", /expected "conduct.manifest\/v2" or "conduct.manifest\/v3"/);
  }
});
