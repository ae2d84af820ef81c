// Offline: the meters (library/ATTESTATION.md, "The meter"; METER.md sections 10.1-10.2;
// VOWS.md, "Record formats"). Attestations, credentials and entries of meter/1 and meter/2 are
// accepted, each with its exact block and its quantities' shape; an unknown meter, a wrong
// block, a quantity of the other meter's shape and a meter other than the one asked for are
// refused. The client sends `meter` only when given and checks the answer.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import {
  ConductClient,
  METERS,
  STORED_LABELS,
  VerificationError,
  canonicalBytes,
  checkMeter,
  isMeter,
  keccak256Hex,
  meterBlock,
  parseJson,
  recordSha256,
  traceSha256,
  verifyAttestation,
  verifyChainRecords,
  verifyCredential,
  verifyEntry,
  verifyVow,
} from "../dist/index.js";
import { METERS as VERIFY_METERS } from "../dist/verify.js";
import { SCOPE, attestation, briefProfile, captured, chainRecords, meterBlock as docBlock, profile, testKey } from "../testing/helpers.mjs";

/** Assert that `f` throws a VerificationError with `code`, its message matching `message` (and its path `path`) when given. */
function refuses(f, code, message, path) {
  assert.throws(f, (e) => {
    assert.ok(e instanceof VerificationError, `not a VerificationError: ${e}`);
    assert.equal(e.code, code, `got ${e.code}: ${e.message}`);
    if (message !== undefined) assert.match(e.message, message);
    if (path !== undefined) assert.equal(e.path, path, e.message);
    return true;
  });
}

const k = testKey("example.org/log", 23);

test("the kit knows both meters, and their blocks are the documents'", () => {
  assert.deepEqual([...METERS], ["meter/1", "meter/2"]);
  assert.equal(VERIFY_METERS, METERS);
  assert.equal(STORED_LABELS, "stored-labels/1");
  for (const v of METERS) {
    assert.deepEqual(meterBlock(v), docBlock(v));
    assert.deepEqual(meterBlock(v, { stored: true }), docBlock(v, { stored: true }));
    assert.ok(isMeter(v));
  }
  assert.ok(!isMeter("meter/3") && !isMeter(undefined));
  // A fresh copy each time: changing one changes nothing the kit checks against.
  meterBlock("meter/2").d_clean.push("flagged");
  assert.deepEqual(meterBlock("meter/2").d_clean, ["clean"]);
});

for (const v of ["meter/1", "meter/2"]) {
  test(`an attestation of ${v} verifies, also when ${v} is the meter asked for`, () => {
    assert.equal(verifyAttestation(attestation(k, v), k.vkey).meter.version, v);
    assert.deepEqual(verifyAttestation(attestation(k, v), k.vkey, undefined, { meter: v }).meter, docBlock(v));
    // A disclosure carries the meter but no profile.
    const disclosed = attestation(k, v, { profile: undefined, predicate: { metric: "i_c_m", band: "under_0.05", clears: true } });
    assert.equal(verifyAttestation(canonicalBytes(disclosed), k.vkey, undefined, { meter: v }).profile, undefined);
  });
}

test("the captured attestation is meter/1", () => {
  assert.equal(verifyAttestation(captured.attestation, captured.vkey, captured.trace, { meter: "meter/1" }).meter.version, "meter/1");
  refuses(
    () => verifyAttestation(captured.attestation, captured.vkey, captured.trace, { meter: "meter/2" }),
    "meter",
    /^meter: meter "meter\/1" is not the meter asked for \("meter\/2"\)$/,
    "meter",
  );
});

test("real entries and demo profiles of both meters, captured from a conduct dev stack", () => {
  const cap = JSON.parse(readFileSync(new URL("../testing/captured_meters.json", import.meta.url), "utf8"));
  const vow = verifyVow(cap.vow, cap.vkey);
  const e2 = verifyEntry(cap.entry_meter_2, cap.vkey, { meter: "meter/2" });
  const e1 = verifyEntry(cap.entry_meter_1, cap.vkey, { meter: "meter/1" });
  const { entries } = verifyChainRecords([vow, e2, e1], cap.vkey);
  assert.deepEqual(entries.map((e) => [e.seq, e.meter.version]), [[1, "meter/2"], [2, "meter/1"]]);
  assert.deepEqual(e2.meter, docBlock("meter/2", { stored: true }));
  assert.deepEqual(e1.meter, docBlock("meter/1", { stored: true }));
  for (const e of [e1, e2]) assert.equal(e.trace_sha256, traceSha256(cap.trace));
  refuses(() => verifyEntry(cap.entry_meter_1, cap.vkey, { meter: "meter/2" }), "meter", /is not the meter asked for/);
  for (const [v, text] of [["meter/2", cap.demo_meter_2], ["meter/1", cap.demo_meter_1]]) {
    const demo = parseJson(text);
    assert.equal(checkMeter(demo, { meter: v }), v);
    assert.deepEqual(demo.meter, docBlock(v));
    assert.equal(demo.trace_sha256, traceSha256(cap.trace));
    // The caller's answer keeps the caller's D symbols; a stored entry's are labels.
    assert.deepEqual(demo.profile.i_c_d.columns, ["clean", "refused"]);
    // The caller's answer carries the plain block; an entry's block is refused on it.
    refuses(() => checkMeter({ ...demo, meter: docBlock(v, { stored: true }) }), "meter", /labels is not a member of it/);
  }
  assert.deepEqual(e2.profile.i_c_d.columns, ["clean", "d#1"]);
});

