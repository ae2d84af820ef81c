// Check that the committed dist/ is exactly what a fresh `tsc` build of src/ gives (like the
// repository's contract artifacts against a fresh compile). Exit 1, naming the files, if not.
//   node scripts/check-dist.mjs
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const out = mkdtempSync(join(tmpdir(), "conduct-kit-dist-"));
try {
  const tsc = createRequire(join(root, "package.json")).resolve("typescript/bin/tsc");
  execFileSync(process.execPath, [tsc, "-p", join(root, "tsconfig.json"), "--outDir", out], { stdio: "inherit" });
  const list = (d) => readdirSync(d, { recursive: true, withFileTypes: true }).filter((e) => e.isFile())
    .map((e) => join(e.parentPath ?? e.path, e.name).slice(d.length + 1)).sort();
  const fresh = list(out);
  const committed = list(join(root, "dist"));
  const diff = [];
  for (const f of new Set([...fresh, ...committed])) {
    const a = fresh.includes(f) ? readFileSync(join(out, f)) : null;
    const b = committed.includes(f) ? readFileSync(join(root, "dist", f)) : null;
    if (a === null) diff.push(`dist/${f}: not built from src/ (remove it)`);
    else if (b === null) diff.push(`dist/${f}: missing (run npm run build)`);
    else if (!a.equals(b)) diff.push(`dist/${f}: differs from a fresh build (run npm run build)`);
  }
  if (diff.length > 0) {
    console.error(diff.join("\n"));
    process.exit(1);
  }
  console.log(`dist/ matches a fresh tsc build (${fresh.length} files)`);
} finally {
  rmSync(out, { recursive: true, force: true });
}
