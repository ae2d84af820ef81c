// Offline: the public index of vows (`/vows`, `conduct.vows/v2`, and its full pages `/vows/<k>`,
// `conduct.vows_page/v1`; library/VOWS.md), on indexes built here as the renderer writes them and
// signed with a throw-away key, so every refusal is reached. No network.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  ConductClient,
  VerificationError,
  VOWS_PAGE_SIZE,
  canonicalBytes,
  sha256Hex,
  vowId,
  verifyVowsHead,
  verifyVowsPage,
  verifyVowsIndex,
} from "../dist/index.js";
import { testKey, acceptedTampers } from "../testing/helpers.mjs";

const SIZE = VOWS_PAGE_SIZE;
const k = testKey();
const other = testKey("example.org/log", 8);

async function refusesAsync(p, code, path) {
  await assert.rejects(p, (e) => {
    assert.ok(e instanceof VerificationError, `not a VerificationError: ${e}`);
    assert.equal(e.code, code, `got ${e.code}: ${e.message}`);
    if (path !== undefined) assert.equal(e.path, path, e.message);
    return true;
  });
}
function refuses(f, code) {
  assert.throws(f, (e) => {
    assert.ok(e instanceof VerificationError, `not a VerificationError: ${e}`);
    assert.equal(e.code, code, `got ${e.code}: ${e.message}`);
    return true;
  });
}

/** Vow `i` as the index lists it (log indexes 10, 13, 16, …; every fifth one sealed). */
function listed(key, i, logIndex = 10 + 3 * i) {
  const text = `I keep my word & report in (${i})`;
  const agent = `agent-${i % 7}`;
  const id = vowId(key.name, logIndex, sha256Hex(text), agent);
  const sealed = i % 5 === 0;
  return {
    vow_id: id,
    agent,
    sealed,
    sandbox: i % 2 === 0,
    wallet: i % 2 === 0 ? null : `0x${"ab".repeat(20)}`,
    cadence_hours: 24,
    taken_at: `2026-01-01T00:${String(Math.floor(i / 60) % 60).padStart(2, "0")}:${String(i % 60).padStart(2, "0")}Z`,
    log_index: logIndex,
    text_sha256: sha256Hex(text),
    href: `/vow/${id}`,
    ...(sealed ? {} : { text }),
  };
}

const pinOf = (p, bytes) => ({ href: `/vows/${p}`, page: p, sha256: sha256Hex(bytes) });
const pageDoc = (p, vows, prev) => ({
  type: "conduct.vows_page/v1",
  page: p,
  from: p * SIZE,
  order: "in the order taken",
  prev: prev === null ? null : pinOf(p - 1, prev),
  head: "/vows",
  vows,
});
const headDoc = (vows, pages) => ({
  type: "conduct.vows/v2",
  count: vows.length,
  order: "in the order taken",
  page_size: SIZE,
  pages: pages.length,
  last_page: pages.length > 0 ? pinOf(pages.length - 1, pages[pages.length - 1]) : null,
  tail_from: pages.length * SIZE,
  tail: vows.slice(pages.length * SIZE),
  how_to_verify: "walk back from the head",
});
const signed = (key, doc) => canonicalBytes(key.sign(doc));

/** The head and full pages of an index of `vows`, as the renderer writes them. */
function build(vows, key = k) {
  const pages = [];
  for (let p = 0; p < Math.floor(vows.length / SIZE); p++)
    pages.push(signed(key, pageDoc(p, vows.slice(p * SIZE, (p + 1) * SIZE), p === 0 ? null : pages[p - 1])));
  return { head: signed(key, headDoc(vows, pages)), pages };
}

const VOWS = Array.from({ length: 2 * SIZE + 5 }, (_, i) => listed(k, i));
const INDEX = build(VOWS);
const reader = (pages) => async (p) => (p >= 0 && p < pages.length ? pages[p] : assert.fail(`page ${p} read`));

test("the index of vows: walking back from the head gives every vow in the order taken", async () => {
  const read = [];
  const { head, vows } = await verifyVowsIndex(INDEX.head, async (p) => (read.push(p), INDEX.pages[p]), k.vkey);
  assert.equal(head.count, VOWS.length);
  assert.deepEqual(vows.map((v) => v.vow_id), VOWS.map((v) => v.vow_id));
  assert.deepEqual(read, [1, 0], "newest page first, each page read once");
  assert.equal(vows[0].text, undefined);
  for (const n of [0, 3, SIZE, SIZE + 1]) {
    const { head: h, pages } = build(VOWS.slice(0, n));
    const got = await verifyVowsIndex(h, reader(pages), k.vkey);
    assert.deepEqual(got.vows.map((v) => v.log_index), VOWS.slice(0, n).map((v) => v.log_index), `${n} vows`);
  }
  const few = build(VOWS.slice(0, 3));
  assert.equal(verifyVowsHead(few.head, k.vkey).last_page, null);
  assert.equal(verifyVowsPage(INDEX.pages[1], k.vkey, { page: 1 }).from, SIZE);
});

