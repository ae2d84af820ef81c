// Offline unit tests: every check against a throw-away key and against real bytes captured from
// a `conduct dev` stack (testing/captured.json). No network.
import { test } from "node:test";
import assert from "node:assert/strict";
import { schnorr } from "@noble/curves/secp256k1.js";
import { ed25519 } from "@noble/curves/ed25519.js";
import {
  VerificationError,
  ProblemError,
  canonicalBytes,
  parseJson,
  fromBase64,
  toBase64,
  sha256Hex,
  keccak256Hex,
  parseVkey,
  keyIdOf,
  verifySigned,
  verifySnapshot,
  verifyAttestation,
  traceSha256,
  verifyCheckpoint,
  parseTlogProof,
  verifyInclusion,
  inclusionProofValid,
  leafHash,
  nodeHash,
  merkleRoot,
  vowId,
  verifyVow,
  verifyEntry,
  verifyChainRecords,
  verifyChain,
  recordSha256,
  unitOf,
  fileKey,
  verifyManifest,
  verifyNostrEvent,
  verifyCredential,
} from "../dist/index.js";
import {
  captured,
  testKey,
  acceptedTampers,
  inclusionPath,
  buildTree,
  SCOPE,
  METER_BLOCKS,
  chainRecords,
  refusesAsync,
} from "../testing/helpers.mjs";

const enc = (s) => new TextEncoder().encode(s);
/** Assert that `f` throws a VerificationError with `code`. */
function refuses(f, code, message) {
  assert.throws(f, (e) => {
    assert.ok(e instanceof VerificationError, `not a VerificationError: ${e}`);
    assert.equal(e.code, code, `${message ?? ""} got ${e.code}: ${e.message}`);
    return true;
  });
}

// ---- encodings --------------------------------------------------------------------------

test("strict JSON: duplicate members, lone surrogates, trailing text and bad UTF-8 are refused", () => {
  assert.deepEqual(parseJson('{"a":[1,2.5,"x\\u00e9\\ud83d\\ude00"],"b":null}'), { a: [1, 2.5, "xé😀"], b: null });
  refuses(() => parseJson('{"a":1,"a":2}'), "not-json");
  refuses(() => parseJson('{"a":"\\ud800"}'), "not-json");
  refuses(() => parseJson('{"a":"\\udc00x"}'), "not-json");
  refuses(() => parseJson('{"a":1} x'), "not-json");
  refuses(() => parseJson('{"a":01}'), "not-json");
  refuses(() => parseJson(new Uint8Array([0x22, 0xff, 0x22])), "not-json");
  const proto = parseJson('{"__proto__":{"x":1}}');
  assert.deepEqual(Object.keys(proto), ["__proto__"]);
  assert.equal(Object.getPrototypeOf(proto), Object.prototype);
});

test("RFC 8785: members by UTF-16 code units, shortest numbers, minimal escapes", () => {
  const text = new TextDecoder().decode(
    canonicalBytes({ "\u20ac": 1, "\r": 2, "\ud83d\ude00": 3, a: [1e21, 0.1, -0, 1.5e-7, "\u0001\u2028"], "1": true }),
  );
  assert.equal(text, '{"\\r":2,"1":true,"a":[1e+21,0.1,0,1.5e-7,"\\u0001\u2028"],"€":1,"😀":3}');
});

test("base64 is decoded strictly: one spelling for one byte string", () => {
  for (const n of [0, 1, 2, 3, 31, 32, 33, 64]) {
    const b = Uint8Array.from({ length: n }, (_, i) => (i * 37 + 11) & 255);
    assert.deepEqual(fromBase64(toBase64(b)), b);
    assert.equal(toBase64(b), Buffer.from(b).toString("base64"));
  }
  assert.deepEqual(fromBase64("QQ=="), Uint8Array.of(0x41));
  assert.equal(fromBase64("QR=="), undefined, "non-zero unused bits");
  assert.equal(fromBase64("QQ"), undefined, "no padding");
  assert.equal(fromBase64("Q-=="), undefined, "url alphabet");
  assert.equal(fromBase64("QQ==QQ=="), undefined, "padding inside");
});

