/**
 * The meters the kit knows, and the `meter` block every measured object carries
 * (library/ATTESTATION.md, "The meter"; METER.md sections 10.1-10.2; VOWS.md, "Record formats").
 *
 * An attestation, a validation credential and a report-in entry each name the meter that
 * measured them in their `meter` block. The kit knows `meter/1` and `meter/2` (the service's
 * default); a block is accepted only when it is exactly the one ATTESTATION.md lists for its
 * version (an entry's, stored with opaque labels, adds `"labels": "stored-labels/1"`), and a
 * `profile` only when its quantities have that meter's shape: under `meter/2` every quantity
 * carries `stratified` (the within-Y test, `"by": "Y"`), under `meter/1` none does. A version
 * the kit does not know is refused rather than read.
 *
 * @module
 */
import { canonicalText, isObject, type Json, type JsonObject } from "./encoding.js";
import { VerificationError } from "./errors.js";

/** The meters this kit knows, oldest first. A request without `meter` gets `meter/2`. */
export const METERS = ["meter/1", "meter/2"] as const;

/** A meter this kit knows. */
export type Meter = (typeof METERS)[number];

/** The `labels` of a stored profile's meter block (METER.md, "Stored labels"). */
export const STORED_LABELS = "stored-labels/1";

const BLOCKS: Readonly<Record<Meter, JsonObject>> = {
  "meter/1": {
    d_clean: ["clean"],
    m_symbols: "lexicon/1",
    p_exact_max_tables: 20000,
    p_monte_carlo_samples: 1000,
    version: "meter/1",
  },
  "meter/2": {
    d_clean: ["clean"],
    m_symbols: "lexicon/2",
    p_exact_max_tables: 20000,
    p_exact_max_work: 200000,
    p_monte_carlo_samples: 1000,
    stratified_by: "Y",
    version: "meter/2",
  },
};

/** Whether `version` is a meter this kit knows. */
export function isMeter(version: unknown): version is Meter {
  return typeof version === "string" && (METERS as readonly string[]).includes(version);
}

/**
 * The exact `meter` block of `version` (a fresh copy): as an attestation or a credential
 * carries it, or, with `stored`, as a stored entry does (with `labels`).
 */
export function meterBlock(version: Meter, options: { stored?: boolean } = {}): JsonObject {
  const block = JSON.parse(JSON.stringify(BLOCKS[version])) as JsonObject;
  if (options.stored === true) block.labels = STORED_LABELS;
  return block;
}

/** Options of {@link checkMeter}. */
export interface MeterOptions {
  /** The meter the object must name (the one asked for). */
  meter?: Meter;
  /** The object is stored (a chain entry): its block carries `labels`. */
  stored?: boolean;
  /** Where the object sits, to name the member at fault (`credential`: `credential/meter`). */
  at?: string;
}

/**
 * Check the `meter` block of a measured object (and its `profile`, when it has one) and
 * return the meter's version: the block names a meter the kit knows ({@link METERS}), the one
 * asked for when `meter` is given, and is exactly that meter's block; under `meter/2` every
 * quantity of `profile` carries a `stratified` object by `Y`, under `meter/1` none carries
 * `stratified`.
 *
 * @param doc - the attestation, credential or entry (already verified as signed)
 * @throws {VerificationError} `meter` (or `bad-format`, when there is no block or `profile` is not an object of quantities)
 */
export function checkMeter(doc: JsonObject, options: MeterOptions = {}): Meter {
  const at = (member: string) => (options.at === undefined ? member : `${options.at}/${member}`);
  const block = doc.meter;
  if (!isObject(block)) throw new VerificationError("bad-format", "must be the meter block (an object)", at("meter"));
  const version = block.version;
  if (typeof version !== "string")
    throw new VerificationError("bad-format", "the meter block has no version", at("meter"));
  if (!isMeter(version))
    throw new VerificationError(
      "meter",
      `meter ${JSON.stringify(version)} is not one this kit knows (${METERS.join(", ")})`,
      at("meter"),
    );
  if (options.meter !== undefined && version !== options.meter)
    throw new VerificationError(
      "meter",
      `meter ${JSON.stringify(version)} is not the meter asked for (${JSON.stringify(options.meter)})`,
      at("meter"),
    );
  const want = meterBlock(version, { stored: options.stored === true });
  if (canonicalText(block) !== canonicalText(want))
    throw new VerificationError("meter", `the meter block is not ${version}'s: ${difference(block, want)}`, at("meter"));
  if (doc.profile !== undefined) checkProfile(doc.profile, version, at("profile"));
  return version;
}

/** What separates a meter block from the one it should be, in words. */
function difference(got: JsonObject, want: JsonObject): string {
  const parts: string[] = [];
  for (const k of Object.keys(want).sort()) if (!Object.hasOwn(got, k)) parts.push(`${k} is missing`);
  for (const k of Object.keys(got).sort()) if (!Object.hasOwn(want, k)) parts.push(`${k} is not a member of it`);
  for (const k of Object.keys(want).sort())
    if (Object.hasOwn(got, k) && canonicalText(got[k]) !== canonicalText(want[k]))
      parts.push(`${k} is ${canonicalText(got[k])}, not ${canonicalText(want[k])}`);
  return parts.join("; ");
}

/** Every quantity of `profile` has the shape of `version`. */
function checkProfile(profile: Json, version: Meter, path: string): void {
  if (!isObject(profile)) throw new VerificationError("bad-format", "must be an object of quantities", path);
  for (const [name, q] of Object.entries(profile)) {
    const at = `${path}/${name}`;
    if (!isObject(q)) throw new VerificationError("bad-format", "a quantity must be an object", at);
    if (version === "meter/2") {
      const s = q.stratified;
      if (!isObject(s))
        throw new VerificationError("meter", `has no stratified object, which every ${version} quantity carries`, at);
      if (s.by !== "Y")
        throw new VerificationError("meter", `stratified.by is ${JSON.stringify(s.by ?? null)}, not "Y"`, at);
    } else if (Object.hasOwn(q, "stratified")) {
      throw new VerificationError("meter", `carries stratified, which no ${version} quantity does`, at);
    }
  }
}
