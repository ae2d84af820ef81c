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
import { canonicalBytes, isObject, parseJson, parseObject, fromUtf8 } from "./encoding.js";
import { verifyCredential } from "./erc8004.js";
import { PaymentRequiredError, ProblemError, VerificationError } from "./errors.js";
import { verifyCheckpoint, verifyInclusion } from "./log.js";
import { httpReader, verifyManifest } from "./manifest.js";
import { checkMeter } from "./meter.js";
import { parseVkey, traceSha256, verifyAttestation, verifySigned } from "./signed.js";
import { verifyChain, verifyEntry, verifyVow, verifyVowsHead, verifyVowsIndex, verifyVowsPage, } from "./vow.js";
function decodeHeaderJson(value) {
    if (value === null)
        return undefined;
    try {
        const bin = atob(value);
        const bytes = Uint8Array.from(bin, (c) => c.charCodeAt(0));
        const v = JSON.parse(fromUtf8(bytes));
        return isObject(v) ? v : undefined;
    }
    catch {
        return undefined;
    }
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
export class ConductClient {
    /** The service's base URL, without a trailing slash. */
    url;
    /** The pinned key. */
    key;
    fetchImpl;
    payer;
    paymentFetch;
    payFetches = new Map();
    /** @param options - where the service is, its pinned key, and who pays */
    constructor(options) {
        this.url = options.url.replace(/\/+$/, "");
        this.key = parseVkey(options.vkey);
        const f = options.fetch ?? globalThis.fetch;
        this.fetchImpl = (input, init) => f(input, init);
        this.payer = options.payer;
        this.paymentFetch = options.paymentFetch;
    }
    // ---- plumbing -------------------------------------------------------------------------
    /** The fetch that pays on `rail` (built once per rail from the stock x402 client). */
    async payingFetch(rail) {
        if (this.paymentFetch !== undefined)
            return this.paymentFetch;
        const payer = this.payer;
        if (payer === undefined)
            return this.fetchImpl;
        const want = rail ?? payer.rail;
        const cacheKey = want ?? "";
        let made = this.payFetches.get(cacheKey);
        if (made === undefined) {
            made = (async () => {
                const { wrapFetchWithPayment, x402Client } = await import("@x402/fetch");
                const { ExactEvmScheme } = await import("@x402/evm/exact/client");
                let signer = payer.signer;
                if (signer === undefined) {
                    if (payer.privateKey === undefined)
                        throw new Error("payer: give privateKey or signer");
                    const { privateKeyToAccount } = await import("viem/accounts");
                    signer = privateKeyToAccount(payer.privateKey);
                }
                const pick = want === undefined
                    ? undefined
                    : (_v, reqs) => reqs.find((r) => (r.extra?.assetTransferMethod ?? "eip3009") === want) ?? reqs[0];
                // The selector's parameter type is x402's PaymentRequirements; ours reads only `extra`.
                const client = new x402Client(pick).register("eip155:*", new ExactEvmScheme(signer));
                if (payer.asset !== undefined) {
                    if (payer.network === undefined)
                        throw new Error("payer: asset needs network");
                    client.setSpendControls({
                        allowedAssets: [
                            {
                                network: payer.network,
                                asset: payer.asset,
                                maxAmountPerPayment: payer.maxAmountPerPayment ?? "100000",
                            },
                        ],
                    });
                }
                return wrapFetchWithPayment(this.fetchImpl, client);
            })();
            this.payFetches.set(cacheKey, made);
        }
        return made;
    }
    /** Send one request; a problem answer is thrown as {@link ProblemError}, a 402 as {@link PaymentRequiredError}. */
    async send(method, path, body, headers = {}, via) {
        const init = { method, headers: { accept: "application/json", ...headers } };
        if (body !== undefined) {
            init.body = JSON.stringify(body);
            init.headers["content-type"] = "application/json";
        }
        const res = await (via ?? this.fetchImpl)(this.url + path, init);
        if (res.status === 402)
            throw new PaymentRequiredError(decodeHeaderJson(res.headers.get("payment-required")), decodeHeaderJson(res.headers.get("payment-response")));
        if (!res.ok) {
            const text = await res.text();
            let doc = { status: res.status, title: res.statusText, detail: text.slice(0, 500) };
            try {
                const v = JSON.parse(text);
                if (isObject(v))
                    doc = v;
            }
            catch {
                // not JSON: keep the text as the detail
            }
            const ra = res.headers.get("retry-after");
            throw new ProblemError(doc, res.status, ra !== null && /^\d+$/.test(ra) ? Number(ra) : undefined);
        }
        return res;
    }
    async bytes(res) {
        return new Uint8Array(await res.arrayBuffer());
    }
    /**
     * GET a signed JSON document at `path` and verify it (optionally its `type`).
     *
     * @throws {VerificationError} when it does not verify; {@link ProblemError} when refused
     */
    async getSigned(path, type) {
        const res = await this.send("GET", path);
        const bytes = await this.bytes(res);
        try {
            return verifySigned(bytes, this.key, type === undefined ? {} : { type });
        }
        catch (e) {
            throw e instanceof VerificationError ? e.at(path) : e;
        }
    }
    async getText(path) {
        const res = await this.send("GET", path, undefined, { accept: "text/plain" });
        return res.text();
    }
    query(params) {
        const q = new URLSearchParams();
        for (const [k, v] of Object.entries(params))
            if (v !== undefined)
                q.set(k, String(v));
        return q.toString();
    }
    // ---- the key and the log ----------------------------------------------------------------
    /** `GET /pubkey`, verified, and its `vkey` must be the pinned one (a check of the pin, not a source of it). */
    async pubkey() {
        const doc = await this.getSigned("/pubkey", "conduct.pubkey/v1");
        if (doc.vkey !== this.key.vkey)
            throw new VerificationError("key-id-mismatch", `serves ${String(doc.vkey)}, not the pinned key`, "/pubkey");
        return doc;
    }
    /** `GET /log/checkpoint`, verified. */
    async checkpoint() {
        const res = await this.send("GET", "/log/checkpoint", undefined, { accept: "text/plain" });
        return verifyCheckpoint(await this.bytes(res), this.key);
    }
    /** `GET /log/proof/<index>`, as served (a C2SP tlog-proof). */
    async proofText(index) {
        return this.getText(`/log/proof/${index}`);
    }
    /**
     * Prove that a signed record (a vow, an entry, any log record with `log_index`) is in the
     * log: fetch `GET /log/proof/<log_index>` and verify it ({@link verifyInclusion}).
     */
    async prove(record) {
        const index = record.log_index;
        if (typeof index !== "number")
            throw new VerificationError("bad-format", "the record has no log_index", "log_index");
        return verifyInclusion(record, await this.proofText(index), this.key);
    }
    /** Verify the service's tree over HTTP against its manifest ({@link verifyManifest}; no listing, so no count). */
    async verifySite(options = {}) {
        return verifyManifest(httpReader(this.url, this.fetchImpl), this.key, options);
    }
    // ---- profiles ---------------------------------------------------------------------------
    /**
     * `POST /profile` (paid, library/PAYMENTS.md): the signed profile of `trace`, verified, its
     * `trace_sha256` checked against the trace sent, and its meter (the one asked for, when given).
     *
     * @param trace - `{context_key, turns}`
     * @param options - a disclosure (`{predicate: {metric, band}}`, METER.md), the meter
     *   (`meter/1` or `meter/2`), the idempotency key, the rail
     */
    async profile(trace, options = {}) {
        const body = { context_key: trace.context_key, turns: trace.turns };
        if (options.disclosure !== undefined)
            body.disclosure = options.disclosure;
        if (options.meter !== undefined)
            body.meter = options.meter;
        const res = await this.paid("/profile", body, options);
        const bytes = await this.bytes(res);
        const attestation = verifyAttestation(bytes, this.key, trace, { meter: options.meter });
        return {
            attestation,
            bytes,
            payment: decodeHeaderJson(res.headers.get("payment-response")),
            replayed: res.headers.get("idempotent-replayed") === "true",
        };
    }
    async paid(path, body, options) {
        const headers = {};
        if (options.idempotencyKey !== undefined)
            headers["idempotency-key"] = options.idempotencyKey;
        return this.send("POST", path, body, headers, await this.payingFetch(options.rail));
    }
    /**
     * `POST /demo/profile` (free, capped per IP per day): the same profile, unsigned. Its
     * `trace_sha256` is checked against the trace sent, and its meter block and the shape of its
     * quantities as an attestation's (with `options.meter`, the meter asked for); nothing else
     * can be (it carries no signature).
     */
    async demoProfile(trace, options = {}) {
        const body = { context_key: trace.context_key, turns: trace.turns };
        if (options.meter !== undefined)
            body.meter = options.meter;
        const res = await this.send("POST", "/demo/profile", body);
        const doc = parseObject(await this.bytes(res));
        if (doc.trace_sha256 !== traceSha256(trace))
            throw new VerificationError("hash-mismatch", "is not the hash of the trace sent", "trace_sha256");
        checkMeter(doc, { meter: options.meter });
        return doc;
    }
    /** `GET /predicates`, verified: the posted metrics and bands a disclosure or a credential names. */
    async predicates() {
        return this.getSigned("/predicates");
    }
    /**
     * `POST /erc8004/validation` (paid, library/ERC8004.md): a signed predicate about `trace`
     * bound to `subject`, verified with its `credential_hash` and its meter (`request.meter`,
     * `meter/1` or `meter/2`, when given).
     */
    async validation(request, options = {}) {
        const body = {
            trace: { context_key: request.trace.context_key, turns: request.trace.turns },
            predicate: request.predicate,
            subject: request.subject,
        };
        if (request.meter !== undefined)
            body.meter = request.meter;
        const res = await this.paid("/erc8004/validation", body, options);
        const v = verifyCredential(await this.bytes(res), this.key, request.trace, { meter: request.meter });
        return { ...v, payment: decodeHeaderJson(res.headers.get("payment-response")) };
    }
    // ---- vows ------------------------------------------------------------------------------
    /** `GET /vow/message`: the exact EIP-191 text a wallet signs to take this vow. */
    async vowMessage(v) {
        return this.getText(`/vow/message?${this.query({ text: v.text, agent: v.agent, cadence_hours: v.cadenceHours, sealed: v.sealed ? true : undefined })}`);
    }
    /** `POST /vow` (free): take a vow; the record is verified ({@link verifyVow}). */
    async takeVow(v) {
        const body = { text: v.text, agent: v.agent, cadence_hours: v.cadenceHours };
        if (v.sealed !== undefined)
            body.sealed = v.sealed;
        if (v.wallet !== undefined)
            body.wallet = v.wallet;
        if (v.signature !== undefined)
            body.signature = v.signature;
        const res = await this.send("POST", "/vow", body);
        return verifyVow(await this.bytes(res), this.key);
    }
    /** `GET /vow/report/message`: the exact EIP-191 text a signed vow's wallet signs to report in (binding the trace, note, donation choice and meter). */
    async reportMessage(r) {
        return this.getText(`/vow/report/message?${this.query({
            vow_id: r.vowId,
            trace_sha256: r.traceSha256,
            note: r.note,
            donate_trace: r.donateTrace ? true : undefined,
            meter: r.meter,
        })}`);
    }
    reportBody(r) {
        const body = {
            vow_id: r.vowId,
            context_key: r.trace.context_key,
            turns: r.trace.turns,
        };
        if (r.note !== undefined)
            body.note = r.note;
        if (r.donateTrace !== undefined)
            body.donate_trace = r.donateTrace;
        if (r.signature !== undefined)
            body.signature = r.signature;
        if (r.meter !== undefined)
            body.meter = r.meter;
        return body;
    }
    async entryOf(res, r) {
        const bytes = await this.bytes(res);
        const entry = verifyEntry(bytes, this.key, { meter: r.meter });
        if (entry.vow_id !== r.vowId)
            throw new VerificationError("bad-chain", "an entry of another vow", "vow_id");
        if (entry.trace_sha256 !== traceSha256(r.trace))
            throw new VerificationError("hash-mismatch", "is not the hash of the trace sent", "trace_sha256");
        return {
            entry,
            bytes,
            payment: decodeHeaderJson(res.headers.get("payment-response")),
            render: res.headers.get("conduct-render") ?? undefined,
        };
    }
    /**
     * `POST /vow/report/demo` (free, `attested: false`): a report-in, its entry verified.
     *
     * @param waitSeconds - `Prefer: wait=<seconds>`: wait for the vow's pages (VOWS.md, "Durability")
     */
    async reportDemo(r, waitSeconds) {
        const headers = waitSeconds === undefined ? {} : { prefer: `wait=${waitSeconds}` };
        const res = await this.send("POST", "/vow/report/demo", this.reportBody(r), headers);
        return this.entryOf(res, r);
    }
    /** `POST /vow/report` (paid, `attested: true`): a report-in, its entry verified. */
    async report(r, options = {}) {
        const headers = {};
        if (options.idempotencyKey !== undefined)
            headers["idempotency-key"] = options.idempotencyKey;
        if (options.waitSeconds !== undefined)
            headers.prefer = `wait=${options.waitSeconds}`;
        const res = await this.send("POST", "/vow/report", this.reportBody(r), headers, await this.payingFetch(options.rail));
        const out = await this.entryOf(res, r);
        if (out.entry.attested !== true)
            throw new VerificationError("bad-format", "a paid report-in is attested", "attested");
        return out;
    }
    /** `GET /vow/<id>`, verified (`conduct.vow_page/v1`): the vow, its chain in brief, its trajectory. */
    async vow(id) {
        return this.getSigned(`/vow/${encodeURIComponent(id)}`, "conduct.vow_page/v1");
    }
    /**
     * The vow's complete chain (`/vow/<id>/chain` and its pages), every record verified and every
     * link checked ({@link verifyChain}). From a `conduct.chain/v2` head it follows the links: the
     * head's `last_page` (`/vow/<id>/chain/<n−1>`), then each page's predecessor by its
     * `prev_page_sha256`, down to page 0, each page fetched once and checked against the hash
     * pinning it; from a `conduct.chain/v1` head, each page its `pages` pins. A page the head
     * reaches that the service does not have (404) is a `missing-file` {@link VerificationError}.
     */
    async chain(id) {
        const base = `/vow/${encodeURIComponent(id)}/chain`;
        const head = await this.bytes(await this.send("GET", base));
        const chain = await verifyChain(head, async (k) => {
            try {
                return await this.bytes(await this.send("GET", `${base}/${k}`));
            }
            catch (e) {
                if (e instanceof ProblemError && e.status === 404)
                    return undefined;
                throw e;
            }
        }, this.key);
        if (chain.vow.vow_id !== id)
            throw new VerificationError("bad-chain", `the chain of ${String(chain.vow.vow_id)}`, base);
        return chain;
    }
    /**
     * `GET /vow/<id>/reading`, verified (`conduct.reading/v1`): the trajectory and its
     * interpretation (guidance, never a verdict; VOWS.md, "Readings").
     */
    async reading(id) {
        const doc = await this.getSigned(`/vow/${encodeURIComponent(id)}/reading`, "conduct.reading/v1");
        if (doc.vow_id !== id)
            throw new VerificationError("bad-format", "the reading of another vow", "vow_id");
        return doc;
    }
    /**
     * `GET /vows`, verified ({@link verifyVowsHead}): the head of the index of vows
     * (`conduct.vows/v2`): how many vows, the last full page pinned by hash, and the newest vows
     * (`tail`), in the order taken. {@link ConductClient.allVows} reads every vow.
     */
    async vows() {
        const bytes = await this.bytes(await this.send("GET", "/vows"));
        try {
            return verifyVowsHead(bytes, this.key);
        }
        catch (e) {
            throw e instanceof VerificationError ? e.at("/vows") : e;
        }
    }
    /**
     * `GET /vows/<k>`, verified ({@link verifyVowsPage}): full page `k` of the index of vows
     * (`conduct.vows_page/v1`), the vows taken `256k .. 256k+255`. Only
     * {@link ConductClient.allVows} checks a page's bytes against the pin naming it.
     */
    async vowsPage(k) {
        const path = `/vows/${k}`;
        const bytes = await this.bytes(await this.send("GET", path));
        try {
            return verifyVowsPage(bytes, this.key, { page: k });
        }
        catch (e) {
            throw e instanceof VerificationError ? e.at(path) : e;
        }
    }
    /**
     * Every vow, in the order taken, oldest first: the head (`GET /vows`), then each full page
     * walking back from its `last_page` pin through each page's `prev`, each page's bytes as served
     * checked against the SHA-256 pinning them and then verified ({@link verifyVowsIndex}).
     */
    async allVows() {
        const head = await this.bytes(await this.send("GET", "/vows"));
        const index = await verifyVowsIndex(head, async (k) => this.bytes(await this.send("GET", `/vows/${k}`)), this.key);
        return index.vows;
    }
    // ---- lookups ---------------------------------------------------------------------------
    /** `GET /registry`, verified (`conduct.registry/v1`): the ERC-8257 tool registry as followed (library/REGISTRY.md). */
    async registry() {
        return this.getSigned("/registry", "conduct.registry/v1");
    }
    /** `GET /registry/tool/<id>`, verified: one registry tool. */
    async registryTool(id) {
        return this.getSigned(`/registry/tool/${encodeURIComponent(String(id))}`);
    }
    /** `GET /munus`, verified (`conduct.munus/v1`): the quest board (library/MUNUS.md). */
    async munus() {
        return this.getSigned("/munus", "conduct.munus/v1");
    }
    /** `GET /munus/<id>`, verified: one quest. */
    async quest(id) {
        return this.getSigned(`/munus/${encodeURIComponent(id)}`);
    }
    /** `GET /card?key=`, verified: the card of an agent name, npub, vow id or wallet. */
    async card(key) {
        return this.getSigned(`/card?${this.query({ key })}`);
    }
    /** `GET /who?handle=`, verified: a wallet's or agent name's vows and tools. */
    async who(handle) {
        return this.getSigned(`/who?${this.query({ handle })}`);
    }
}
/** The RFC 8785 bytes of a record: its leaf in the log (VOWS.md, "Record formats"). */
export function leafBytes(record) {
    return canonicalBytes(record);
}
/** Parse bytes as JSON strictly (no duplicate members), for answers the kit does not verify. */
export function readJson(bytes) {
    return parseJson(bytes);
}
