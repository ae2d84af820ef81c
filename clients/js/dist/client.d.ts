/**
 * {@link ConductClient}: the service's routes, every signed answer verified against the pinned
 * key before it is returned. Paid routes (`POST /profile`, `POST /vow/report`,
 * `POST /erc8004/validation`) are paid through the stock `@x402/fetch` wrapper
 * (library/PAYMENTS.md), loaded only when a paid call is made, so the verifying half of the kit
 * needs nothing but `@noble/*` and `canonicalize`.
 *
 * Every call that measures (`profile`, `demoProfile`, `validation`, `reportDemo`, `report`)
 * takes a `meter` (`meter/1` or `meter/2`; without one the service measures with `meter/2`),
 * sent only when given, and checks that the answer names the meter asked for, or, without
 * one, a meter the kit knows ({@link checkMeter}).
 *
 * @module
 */
import { type Json, type JsonObject } from "./encoding.js";
import { type VerifiedCredential } from "./erc8004.js";
import { type Checkpoint, type Inclusion } from "./log.js";
import { type ManifestOptions, type ManifestReport } from "./manifest.js";
import { type Meter } from "./meter.js";
import { type PinnedKey, type Trace } from "./signed.js";
import { type VerifiedChainDocument } from "./vow.js";
/** Which x402 rail to pay on (library/PAYMENTS.md, "Rails"). */
export type Rail = "eip3009" | "permit2";
/** An EVM signer as `@x402/evm`'s `ExactEvmScheme` takes it (a viem `LocalAccount` is one). */
export interface EvmSigner {
    readonly address: `0x${string}`;
    signTypedData(message: {
        domain: Record<string, unknown>;
        types: Record<string, unknown>;
        primaryType: string;
        message: Record<string, unknown>;
    }): Promise<`0x${string}`>;
}
/** Who pays the paid calls, and within which limits. */
export interface PayerOptions {
    /** The payer's private key (a viem account is made from it); or give {@link PayerOptions.signer}. */
    privateKey?: `0x${string}`;
    /** A ready signer (a viem `LocalAccount`, say). */
    signer?: EvmSigner;
    /** The rail to prefer when the challenge offers several (default: the first offered). */
    rail?: Rail;
    /**
     * A token to allow beyond x402's default assets (its atomic-unit cap per payment in
     * `maxAmountPerPayment`, default 100000, $0.10 of a 6-decimal token: the read price).
     * Needs {@link PayerOptions.network}.
     */
    asset?: string;
    /** The CAIP-2 network of {@link PayerOptions.asset} (`eip155:8453`). */
    network?: string;
    /** The spend cap per payment for {@link PayerOptions.asset}, atomic units, decimal. */
    maxAmountPerPayment?: string;
}
/** Options of {@link ConductClient}. */
export interface ConductClientOptions {
    /** The service's base URL (`https://conduct.example`). */
    url: string;
    /** The pinned key: the C2SP vkey (`GET /pubkey`'s `vkey`), pinned out of band. */
    vkey: string | PinnedKey;
    /** The fetch to use (default `globalThis.fetch`). */
    fetch?: typeof fetch;
    /** Who pays the paid calls; without it (and without `paymentFetch`) they throw {@link PaymentRequiredError}. */
    payer?: PayerOptions;
    /** A fetch that already pays (your own `wrapFetchWithPayment(...)`), used for paid calls instead of `payer`. */
    paymentFetch?: typeof fetch;
}
/** The settlement of a paid call: the decoded `PAYMENT-RESPONSE` header (`success`, `transaction`, `network`, `payer`). */
export type PaymentResponse = Record<string, unknown>;
/** A verified attestation with what came with it. */
export interface ProfileResult {
    /** The verified attestation. */
    attestation: JsonObject;
    /** Its bytes, as served (keep them: they are what a counterparty verifies). */
    bytes: Uint8Array;
    /** The settlement, when this call paid (absent for an idempotent replay). */
    payment: PaymentResponse | undefined;
    /** True when the service replayed an earlier identical read (`Idempotent-Replayed`). */
    replayed: boolean;
}
/** A verified chain entry with what came with it. */
export interface ReportResult {
    /** The verified entry (`conduct.entry/v1`). */
    entry: JsonObject;
    /** Its bytes, as served. */
    bytes: Uint8Array;
    /** The settlement, when this call paid. */
    payment: PaymentResponse | undefined;
    /** `Conduct-Render`: whether the vow's pages are written (`done`) or in flight (`queued`). */
    render: string | undefined;
}
/** A report-in (library/VOWS.md, "Reporting in"). */
export interface ReportIn {
    vowId: string;
    trace: Trace;
    note?: string;
    donateTrace?: boolean;
    /** The vow's wallet's EIP-191 signature over {@link ConductClient.reportMessage}'s text. */
    signature?: string;
    /** The meter to measure with (`meter/1` or `meter/2`; default the service's, `meter/2`); the entry must name it. */
    meter?: Meter;
}
/** A vow to take (library/VOWS.md, "Taking a vow"). */
export interface VowRequest {
    text: string;
    agent: string;
    cadenceHours: number;
    sealed?: boolean;
    wallet?: string;
    /** The wallet's EIP-191 signature over {@link ConductClient.vowMessage}'s text. */
    signature?: string;
}
/** Per-call options of a paid call. */
export interface PaidCallOptions {
    /** `Idempotency-Key` (default: the service's, the body's hash). */
    idempotencyKey?: string;
    /** The rail for this call (default: the payer's). */
    rail?: Rail;
}
/**
 * A client of one conduct service. Every signed answer is verified against the pinned key
 * before it is returned, and a refusal is thrown as a {@link ProblemError}.
 *
 * ```ts
 * const conduct = new ConductClient({ url, vkey, payer: { privateKey, asset, network } });
 * const { attestation } = await conduct.profile(trace); // paid, verified
 * ```
 */
