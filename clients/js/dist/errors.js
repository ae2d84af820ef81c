/**
 * The kit's two error classes: {@link VerificationError} (something the service signed does
 * not verify) and {@link ProblemError} (the service refused a request with an RFC 9457 problem
 * document, library/ERRORS.md).
 *
 * @module
 */
/**
 * A signed object, note, proof or file does not verify. `code` says what failed, `path` names
 * the file or member at fault when there is one, and `message` says it in words.
 */
export class VerificationError extends Error {
    /** What failed. */
    code;
    /** The file (a path of the tree) or the JSON member at fault, when known. */
    path;
    /**
     * @param code - what failed
     * @param message - the reason, in words
     * @param path - the file or member at fault, when known
     */
    constructor(code, message, path) {
        super(path === undefined ? message : `${path}: ${message}`);
        this.name = "VerificationError";
        this.code = code;
        this.path = path;
    }
    /** The same failure, said of `path` (the file it was found in), unless it already names one. */
    at(path) {
        if (this.path !== undefined)
            return this;
        return new VerificationError(this.code, this.message, path);
    }
}
/**
 * The service refused a request: an RFC 9457 `application/problem+json` answer
 * (library/ERRORS.md). `type` is the problem type (a URI reference such as
 * `/library/ERRORS.md#invalid`); {@link ProblemError.kind} is its short name (`invalid`).
 */
export class ProblemError extends Error {
    /** The problem type, a URI reference (`/library/ERRORS.md#invalid`). */
    type;
    /** A short summary of the problem type. */
    title;
    /** The HTTP status code. */
    status;
    /** What was wrong with this request. */
    detail;
    /** The request path the problem is about, when given. */
    instance;
    /** The fields at fault, each with its JSON pointer (at most 20 are listed by the service). */
    errors;
    /** The whole problem document, with any extension members (`scope`, ...). */
    body;
    /** `Retry-After`, in seconds, when the answer carried one (429, 503). */
    retryAfter;
    /**
     * @param body - the parsed problem document
     * @param status - the HTTP status (used when the body has none)
     * @param retryAfter - the `Retry-After` header in seconds, if any
     */
    constructor(body, status, retryAfter) {
        const type = typeof body.type === "string" ? body.type : "about:blank";
        const title = typeof body.title === "string" ? body.title : `HTTP ${status}`;
        const detail = typeof body.detail === "string" ? body.detail : "";
        super(`${status} ${title}${detail ? `: ${detail}` : ""}`);
        this.name = "ProblemError";
        this.type = type;
        this.title = title;
        this.status = typeof body.status === "number" ? body.status : status;
        this.detail = detail;
        this.instance = typeof body.instance === "string" ? body.instance : undefined;
        this.errors = Array.isArray(body.errors)
            ? body.errors.filter((e) => typeof e === "object" && e !== null && typeof e.pointer === "string" && typeof e.detail === "string")
            : [];
        this.body = body;
        this.retryAfter = retryAfter;
    }
    /** The problem type's short name: the fragment of `type` (`invalid` for `/library/ERRORS.md#invalid`). */
    get kind() {
        const i = this.type.lastIndexOf("#");
        return i >= 0 ? this.type.slice(i + 1) : this.type;
    }
    /** The JSON pointers of the fields at fault, in the order the service gave them. */
    get pointers() {
        return this.errors.map((e) => e.pointer);
    }
}
/**
 * A paid call was not paid: the answer stayed `402 Payment Required` (no payer was configured,
 * or the payment was refused). `reason` is the challenge's `error` (library/PAYMENTS.md), and
 * `challenge` the decoded `PAYMENT-REQUIRED` header.
 */
export class PaymentRequiredError extends Error {
    /** The refusal's reason, from the challenge's `error` (e.g. `payment_already_used`). */
    reason;
    /** The decoded `PAYMENT-REQUIRED` challenge (x402 v2), when it could be read. */
    challenge;
    /** The decoded `PAYMENT-RESPONSE` header of a failed settlement, when there is one. */
    paymentResponse;
    /**
     * @param challenge - the decoded challenge, if any
     * @param paymentResponse - the decoded failed settlement, if any
     */
    constructor(challenge, paymentResponse) {
        const reason = typeof challenge?.error === "string" ? challenge.error : undefined;
        super(`402 Payment Required${reason ? `: ${reason}` : ""}`);
        this.name = "PaymentRequiredError";
        this.reason = reason;
        this.challenge = challenge;
        this.paymentResponse = paymentResponse;
    }
}