test("an unknown meter is refused, naming the meters the kit knows", () => {
  const block = { ...docBlock("meter/2"), version: "meter/3" };
  assert.throws(
    () => verifyAttestation(attestation(k, "meter/2", { meter: block }), k.vkey),
    (e) => e instanceof VerificationError && e.code === "meter" && e.message === 'meter: meter "meter/3" is not one this kit knows (meter/1, meter/2)',
  );
  // Even when it is the meter asked for: the kit cannot read its numbers.
  refuses(() => verifyAttestation(attestation(k, "meter/2", { meter: block }), k.vkey, undefined, { meter: "meter/3" }), "meter", /not one this kit knows/);
});

test("a missing or malformed meter block is refused", () => {
  for (const block of [undefined, null, "meter/2", ["meter/2"], {}, { version: 2 }])
    refuses(() => verifyAttestation(attestation(k, "meter/2", { meter: block }), k.vkey), "bad-format", /meter/, "meter");
});

for (const v of ["meter/1", "meter/2"]) {
  test(`every change of the ${v} block is refused`, () => {
    const base = docBlock(v);
    const changed = [{ ...base, labels: "stored-labels/1" }, { ...base, extra: 1 }, { ...base, p_exact_max_tables: true }];
    for (const [m, w] of Object.entries(base)) {
      if (m === "version") continue;
      const { [m]: _, ...without } = base;
      changed.push(without);
      changed.push({ ...base, [m]: typeof w === "number" ? w + 1 : Array.isArray(w) ? [...w, "flagged"] : `${w}x` });
    }
    // The other meter's constants under this version.
    changed.push({ ...docBlock(v === "meter/2" ? "meter/1" : "meter/2"), version: v });
    for (const block of changed)
      refuses(() => verifyAttestation(attestation(k, v, { meter: block }), k.vkey), "meter", new RegExp(`the meter block is not ${v}'s`), "meter");
    // A number is compared by value, as RFC 8785 writes it (1e3 is 1000).
    verifyAttestation(attestation(k, v, { meter: { ...base, p_monte_carlo_samples: 1e3 } }), k.vkey);
  });
}

test("a meter/2 quantity without stratified, or not by Y, is refused", () => {
  for (const name of ["i_c_d", "i_c_m", "i_c_m_given_d_clean", "i_c_dm"]) {
    const p = profile("meter/2");
    delete p[name].stratified;
    refuses(() => verifyAttestation(attestation(k, "meter/2", { profile: p }), k.vkey), "meter", /has no stratified object/, `profile/${name}`);
  }
  for (const bad of [null, "Y", [], { by: "X" }, { strata: 2 }]) {
    const p = profile("meter/2");
    p.i_c_m.stratified = bad;
    refuses(() => verifyAttestation(attestation(k, "meter/2", { profile: p }), k.vkey), "meter", undefined, "profile/i_c_m");
  }
  // A null stratified test's numbers are null; its member is still there (METER.md 10.1).
  const p = profile("meter/2");
  p.i_c_d.stratified = {
    by: "Y",
    strata: 0,
    n: 0,
    table: [[0, 0], [0, 0]],
    margins: [],
    p: null,
    p_method: null,
    reason: "no group of turns with the same Y holds both C values",
  };
  verifyAttestation(attestation(k, "meter/2", { profile: p }), k.vkey);
});

test("a meter/1 quantity with stratified is refused", () => {
  for (const name of ["i_c_d", "i_c_dm"]) {
    const p = profile("meter/1");
    p[name].stratified = profile("meter/2")[name].stratified;
    refuses(
      () => verifyAttestation(attestation(k, "meter/1", { profile: p }), k.vkey),
      "meter",
      /carries stratified, which no meter\/1 quantity does/,
      `profile/${name}`,
    );
  }
  const p = profile("meter/1");
  p.i_c_m.stratified = null;
  refuses(() => verifyAttestation(attestation(k, "meter/1", { profile: p }), k.vkey), "meter", /carries stratified/);
  // A profile of the other meter's shape, either way round.
  refuses(() => verifyAttestation(attestation(k, "meter/1", { profile: profile("meter/2") }), k.vkey), "meter");
  refuses(() => verifyAttestation(attestation(k, "meter/2", { profile: profile("meter/1") }), k.vkey), "meter");
  refuses(() => verifyAttestation(attestation(k, "meter/1", { profile: { i_c_d: 0.5 } }), k.vkey), "bad-format", undefined, "profile/i_c_d");
});

