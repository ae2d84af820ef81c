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
import { type JsonObject } from "./encoding.js";
/** The meters this kit knows, oldest first. A request without `meter` gets `meter/2`. */
export declare const METERS: readonly ["meter/1", "meter/2"];
/** A meter this kit knows. */
export type Meter = (typeof METERS)[number];
/** The `labels` of a stored profile's meter block (METER.md, "Stored labels"). */
export declare const STORED_LABELS = "stored-labels/1";
/** Whether `version` is a meter this kit knows. */
export declare function isMeter(version: unknown): version is Meter;
/**
 * The exact `meter` block of `version` (a fresh copy): as an attestation or a credential
 * carries it, or, with `stored`, as a stored entry does (with `labels`).
 */
export declare function meterBlock(version: Meter, options?: {
    stored?: boolean;
}): JsonObject;
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
export declare function checkMeter(doc: JsonObject, options?: MeterOptions): Meter;