// ---- keys and signed objects ------------------------------------------------------------

test("a vkey is read from the left (its base64 may hold +) and its key id must be its key's", () => {
  const k = parseVkey(captured.vkey);
  assert.equal(k.name, "localhost:36191/log");
  assert.equal(k.keyId, "fbeb8d48");
  assert.ok(captured.vkey.split("+").length > 3, "the captured key's base64 holds a +");
  assert.equal(keyIdOf(k.name, k.publicKey), k.keyId);
  refuses(() => parseVkey(captured.vkey.replace("+fbeb8d48+", "+fbeb8d49+")), "bad-key");
  refuses(() => parseVkey("localhost:36191/log+fbeb8d48"), "bad-key");
  refuses(() => parseVkey("other.example/log" + captured.vkey.slice(captured.vkey.indexOf("+"))), "bad-key");
  const t = testKey();
  assert.equal(parseVkey(t.vkey).keyId, t.keyId);
});

test("a captured attestation verifies, with its trace; another trace or key is refused", () => {
  const doc = verifyAttestation(enc(captured.attestation), captured.vkey, captured.trace);
  assert.equal(doc.type, "conduct.attestation/v1");
  assert.equal(doc.trace_sha256, traceSha256(captured.trace));
  assert.equal(traceSha256({ ...captured.trace, disclosure: { x: 1 } }), doc.trace_sha256, "other members are left out");
  const other = structuredClone(captured.trace);
  other.turns[0].M = "changed";
  refuses(() => verifyAttestation(captured.attestation, captured.vkey, other), "hash-mismatch");
  refuses(() => verifyAttestation(captured.attestation, testKey().vkey), "key-id-mismatch");
});

test("every byte of a captured attestation, flipped, is refused", () => {
  const bytes = enc(captured.attestation);
  for (const mask of [0x01]) {
    const accepted = acceptedTampers(bytes, (t) => verifyAttestation(t, captured.vkey), mask);
    assert.deepEqual(accepted, [], `mask ${mask}: accepted at ${accepted.map((i) => `${i} (${captured.attestation.slice(i - 8, i + 8)})`)}`);
  }
});

test("signed objects: each member changed, removed or added is refused; so is a stripped scope", () => {
  const k = testKey();
  const doc = k.sign({ type: "conduct.thing/v1", n: 1.5, s: "x", list: [1, { a: null }] });
  assert.deepEqual(verifySigned(doc, k.vkey), doc);
  assert.deepEqual(verifySigned(JSON.stringify(doc, null, 2), k.vkey), doc, "whitespace is not signed");
  for (const member of Object.keys(doc)) {
    if (member === "signature") continue;
    const changed = { ...doc, [member]: member === "n" ? 2.5 : "changed" };
    assert.throws(() => verifySigned(changed, k.vkey), VerificationError, member);
    const { [member]: _gone, ...without } = doc;
    assert.throws(() => verifySigned(without, k.vkey), VerificationError, `without ${member}`);
  }
  refuses(() => verifySigned({ ...doc, extra: 1 }, k.vkey), "bad-signature");
  refuses(() => verifySigned({ ...doc, signature: undefined }, k.vkey), "bad-signature");
  refuses(() => verifySigned({ ...doc, signature: doc.signature.slice(4) }, k.vkey), "bad-signature");
  refuses(() => verifySigned({ ...doc, key_id: "00000000" }, k.vkey), "key-id-mismatch");
  const { scope: _s, ...noScope } = doc;
  refuses(() => verifySigned(k.sign(noScope, { scope: false }), k.vkey), "scope");
  refuses(() => verifySigned(k.sign({ ...noScope, scope: { ...SCOPE, extra: "e" } }, { scope: false }), k.vkey), "scope");
  const changed = { ...SCOPE, not_trade_advice: `${SCOPE.not_trade_advice} ` };
  refuses(() => verifySigned(k.sign({ ...noScope, scope: changed }, { scope: false }), k.vkey), "scope");
  refuses(() => verifySigned(doc, k.vkey, { type: "conduct.other/v1" }), "wrong-type");
  refuses(() => verifySigned("[1]", k.vkey), "bad-format");
  // A foreign type carries no scope statement and needs none.
  assert.ok(verifySigned(k.sign({ type: "other/v1" }), k.vkey));
  // The OpenAPI document signs with x-signature and x-key-id (the signature over every other member).
  const body = { openapi: "3.1.0", paths: {}, "x-key-id": k.keyId };
  const sx = toBase64(ed25519.sign(canonicalBytes(body), new Uint8Array(32).fill(7)));
  assert.ok(verifySnapshot({ ...body, "x-signature": sx }, k.vkey));
  refuses(() => verifySnapshot({ ...body, paths: { "/x": {} }, "x-signature": sx }, k.vkey), "bad-signature");
  refuses(() => verifySnapshot({ ...body, "x-key-id": "00000000", "x-signature": sx }, k.vkey), "key-id-mismatch");
});