export declare class ConductClient {
    /** The service's base URL, without a trailing slash. */
    readonly url: string;
    /** The pinned key. */
    readonly key: PinnedKey;
    private readonly fetchImpl;
    private readonly payer;
    private readonly paymentFetch;
    private readonly payFetches;
    /** @param options - where the service is, its pinned key, and who pays */
    constructor(options: ConductClientOptions);
    /** The fetch that pays on `rail` (built once per rail from the stock x402 client). */
    private payingFetch;
    /** Send one request; a problem answer is thrown as {@link ProblemError}, a 402 as {@link PaymentRequiredError}. */
    private send;
    private bytes;
    /**
     * GET a signed JSON document at `path` and verify it (optionally its `type`).
     *
     * @throws {VerificationError} when it does not verify; {@link ProblemError} when refused
     */
    getSigned(path: string, type?: string): Promise<JsonObject>;
    private getText;
    private query;
    /** `GET /pubkey`, verified, and its `vkey` must be the pinned one (a check of the pin, not a source of it). */
    pubkey(): Promise<JsonObject>;
    /** `GET /log/checkpoint`, verified. */
    checkpoint(): Promise<Checkpoint>;
    /** `GET /log/proof/<index>`, as served (a C2SP tlog-proof). */
    proofText(index: number): Promise<string>;
    /**
     * Prove that a signed record (a vow, an entry, any log record with `log_index`) is in the
     * log: fetch `GET /log/proof/<log_index>` and verify it ({@link verifyInclusion}).
     */
    prove(record: JsonObject): Promise<Inclusion>;
    /** Verify the service's tree over HTTP against its manifest ({@link verifyManifest}; no listing, so no count). */
    verifySite(options?: Omit<ManifestOptions, "listFiles">): Promise<ManifestReport>;
    /**
     * `POST /profile` (paid, library/PAYMENTS.md): the signed profile of `trace`, verified, its
     * `trace_sha256` checked against the trace sent, and its meter (the one asked for, when given).
     *
     * @param trace - `{context_key, turns}`
     * @param options - a disclosure (`{predicate: {metric, band}}`, METER.md), the meter
     *   (`meter/1` or `meter/2`), the idempotency key, the rail
     */
    profile(trace: Trace, options?: PaidCallOptions & {
        disclosure?: Json;
        meter?: Meter;
    }): Promise<ProfileResult>;
    private paid;
    /**
     * `POST /demo/profile` (free, capped per IP per day): the same profile, unsigned. Its
     * `trace_sha256` is checked against the trace sent, and its meter block and the shape of its
     * quantities as an attestation's (with `options.meter`, the meter asked for); nothing else
     * can be (it carries no signature).
     */
    demoProfile(trace: Trace, options?: {
        meter?: Meter;
    }): Promise<JsonObject>;
    /** `GET /predicates`, verified: the posted metrics and bands a disclosure or a credential names. */
    predicates(): Promise<JsonObject>;
    /**
     * `POST /erc8004/validation` (paid, library/ERC8004.md): a signed predicate about `trace`
     * bound to `subject`, verified with its `credential_hash` and its meter (`request.meter`,
     * `meter/1` or `meter/2`, when given).
     */
    validation(request: {
        trace: Trace;
        predicate: {
            metric: string;
            band: string;
        };
        subject: {
            form: string;
            id: string;
        };
        meter?: Meter;
    }, options?: PaidCallOptions): Promise<VerifiedCredential & {
        payment: PaymentResponse | undefined;
    }>;
    /** `GET /vow/message`: the exact EIP-191 text a wallet signs to take this vow. */
    vowMessage(v: Omit<VowRequest, "wallet" | "signature">): Promise<string>;
    /** `POST /vow` (free): take a vow; the record is verified ({@link verifyVow}). */
    takeVow(v: VowRequest): Promise<JsonObject>;
    /** `GET /vow/report/message`: the exact EIP-191 text a signed vow's wallet signs to report in (binding the trace, note, donation choice and meter). */
    reportMessage(r: {
        vowId: string;
        traceSha256: string;
        note?: string;
        donateTrace?: boolean;
        /** The meter the report-in will name (it is bound by the text); absent: the service's default. */
        meter?: Meter;
    }): Promise<string>;
    private reportBody;
    private entryOf;
    /**
     * `POST /vow/report/demo` (free, `attested: false`): a report-in, its entry verified.
     *
     * @param waitSeconds - `Prefer: wait=<seconds>`: wait for the vow's pages (VOWS.md, "Durability")
     */
    reportDemo(r: ReportIn, waitSeconds?: number): Promise<ReportResult>;
    /** `POST /vow/report` (paid, `attested: true`): a report-in, its entry verified. */
    report(r: ReportIn, options?: PaidCallOptions & {
        waitSeconds?: number;
    }): Promise<ReportResult>;
    /** `GET /vow/<id>`, verified (`conduct.vow_page/v1`): the vow, its chain in brief, its trajectory. */
    vow(id: string): Promise<JsonObject>;
    /**
     * The vow's complete chain (`/vow/<id>/chain` and its pages), every record verified and every
     * link checked ({@link verifyChain}). From a `conduct.chain/v2` head it follows the links: the
     * head's `last_page` (`/vow/<id>/chain/<n−1>`), then each page's predecessor by its
     * `prev_page_sha256`, down to page 0, each page fetched once and checked against the hash
     * pinning it; from a `conduct.chain/v1` head, each page its `pages` pins. A page the head
     * reaches that the service does not have (404) is a `missing-file` {@link VerificationError}.
     */
    chain(id: string): Promise<VerifiedChainDocument>;
    /**
     * `GET /vow/<id>/reading`, verified (`conduct.reading/v1`): the trajectory and its
     * interpretation (guidance, never a verdict; VOWS.md, "Readings").
     */
    reading(id: string): Promise<JsonObject>;
    /**
     * `GET /vows`, verified ({@link verifyVowsHead}): the head of the index of vows
     * (`conduct.vows/v2`): how many vows, the last full page pinned by hash, and the newest vows
     * (`tail`), in the order taken. {@link ConductClient.allVows} reads every vow.
     */
    vows(): Promise<JsonObject>;
    /**
     * `GET /vows/<k>`, verified ({@link verifyVowsPage}): full page `k` of the index of vows
     * (`conduct.vows_page/v1`), the vows taken `256k .. 256k+255`. Only
     * {@link ConductClient.allVows} checks a page's bytes against the pin naming it.
     */
    vowsPage(k: number): Promise<JsonObject>;
    /**
     * Every vow, in the order taken, oldest first: the head (`GET /vows`), then each full page
     * walking back from its `last_page` pin through each page's `prev`, each page's bytes as served
     * checked against the SHA-256 pinning them and then verified ({@link verifyVowsIndex}).
     */
    allVows(): Promise<JsonObject[]>;
    /** `GET /registry`, verified (`conduct.registry/v1`): the ERC-8257 tool registry as followed (library/REGISTRY.md). */
    registry(): Promise<JsonObject>;
    /** `GET /registry/tool/<id>`, verified: one registry tool. */
    registryTool(id: string | number): Promise<JsonObject>;
    /** `GET /munus`, verified (`conduct.munus/v1`): the quest board (library/MUNUS.md). */
    munus(): Promise<JsonObject>;
    /** `GET /munus/<id>`, verified: one quest. */
    quest(id: string): Promise<JsonObject>;
    /** `GET /card?key=`, verified: the card of an agent name, npub, vow id or wallet. */
    card(key: string): Promise<JsonObject>;
    /** `GET /who?handle=`, verified: a wallet's or agent name's vows and tools. */
    who(handle: string): Promise<JsonObject>;
}
/** The RFC 8785 bytes of a record: its leaf in the log (VOWS.md, "Record formats"). */
export declare function leafBytes(record: JsonObject): Uint8Array;
/** Parse bytes as JSON strictly (no duplicate members), for answers the kit does not verify. */
export declare function readJson(bytes: Uint8Array | string): Json;