test("a meter other than the one asked for is refused", () => {
  for (const [asked, got] of [["meter/1", "meter/2"], ["meter/2", "meter/1"]])
    refuses(
      () => verifyAttestation(attestation(k, got), k.vkey, undefined, { meter: asked }),
      "meter",
      new RegExp(`meter "${got}" is not the meter asked for \\("${asked}"\\)`),
    );
  refuses(() => checkMeter(parseJson(canonicalBytes(attestation(k, "meter/2"))), { meter: "meter/1" }), "meter");
});

/** A validation answer whose credential is measured by `version` (`members` replace or add members before it is signed). */
function credentialAnswer(version, members = {}) {
  const credential = k.sign({
    type: "conduct.erc8004-validation/v1",
    trace_sha256: traceSha256(captured.trace),
    predicate: { metric: "i_c_m", band: "under_0.05", clears: false },
    subject: { form: "wallet", id: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8" },
    meter: docBlock(version),
    ...members,
  });
  return { credential, credential_hash: keccak256Hex(canonicalBytes(credential)), scope: SCOPE };
}

test("a credential names a meter the kit knows, and the one asked for", () => {
  for (const v of METERS) assert.equal(verifyCredential(credentialAnswer(v), k.vkey, captured.trace, { meter: v }).credential.meter.version, v);
  refuses(() => verifyCredential(credentialAnswer("meter/2"), k.vkey, undefined, { meter: "meter/1" }), "meter", /is not the meter asked for/, "credential/meter");
  refuses(
    () => verifyCredential(credentialAnswer("meter/2", { meter: { ...docBlock("meter/2"), version: "meter/9" } }), k.vkey),
    "meter",
    /^credential\/meter: meter "meter\/9" is not one this kit knows \(meter\/1, meter\/2\)$/,
  );
  refuses(() => verifyCredential(credentialAnswer("meter/1", { meter: docBlock("meter/1", { stored: true }) }), k.vkey), "meter", /labels is not a member of it/);
  refuses(() => verifyCredential(credentialAnswer("meter/1", { meter: undefined }), k.vkey), "bad-format", undefined, "credential/meter");
});

test("entries carry the stored block, and a chain may mix meters", () => {
  const records = chainRecords(k, 4, { meters: ["meter/1", "meter/2"] });
  const { entries } = verifyChainRecords(records, k.vkey);
  assert.deepEqual(entries.map((e) => e.meter.version), ["meter/1", "meter/2", "meter/1", "meter/2"]);
  assert.equal(verifyEntry(records[2], k.vkey, { meter: "meter/2" }).meter.labels, "stored-labels/1");
  refuses(() => verifyEntry(records[2], k.vkey, { meter: "meter/1" }), "meter", /is not the meter asked for/, "meter");
  // The chain with entry `n` changed, then it and every entry after it re-signed and re-linked.
  const changed = (n, members) => {
    const out = [records[0]];
    for (let i = 1; i < records.length; i++) {
      const { signature: _, ...body } = i === n ? { ...records[i], ...members } : records[i];
      out.push(k.sign({ ...body, prev: recordSha256(out[i - 1]) }));
    }
    return out;
  };
  for (const [members, why] of [
    [{ meter: docBlock("meter/2") }, /is not meter\/2's: labels is missing/],
    [{ meter: { ...docBlock("meter/2", { stored: true }), labels: "stored-labels/2" } }, /labels is "stored-labels\/2", not "stored-labels\/1"/],
    [{ meter: { ...docBlock("meter/2", { stored: true }), version: "meter/3" } }, /not one this kit knows/],
    [{ profile: briefProfile("meter/1") }, /has no stratified object/],
  ])
    refuses(() => verifyChainRecords(changed(2, members), k.vkey), "meter", why, "records[2]");
  refuses(() => verifyChainRecords(changed(1, { profile: briefProfile("meter/2") }), k.vkey), "meter", /carries stratified/, "records[1]");
  refuses(() => verifyEntry(k.sign({ ...records[1], profile: undefined, signature: undefined }), k.vkey), "bad-format", undefined, "profile");
});

// ---- the client ---------------------------------------------------------------------------

/** A client of a fake service: each POST's parsed body is kept in `sent`; `answer(path, body)` gives the answer's JSON. */
function fakeClient(answer, sent) {
  const fetch = async (url, init) => {
    const body = JSON.parse(init.body);
    const path = new URL(url).pathname;
    sent.push({ path, body });
    return new Response(new TextEncoder().encode(JSON.stringify(answer(path, body))), {
      status: 200,
      headers: { "content-type": "application/json" },
    });
  };
  return new ConductClient({ url: "http://conduct.test", vkey: k.vkey, fetch, paymentFetch: fetch });
}

const trace = captured.trace;
const vowId = chainRecords(k, 0)[0].vow_id;

/** The answer to `path`, measured by `served`, or by the meter the body asks for (meter/2 without one). */
function measured(served) {
  return (path, body) => {
    const v = served ?? body.meter ?? "meter/2";
    if (path === "/erc8004/validation") return credentialAnswer(v);
    if (path.startsWith("/vow/report"))
      return k.sign({
        type: "conduct.entry/v1",
        vow_id: vowId,
        seq: 1,
        prev: "0".repeat(64),
        at: "2026-01-01T00:00:01Z",
        log_index: 2,
        trace_sha256: traceSha256(trace),
        attested: path === "/vow/report",
        proof: { kind: "sandbox-open" },
        profile: briefProfile(v),
        meter: docBlock(v, { stored: true }),
      });
    return attestation(k, v, { trace_sha256: traceSha256(trace) });
  };
}

test("the client sends meter only when given, and the answer names it", async () => {
  const sent = [];
  const c = fakeClient(measured(undefined), sent);
  const predicate = { metric: "i_c_m", band: "under_0.05" };
  const subject = { form: "wallet", id: "0x70997970c51812dc3a010c7d01b50e0d17dc79c8" };
  const got = [
    (await c.profile(trace)).attestation.meter.version,
    (await c.profile(trace, { meter: "meter/1" })).attestation.meter.version,
    (await c.demoProfile(trace)).meter.version,
    (await c.demoProfile(trace, { meter: "meter/1" })).meter.version,
    (await c.demoProfile(trace, { meter: "meter/2" })).meter.version,
    (await c.validation({ trace, predicate, subject })).credential.meter.version,
    (await c.validation({ trace, predicate, subject, meter: "meter/1" })).credential.meter.version,
    (await c.reportDemo({ vowId, trace })).entry.meter.version,
    (await c.reportDemo({ vowId, trace, meter: "meter/1" })).entry.meter.version,
    (await c.report({ vowId, trace, meter: "meter/1" })).entry.meter.version,
  ];
  const asked = [undefined, "meter/1", undefined, "meter/1", "meter/2", undefined, "meter/1", undefined, "meter/1", "meter/1"];
  assert.deepEqual(got, asked.map((m) => m ?? "meter/2"));
  assert.deepEqual(sent.map((s) => s.body.meter), asked);
  for (const [i, s] of sent.entries()) assert.equal("meter" in s.body, asked[i] !== undefined, `${s.path}: meter sent only when given`);
});

test("the client refuses an answer of another meter, an unknown one, or of the wrong shape", async () => {
  const predicate = { metric: "i_c_m", band: "under_0.05" };
  const subject = { form: "wallet", id: "0x70997970c51812dc3a010c7d01b50e0d17dc79c8" };
  const calls = [
    (c, meter) => c.profile(trace, { meter }),
    (c, meter) => c.demoProfile(trace, { meter }),
    (c, meter) => c.validation({ trace, predicate, subject, meter }),
    (c, meter) => c.reportDemo({ vowId, trace, meter }),
  ];
  const reject = (p, why) => assert.rejects(p, (e) => e instanceof VerificationError && e.code === "meter" && why.test(e.message));
  for (const call of calls) {
    const c = fakeClient(measured("meter/2"), []);
    await reject(call(c, "meter/1"), /meter "meter\/2" is not the meter asked for \("meter\/1"\)/);
    await call(c, undefined); // without a meter asked for, any meter the kit knows
  }
  const unknown = fakeClient((path, body) => {
    const a = measured("meter/2")(path, body);
    const bump = (doc) => k.sign({ ...doc, signature: undefined, meter: { ...doc.meter, version: "meter/3" } });
    return path === "/erc8004/validation"
      ? credentialAnswer("meter/2", { meter: { ...docBlock("meter/2"), version: "meter/3" } })
      : bump(a);
  }, []);
  for (const call of calls) await reject(call(unknown, undefined), /meter "meter\/3" is not one this kit knows \(meter\/1, meter\/2\)/);
  const shape = fakeClient((path, body) => attestation(k, "meter/1", { trace_sha256: traceSha256(trace), profile: profile("meter/2") }), []);
  await reject(shape.demoProfile(trace, { meter: "meter/1" }), /carries stratified/);
  await reject(shape.profile(trace), /carries stratified/);
});