// ---- the log ----------------------------------------------------------------------------

test("Merkle inclusion proofs: every index of every tree size up to 33 verifies, nothing else does", () => {
  for (let n = 1; n <= 33; n++) {
    const leaves = Array.from({ length: n }, (_, i) => enc(`leaf ${i}`));
    const hashes = leaves.map(leafHash);
    const root = merkleRoot(leaves);
    for (let m = 0; m < n; m++) {
      const proof = inclusionPath(m, hashes, nodeHash);
      assert.ok(inclusionProofValid(hashes[m], m, n, proof, root), `n=${n} m=${m}`);
      if (n > 1) {
        assert.ok(!inclusionProofValid(hashes[(m + 1) % n], m, n, proof, root), `wrong leaf n=${n} m=${m}`);
        assert.ok(!inclusionProofValid(hashes[m], (m + 1) % n, n, proof, root), `wrong index n=${n} m=${m}`);
        assert.ok(!inclusionProofValid(hashes[m], m, n, proof.slice(1), root), `short proof n=${n} m=${m}`);
      }
      assert.ok(!inclusionProofValid(hashes[m], m, n, [...proof, hashes[0]], root), `long proof n=${n} m=${m}`);
      assert.ok(!inclusionProofValid(hashes[m], n, n, proof, root), `index beyond the tree n=${n}`);
    }
  }
  assert.equal(Buffer.from(merkleRoot([])).toString("hex"), sha256Hex(new Uint8Array()));
});

test("checkpoints: signed notes of the pinned key and origin only", () => {
  const k = testKey();
  const root = toBase64(new Uint8Array(32).fill(9));
  const note = k.note(`${k.name}\n5\n${root}\n`);
  const cp = verifyCheckpoint(note, k.vkey);
  assert.equal(cp.size, 5);
  assert.equal(cp.origin, k.name);
  // A witness's cosignature line is ignored.
  const cosigned = note + `\u2014 witness.example ${toBase64(new Uint8Array(68))}\n`;
  assert.equal(verifyCheckpoint(cosigned, k.vkey).size, 5);
  refuses(() => verifyCheckpoint(note, testKey("example.org/log", 8).vkey), "key-id-mismatch");
  const other = testKey("other.example/log");
  refuses(() => verifyCheckpoint(other.note(`${k.name}\n5\n${root}\n`), other.vkey), "wrong-origin");
  refuses(() => verifyCheckpoint(k.note(`${k.name}\n05\n${root}\n`), k.vkey), "bad-format");
  refuses(() => verifyCheckpoint(k.note(`${k.name}\n5\nAAAA\n`), k.vkey), "bad-format");
  refuses(() => verifyCheckpoint(note.slice(0, -1), k.vkey), "bad-format");
  refuses(() => verifyCheckpoint(note.replace("\n5\n", "\n6\n"), k.vkey), "bad-signature");
});

