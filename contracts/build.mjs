#!/usr/bin/env node
// Compile every contracts/*.sol with the pinned solc-js and write deterministic artifacts to
// contracts/out/<Name>.json = {"contractName","abi","bytecode","deployedBytecode","compiler":{"version","settings"}}.
//
//   node contracts/build.mjs           # (re)write the artifacts
//   node contracts/build.mjs --check   # recompile in memory; exit 1 if any committed artifact differs
//
// Offline: solc-js ships the compiler (soljson) inside the npm package; nothing is downloaded.
// All files are compiled together as one input, so a file may import another contracts/*.sol file
// (`import {X} from "./X.sol";`); nothing outside contracts/*.sol can be imported. Only contracts with
// bytecode get an artifact (interfaces such as IToolRegistry do not).
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const OUT = path.join(HERE, "out");
const require = createRequire(import.meta.url);

// Must equal the exact version pinned in package.json / package-lock.json.
const PINNED_SOLC = "0.8.28";

// Compiler settings recorded in every artifact. Keys are listed in sorted order on purpose.
const SETTINGS = {
  evmVersion: "cancun",
  metadata: { bytecodeHash: "none" },
  optimizer: { enabled: true, runs: 200 },
  viaIR: false,
};

function usage() {
  console.error("usage: node contracts/build.mjs [--check]");
  process.exit(2);
}

function loadSolc() {
  let solc;
  try {
    solc = require("solc");
  } catch (e) {
    console.error(`build.mjs: cannot load solc (run \`npm ci\` in ${HERE}, or tests/tools.sh): ${e.message}`);
    process.exit(2);
  }
  const full = solc.version(); // e.g. 0.8.28+commit.7893614a.Emscripten.clang
  if (!full.startsWith(PINNED_SOLC + "+")) {
    console.error(`build.mjs: solc ${full} is loaded but ${PINNED_SOLC} is pinned; run \`npm ci\` in ${HERE}`);
    process.exit(2);
  }
  return { solc, full };
}

// Recursively sort object keys so that the output never depends on insertion order.
function sortKeys(v) {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === "object") {
    const o = {};
    for (const k of Object.keys(v).sort()) o[k] = sortKeys(v[k]);
    return o;
  }
  return v;
}

function compileAll() {
  const { solc, full } = loadSolc();
  const files = fs.readdirSync(HERE).filter((f) => f.endsWith(".sol")).sort();
  if (files.length === 0) {
    console.error(`build.mjs: no .sol files in ${HERE}`);
    process.exit(2);
  }
  const sources = {};
  for (const f of files) sources[f] = { content: fs.readFileSync(path.join(HERE, f), "utf8").replace(/\r\n/g, "\n") };
  const input = {
    language: "Solidity",
    sources,
    settings: {
      ...SETTINGS,
      outputSelection: { "*": { "*": ["abi", "evm.bytecode.object", "evm.deployedBytecode.object"] } },
    },
  };
  const noImports = (p) => ({ error: `only imports of other contracts/*.sol files resolve (as "./X.sol"): ${p}` });
  const output = JSON.parse(solc.compile(JSON.stringify(input), { import: noImports }));
  const errors = (output.errors || []).filter((e) => e.severity === "error");
  for (const w of (output.errors || []).filter((e) => e.severity !== "error")) console.error(w.formattedMessage.trim());
  if (errors.length) {
    for (const e of errors) console.error(e.formattedMessage.trim());
    console.error(`build.mjs: compilation failed (${errors.length} error(s))`);
    process.exit(1);
  }
  const artifacts = new Map(); // file name -> text
  for (const file of files) {
    for (const [contractName, c] of Object.entries(output.contracts?.[file] || {}).sort(([a], [b]) => (a < b ? -1 : 1))) {
      if (!c.evm.bytecode.object) continue; // interfaces and abstract contracts have no bytecode
      const outName = `${contractName}.json`;
      if (artifacts.has(outName)) {
        console.error(`build.mjs: contract name ${contractName} is defined twice; names must be unique`);
        process.exit(1);
      }
      const artifact = {
        contractName,
        abi: sortKeys(c.abi),
        bytecode: "0x" + c.evm.bytecode.object,
        deployedBytecode: "0x" + c.evm.deployedBytecode.object,
        compiler: { version: full, settings: sortKeys(SETTINGS) },
      };
      artifacts.set(outName, JSON.stringify(artifact, null, 2) + "\n");
    }
  }
  return artifacts;
}

