// Offline: a vow's chain as served with linked pages (library/VOWS.md, "`/vow/<id>/chain`"): the
// head `conduct.chain/v2` pins the last full page (`last_page`), each `conduct.chain_page/v2` page
// the one before it (`prev_page_sha256`, null on page 0). Chains are built here as the renderer
// writes them (RFC 8785 bytes and a newline) and signed with a throw-away key, so every refusal
// is reached; the earlier `conduct.chain/v1` head (a pin for every page) is still read. No network.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  CHAIN_PAGE_SIZE,
  CHAIN_TYPE,
  CHAIN_PAGE_TYPE,
  ConductClient,
  VerificationError,
  parseJson,
  sha256Hex,
  verifyChain,
  verifyChainHead,
  verifyChainPage,
  verifyChainPages,
} from "../dist/index.js";
import { buildChain, captured, chainRecords, signedFile, testKey, refusesAsync } from "../testing/helpers.mjs";

const k = testKey();
const other = testKey("example.org/log", 8);


/** A reader of `pages` that records the pages asked for (undefined: not there). */
function reader(pages, asked = []) {
  return async (p) => {
    asked.push(p);
    return p >= 0 && p < pages.length ? pages[p] : undefined;
  };
}

// 3 full pages and a tail of 5: positions 0 .. 100.
const RECORDS = chainRecords(k, 100);
const CHAIN = buildChain(k, RECORDS);
const ID = CHAIN.id;
const at = (p) => `/vow/${ID}/chain/${p}`;

test("linked pages: chains of 0, 1 and 3 full pages with a tail verify, walked back from the head", async () => {
  assert.equal(CHAIN_PAGE_SIZE, 32);
  assert.equal(CHAIN_TYPE, "conduct.chain/v2");
  assert.equal(CHAIN_PAGE_TYPE, "conduct.chain_page/v2");
  const asked = [];
  const chain = await verifyChain(CHAIN.head, reader(CHAIN.pages, asked), k.vkey);
  assert.deepEqual(asked, [2, 1, 0], "last_page first, then each page's predecessor, each once");
  assert.equal(chain.entries.length, 100);
  assert.equal(chain.head.full_pages, 3);
  assert.equal(chain.head.tail.length, 5);
  assert.deepEqual(chain.vow, RECORDS[0]);
  assert.deepEqual(chain.entries.map((e) => e.seq), RECORDS.slice(1).map((e) => e.seq));
  // 0 full pages (the head holds every record), exactly 1 (an empty tail), 1 and a tail, 3 and an empty tail.
  for (const [records, pages, tail] of [[5, 0, 5], [1, 0, 1], [32, 1, 0], [40, 1, 8], [96, 3, 0]]) {
    const c = buildChain(k, RECORDS.slice(0, records));
    assert.equal(c.pages.length, pages);
    const got = await verifyChain(c.head, pages === 0 ? async () => assert.fail("no page to read") : reader(c.pages), k.vkey);
    assert.equal(got.entries.length, records - 1, `${records} records`);
    assert.equal(got.head.tail.length, tail);
    assert.equal(got.head.last_page === null, pages === 0);
  }
  // The pieces alone.
  const h = verifyChainHead(CHAIN.head, k.vkey);
  assert.equal(h.last_page.href, at(2));
  assert.equal(h.last_page.sha256, sha256Hex(CHAIN.pages[2]));
  const p1 = verifyChainPage(CHAIN.pages[1], k.vkey, { page: 1, vowId: ID });
  assert.equal(p1.prev_page_sha256, sha256Hex(CHAIN.pages[0]));
  assert.equal(verifyChainPage(CHAIN.pages[0], k.vkey).prev_page_sha256, null);
  const seen = [];
  const walked = await verifyChainPages(CHAIN.head, reader(CHAIN.pages), k.vkey, { onPage: (p) => seen.push(p) });
  assert.equal(walked.pages, 3);
  assert.deepEqual(seen, [2, 1, 0]);
});