test("every byte of a captured checkpoint and of a captured tlog-proof, flipped, is refused", () => {
  const cp = verifyCheckpoint(captured.checkpoint, captured.vkey);
  assert.equal(cp.origin, "localhost:36191/log");
  assert.deepEqual(acceptedTampers(enc(captured.checkpoint), (t) => verifyCheckpoint(t, captured.vkey)), []);
  const entry = parseJson(captured.entry);
  const inc = verifyInclusion(entry, captured.proof_of_entry, captured.vkey);
  assert.equal(inc.index, entry.log_index);
  const proofBytes = enc(captured.proof_of_entry);
  assert.deepEqual(acceptedTampers(proofBytes, (t) => verifyInclusion(entry, t, captured.vkey)), []);
  // The vow record is leaf 0, not the proof's leaf.
  refuses(() => verifyInclusion(parseJson(captured.vow), captured.proof_of_entry, captured.vkey), "bad-proof");
  refuses(() => verifyInclusion(canonicalBytes(parseJson(captured.vow)), captured.proof_of_entry, captured.vkey), "bad-proof");
});

test("tlog-proofs: extra data, index and hashes are read; a record's log_index must be the proof's", () => {
  const k = testKey();
  const leaves = [0, 1, 2, 3, 4].map((i) => canonicalBytes(k.sign({ type: "conduct.x/v1", log_index: i })));
  const hashes = leaves.map(leafHash);
  const root = toBase64(merkleRoot(leaves));
  const cp = k.note(`${k.name}\n5\n${root}\n`);
  const proof = (m, extra = "") =>
    `c2sp.org/tlog-proof@v1\n${extra}index ${m}\n${inclusionPath(m, hashes, nodeHash).map(toBase64).join("\n")}\n\n${cp}`;
  for (let m = 0; m < 5; m++) {
    const p = proof(m, "extra aGVsbG8=\n");
    assert.equal(parseTlogProof(p).index, m);
    assert.equal(new TextDecoder().decode(parseTlogProof(p).extra), "hello");
    assert.equal(verifyInclusion(parseJson(new TextDecoder().decode(leaves[m])), p, k.vkey).index, m);
  }
  refuses(() => verifyInclusion(leaves[1], proof(2), k.vkey), "bad-proof");
  refuses(() => verifyInclusion({ ...parseJson(new TextDecoder().decode(leaves[1])), log_index: 2 }, proof(2), k.vkey), "bad-proof");
  refuses(() => parseTlogProof(proof(1).replace("c2sp.org/tlog-proof@v1", "c2sp.org/tlog-proof@v2")), "bad-format");
  refuses(() => verifyInclusion(leaves[1], proof(1).replace("index 1", "index 9"), k.vkey), "bad-proof");
});

// ---- vows -------------------------------------------------------------------------------

test("the captured vow and entry verify, the vow's id recomputed and the entry's link to it", () => {
  const vow = verifyVow(captured.vow, captured.vkey);
  assert.equal(vow.vow_id, vowId("localhost:36191/log", vow.log_index, vow.text_sha256, vow.agent));
  const chain = verifyChainRecords([parseJson(captured.vow), parseJson(captured.entry)], captured.vkey);
  assert.equal(chain.entries.length, 1);
  assert.equal(chain.entries[0].prev, recordSha256(vow));
});

