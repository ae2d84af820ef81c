// The pinned anvil for the contract checks (deploy-check.mjs, registry-check.mjs): where it is,
// and starting one on a free loopback port.
import fs from "node:fs";
import path from "node:path";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));

// $ANVIL_BIN, else the pinned npm copy under contracts/node_modules.
export function anvilPath() {
  if (process.env.ANVIL_BIN) return process.env.ANVIL_BIN;
  const p = path.join(HERE, "node_modules", "@foundry-rs", "anvil-linux-amd64", "bin", "anvil");
  if (!fs.existsSync(p)) throw new Error(`anvil not found at ${p}: run tests/tools.sh (or npm ci in contracts/), or set ANVIL_BIN`);
  try {
    fs.accessSync(p, fs.constants.X_OK);
  } catch {
    fs.chmodSync(p, 0o755); // npm 11 skips @foundry-rs/anvil's postinstall, which would do this
  }
  return p;
}

// Start anvil on a free loopback port (--port 0) and wait for the port it prints: {child, url}.
export function startAnvil() {
  const child = spawn(anvilPath(), ["--host", "127.0.0.1", "--port", "0", "--chain-id", "31337"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  return new Promise((resolve, reject) => {
    let buf = "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`anvil did not report a listening port within 20 s; output:\n${buf}`));
    }, 20_000);
    const onData = (d) => {
      buf += d.toString();
      const m = buf.match(/Listening on (127\.0\.0\.1:\d+)/);
      if (m) {
        clearTimeout(timer);
        child.stdout.off("data", onData);
        child.stdout.resume(); // keep draining so anvil never blocks on a full pipe
        resolve({ child, url: `http://${m[1]}` });
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", (d) => (buf += d.toString()));
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`anvil exited early (code ${code}); output:\n${buf}`));
    });
  });
}