test("linked pages: a tampered page is refused by the pin naming it", async () => {
  for (const p of [0, 1, 2]) {
    const pages = CHAIN.pages.map((b, j) => (j === p ? Uint8Array.from(b) : b));
    pages[p][pages[p].length >> 1] ^= 1;
    const by = p === 2 ? /the head's last_page pins/ : new RegExp(`page ${p + 1}'s prev_page_sha256 pins`);
    await refusesAsync(verifyChain(CHAIN.head, reader(pages), k.vkey), "hash-mismatch", at(p), by);
  }
  // Correctly signed by the service's own key, but not the page pinned (two records swapped).
  const body = parseUnsigned(CHAIN.pages[0]);
  [body.records[3], body.records[4]] = [body.records[4], body.records[3]];
  const resigned = signedFile(k, body);
  verifyChainPage(resigned, k.vkey, { page: 0, vowId: ID });
  await refusesAsync(verifyChain(CHAIN.head, reader([resigned, ...CHAIN.pages.slice(1)]), k.vkey), "hash-mismatch", at(0));
  // Bytes all along a page, changed, are refused (every 97th).
  const accepted = [];
  for (let i = 0; i < CHAIN.pages[1].length; i += 97) {
    const t = Uint8Array.from(CHAIN.pages[1]);
    t[i] ^= 1;
    try {
      await verifyChain(CHAIN.head, reader([CHAIN.pages[0], t, CHAIN.pages[2]]), k.vkey);
      accepted.push(i);
    } catch (e) {
      if (!(e instanceof VerificationError)) throw e;
    }
  }
  assert.deepEqual(accepted, []);
});

test("linked pages: a wrong prev link is refused at the page it names", async () => {
  // Page 2 links to page 0 instead of page 1; the head pins page 2 as it is.
  const skip = buildChain(k, RECORDS, {
    page: (p, d) => (p === 2 ? { ...d, prev_page_sha256: sha256Hex(CHAIN.pages[0]) } : d),
  });
  await refusesAsync(verifyChain(skip.head, reader(skip.pages), k.vkey), "hash-mismatch", at(1), /page 2's prev_page_sha256/);
  // No link where one is due, a link on page 0, a link that is not a hash.
  const cases = [
    [2, null, "bad-format", at(2)],
    [2, "XY", "bad-format", at(2)],
    [0, sha256Hex("page -1"), "bad-chain", at(0)],
  ];
  for (const [p, prev, code, path] of cases) {
    const c = buildChain(k, RECORDS, { page: (q, d) => (q === p ? { ...d, prev_page_sha256: prev } : d) });
    await refusesAsync(verifyChain(c.head, reader(c.pages), k.vkey), code, path, /prev_page_sha256/);
  }
  const noLink = buildChain(k, RECORDS, {
    page: (q, d) => {
      if (q !== 1) return d;
      const { prev_page_sha256: _gone, ...rest } = d;
      return rest;
    },
  });
  await refusesAsync(verifyChain(noLink.head, reader(noLink.pages), k.vkey), "bad-format", at(1), /prev_page_sha256: is missing/);
});

test("linked pages: a missing page is refused, naming it", async () => {
  for (const p of [0, 1, 2]) {
    const pages = CHAIN.pages.map((b, j) => (j === p ? undefined : b));
    await refusesAsync(verifyChain(CHAIN.head, reader(pages), k.vkey), "missing-file", at(p), /not there/);
  }
  // A reader that fails for another reason fails the walk as it is.
  await assert.rejects(
    verifyChain(CHAIN.head, async () => {
      throw new Error("network down");
    }, k.vkey),
    /network down/,
  );
});

test("linked pages: a page of another vow is refused, even linked and pinned as a real one", async () => {
  const theirs = buildChain(k, chainRecords(k, 40, { text: "Another vow.", agent: "other-bot" }));
  assert.notEqual(theirs.id, ID);
  // Their page 0, linked from our page 1 and pinned through to our head.
  const mixed = buildChain(k, RECORDS, { page: (p, d) => (p === 0 ? parseUnsigned(theirs.pages[0]) : d) });
  await refusesAsync(verifyChain(mixed.head, reader(mixed.pages), k.vkey), "bad-chain", at(0), new RegExp(`a page of vow ${theirs.id}`));
  // Our records, but the page says another vow.
  const renamed = buildChain(k, RECORDS, { page: (p, d) => (p === 1 ? { ...d, vow_id: theirs.id } : d) });
  await refusesAsync(verifyChain(renamed.head, reader(renamed.pages), k.vkey), "bad-chain", at(1), /vow_id/);
  // A head of ours pinning their page.
  const pinned = buildChain(k, RECORDS.slice(0, 40), {
    head: (d) => ({ ...d, last_page: { ...d.last_page, sha256: sha256Hex(theirs.pages[0]) } }),
  });
  await refusesAsync(verifyChain(pinned.head, reader(theirs.pages), k.vkey), "bad-chain", at(0));
});

/** A page file's document without its signature members (to sign it again, changed or not). */
function parseUnsigned(bytes) {
  const { signature: _s, key_id: _k, scope: _c, ...doc } = parseJson(bytes);
  return doc;
}

test("linked pages: a wrong last_page pin is refused", async () => {
  const pinOf = (change) => buildChain(k, RECORDS, { head: (h) => ({ ...h, last_page: { ...h.last_page, ...change } }) });
  // The pin of another page's bytes.
  const wrong = pinOf({ sha256: sha256Hex(CHAIN.pages[1]) });
  await refusesAsync(verifyChain(wrong.head, reader(CHAIN.pages), k.vkey), "hash-mismatch", at(2), /the head's last_page pins/);
  // Naming another page, or at another place, or malformed.
  for (const [change, code, path] of [
    [{ href: at(1) }, "bad-chain", "last_page.href"],
    [{ href: `/vow/${"0".repeat(16)}/chain/2` }, "bad-chain", "last_page.href"],
    [{ from_position: 32 }, "bad-chain", "last_page.from_position"],
    [{ records: 31 }, "bad-chain", "last_page.records"],
    [{ sha256: "XY" }, "bad-format", "last_page.sha256"],
  ]) {
    const c = pinOf(change);
    await refusesAsync(verifyChain(c.head, reader(CHAIN.pages), k.vkey), code, path);
  }
  // None where pages are full, one where none is, a head whose numbers do not add up.
  const head = (change) => buildChain(k, RECORDS, { head: (h) => ({ ...h, ...change }) }).head;
  await refusesAsync(verifyChain(head({ last_page: null }), reader(CHAIN.pages), k.vkey), "bad-chain", "last_page");
  const few = buildChain(k, RECORDS.slice(0, 5), {
    head: (h) => ({ ...h, last_page: { href: at(0), from_position: 0, records: 32, sha256: sha256Hex(CHAIN.pages[0]) } }),
  });
  await refusesAsync(verifyChain(few.head, reader(CHAIN.pages), k.vkey), "bad-chain", "last_page");
  const { last_page: _l, ...noPin } = parseUnsigned(CHAIN.head);
  await refusesAsync(verifyChain(signedFile(k, noPin), reader(CHAIN.pages), k.vkey), "bad-format", "last_page");
  const pin1 = { href: at(1), from_position: 32, records: 32, sha256: sha256Hex(CHAIN.pages[1]) };
  for (const [change, path] of [
    [{ full_pages: 2 }, "last_page.href"],
    [{ full_pages: 2, last_page: pin1 }, "tail_from_position"],
    [{ full_pages: 2, last_page: pin1, tail_from_position: 64 }, "length"],
    [{ tail_from_position: 95 }, "tail_from_position"],
    [{ length: 101 }, "length"],
  ])
    await refusesAsync(verifyChain(head(change), reader(CHAIN.pages), k.vkey), "bad-chain", path);
  await refusesAsync(verifyChain(head({ head_sha256: sha256Hex("x") }), reader(CHAIN.pages), k.vkey), "hash-mismatch", "head_sha256");
  await refusesAsync(verifyChain(head({ page_size: 64 }), reader(CHAIN.pages), k.vkey), "bad-format", "page_size");
  // A full page's worth of records kept in the tail.
  const fat = buildChain(k, RECORDS.slice(0, 40), {
    head: (h) => ({ ...h, full_pages: 0, last_page: null, tail_from_position: 0, tail: RECORDS.slice(0, 40) }),
  });
  await refusesAsync(verifyChain(fat.head, reader([]), k.vkey), "bad-chain", "tail");
});

test("linked pages: each page is signed, numbered, placed, full and of the head's version", async () => {
  const cases = [
    ["page number", (d) => ({ ...d, page: 5 }), "bad-chain", /is page 5, not page 1/],
    ["from_position", (d) => ({ ...d, from_position: 0 }), "bad-chain", /from_position/],
    ["head", (d) => ({ ...d, head: "/vow/0000000000000000/chain" }), "bad-chain", /head/],
    ["short page", (d) => ({ ...d, records: d.records.slice(1) }), "bad-chain", /32 records/],
    ["a v1 page", (d) => ({ ...d, type: "conduct.chain_page/v1" }), "wrong-type", /under a conduct.chain\/v2 head/],
    ["another type", (d) => ({ ...d, type: "conduct.vows_page/v1" }), "wrong-type", /type/],
  ];
  for (const [what, change, code, message] of cases) {
    const c = buildChain(k, RECORDS, { page: (p, d) => (p === 1 ? change(d) : d) });
    await assert.rejects(verifyChain(c.head, reader(c.pages), k.vkey), (e) => {
      assert.ok(e instanceof VerificationError, `${what}: ${e}`);
      assert.equal(e.code, code, `${what}: ${e.message}`);
      assert.equal(e.path, at(1), `${what}: ${e.message}`);
      assert.match(e.message, message, what);
      return true;
    });
  }
  // Records out of place: two pages each signed and linked, but the records swapped between them.
  const swapped = buildChain(k, RECORDS, {
    page: (p, d) => (p === 0 ? { ...d, records: RECORDS.slice(32, 64) } : p === 1 ? { ...d, records: RECORDS.slice(0, 32) } : d),
  });
  await refusesAsync(verifyChain(swapped.head, reader(swapped.pages), k.vkey), "wrong-type", at(0), /records\[0\] \(chain position 0\): type: /);
  // A record missing from the tail: the head adds up, the chain does not.
  const short = buildChain(k, RECORDS, { head: (h) => ({ ...h, length: 99, tail: RECORDS.slice(97) }) });
  await refusesAsync(verifyChain(short.head, reader(short.pages), k.vkey), "bad-chain", "tail", /tail\[0\] \(chain position 96\): seq 97/);
  // A page signed by another key, linked and pinned as it is.
  const p0 = signedFile(other, parseUnsigned(CHAIN.pages[0]));
  const relinked = buildChain(k, RECORDS, { page: (p, d) => (p === 1 ? { ...d, prev_page_sha256: sha256Hex(p0) } : d) });
  await refusesAsync(
    verifyChain(relinked.head, reader([p0, ...relinked.pages.slice(1)]), k.vkey),
    "key-id-mismatch",
    at(0),
  );
  // The head signed by another key.
  await refusesAsync(verifyChain(signedFile(other, parseUnsigned(CHAIN.head)), reader(CHAIN.pages), k.vkey), "key-id-mismatch");
  assert.throws(
    () => verifyChainHead(signedFile(k, { ...parseUnsigned(CHAIN.head), type: "conduct.chain/v3" }), k.vkey),
    (e) => e instanceof VerificationError && e.code === "wrong-type",
  );
});

test("v1 heads (a pin for every page) are still read, the captured one too", async () => {
  const v1 = buildChain(k, RECORDS, { version: 1 });
  const asked = [];
  const chain = await verifyChain(v1.head, reader(v1.pages, asked), k.vkey);
  assert.equal(chain.head.type, "conduct.chain/v1");
  assert.equal(chain.entries.length, 100);
  assert.deepEqual(asked, [0, 1, 2], "a v1 head's pins, in order");
  const t = v1.pages.map((b) => Uint8Array.from(b));
  t[1][300] ^= 1;
  await refusesAsync(verifyChain(v1.head, reader(t), k.vkey), "hash-mismatch", at(1), /pages\[1\]/);
  await refusesAsync(verifyChain(v1.head, reader(v1.pages.slice(0, 2)), k.vkey), "missing-file", at(2));
  // A v2 page pinned by a v1 head.
  const mixed = buildChain(k, RECORDS, { version: 1, page: (p, d) => (p === 0 ? { ...d, type: "conduct.chain_page/v2", prev_page_sha256: null } : d) });
  await refusesAsync(verifyChain(mixed.head, reader(mixed.pages), k.vkey), "wrong-type", at(0));
  // The captured head (a real conduct.chain/v1 from a `conduct dev` stack: no full page yet).
  const captured1 = await verifyChain(captured.chain_head, async () => assert.fail("no page to read"), captured.vkey);
  assert.equal(captured1.head.type, "conduct.chain/v1");
  assert.deepEqual(captured1.head.pages, []);
  assert.equal(captured1.entries.length, captured1.head.length);
  assert.equal(captured1.vow.vow_id, parseJson(captured.vow).vow_id);
});

test("the client follows the links from the head, and refuses a tampered or missing page", async () => {
  const files = new Map([[`/vow/${ID}/chain`, CHAIN.head], ...CHAIN.pages.map((b, p) => [at(p), b])]);
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
  const chain = await c.chain(ID);
  assert.equal(chain.entries.length, 100);
  assert.deepEqual(asked, [`/vow/${ID}/chain`, at(2), at(1), at(0)]);
  const t = Uint8Array.from(CHAIN.pages[1]);
  t[200] ^= 1;
  files.set(at(1), t);
  await refusesAsync(c.chain(ID), "hash-mismatch", at(1));
  files.delete(at(1));
  await refusesAsync(c.chain(ID), "missing-file", at(1));
  files.set(at(1), CHAIN.pages[1]);
  await assert.rejects(c.chain("0123456789abcdef"), (e) => e.status === 404);
});