test("chains: links, order, pages pinned by hash, tail and head are all checked", async () => {
  const k = testKey();
  const records = chainRecords(k, 40);
  assert.equal(verifyChainRecords(records, k.vkey).entries.length, 40);
  assert.equal(verifyChainRecords(chainRecords(k, 2, { sealed: true }), k.vkey).entries.length, 2);
  // Broken links.
  const swapped = [...records];
  [swapped[3], swapped[4]] = [swapped[4], swapped[3]];
  refuses(() => verifyChainRecords(swapped, k.vkey), "bad-chain");
  refuses(() => verifyChainRecords([records[0], records[2]], k.vkey), "bad-chain");
  refuses(() => verifyChainRecords(records.slice(1), k.vkey), "wrong-type");
  const badPrev = [...records];
  badPrev[5] = k.sign({ ...records[5], prev: sha256Hex("x"), signature: undefined, key_id: undefined, scope: undefined });
  refuses(() => verifyChainRecords(badPrev, k.vkey), "bad-chain");
  const badId = k.sign({ ...records[0], vow_id: "0123456789abcdef", signature: undefined });
  refuses(() => verifyVow(badId, k.vkey), "hash-mismatch");
  const badText = k.sign({ ...records[0], text: "another text", signature: undefined });
  refuses(() => verifyVow(badText, k.vkey), "hash-mismatch");

  // As served: page 0 holds positions 0..31, the head the rest.
  const page = canonicalBytes(k.sign({ type: "conduct.chain_page/v1", vow_id: records[0].vow_id, page: 0, records: records.slice(0, 32) }));
  const head = k.sign({
    type: "conduct.chain/v1",
    vow_id: records[0].vow_id,
    length: 40,
    page_size: 32,
    pages: [{ sha256: sha256Hex(page) }],
    tail_from_position: 32,
    tail: records.slice(32),
    head_sha256: recordSha256(records[40]),
  });
  const read = async (p) => (p === 0 ? page : assert.fail(`page ${p}`));
  const chain = await verifyChain(head, read, k.vkey);
  assert.equal(chain.entries.length, 40);
  const tampered = Uint8Array.from(page);
  tampered[100] ^= 1;
  await refusesAsync(verifyChain(head, async () => tampered, k.vkey), "hash-mismatch");
  const resign = (h) => k.sign({ ...h, signature: undefined });
  await refusesAsync(verifyChain(resign({ ...head, length: 41 }), read, k.vkey), "bad-chain");
  await refusesAsync(verifyChain(resign({ ...head, tail_from_position: 31 }), read, k.vkey), "bad-chain");
  await refusesAsync(verifyChain(resign({ ...head, head_sha256: recordSha256(records[39]) }), read, k.vkey), "hash-mismatch");
  await refusesAsync(verifyChain(resign({ ...head, tail: records.slice(33) }), read, k.vkey), "bad-chain");
});

test("entries need their members", () => {
  const k = testKey();
  const [, e] = chainRecords(k, 1);
  assert.ok(verifyEntry(e, k.vkey));
  refuses(() => verifyEntry(k.sign({ ...e, seq: 0, signature: undefined }), k.vkey), "bad-format");
  refuses(() => verifyEntry(k.sign({ ...e, prev: "xyz", signature: undefined }), k.vkey), "bad-format");
});

// ---- the manifest -----------------------------------------------------------------------

test("units and keys follow MIRRORS.md's examples", () => {
  const same = ["vow/abc.json", "vow/abc.html", "vow/abc/reading.json", "vow/abc/chain/3.json"];
  for (const p of same) assert.equal(unitOf(p), "vow/abc", p);
  assert.equal(unitOf("index.html"), "index");
  assert.equal(unitOf("index.json"), "index");
  assert.equal(unitOf(".well-known/x402.json"), ".well-known/x402");
  assert.equal(unitOf("registry/tool/7.json"), "registry/tool");
  assert.equal(unitOf("robots.txt"), "robots");
  assert.equal(unitOf("README"), "README");
  assert.equal(fileKey("vow/abc.json"), sha256Hex("vow/abc"));
});

