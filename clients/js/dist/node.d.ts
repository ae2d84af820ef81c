import type { FileReader, ManifestOptions } from "./manifest.js";
/** A {@link FileReader} over the directory `root`: a missing file is `undefined`. */
export declare function dirReader(root: string): FileReader;
/** Every file under `root`, as `/`-separated paths relative to it (for `ManifestOptions.listFiles`). */
export declare function listDir(root: string): Promise<string[]>;
/** The reader and listing of a directory, for `verifyManifest(reader, vkey, options)`. */
export declare function dirSource(root: string): {
    reader: FileReader;
    options: Pick<ManifestOptions, "listFiles">;
};
