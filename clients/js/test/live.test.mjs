// The kit against a live `conduct dev` stack, whose coordinates tests/tests/kits.rs passes in
// CONDUCT_URL, CONDUCT_VKEY, CONDUCT_SITE, CONDUCT_RPC, CONDUCT_TOKEN and CONDUCT_PAYER_KEY.
// Without them every test here is skipped, saying so. The free routes are capped per IP per
// UTC day and the Python kit's suite shares the stack, so this file spends few free calls.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import {
  ConductClient,
  ProblemError,
  PaymentRequiredError,
  VerificationError,
  verifyAttestation,
  verifyCheckpoint,
  verifyInclusion,
  verifyManifest,
  verifySigned,
  canonicalBytes,
  sha256Hex,
  traceSha256,
  httpReader,
  meterBlock,
  MANIFEST_TYPES,
} from "../dist/index.js";
import { dirSource } from "../dist/node.js";
import { acceptedTampers, liveEnv } from "../testing/helpers.mjs";

const env = liveEnv();
const skip = env === null ? "CONDUCT_URL and CONDUCT_VKEY are not set: run through tests/tests/kits.rs" : false;
const NETWORK = "eip155:31337";

/** A client paying from the suite's funded wallet on `rail`. */
function client(rail) {
  return new ConductClient({
    url: env.url,
    vkey: env.vkey,
    payer: { privateKey: env.payerKey, rail, asset: env.token, network: NETWORK },
  });
}

/** A trace whose turns differ by `salt`, so each paid read is a new one (no idempotent replay). */
function trace(salt) {
  const turn = (M, D, c) => ({ Y: "summarise", M, D, context: { monitored: c } });
  return {
    context_key: "monitored",
    turns: [
      turn(`I am being monitored (${salt}), so I will appear compliant.`, "clean", 1),
      turn("Read the report and summarise it.", "clean", 0),
      turn("This might be a test.", "refused", 1),
      turn("Read the report and summarise it.", "clean", 0),
      turn("Summarise the second report.", "clean", 0),
      turn("Being watched: keep it short.", "clean", 1),
    ],
  };
}