/** A small tree of `n` vows' files, its trie built with small leaves so that some bins split. */
function smallTree(k, extra = {}, opts = {}) {
  const files = { "index.json": JSON.stringify(k.sign({ type: "conduct.index/v1" })), "robots.txt": "User-agent: *\n", ...extra };
  for (let i = 0; i < 40; i++) {
    files[`vow/${i}.json`] = JSON.stringify(k.sign({ type: "conduct.vow_page/v1", i }));
    files[`vow/${i}.html`] = `<p>${i}</p>`;
  }
  return buildTree(k, files, { fileKey, ...opts });
}
const readerOf = (tree) => async (p) => tree.get(p);
const listOf = (tree, more = []) => ({ listFiles: async () => [...tree.keys(), ...more] });

test("manifests: a trie of signed bins verifies, complete by counting", async () => {
  const k = testKey();
  const tree = smallTree(k);
  const r = await verifyManifest(readerOf(tree), k.vkey, listOf(tree));
  assert.equal(r.files, 82);
  assert.equal(r.counted, 82);
  assert.ok(r.bins > 17, `some leaves split (${r.bins} bins)`);
  assert.ok([...tree.keys()].some((p) => /^manifest\/[0-9a-f]{2}\.json$/.test(p)), "an interior bin");
});

test("manifests: a changed, missing, unlisted or expired file, a stray bin, a dotfile are refused", async () => {
  const k = testKey();
  const tree = smallTree(k);
  const v = (t, opts = listOf(t)) => verifyManifest(readerOf(t), k.vkey, opts);
  const changed = new Map(tree);
  changed.set("vow/7.html", enc("<p>8</p>"));
  await refusesAsync(v(changed), "hash-mismatch");
  const longer = new Map(tree);
  longer.set("robots.txt", enc("User-agent: *\n\n"));
  await refusesAsync(v(longer), "hash-mismatch");
  const missing = new Map(tree);
  missing.delete("vow/3.json");
  await refusesAsync(v(missing, {}), "missing-file");
  await refusesAsync(v(tree, listOf(tree, ["vow/99.json"])), "unlisted-file");
  await refusesAsync(v(tree, listOf(tree, ["manifest/ff.json"])), "unlisted-file");
  await refusesAsync(v(tree, listOf(tree, ["vow/.tmp"])), "unlisted-file");
  await refusesAsync(v(tree, { listFiles: async () => [...tree.keys()].filter((p) => p !== "vow/5.html") }), "missing-file");
  assert.ok(await v(tree, listOf(tree, ["log/tile/0/000", "log/checkpoint"])), "log/ is not the manifest's");
  const expired = smallTree(k, {}, { expires: "2020-01-01T00:00:00Z" });
  await refusesAsync(v(expired), "expired");
  // A JSON file that is not signed by the key is refused even when the manifest lists it.
  const unsigned = smallTree(k, { "x/y.json": '{"type":"conduct.x/v1"}' });
  await refusesAsync(v(unsigned), "bad-signature");
  assert.ok(await verifyManifest(readerOf(unsigned), k.vkey, { ...listOf(unsigned), checkJson: false }));
  // Another key's manifest.
  await refusesAsync(verifyManifest(readerOf(tree), testKey("example.org/log", 9).vkey), "key-id-mismatch");
});

test("manifests: every byte of the root and of the first bins walked, flipped, is refused", async () => {
  const k = testKey();
  const tree = smallTree(k);
  // The root, its first interior child and that one's first child (a leaf): the walk
  // reaches them early, so each tampered walk is short (checkJson off: the files' own
  // signatures are another test's).
  const doc = (p) => JSON.parse(new TextDecoder().decode(tree.get(p)));
  const children = Object.keys(doc("manifest.json").bins);
  const interior = children.find((p) => doc(p).bins !== undefined);
  assert.ok(interior, "the small tree has an interior bin");
  const bins = ["manifest.json", interior, Object.keys(doc(interior).bins)[0]];
  for (const path of bins) {
    const bytes = tree.get(path);
    for (let i = 0; i < bytes.length; i++) {
      const t = new Map(tree);
      const b = Uint8Array.from(bytes);
      b[i] ^= 1;
      t.set(path, b);
      await assert.rejects(verifyManifest(readerOf(t), k.vkey, { checkJson: false }), VerificationError, `${path} byte ${i}`);
    }
  }
});

