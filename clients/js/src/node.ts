/**
 * Node-only helpers: read a copy of the tree from a directory. Import from
 * `@conduct/kit/node`; the rest of the kit uses no Node API and runs in browsers.
 *
 * @module
 */
/// <reference types="node" />
import { readFile, readdir } from "node:fs/promises";
import { join, sep } from "node:path";
import type { FileReader, ManifestOptions } from "./manifest.js";

/** A {@link FileReader} over the directory `root`: a missing file is `undefined`. */
export function dirReader(root: string): FileReader {
  return async (path) => {
    if (path.split("/").some((s) => s === ".." || s === "")) return undefined;
    try {
      return new Uint8Array(await readFile(join(root, ...path.split("/"))));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT" || (e as NodeJS.ErrnoException).code === "ENOTDIR")
        return undefined;
      throw e;
    }
  };
}

/** Every file under `root`, as `/`-separated paths relative to it (for `ManifestOptions.listFiles`). */
export async function listDir(root: string): Promise<string[]> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath ?? (e as unknown as { path: string }).path, e.name).slice(root.length + 1).split(sep).join("/"));
}

/** The reader and listing of a directory, for `verifyManifest(reader, vkey, options)`. */
export function dirSource(root: string): { reader: FileReader; options: Pick<ManifestOptions, "listFiles"> } {
  const r = root.replace(/[/\\]+$/, "");
  return { reader: dirReader(r), options: { listFiles: () => listDir(r) } };
}