test("the index of vows: a tampered page is refused by its pin", async () => {
  for (const p of [0, 1]) {
    const pages = INDEX.pages.map((b, j) => (j === p ? Uint8Array.from(b) : b));
    pages[p][pages[p].length >> 1] ^= 1;
    await refusesAsync(verifyVowsIndex(INDEX.head, reader(pages), k.vkey), "hash-mismatch", `/vows/${p}`);
  }
  // Correctly signed, by the service's own key, but not the page pinned.
  const again = signed(k, { ...pageDoc(0, VOWS.slice(0, SIZE), null), order: "another order" });
  await refusesAsync(verifyVowsIndex(INDEX.head, reader([again, INDEX.pages[1]]), k.vkey), "hash-mismatch", "/vows/0");
  // Bytes all along the last page (every 211th of its ~80 KB), changed, are refused.
  const accepted = [];
  const last = INDEX.pages[1];
  for (let i = 0; i < last.length; i += 211) {
    const t = Uint8Array.from(last);
    t[i] ^= 1;
    try {
      await verifyVowsIndex(INDEX.head, reader([INDEX.pages[0], t]), k.vkey);
      accepted.push(i);
    } catch (e) {
      if (!(e instanceof VerificationError)) throw e;
    }
  }
  assert.deepEqual(accepted, []);
});

test("the index of vows: a wrong pin is refused", async () => {
  const doc = headDoc(VOWS, INDEX.pages);
  const wrong = signed(k, { ...doc, last_page: { ...doc.last_page, sha256: sha256Hex(INDEX.pages[0]) } });
  await refusesAsync(verifyVowsIndex(wrong, reader(INDEX.pages), k.vkey), "hash-mismatch", "/vows/1");
  // Page 1 re-signed with a wrong prev and pinned as it is: page 0 is refused.
  const p1 = pageDoc(1, VOWS.slice(SIZE, 2 * SIZE), INDEX.pages[0]);
  const bad1 = signed(k, { ...p1, prev: { ...p1.prev, sha256: "0".repeat(64) } });
  const head2 = signed(k, headDoc(VOWS, [INDEX.pages[0], bad1]));
  await refusesAsync(verifyVowsIndex(head2, reader([INDEX.pages[0], bad1]), k.vkey), "hash-mismatch", "/vows/0");
  // A pin naming another page, a malformed one, none where a page is full.
  for (const pin of [{ ...doc.last_page, page: 0, href: "/vows/0" }, { ...doc.last_page, href: "/vows/9" }])
    await refusesAsync(verifyVowsIndex(signed(k, { ...doc, last_page: pin }), reader(INDEX.pages), k.vkey), "bad-chain", "last_page");
  await refusesAsync(
    verifyVowsIndex(signed(k, { ...doc, last_page: { ...doc.last_page, sha256: "XY" } }), reader(INDEX.pages), k.vkey),
    "bad-format",
  );
  await refusesAsync(verifyVowsIndex(signed(k, { ...doc, last_page: null }), reader(INDEX.pages), k.vkey), "bad-chain", "last_page");
});

