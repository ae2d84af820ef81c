// The package as shipped: dist/ is exactly a fresh `tsc --strict` build of src/, the library
// uses no Node API outside its `./node` entry, and the exports map resolves.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { join } from "node:path";

const root = fileURLToPath(new URL("..", import.meta.url));

test("dist/ matches a fresh tsc build of src/ (strict)", { timeout: 120000 }, () => {
  const tsconfig = JSON.parse(readFileSync(join(root, "tsconfig.json"), "utf8"));
  assert.equal(tsconfig.compilerOptions.strict, true);
  const out = execFileSync(process.execPath, [join(root, "scripts", "check-dist.mjs")], { encoding: "utf8" });
  assert.match(out, /dist\/ matches a fresh tsc build/);
});

test("the library is browser-safe: no Node API outside dist/node.js", () => {
  for (const f of readdirSync(join(root, "dist")).filter((f) => f.endsWith(".js") && f !== "node.js")) {
    const text = readFileSync(join(root, "dist", f), "utf8");
    assert.doesNotMatch(text, /from ["']node:|require\(|\bprocess\.|\bBuffer\b|__dirname/, f);
  }
});

test("the exports map resolves: the kit, its verifying half and its Node helpers", async () => {
  const kit = await import("@conduct/kit");
  const verify = await import("@conduct/kit/verify");
  const node = await import("@conduct/kit/node");
  assert.equal(typeof kit.ConductClient, "function");
  assert.equal(typeof kit.verifyAttestation, "function");
  assert.equal(verify.verifyManifest, kit.verifyManifest);
  assert.equal(verify.ConductClient, undefined, "the verifying half carries no client");
  assert.equal(typeof node.dirSource, "function");
});