// Artifacts this script owns: every out/*.json (hex files and SOURCES.md are vendored, not built).
function committedArtifacts() {
  if (!fs.existsSync(OUT)) return new Map();
  const m = new Map();
  for (const f of fs.readdirSync(OUT).filter((f) => f.endsWith(".json")).sort()) m.set(f, fs.readFileSync(path.join(OUT, f), "utf8"));
  return m;
}

function describeDiff(name, want, have) {
  let a, b;
  try {
    a = JSON.parse(want);
    b = JSON.parse(have);
  } catch {
    return `  ${name}: committed file is not valid JSON`;
  }
  const lines = [];
  for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const x = JSON.stringify(a[k]);
    const y = JSON.stringify(b[k]);
    if (x === y) continue;
    if (typeof a[k] === "string" && typeof b[k] === "string" && a[k].startsWith("0x")) {
      let i = 0;
      while (i < a[k].length && a[k][i] === b[k][i]) i++;
      lines.push(`  ${name}: ${k} differs (fresh ${(a[k].length - 2) / 2} bytes, committed ${(b[k].length - 2) / 2} bytes, first difference at byte ${Math.floor((i - 2) / 2)})`);
    } else if (k === "abi" && Array.isArray(a[k]) && Array.isArray(b[k])) {
      const sig = (e) => `${e.type} ${e.name ?? ""}(${(e.inputs ?? []).map((i) => i.type).join(",")})`;
      const fa = new Map(a[k].map((e) => [sig(e), JSON.stringify(e)]));
      const fb = new Map(b[k].map((e) => [sig(e), JSON.stringify(e)]));
      const added = [...fa.keys()].filter((x) => !fb.has(x));
      const removed = [...fb.keys()].filter((x) => !fa.has(x));
      const changed = [...fa.keys()].filter((x) => fb.has(x) && fa.get(x) !== fb.get(x));
      const parts = [];
      if (added.length) parts.push(`new: ${added.join("; ")}`);
      if (removed.length) parts.push(`gone: ${removed.join("; ")}`);
      if (changed.length) parts.push(`changed: ${changed.join("; ")}`);
      lines.push(`  ${name}: abi differs${parts.length ? ` (${parts.join(" | ")})` : ""}`);
    } else {
      lines.push(`  ${name}: ${k} differs`);
    }
  }
  if (lines.length === 0) lines.push(`  ${name}: formatting differs (same content; rewrite with node contracts/build.mjs)`);
  return lines.join("\n");
}

const args = process.argv.slice(2);
if (args.some((a) => a !== "--check")) usage();
const check = args.includes("--check");

const fresh = compileAll();
if (check) {
  const have = committedArtifacts();
  const problems = [];
  for (const [name, text] of fresh) {
    if (!have.has(name)) problems.push(`  ${name}: missing from contracts/out/`);
    else if (have.get(name) !== text) problems.push(describeDiff(name, text, have.get(name)));
  }
  for (const name of have.keys()) if (!fresh.has(name)) problems.push(`  ${name}: stale (no contract of that name in contracts/*.sol)`);
  if (problems.length) {
    console.error(`build.mjs --check: ${problems.length} artifact(s) out of date:\n${problems.join("\n")}\nrun: node contracts/build.mjs`);
    process.exit(1);
  }
  console.log(`build.mjs --check: ${fresh.size} artifact(s) up to date (${[...fresh.keys()].join(", ")})`);
} else {
  fs.mkdirSync(OUT, { recursive: true });
  for (const [name, text] of fresh) {
    const p = path.join(OUT, name);
    const old = fs.existsSync(p) ? fs.readFileSync(p, "utf8") : null;
    if (old !== text) fs.writeFileSync(p, text);
    console.log(`${old === text ? "unchanged" : "wrote"} contracts/out/${name}`);
  }
  for (const name of committedArtifacts().keys()) {
    if (!fresh.has(name)) {
      fs.unlinkSync(path.join(OUT, name));
      console.log(`removed stale contracts/out/${name}`);
    }
  }
}
