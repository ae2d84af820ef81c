// An agent binding its Nostr key to its signed vow on conduct, with independent libraries only:
// npm nostr-tools (keys, npub, NIP-01 event verification), @noble/curves and @noble/hashes
// (BIP-340 over sha256 of the text, as nostr-tools itself signs) and viem (the EIP-191 wallet),
// all pinned in contracts/package-lock.json. It checks /hive/profile, takes a signed and a
// sandbox vow, tries each refusal, binds, and reads the card and /who of the npub. Test use only.
//
// usage: node nostr-client.mjs BASE_URL
// Prints one JSON line: what it saw (statuses, problem types, ids); the Rust test judges it.
import { verifyEvent, generateSecretKey, getPublicKey, nip19 } from "nostr-tools";
import { schnorr } from "@noble/curves/secp256k1";
import { sha256 } from "@noble/hashes/sha256";
import { bytesToHex } from "@noble/hashes/utils";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { verifyMessage } from "viem";

const base = process.argv[2];
const report = {};

async function get(path) {
  const r = await fetch(base + path);
  return { status: r.status, type: r.headers.get("content-type"), text: await r.text() };
}

async function post(path, body) {
  const r = await fetch(base + path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await r.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: r.status, json, text, location: r.headers.get("location") };
}

// The refusal as the test compares it: status and the problem type's slug.
const refusal = (r) => ({
  status: r.status,
  type: (r.json?.type ?? "").split("#")[1] ?? null,
  pointer: r.json?.errors?.[0]?.pointer ?? null,
});

// 1. The service's kind-0 profile, verified by nostr-tools; its picture resolves to an SVG.
const profile = await get("/hive/profile");
const event = JSON.parse(profile.text);
report.profile = {
  status: profile.status,
  content_type: profile.type,
  verified: verifyEvent(event),
  kind: event.kind,
  members: Object.keys(event).sort(),
  pubkey: event.pubkey,
  npub: nip19.npubEncode(event.pubkey),
  created_at: event.created_at,
  raw: profile.text,
};
const meta = JSON.parse(event.content);
report.profile.name = meta.name;
report.profile.picture = meta.picture;
const pic = await fetch(meta.picture.replace(/^https?:\/\/[^/]+/, base));
const picText = await pic.text();
report.picture = { status: pic.status, type: pic.headers.get("content-type"), svg: picText.startsWith("<svg") };
// A tampered copy fails the same check (a fresh object: verifyEvent caches its verdict on one).
const tampered = JSON.parse(profile.text);
tampered.content += " ";
report.profile.tampered_verified = verifyEvent(tampered);

// 2. A signed vow (viem wallet, EIP-191) and a sandbox vow.
const wallet = privateKeyToAccount(generatePrivateKey());
const other = privateKeyToAccount(generatePrivateKey());
const vowQ = new URLSearchParams({ text: "bind my nostr key", agent: "nostr-agent", cadence_hours: "24" });
const vowText = (await get(`/vow/message?${vowQ}`)).text;
const vow = await post("/vow", {
  text: "bind my nostr key",
  agent: "nostr-agent",
  cadence_hours: 24,
  wallet: wallet.address,
  signature: await wallet.signMessage({ message: vowText }),
});
const vowId = vow.json.vow_id;
report.vow = { status: vow.status, vow_id: vowId, sandbox: vow.json.sandbox, wallet: wallet.address };
const sandbox = await post("/vow", { text: "a sandbox vow", agent: "sandbox-agent", cadence_hours: 24 });
report.sandbox_vow = { status: sandbox.status, vow_id: sandbox.json.vow_id, sandbox: sandbox.json.sandbox };

// 3. The npub: a key nostr-tools generates; it signs sha256(UTF-8 text) with BIP-340.
const sk = generateSecretKey();
const pk = getPublicKey(sk);
const npub = nip19.npubEncode(pk);
const sk2 = generateSecretKey();
const nostrSign = (text, key) => bytesToHex(schnorr.sign(sha256(new TextEncoder().encode(text)), key));
report.npub = npub;