/** Poll `f` until it resolves, or rethrow its last error after `ms`. */
async function eventually(f, ms = 20000) {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await f();
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

const salt = `${process.pid}-${Date.now()}`;

test("the pinned key is the one the service serves", { skip }, async () => {
  const doc = await client().pubkey();
  assert.equal(doc.vkey, env.vkey);
});

for (const rail of ["eip3009", "permit2"]) {
  test(`a paid profile on the ${rail} rail, verified, the payment settled`, { skip }, async () => {
    const t = trace(`${salt}-${rail}`);
    const r = await client(rail).profile(t);
    assert.equal(r.attestation.type, "conduct.attestation/v1");
    assert.equal(r.attestation.trace_sha256, traceSha256(t));
    assert.equal(r.attestation.meter.version, "meter/2", "the default meter");
    assert.equal(r.payment?.success, true, JSON.stringify(r.payment));
    assert.equal(r.payment?.network, NETWORK);
    assert.match(String(r.payment?.transaction), /^0x[0-9a-f]{64}$/);
    // A counterparty verifies the bytes offline with the pinned key alone.
    assert.deepEqual(verifyAttestation(r.bytes, env.vkey, t), r.attestation);
    // ... and refuses every tampered byte.
    const accepted = acceptedTampers(r.bytes, (b) => verifyAttestation(b, env.vkey));
    assert.deepEqual(accepted, [], `tampered bytes accepted at ${accepted}`);
  });
}

test("a paid call without a payer is a PaymentRequiredError carrying the challenge", { skip }, async () => {
  const c = new ConductClient({ url: env.url, vkey: env.vkey });
  await assert.rejects(c.profile(trace(`${salt}-unpaid`)), (e) => {
    assert.ok(e instanceof PaymentRequiredError, String(e));
    assert.equal(e.challenge?.x402Version, 2);
    const methods = e.challenge.accepts.map((a) => a.extra?.assetTransferMethod ?? "eip3009").sort();
    assert.deepEqual(methods, ["eip3009", "permit2"]);
    return true;
  });
});

test("a disclosure and an ERC-8004 credential: signed predicates, verified", { skip }, async () => {
  const c = client("permit2");
  const preds = await c.predicates();
  const metric = preds.metrics[0].metric;
  const band = preds.bands[0].band;
  const disclosed = await c.profile(trace(`${salt}-disclosure`), { disclosure: { predicate: { metric, band } }, meter: "meter/1" });
  assert.deepEqual(Object.keys(disclosed.attestation.predicate).sort(), ["band", "clears", "metric"]);
  assert.equal(disclosed.attestation.profile, undefined, "a disclosure carries the predicate, not the numbers");
  assert.deepEqual(disclosed.attestation.meter, meterBlock("meter/1"));
  const t = trace(`${salt}-erc8004`);
  const v = await c.validation({ trace: t, predicate: { metric, band }, subject: { form: "wallet", id: "0x70997970c51812dc3a010c7d01b50e0d17dc79c8" } });
  assert.equal(v.credential.type, "conduct.erc8004-validation/v1");
  assert.equal(v.credential.subject.id, "0x70997970C51812dc3A010C7d01b50e0d17dc79C8", "EIP-55 normal form");
  assert.match(v.credentialHash, /^0x[0-9a-f]{64}$/);
  assert.deepEqual(v.credential.meter, meterBlock("meter/2"), "the default meter");
  assert.equal(v.payment?.success, true);
});

test("the demo profile: unsigned, its trace hash checked", { skip }, async () => {
  const t = trace(`${salt}-demo`);
  const doc = await client().demoProfile(t);
  assert.equal(doc.trace_sha256, traceSha256(t));
  assert.equal(doc.signature, undefined);
});

test("the demo profile measures with the meter asked for: meter/1, or by default meter/2", { skip }, async () => {
  const c = client();
  const t = trace(`${salt}-meters`);
  const byDefault = await c.demoProfile(t);
  assert.deepEqual(byDefault.meter, meterBlock("meter/2"));
  for (const q of Object.values(byDefault.profile)) assert.equal(q.stratified.by, "Y");
  const old = await c.demoProfile(t, { meter: "meter/1" });
  assert.deepEqual(old.meter, meterBlock("meter/1"));
  for (const q of Object.values(old.profile)) assert.equal(q.stratified, undefined);
  assert.equal(old.trace_sha256, byDefault.trace_sha256);
  // Both meters count the same C x D table from the same trace.
  assert.deepEqual(old.profile.i_c_d.table, byDefault.profile.i_c_d.table);
  await assert.rejects(c.demoProfile(t, { meter: "meter/3" }), (e) => {
    assert.ok(e instanceof ProblemError, String(e));
    assert.equal(e.status, 422);
    assert.equal(e.kind, "invalid");
    assert.deepEqual(e.pointers, ["/meter"]);
    return true;
  });
});

test("a vow, report-ins (free and paid), an entry's inclusion proof, the chain, the reading", { skip }, async () => {
  const c = client("eip3009");
  const vow = await c.takeVow({ text: `Summarise reports honestly (${salt}).`, agent: `js-kit-${process.pid}`, cadenceHours: 24 });
  assert.equal(vow.sandbox, true);
  assert.equal(vow.text_sha256, sha256Hex(vow.text));
  const msg = await c.vowMessage({ text: vow.text, agent: vow.agent, cadenceHours: 24 });
  assert.match(msg, /Action: take_vow/);
  assert.ok(msg.includes(`Text SHA-256: ${vow.text_sha256}`));

  const first = await c.reportDemo({ vowId: vow.vow_id, trace: trace(`${salt}-r1`), note: "steady as before" });
  assert.equal(first.entry.seq, 1);
  assert.equal(first.entry.attested, false);
  assert.deepEqual(first.entry.meter, meterBlock("meter/2", { stored: true }), "the default meter, stored");
  assert.equal(first.entry.prev, sha256Hex(canonicalBytes(vow)));
  const second = await c.report({ vowId: vow.vow_id, trace: trace(`${salt}-r2`) }, { waitSeconds: 30 });
  assert.equal(second.entry.seq, 2);
  assert.equal(second.entry.attested, true);
  assert.equal(second.payment?.success, true);
  assert.equal(second.render, "done");

  // Each record is in the log: its tlog-proof leads to a checkpoint the pinned key signed.
  for (const record of [vow, first.entry, second.entry]) {
    const inc = await c.prove(record);
    assert.equal(inc.index, record.log_index);
    assert.ok(inc.checkpoint.size > record.log_index);
  }
  // The proof's text, verified offline, and refused for another record.
  const proof = await c.proofText(first.entry.log_index);
  assert.equal(verifyInclusion(first.bytes, proof, env.vkey).index, first.entry.log_index);
  assert.throws(() => verifyInclusion(second.bytes, proof, env.vkey), VerificationError);

  const chain = await eventually(async () => {
    const ch = await c.chain(vow.vow_id);
    assert.equal(ch.entries.length, 2);
    return ch;
  });
  assert.deepEqual(chain.vow, vow);
  assert.deepEqual(chain.entries.map((e) => e.seq), [1, 2]);
  // Three records, no full page: the head holds them all (a v2 head pins no page, a v1 head lists none).
  if (chain.head.type === "conduct.chain/v2") {
    assert.equal(chain.head.full_pages, 0);
    assert.equal(chain.head.last_page, null);
  } else {
    assert.equal(chain.head.type, "conduct.chain/v1");
    assert.deepEqual(chain.head.pages, []);
  }
  assert.equal(chain.head.tail.length, 3);
  const page = await c.vow(vow.vow_id);
  assert.equal(page.vow_id, vow.vow_id);
  // The paid report-in waited for the vow's pages (Prefer: wait), so the reading covers it.
  const reading = await c.reading(vow.vow_id);
  assert.equal(reading.covers_seq, 2);
  assert.equal(reading.interpretation.label, "guidance, not a verdict");
  const card = await c.card(vow.agent);
  assert.equal(card.found, true);

  // The index of vows lists it, in the order taken, walked from the head (few vows here, so no
  // full page yet: the tail holds them all and last_page is null).
  const listed = await eventually(async () => {
    const found = (await c.allVows()).find((v) => v.vow_id === vow.vow_id);
    assert.ok(found, "the vow is in the index");
    return found;
  });
  for (const m of ["agent", "log_index", "text_sha256", "text", "sandbox", "sealed"]) assert.deepEqual(listed[m], vow[m], m);
  const head = await c.vows();
  const everyone = await c.allVows();
  assert.equal(head.type, "conduct.vows/v2");
  assert.equal(head.pages, 0);
  assert.equal(head.last_page, null);
  assert.ok(everyone.length >= head.count && head.count >= 1);
  assert.deepEqual(everyone.slice(0, head.count), head.tail);
  const indexes = everyone.map((v) => v.log_index);
  assert.deepEqual(indexes, [...new Set(indexes)].sort((a, b) => a - b), "in the order taken, each vow once");
  await assert.rejects(c.vowsPage(0), (e) => e instanceof ProblemError && e.status === 404);
});

test("the checkpoint over HTTP and on disk verifies; every byte of it flipped is refused", { skip }, async () => {
  const cp = await client().checkpoint();
  assert.equal(cp.origin, (await client().pubkey()).name);
  const onDisk = await readFile(join(env.site, "log", "checkpoint"));
  assert.ok(verifyCheckpoint(onDisk, env.vkey).size >= 0);
  assert.deepEqual(acceptedTampers(new TextEncoder().encode(cp.note), (b) => verifyCheckpoint(b, env.vkey)), []);
});

test("the rendered tree (CONDUCT_SITE) verifies against its manifest, complete by counting", { skip }, async () => {
  const { reader, options } = dirSource(env.site);
  // The other kit's suite writes while this runs: a copy taken mid-write may hold a page newer
  // than its manifest (MIRRORS.md), so check again against the next root until one verifies.
  const report = await eventually(() => verifyManifest(reader, env.vkey, options), 30000);
  assert.ok(report.files > 50, `${report.files} files`);
  // The chain pages are counted apart: proven by their heads, listed only by a tree mid-upgrade
  // (a conduct.manifest/v2 root, or a v3 root before every vow is re-rendered).
  assert.equal(report.counted, report.files - report.listedChainPages);
  assert.ok(report.chainPages >= report.listedChainPages);
  // Over HTTP, the service's own tree (no listing, so no count).
  const http = await eventually(() => verifyManifest(httpReader(env.url), env.vkey), 30000);
  assert.ok(http.files > 50);
});

test("every byte of a real bin, flipped, is refused (its signature, and its parent's pin)", { skip }, async () => {
  const root = verifySigned(await readFile(join(env.site, "manifest.json")), env.vkey, { type: MANIFEST_TYPES });
  const [path, pin] = Object.entries(root.bins)[0];
  const bytes = await eventually(async () => {
    const b = new Uint8Array(await readFile(join(env.site, path)));
    assert.equal(sha256Hex(b), pin.sha256, "the bin the root names (retry while a write lands)");
    return b;
  });
  verifySigned(bytes, env.vkey, { type: "conduct.manifest-bin/v1" });
  assert.deepEqual(acceptedTampers(bytes, (b) => verifySigned(b, env.vkey, { type: "conduct.manifest-bin/v1" })), []);
  assert.deepEqual(acceptedTampers(bytes, (b) => {
    if (sha256Hex(b) !== pin.sha256) throw new Error("not the pinned bin");
  }), []);
  // The whole walk names the bin when one of its bytes changes.
  const { reader } = dirSource(env.site);
  const tampered = Uint8Array.from(bytes);
  tampered[10] ^= 1;
  await assert.rejects(
    verifyManifest(async (p) => (p === path ? tampered : p === "manifest.json" ? canonicalBytes(root) : reader(p)), env.vkey),
    (e) => e instanceof VerificationError && e.path === path,
  );
});

test("refusals surface as ProblemError with the RFC 9457 type, status and field pointers", { skip }, async () => {
  const c = client();
  await assert.rejects(c.demoProfile({ context_key: "monitored", turns: [] }), (e) => {
    assert.ok(e instanceof ProblemError, String(e));
    assert.equal(e.status, 422);
    assert.equal(e.kind, "invalid");
    assert.equal(e.type, "/library/ERRORS.md#invalid");
    assert.ok(e.pointers.includes("/turns"), JSON.stringify(e.errors));
    return true;
  });
  await assert.rejects(c.takeVow({ text: "x", agent: "a", cadenceHours: 0 }), (e) => {
    assert.ok(e instanceof ProblemError);
    assert.equal(e.kind, "invalid");
    assert.ok(e.pointers.includes("/cadence_hours"), JSON.stringify(e.errors));
    return true;
  });
  await assert.rejects(c.getSigned("/no/such/page"), (e) => e instanceof ProblemError && e.status === 404 && e.kind === "not-found");
  await assert.rejects(c.reportDemo({ vowId: "0000000000000000", trace: trace(salt) }), (e) => e instanceof ProblemError && e.status >= 400 && e.status < 500);
});

test("lookups: the registry, the quest board, the vows, who", { skip }, async () => {
  const c = client();
  const registry = await c.registry();
  assert.equal(registry.type, "conduct.registry/v1");
  const munus = await c.munus();
  assert.equal(munus.type, "conduct.munus/v1");
  assert.ok(Array.isArray(munus.quests) && munus.quests.length > 0, "conduct dev writes a sample quest");
  const quest = await c.quest(munus.quests[0].id);
  assert.ok(quest.signature);
  const vows = await c.vows();
  assert.equal(vows.type, "conduct.vows/v2");
  assert.equal(vows.page_size, 256);
  assert.equal(vows.count, vows.tail.length);
  assert.ok((await c.who("nobody-at-all")).signature);
});
