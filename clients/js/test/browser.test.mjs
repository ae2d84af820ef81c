// The built ESM runs in a browser as it is: dist/ and the kit's three runtime packages served
// over loopback with an import map (no bundler), loaded by headless Chromium, which verifies a
// captured attestation, checkpoint and inclusion proof (and, against a live stack, the service's
// own checkpoint fetched cross-origin) and writes the outcome into the page; `--dump-dom` reads it.
// Skipped, saying so, only when `chromium` is not on PATH.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { spawn, spawnSync } from "node:child_process";
import { join, normalize, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { captured, liveEnv } from "../testing/helpers.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const chromium = ["chromium", "chromium-browser", "google-chrome"].find(
  (b) => spawnSync("sh", ["-c", `command -v ${b}`]).status === 0,
);
const skip = chromium === undefined ? "chromium is not on PATH (tests/run.sh installs Debian's)" : false;

const TYPES = { ".js": "text/javascript", ".html": "text/html; charset=utf-8", ".json": "application/json" };

function page(live) {
  const importMap = {
    imports: {
      "@noble/curves/": "/nm/@noble/curves/",
      "@noble/hashes/": "/nm/@noble/hashes/",
      canonicalize: "/nm/canonicalize/lib/canonicalize.js",
    },
  };
  return `<!doctype html><meta charset="utf-8"><title>kit</title>
<script type="importmap">${JSON.stringify(importMap)}</script>
<pre id="out">pending</pre>
<script type="module">
import { verifyAttestation, verifyCheckpoint, verifyInclusion, parseJson, VerificationError } from "/dist/index.js";
const c = ${JSON.stringify(captured)};
const live = ${JSON.stringify(live)};
const out = [];
const check = (name, f) => { try { f(); out.push(name + ":ok"); } catch (e) { out.push(name + ":FAIL(" + e.message + ")"); } };
const refused = (name, f) => { try { f(); out.push(name + ":ACCEPTED"); } catch (e) { out.push(name + (e instanceof VerificationError ? ":refused" : ":FAIL(" + e + ")")); } };
const bytes = new TextEncoder().encode(c.attestation);
check("attestation", () => verifyAttestation(bytes, c.vkey, c.trace));
const t = bytes.slice(); t[40] ^= 1;
refused("tampered", () => verifyAttestation(t, c.vkey));
check("checkpoint", () => verifyCheckpoint(c.checkpoint, c.vkey));
check("inclusion", () => verifyInclusion(parseJson(c.entry), c.proof_of_entry, c.vkey));
if (live) {
  try {
    const res = await fetch(live.url + "/log/checkpoint");
    verifyCheckpoint(new Uint8Array(await res.arrayBuffer()), live.vkey);
    out.push("live-checkpoint:ok");
  } catch (e) { out.push("live-checkpoint:FAIL(" + e.message + ")"); }
}
document.getElementById("out").textContent = out.join(" ");
</script>`;
}

async function serve(live) {
  const server = createServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url, "http://x").pathname);
    let file;
    if (path === "/page.html") {
      res.writeHead(200, { "content-type": TYPES[".html"] });
      res.end(page(live));
      return;
    }
    if (path.startsWith("/dist/")) file = join(root, "dist", path.slice(6));
    else if (path.startsWith("/nm/")) file = join(root, "node_modules", path.slice(4));
    const ext = file?.slice(file.lastIndexOf("."));
    if (file === undefined || !normalize(file).startsWith(root) || normalize(file).split(sep).includes("..")) {
      res.writeHead(404).end();
      return;
    }
    try {
      const body = await readFile(file);
      res.writeHead(200, { "content-type": TYPES[ext] ?? "application/octet-stream" });
      res.end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return server;
}

test("the built ESM verifies a captured attestation in headless Chromium", { skip, timeout: 120000 }, async () => {
  const env = liveEnv();
  const server = await serve(env === null ? null : { url: env.url, vkey: env.vkey });
  try {
    const url = `http://127.0.0.1:${server.address().port}/page.html`;
    const args = [
      "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
      "--disable-extensions", "--disable-background-networking", "--disable-component-update", "--disable-sync",
      "--virtual-time-budget=20000", "--dump-dom", url,
    ];
    const child = spawn(chromium, args, { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const code = await new Promise((r) => child.on("close", r));
    const m = /<pre id="out">([^<]*)<\/pre>/.exec(stdout);
    assert.ok(m, `no result in the page (exit ${code}):\n${stdout.slice(0, 2000)}\n${stderr.slice(-2000)}`);
    const want = ["attestation:ok", "tampered:refused", "checkpoint:ok", "inclusion:ok"];
    if (env !== null) want.push("live-checkpoint:ok");
    assert.equal(m[1], want.join(" "));
  } finally {
    server.close();
  }
});
