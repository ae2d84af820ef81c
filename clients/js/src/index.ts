/**
 * The conduct kit: verify offline everything a Conduct Attestation Service signs
 * (attestations, signed objects, the log's checkpoint and inclusion proofs, vow chains, the
 * site manifest), and call the service with {@link ConductClient}.
 *
 * @module
 */
export * from "./verify.js";
export * from "./client.js";
