/**
 * The kit's two error classes: {@link VerificationError} (something the service signed does
 * not verify) and {@link ProblemError} (the service refused a request with an RFC 9457 problem
 * document, library/ERRORS.md).
 *
 * @module
 */

/** What failed, as a stable code a program can branch on. */
export type VerificationCode =
  /** The bytes are not one well-formed JSON document (or not UTF-8, or hold a duplicate key). */
  | "not-json"
  /** The document is JSON but not the shape its format requires (a member missing or mistyped). */
  | "bad-format"
  /** The pinned key (a C2SP vkey) cannot be read, or its key id does not match its key. */
  | "bad-key"
  /** The object's `key_id` (or the note's key hash) names another key than the pinned one. */
  | "key-id-mismatch"
  /** The signature is missing, not base64 of 64 bytes, or does not verify. */
  | "bad-signature"
  /** The scope statement of a `conduct.*` object is missing or not the four statements. */
  | "scope"
  /** The object has another `type` than the one expected. */
  | "wrong-type"
  /** A hash the document commits to does not match (a trace, a file, a chain link, a page). */
  | "hash-mismatch"
  /**
   * The `meter` block names a meter the kit does not know, or another than the one asked for,
   * or is not exactly its meter's block; or a `profile` quantity does not have its meter's shape.
   */
  | "meter"
  /** A Merkle inclusion proof does not lead to the checkpoint's root. */
  | "bad-proof"
  /** The checkpoint names another log than the pinned key's. */
  | "wrong-origin"
  /** A vow chain is broken: `seq`, `prev`, `vow_id`, `at` or `log_index` out of order. */
  | "bad-chain"
  /** The manifest's root has expired. */
  | "expired"
  /** A file the manifest lists, or a page a chain head reaches, is missing (or its length differs). */
  | "missing-file"
  /** A copy holds a file the manifest does not list (or a dotfile, an unnamed bin, a chain page no listed head reaches). */
  | "unlisted-file";

/**
 * A signed object, note, proof or file does not verify. `code` says what failed, `path` names
 * the file or member at fault when there is one, and `message` says it in words.
 */
export class VerificationError extends Error {
  /** What failed. */
  readonly code: VerificationCode;
  /** The file (a path of the tree) or the JSON member at fault, when known. */
  readonly path: string | undefined;

  /**
   * @param code - what failed
   * @param message - the reason, in words
   * @param path - the file or member at fault, when known
   */
  constructor(code: VerificationCode, message: string, path?: string) {
    super(path === undefined ? message : `${path}: ${message}`);
    this.name = "VerificationError";
    this.code = code;
    this.path = path;
  }

  /** The same failure, said of `path` (the file it was found in), unless it already names one. */
  at(path: string): VerificationError {
    if (this.path !== undefined) return this;
    return new VerificationError(this.code, this.message, path);
  }
}

/** One field at fault in a problem document: an RFC 6901 pointer into the request and why. */
export interface ProblemField {
  /** RFC 6901 JSON pointer into the request body (`""` is the whole body; `?key` a query parameter). */
  pointer: string;
  /** What is wrong with it. */
  detail: string;
}

/** An RFC 9457 problem document as the service sends it (library/ERRORS.md). */
export interface ProblemDocument {
  type?: string;
  title?: string;
  status?: number;
  detail?: string;
  instance?: string;
  errors?: ProblemField[];
  [member: string]: unknown;
}

/**
 * The service refused a request: an RFC 9457 `application/problem+json` answer
 * (library/ERRORS.md). `type` is the problem type (a URI reference such as
 * `/library/ERRORS.md#invalid`); {@link ProblemError.kind} is its short name (`invalid`).
 */
export class ProblemError extends Error {
  /** The problem type, a URI reference (`/library/ERRORS.md#invalid`). */
  readonly type: string;
  /** A short summary of the problem type. */
  readonly title: string;
  /** The HTTP status code. */
  readonly status: number;
  /** What was wrong with this request. */
  readonly detail: string;
  /** The request path the problem is about, when given. */
  readonly instance: string | undefined;
  /** The fields at fault, each with its JSON pointer (at most 20 are listed by the service). */
  readonly errors: ProblemField[];
  /** The whole problem document, with any extension members (`scope`, ...). */
  readonly body: ProblemDocument;
  /** `Retry-After`, in seconds, when the answer carried one (429, 503). */
  readonly retryAfter: number | undefined;

  /**
   * @param body - the parsed problem document
   * @param status - the HTTP status (used when the body has none)
   * @param retryAfter - the `Retry-After` header in seconds, if any
   */
  constructor(body: ProblemDocument, status: number, retryAfter?: number) {
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
      ? body.errors.filter(
          (e): e is ProblemField =>
            typeof e === "object" && e !== null && typeof e.pointer === "string" && typeof e.detail === "string",
        )
      : [];
    this.body = body;
    this.retryAfter = retryAfter;
  }

  /** The problem type's short name: the fragment of `type` (`invalid` for `/library/ERRORS.md#invalid`). */
  get kind(): string {
    const i = this.type.lastIndexOf("#");
    return i >= 0 ? this.type.slice(i + 1) : this.type;
  }

  /** The JSON pointers of the fields at fault, in the order the service gave them. */
  get pointers(): string[] {
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
  readonly reason: string | undefined;
  /** The decoded `PAYMENT-REQUIRED` challenge (x402 v2), when it could be read. */
  readonly challenge: Record<string, unknown> | undefined;
  /** The decoded `PAYMENT-RESPONSE` header of a failed settlement, when there is one. */
  readonly paymentResponse: Record<string, unknown> | undefined;

  /**
   * @param challenge - the decoded challenge, if any
   * @param paymentResponse - the decoded failed settlement, if any
   */
  constructor(challenge?: Record<string, unknown>, paymentResponse?: Record<string, unknown>) {
    const reason = typeof challenge?.error === "string" ? challenge.error : undefined;
    super(`402 Payment Required${reason ? `: ${reason}` : ""}`);
    this.name = "PaymentRequiredError";
    this.reason = reason;
    this.challenge = challenge;
    this.paymentResponse = paymentResponse;
  }
}