const message = await get(`/nostr/bind/message?${new URLSearchParams({ vow_id: vowId, npub })}`);
const text = message.text;
report.message = { status: message.status, type: message.type, text };
const walletSig = await wallet.signMessage({ message: text });
const nostrSig = nostrSign(text, sk);
const good = { vow_id: vowId, npub, wallet_signature: walletSig, nostr_signature: nostrSig };

// 4. Each refusal, before the binding.
const refusals = {};
refusals.nostr_missing = refusal(await post("/nostr/bind", { ...good, nostr_signature: undefined }));
refusals.nostr_wrong = refusal(await post("/nostr/bind", { ...good, nostr_signature: nostrSign(text, sk2) }));
refusals.wallet_missing = refusal(await post("/nostr/bind", { ...good, wallet_signature: undefined }));
refusals.wallet_wrong = refusal(
  await post("/nostr/bind", { ...good, wallet_signature: await other.signMessage({ message: text }) }),
);
const sbText = (await get(`/nostr/bind/message?${new URLSearchParams({ vow_id: sandbox.json.vow_id, npub })}`)).text;
refusals.sandbox = refusal(
  await post("/nostr/bind", {
    vow_id: sandbox.json.vow_id,
    npub,
    wallet_signature: await wallet.signMessage({ message: sbText }),
    nostr_signature: nostrSign(sbText, sk),
  }),
);
refusals.unknown_member = refusal(await post("/nostr/bind", { ...good, extra: 1 }));
refusals.bad_npub = refusal(await post("/nostr/bind", { ...good, npub: "npub1notanpub" }));
refusals.not_json = refusal(await post("/nostr/bind", "{"));
refusals.message_bad_npub = { status: (await get(`/nostr/bind/message?vow_id=${vowId}&npub=nope`)).status };
refusals.message_unknown_vow = {
  status: (await get(`/nostr/bind/message?${new URLSearchParams({ vow_id: "ffffffffffffffff", npub })}`)).status,
};

// 5. The binding, then its replay.
const bound = await post("/nostr/bind", good);
report.bind = { status: bound.status, location: bound.location, record: bound.json };
if (bound.json) {
  // The record's signatures check with the independent libraries.
  report.bind.nostr_ok = schnorr.verify(
    bound.json.nostr_signature,
    sha256(new TextEncoder().encode(text)),
    bound.json.pubkey,
  );
  report.bind.wallet_ok = await verifyMessage({
    address: bound.json.wallet,
    message: text,
    signature: bound.json.wallet_signature,
  });
}
refusals.replay = refusal(await post("/nostr/bind", good));
report.refusals = refusals;

// 6. The npub now names the vow.
const card = await get(`/card?${new URLSearchParams({ key: npub, format: "json" })}`);
report.card = { status: card.status, doc: JSON.parse(card.text) };
const cardUpper = await get(`/card?${new URLSearchParams({ key: npub.toUpperCase(), format: "json" })}`);
report.card_upper_found = JSON.parse(cardUpper.text).found;
const who = await get(`/who?${new URLSearchParams({ handle: npub, format: "json" })}`);
report.who = { status: who.status, doc: JSON.parse(who.text) };
const unbound = nip19.npubEncode(getPublicKey(sk2));
report.unbound_card = JSON.parse((await get(`/card?${new URLSearchParams({ key: unbound, format: "json" })}`)).text);

// 7. The vow's mark.
const mark = await get(`/vow/${vowId}/mark.svg`);
report.mark = { status: mark.status, type: mark.type, svg: mark.text.startsWith("<svg") };
report.vow_page_mark = JSON.parse((await get(`/vow/${vowId}?format=json`)).text).mark;

console.log(JSON.stringify(report));