test("the index of vows: pages are full, numbered, in order and chained", async () => {
  const served = (p0, p1) => {
    const b0 = signed(k, p0);
    const b1 = signed(k, p1 ?? pageDoc(1, VOWS.slice(SIZE, 2 * SIZE), b0));
    return [signed(k, headDoc(VOWS, [b0, b1])), reader([b0, b1])];
  };
  const good = pageDoc(0, VOWS.slice(0, SIZE), null);
  await verifyVowsIndex(...served(good), k.vkey);
  const cases = {
    from: [{ ...good, from: 1 }, undefined, "bad-chain"],
    "page number": [{ ...good, page: 1 }, undefined, "bad-chain"],
    "short page": [{ ...good, vows: VOWS.slice(0, SIZE - 1) }, undefined, "bad-chain"],
    "long page": [{ ...good, vows: VOWS.slice(0, SIZE + 1) }, undefined, "bad-chain"],
    "prev on page 0": [{ ...good, prev: pinOf(0, new Uint8Array([1])) }, undefined, "bad-chain"],
    "no prev member": [{ ...good, prev: undefined }, undefined, "bad-format"],
    "swapped vows": [{ ...good, vows: [VOWS[1], VOWS[0], ...VOWS.slice(2, SIZE)] }, undefined, "bad-chain"],
    "no prev on page 1": [good, pageDoc(1, VOWS.slice(SIZE, 2 * SIZE), null), "bad-chain"],
    "another type": [{ ...good, type: "conduct.chain_page/v1" }, undefined, "wrong-type"],
  };
  for (const [what, [p0, p1, code]] of Object.entries(cases)) {
    await assert.rejects(verifyVowsIndex(...served(p0, p1), k.vkey), (e) => {
      assert.ok(e instanceof VerificationError, `${what}: ${e}`);
      assert.equal(e.code, code, `${what}: ${e.message}`);
      return true;
    });
  }
  // Each page in order alone, but page 1 before page 0 in the order taken.
  const later = Array.from({ length: SIZE }, (_, i) => listed(k, i, 100000 + i));
  verifyVowsPage(signed(k, pageDoc(0, later, null)), k.vkey, { page: 0 });
  await refusesAsync(verifyVowsIndex(...served(pageDoc(0, later, null)), k.vkey), "bad-chain", "/vows/1");
  // A page signed by another key, pinned as it is.
  const b0 = signed(other, good);
  const b1 = signed(k, pageDoc(1, VOWS.slice(SIZE, 2 * SIZE), b0));
  await refusesAsync(verifyVowsIndex(signed(k, headDoc(VOWS, [b0, b1])), reader([b0, b1]), k.vkey), "key-id-mismatch", "/vows/0");
});

test("the index of vows: the head adds up, and each listed vow is checked", async () => {
  const doc = headDoc(VOWS, INDEX.pages);
  for (const change of [
    { count: VOWS.length + 1 },
    { tail_from: 2 * SIZE - 1 },
    { pages: 1 },
    { tail: VOWS.slice(2 * SIZE + 1) },
    { tail: [VOWS[0], ...VOWS.slice(2 * SIZE + 1)] },
  ])
    await refusesAsync(verifyVowsIndex(signed(k, { ...doc, ...change }), reader(INDEX.pages), k.vkey), "bad-chain");
  refuses(() => verifyVowsHead(signed(k, { ...doc, type: "conduct.vows/v1" }), k.vkey), "wrong-type");
  refuses(() => verifyVowsHead(signed(other, doc), k.vkey), "key-id-mismatch");
  assert.deepEqual(acceptedTampers(INDEX.head, (b) => verifyVowsHead(b, k.vkey)), []);
  const [sealed, open] = VOWS;
  const { text: _t, ...noText } = open;
  const { taken_at: _a, ...noTakenAt } = open;
  const cases = [
    [{ ...sealed, text: "x" }, "bad-format"],
    [noText, "bad-format"],
    [{ ...open, text: "another text" }, "hash-mismatch"],
    [{ ...open, agent: "someone-else" }, "hash-mismatch"],
    [{ ...open, log_index: open.log_index + 1 }, "hash-mismatch"],
    [{ ...open, href: "/vow/0000000000000000" }, "bad-format"],
    [noTakenAt, "bad-format"],
  ];
  for (const [changed, code] of cases)
    refuses(() => verifyVowsHead(signed(k, headDoc([sealed, changed], [])), k.vkey), code);
});

test("the client reads the head, a page and every vow, and refuses a tampered page", async () => {
  const files = new Map([["/vows", INDEX.head], ["/vows/0", INDEX.pages[0]], ["/vows/1", INDEX.pages[1]]]);
  const asked = [];
  const fetch = async (url) => {
    const path = new URL(url).pathname;
    asked.push(path);
    const body = files.get(path);
    return body === undefined
      ? new Response(JSON.stringify({ type: "/library/ERRORS.md#not-found", title: "Not found", status: 404 }), {
          status: 404,
          headers: { "content-type": "application/problem+json" },
        })
      : new Response(body, { status: 200, headers: { "content-type": "application/json" } });
  };
  const c = new ConductClient({ url: "http://conduct.test", vkey: k.vkey, fetch });
  assert.equal((await c.vows()).count, VOWS.length);
  assert.equal((await c.vowsPage(1)).from, SIZE);
  asked.length = 0;
  assert.deepEqual((await c.allVows()).map((v) => v.vow_id), VOWS.map((v) => v.vow_id));
  assert.deepEqual(asked, ["/vows", "/vows/1", "/vows/0"]);
  const t = Uint8Array.from(INDEX.pages[0]);
  t[200] ^= 1;
  files.set("/vows/0", t);
  await refusesAsync(c.allVows(), "hash-mismatch", "/vows/0");
  files.set("/vows/0", INDEX.pages[1]);
  await refusesAsync(c.vowsPage(0), "bad-chain", "page");
});