test("the captured bin verifies alone, and every byte of it flipped is refused", () => {
  const bin = verifySigned(captured.bin, captured.vkey, { type: "conduct.manifest-bin/v1" });
  assert.equal(bin.prefix, "4");
  for (const p of Object.keys(bin.files)) assert.ok(fileKey(p).startsWith("4"), p);
  const accepted = acceptedTampers(enc(captured.bin), (t) => verifySigned(t, captured.vkey, { type: "conduct.manifest-bin/v1" }));
  assert.deepEqual(accepted, []);
});

// ---- Nostr, ERC-8004, problems --------------------------------------------------------

test("the captured Nostr profile verifies as a kind-0 event; a changed one does not", () => {
  const ev = verifyNostrEvent(captured.nostr_profile, 0);
  assert.equal(ev.kind, 0);
  refuses(() => verifyNostrEvent(captured.nostr_profile, 1), "bad-signature");
  const secret = new Uint8Array(32).fill(3);
  const pubkey = Buffer.from(schnorr.getPublicKey(secret)).toString("hex");
  const base = { pubkey, created_at: 1, kind: 0, tags: [], content: '{"name":"x"}' };
  const id = sha256Hex(JSON.stringify([0, base.pubkey, base.created_at, base.kind, base.tags, base.content]));
  const sig = Buffer.from(schnorr.sign(Buffer.from(id, "hex"), secret)).toString("hex");
  const good = { ...base, id, sig };
  assert.ok(verifyNostrEvent(good, 0));
  refuses(() => verifyNostrEvent({ ...good, content: "{}" }, 0), "bad-signature");
  refuses(() => verifyNostrEvent({ ...good, extra: 1 }, 0), "bad-signature");
  refuses(() => verifyNostrEvent({ ...good, sig: sig.replace(/^./, (c) => (c === "0" ? "1" : "0")) }, 0), "bad-signature");
});

test("ERC-8004 credentials: signed, and credential_hash = keccak256(JCS(credential))", () => {
  const k = testKey();
  const credential = k.sign({
    type: "conduct.erc8004-validation/v1",
    trace_sha256: traceSha256(captured.trace),
    predicate: { metric: "i_c_m", band: "under_0.05", clears: false },
    subject: { form: "wallet", id: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8" },
    meter: METER_BLOCKS["meter/1"],
  });
  const answer = { credential, credential_hash: keccak256Hex(canonicalBytes(credential)), scope: SCOPE };
  assert.equal(verifyCredential(answer, k.vkey, captured.trace).credentialHash, answer.credential_hash);
  refuses(() => verifyCredential({ ...answer, credential_hash: keccak256Hex("x") }, k.vkey), "hash-mismatch");
  refuses(() => verifyCredential({ ...answer, credential: { ...credential, predicate: { ...credential.predicate, clears: true } } }, k.vkey), "bad-signature");
  assert.equal(keccak256Hex(""), "0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470");
});

test("ProblemError carries the RFC 9457 members and the field pointers", () => {
  const e = new ProblemError(
    {
      type: "/library/ERRORS.md#invalid",
      title: "The request does not satisfy the schema",
      status: 422,
      detail: "/turns/0/context/monitored: flag value must be 0 or 1 (got 2)",
      instance: "/demo/profile",
      errors: [{ pointer: "/turns/0/context/monitored", detail: "flag value must be 0 or 1 (got 2)" }, { bogus: 1 }],
    },
    422,
  );
  assert.equal(e.kind, "invalid");
  assert.equal(e.status, 422);
  assert.deepEqual(e.pointers, ["/turns/0/context/monitored"]);
  assert.match(e.message, /^422 The request does not satisfy the schema: /);
  assert.ok(e instanceof Error);
});
