"""A client of a conduct service that verifies every signed answer before returning it.

>>> from conduct_kit import Client, Payer
>>> c = Client("https://conduct.example", vkey=PINNED_VKEY,
...            payer=Payer(PRIVATE_KEY))                       # doctest: +SKIP
>>> att = c.profile(trace)                                      # doctest: +SKIP

- Free calls: :meth:`Client.demo_profile`, :meth:`Client.take_vow`,
  :meth:`Client.report_in` (``paid=False``), every read.
- Paid calls (x402 v2; library/PAYMENTS.md): :meth:`Client.profile`,
  :meth:`Client.report_in` (``paid=True``), :meth:`Client.validation`. They are paid by the
  stock ``x402`` client from PyPI (the ``pay`` extra) through a :class:`Payer`.
- Every call that measures (:meth:`Client.profile`, :meth:`Client.demo_profile`,
  :meth:`Client.validation`, :meth:`Client.report_in`) takes ``meter`` (``"meter/1"`` or
  ``"meter/2"``; without it the service measures with ``meter/2``) and checks that the answer
  names the meter asked for, or, without it, one the kit knows.
- Refusals raise :class:`~conduct_kit.errors.ProblemError` (RFC 9457; library/ERRORS.md);
  a signed answer that does not verify raises a
  :class:`~conduct_kit.errors.VerificationError`.
"""

from __future__ import annotations

import base64
import json
from typing import Any, Literal, Mapping, Sequence

import httpx

from ._codec import JsonObject, parse_json, parse_object
from .errors import (
    HashMismatchError,
    KeyMismatchError,
    MalformedError,
    PaymentError,
    ProblemError,
    UnexpectedResponseError,
)
from .keys import KeyLike, PinnedKey
from .manifest import HttpSource, ManifestReport, verify_manifest
from .meter import check_meter
from .signed import trace_sha256, verify_attestation, verify_credential, verify_openapi, verify_signed
from .tlog import Checkpoint, InclusionProof, verify_checkpoint, verify_inclusion
from .vows import (
    verify_chain_files,
    verify_chain_head,
    verify_chain_page,
    verify_entry,
    verify_vow_record,
    verify_vows_files,
    verify_vows_head,
    verify_vows_page,
)

__all__ = ["Client", "Payer", "Rail"]

Rail = Literal["eip3009", "permit2"]
"""The two ``exact`` rails: EIP-3009 through a facilitator, or Permit2 (self-hosted)."""


class Payer:
    """Pays x402 v2 challenges with the stock PyPI ``x402`` client (``exact`` scheme on EVM).

    Args:
        private_key: the paying wallet's key (hex). It signs payment authorizations locally;
            it is never sent anywhere.
        rail: pay only on this rail (``"eip3009"``: ``exact`` + EIP-3009 through a
            facilitator; ``"permit2"``: ``exact`` + Permit2, which needs a one-time
            ``approve(Permit2)`` of the token). ``None`` takes the first rail offered.
        max_amount: refuse to sign for more than this many base units of the token.
        asset: the token to pay with, when it is not one of the x402 client's default assets
            (a test token, say): the x402 client's spend controls refuse any other token.
            Needs ``network``.
        network: the CAIP-2 network of ``asset`` (``eip155:8453``, ...).
    """

    def __init__(
        self,
        private_key: str,
        *,
        rail: Rail | None = None,
        max_amount: int | None = None,
        asset: str | None = None,
        network: str | None = None,
    ) -> None:
        try:
            from eth_account import Account
            from x402 import x402ClientSync
            from x402.http import x402HTTPClientSync
            from x402.mechanisms.evm.exact import ExactEvmScheme
        except ImportError as e:  # pragma: no cover - depends on the install
            raise ImportError("paying needs the 'pay' extra: pip install 'conduct-kit[pay]'") from e
        self.account = Account.from_key(private_key)
        self.rail = rail
        self.max_amount = max_amount

        def select(version: int, reqs: Sequence[Any]) -> Any:
            for r in reqs:
                method = (r.extra or {}).get("assetTransferMethod")
                is_p2 = method == "permit2"
                if rail is None or (rail == "permit2") == is_p2:
                    if max_amount is not None and int(r.amount) > max_amount:
                        continue
                    return r
            raise PaymentError(
                f"no offered rail fits (rail={rail}, max_amount={max_amount})",
                reason="no_matching_rail",
            )

        client = x402ClientSync(payment_requirements_selector=select)
        client.register(network or "eip155:*", ExactEvmScheme(signer=self.account))
        if asset is not None:
            if network is None:
                raise ValueError("an asset is named with its network (CAIP-2, e.g. eip155:8453)")
            allowed: Any = {"network": network, "asset": asset}
            if max_amount is not None:
                allowed["max_amount_per_payment"] = str(max_amount)
            controls: Any = {"allowed_assets": [allowed]}
            client.set_spend_controls(controls)
        self._http = x402HTTPClientSync(client)

    @property
    def address(self) -> str:
        """The paying wallet's address (EIP-55)."""
        return str(self.account.address)

    def headers_for(self, response: httpx.Response) -> dict[str, str]:
        """The payment headers answering a 402 ``response`` (its ``PAYMENT-REQUIRED``)."""
        body: Any = None
        if response.content:
            try:
                body = response.json()
            except ValueError:
                body = None
        required = self._http.get_payment_required_response(response.headers.get, body)
        payload = self._http.create_payment_payload(required)
        return dict(self._http.encode_payment_signature_header(payload))


def _challenge(response: httpx.Response) -> JsonObject:
    raw = response.headers.get("payment-required")
    if not raw:
        return {}
    try:
        doc = json.loads(base64.b64decode(raw))
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}


def _receipt(response: httpx.Response) -> JsonObject | None:
    raw = response.headers.get("payment-response") or response.headers.get("x-payment-response")
    if not raw:
        return None
    try:
        doc = json.loads(base64.b64decode(raw))
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


class Client:
    """A conduct service at ``url``, whose answers are verified against the pinned ``vkey``.

    Args:
        url: the service's base URL.
        vkey: the pinned key (the ``vkey`` of ``GET /pubkey``, obtained once from a channel you
            trust, or a :class:`~conduct_kit.keys.PinnedKey`).
        payer: pays the paid calls (:class:`Payer`); without one a paid call raises
            :class:`~conduct_kit.errors.PaymentError` with the challenge.
        timeout: seconds for each HTTP request.
        http: an ``httpx.Client`` to use instead of a new one.

    After each call, :attr:`last_response` is the HTTP response and :attr:`last_receipt` the
    decoded ``PAYMENT-RESPONSE`` of a paid call (``success``, ``transaction``, ``network``,
    ``payer``), else ``None``.
    """

    def __init__(
        self,
        url: str,
        *,
        vkey: KeyLike,
        payer: Payer | None = None,
        timeout: float = 60.0,
        http: httpx.Client | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.key = PinnedKey.parse(vkey)
        self.payer = payer
        self.http = http or httpx.Client(timeout=timeout, headers={"Accept": "application/json"})
        self.last_response: httpx.Response | None = None
        self.last_receipt: JsonObject | None = None

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self.http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- HTTP ---------------------------------------------------------------------------

    def _raise_for(self, r: httpx.Response, ok: tuple[int, ...]) -> None:
        if r.status_code in ok:
            return
        ctype = r.headers.get("content-type", "")
        retry = r.headers.get("retry-after")
        retry_after = float(retry) if retry and retry.replace(".", "", 1).isdigit() else None
        if "json" in ctype and r.content:
            try:
                doc = r.json()
            except ValueError:
                doc = None
            if isinstance(doc, dict) and "type" in doc:
                raise ProblemError(doc, r.status_code, retry_after)
        if r.status_code == 402:
            ch = _challenge(r)
            raise PaymentError(
                f"{r.request.url.path}: payment required ({ch.get('error') or 'no payer'})",
                reason=ch.get("error"),
                settlement=_receipt(r),
            )
        raise UnexpectedResponseError(
            f"{r.request.method} {r.request.url.path} answered {r.status_code}", r.status_code, r.content
        )

    def _request(
        self,
        method: str,
        path: str,
        *,
        ok: tuple[int, ...] = (200,),
        params: Mapping[str, Any] | None = None,
        json_body: Any = None,
        headers: Mapping[str, str] | None = None,
        pay: bool = False,
    ) -> httpx.Response:
        kwargs: dict[str, Any] = {"params": params, "headers": dict(headers or {})}
        if json_body is not None:
            kwargs["content"] = json.dumps(json_body, ensure_ascii=False).encode("utf-8")
            kwargs["headers"]["Content-Type"] = "application/json"
        r = self.http.request(method, self.url + path, **kwargs)
        self.last_receipt = None
        if r.status_code == 402 and pay:
            if self.payer is None:
                self.last_response = r
                self._raise_for(r, ok)
            assert self.payer is not None
            try:
                extra = self.payer.headers_for(r)
            except PaymentError:
                raise
            except Exception as e:  # the x402 client's own refusals (spend controls, ...)
                raise PaymentError(f"{path}: cannot pay the challenge: {e}", reason=_challenge(r).get("error")) from e
            kwargs["headers"].update(extra)
            r = self.http.request(method, self.url + path, **kwargs)
            self.last_receipt = _receipt(r)
            if r.status_code == 402:
                self.last_response = r
                ch = _challenge(r)
                raise PaymentError(
                    f"{path}: payment refused: {ch.get('error', 'no reason given')}",
                    reason=ch.get("error"),
                    settlement=self.last_receipt,
                )
        self.last_response = r
        self._raise_for(r, ok)
        return r

    def _signed(self, path: str, expected_type: str | None = None, *, params: Mapping[str, Any] | None = None) -> JsonObject:
        r = self._request("GET", path, params=params)
        return verify_signed(r.content, self.key, expected_type=expected_type, subject=path)

    # -- the key ------------------------------------------------------------------------

    def pubkey(self) -> JsonObject:
        """``GET /pubkey``, verified, and checked to be the pinned key (a service that now
        serves another key raises :class:`~conduct_kit.errors.KeyMismatchError`)."""
        r = self._request("GET", "/pubkey")
        doc = parse_object(r.content, "/pubkey")
        served = PinnedKey.from_pubkey_doc(doc)
        if served != self.key:
            raise KeyMismatchError("/pubkey", f"serves {served.vkey}, not the pinned {self.key.vkey}")
        return verify_signed(r.content, self.key, expected_type="conduct.pubkey/v1", subject="/pubkey")

    # -- profiles -----------------------------------------------------------------------

    def profile(
        self,
        trace: Mapping[str, Any],
        *,
        predicate: Mapping[str, str] | None = None,
        meter: str | None = None,
        idempotency_key: str | None = None,
    ) -> JsonObject:
        """``POST /profile`` (paid): the signed attestation of ``trace``, verified (signature,
        key id, type, ``trace_sha256`` against ``trace``, and the meter block). With
        ``predicate`` (``{"metric", "band"}``), the disclosure mode: the attestation signs the
        predicate instead of the profile. With ``meter`` (``"meter/1"`` or ``"meter/2"``), the
        service measures with that meter and the attestation must name it."""
        body: dict[str, Any] = {"context_key": trace["context_key"], "turns": trace["turns"]}
        if predicate is not None:
            body["disclosure"] = {"predicate": dict(predicate)}
        if meter is not None:
            body["meter"] = meter
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        r = self._request("POST", "/profile", json_body=body, headers=headers, pay=True)
        return verify_attestation(r.content, self.key, trace=trace, meter=meter)

    def demo_profile(self, trace: Mapping[str, Any], *, meter: str | None = None) -> JsonObject:
        """``POST /demo/profile`` (free, capped per IP a day): the same profile, unsigned.
        Its ``trace_sha256`` is checked against ``trace``, and its meter block and the shape
        of its quantities as an attestation's (with ``meter``, the meter asked for); nothing
        else can be."""
        body: dict[str, Any] = {"context_key": trace["context_key"], "turns": trace["turns"]}
        if meter is not None:
            body["meter"] = meter
        r = self._request("POST", "/demo/profile", json_body=body)
        doc = parse_object(r.content, "demo profile")
        if doc.get("type") != "conduct.attestation/v1":
            raise MalformedError("demo profile", f"type {doc.get('type')!r}")
        if doc.get("trace_sha256") != trace_sha256(trace):
            raise HashMismatchError("demo profile", "trace_sha256 is not the hash of the trace sent")
        check_meter(doc, "demo profile", meter=meter)
        return doc

    def predicates(self) -> JsonObject:
        """``GET /predicates``: the posted metrics and bands, verified."""
        return self._signed("/predicates", "conduct.predicates/v1")

    def validation(
        self,
        trace: Mapping[str, Any],
        *,
        metric: str,
        band: str,
        subject_form: str,
        subject_id: str,
        meter: str | None = None,
        idempotency_key: str | None = None,
    ) -> JsonObject:
        """``POST /erc8004/validation`` (paid): an ERC-8004 validation credential. The whole
        answer is returned after the credential is verified (signature, key id, type,
        ``trace_sha256``, the meter block: with ``meter``, the meter asked for) and
        ``credential_hash`` is checked to be ``keccak256(JCS(credential))``
        (library/ERC8004.md)."""
        body: dict[str, Any] = {
            "trace": {"context_key": trace["context_key"], "turns": trace["turns"]},
            "predicate": {"metric": metric, "band": band},
            "subject": {"form": subject_form, "id": subject_id},
        }
        if meter is not None:
            body["meter"] = meter
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        r = self._request("POST", "/erc8004/validation", json_body=body, headers=headers, pay=True)
        answer = parse_object(r.content, "validation answer")
        verify_credential(answer, self.key, trace=trace, meter=meter)
        return answer

    # -- vows ---------------------------------------------------------------------------

    def vow_message(self, text: str, agent: str, cadence_hours: float, *, sealed: bool = False) -> str:
        """``GET /vow/message``: the exact text a wallet signs (EIP-191) to take this vow."""
        params: dict[str, Any] = {"text": text, "agent": agent, "cadence_hours": _num(cadence_hours)}
        if sealed:
            params["sealed"] = "true"
        return self._request("GET", "/vow/message", params=params, headers={"Accept": "text/plain"}).text

    def take_vow(
        self,
        text: str,
        agent: str,
        cadence_hours: float,
        *,
        wallet_key: str | None = None,
        sealed: bool = False,
    ) -> JsonObject:
        """``POST /vow`` (free): take a vow and return its record, verified. With
        ``wallet_key``, the wallet signs the text of :meth:`vow_message` (EIP-191, locally)
        and the vow is wallet-signed; without it, the vow is permanently ``sandbox``."""
        body: dict[str, Any] = {"text": text, "agent": agent, "cadence_hours": cadence_hours}
        if sealed:
            body["sealed"] = True
        if wallet_key is not None:
            acct = _account(wallet_key)
            body["wallet"] = acct.address
            body["signature"] = _personal_sign(acct, self.vow_message(text, agent, cadence_hours, sealed=sealed))
        r = self._request("POST", "/vow", json_body=body, ok=(201,))
        doc = verify_vow_record(r.content, self.key)
        if doc.get("sealed") != sealed or doc.get("cadence_hours") != cadence_hours:
            raise MalformedError("vow record", "is not the vow asked for (sealed or cadence differ)")
        if not sealed and doc.get("text") != text:
            raise MalformedError("vow record", "its text is not the text sent")
        return doc

    def report_message(
        self,
        vow_id: str,
        trace: Mapping[str, Any],
        *,
        note: str | None = None,
        donate_trace: bool = False,
        meter: str | None = None,
    ) -> str:
        """``GET /vow/report/message``: the exact text the vow's wallet signs for a report-in
        (it binds the trace, the note, the donation choice and the meter; ``meter`` as the
        report-in will name it, absent for the service's default)."""
        params: dict[str, Any] = {"vow_id": vow_id, "trace_sha256": trace_sha256(trace)}
        if note is not None:
            params["note"] = note
        if donate_trace:
            params["donate_trace"] = "true"
        if meter is not None:
            params["meter"] = meter
        return self._request("GET", "/vow/report/message", params=params, headers={"Accept": "text/plain"}).text

    def report_in(
        self,
        vow_id: str,
        trace: Mapping[str, Any],
        *,
        note: str | None = None,
        donate_trace: bool = False,
        paid: bool = False,
        wallet_key: str | None = None,
        wait: int | None = None,
        meter: str | None = None,
        idempotency_key: str | None = None,
    ) -> JsonObject:
        """Report in on a vow: ``POST /vow/report/demo`` (free, ``attested: false``) or, with
        ``paid=True``, ``POST /vow/report`` (x402, ``attested: true``). Returns the signed
        entry, verified (signature, type, ``vow_id``, ``trace_sha256``, ``attested``, the meter
        block: with ``meter``, ``"meter/1"`` or ``"meter/2"``, the meter asked for).

        A wallet-signed vow takes report-ins its wallet proves: ``wallet_key`` signs the text
        of :meth:`report_message`; on the paid route the payer may prove it instead. ``wait``
        sends ``Prefer: wait=<seconds>`` (the vow's pages are written before the answer)."""
        body: dict[str, Any] = {"vow_id": vow_id, "context_key": trace["context_key"], "turns": trace["turns"]}
        if note is not None:
            body["note"] = note
        if donate_trace:
            body["donate_trace"] = True
        if meter is not None:
            body["meter"] = meter
        if wallet_key is not None:
            body["signature"] = _personal_sign(
                _account(wallet_key), self.report_message(vow_id, trace, note=note, donate_trace=donate_trace, meter=meter)
            )
        headers: dict[str, str] = {}
        if wait is not None:
            headers["Prefer"] = f"wait={wait}"
        if idempotency_key:
            headers["Idempotency-Key"] = idempotency_key
        path = "/vow/report" if paid else "/vow/report/demo"
        r = self._request("POST", path, json_body=body, headers=headers, ok=(200, 201), pay=paid)
        doc = verify_entry(r.content, self.key, trace=trace, meter=meter)
        if doc["vow_id"] != vow_id:
            raise MalformedError("entry", f"is an entry of {doc['vow_id']}, not {vow_id}")
        if doc["attested"] is not paid:
            raise MalformedError("entry", f"attested is {doc['attested']} on the {'paid' if paid else 'free'} route")
        return doc

    def vow(self, vow_id: str) -> JsonObject:
        """``GET /vow/<id>``: the vow's signed page (trajectory, windows, chain summary)."""
        return self._signed(f"/vow/{vow_id}", "conduct.vow_page/v1")

    def reading(self, vow_id: str) -> JsonObject:
        """``GET /vow/<id>/reading``: the signed reading and its interpretation (guidance,
        never a verdict)."""
        return self._signed(f"/vow/{vow_id}/reading", "conduct.reading/v1")

    def vows(self) -> JsonObject:
        """``GET /vows``: the head of the index of vows (``conduct.vows/v2``), verified: how many
        vows, the last full page pinned by hash, and the newest vows (``tail``), in the order
        taken. :meth:`all_vows` reads every vow."""
        return verify_vows_head(self._request("GET", "/vows").content, self.key)

    def vows_page(self, k: int) -> JsonObject:
        """``GET /vows/<k>``: full page ``k`` of the index of vows (``conduct.vows_page/v1``),
        verified: its signature, number, ``from``, its 256 vows in the order taken and its
        ``prev`` pin. (Only :meth:`all_vows` checks a page's bytes against the pin naming it.)"""
        return verify_vows_page(self._request("GET", f"/vows/{k}").content, self.key, page=k)

    def all_vows(self) -> list[JsonObject]:
        """Every vow, in the order taken, oldest first: the head (``GET /vows``), then each full
        page walking back from its ``last_page`` pin through each page's ``prev``, every page's
        bytes as served checked against the SHA-256 pinning it and then verified
        (:func:`~conduct_kit.vows.verify_vows_files`)."""
        head = self._request("GET", "/vows").content
        return verify_vows_files(head, lambda k: self._request("GET", f"/vows/{k}").content, self.key)

    def verify_text(self, vow_id: str, text: str) -> JsonObject:
        """``GET /vow/<id>/verify_text?text=``: whether ``text`` is the vow's (sealed) text."""
        return self._signed(f"/vow/{vow_id}/verify_text", "conduct.verify_text/v1", params={"text": text})

    def chain(self, vow_id: str) -> list[JsonObject]:
        """The vow's whole chain, verified (position 0 is the vow record): the signed head
        (``GET /vow/<id>/chain``), then each full page (``GET /vow/<id>/chain/<k>``), walking
        back from the head's ``last_page`` through each page's ``prev_page_sha256`` (a
        ``conduct.chain/v1`` head: each page it pins, in order), every page's bytes as served
        checked against the SHA-256 pinning them, then every record and link
        (:func:`~conduct_kit.vows.verify_chain_files`)."""
        head = self._request("GET", f"/vow/{vow_id}/chain").content
        return verify_chain_files(
            head, lambda k: self._request("GET", f"/vow/{vow_id}/chain/{k}").content, self.key, vow_id=vow_id
        )

    def chain_head(self, vow_id: str) -> JsonObject:
        """``GET /vow/<id>/chain``: the head of the vow's chain (``conduct.chain/v2``, or
        ``v1``), verified by itself (:func:`~conduct_kit.vows.verify_chain_head`): the newest
        records (``tail``, not checked here), the last full page pinned by hash."""
        return verify_chain_head(self._request("GET", f"/vow/{vow_id}/chain").content, self.key, vow_id=vow_id)

    def chain_page(self, vow_id: str, k: int) -> JsonObject:
        """``GET /vow/<id>/chain/<k>``: full page ``k`` of the vow's chain, verified by itself
        (:func:`~conduct_kit.vows.verify_chain_page`: signature, vow, number, 32 records, the
        ``prev_page_sha256`` pin). Only :meth:`chain` checks a page's bytes against the pin
        naming it, and its records."""
        data = self._request("GET", f"/vow/{vow_id}/chain/{k}").content
        return verify_chain_page(data, self.key, vow_id=vow_id, page=k)

    # -- the log ------------------------------------------------------------------------

    def checkpoint(self) -> Checkpoint:
        """``GET /log/checkpoint``, verified (signed note, origin the pinned key's name)."""
        return verify_checkpoint(self._request("GET", "/log/checkpoint").content, self.key)

    def proof(self, index: int) -> str:
        """``GET /log/proof/<index>``: the C2SP tlog-proof text of the record at ``index``."""
        return self._request("GET", f"/log/proof/{index}", headers={"Accept": "text/plain"}).text

    def inclusion(self, record: Mapping[str, Any], *, checkpoint: Checkpoint | None = None) -> InclusionProof:
        """Prove that a signed record (a vow, an entry, ...) is in the log: fetch the proof of
        its ``log_index`` and verify it from the record's leaf bytes to the root of a checkpoint
        signed by the pinned key (and, when given, that very ``checkpoint``)."""
        index = record.get("log_index")
        if not isinstance(index, int):
            raise MalformedError("record", "has no log_index")
        return verify_inclusion(self.proof(index), record, self.key, checkpoint=checkpoint)

    # -- the tree -----------------------------------------------------------------------

    def manifest(self, *, settle: float = 10.0) -> ManifestReport:
        """Verify the served tree's manifest and every file it lists, over HTTP (retrying for
        up to ``settle`` seconds while the service is mid-write)."""
        return verify_manifest(HttpSource(self.url, self.http), self.key, settle=settle)

    def openapi(self) -> JsonObject:
        """``GET /openapi.json``, verified by its ``x-signature``."""
        return verify_openapi(self._request("GET", "/openapi.json").content, self.key)

    # -- the registry and the quest board -----------------------------------------------

    def registry(self) -> JsonObject:
        """``GET /registry``: the ERC-8257 tool registry view (library/REGISTRY.md)."""
        return self._signed("/registry", "conduct.registry/v1")

    def registry_tool(self, tool_id: int | str) -> JsonObject:
        """``GET /registry/tool/<id>``: one tool's signed page."""
        return self._signed(f"/registry/tool/{tool_id}", "conduct.registry-tool/v1")

    def munus(self) -> JsonObject:
        """``GET /munus``: the quest board (library/MUNUS.md)."""
        return self._signed("/munus", "conduct.munus/v1")

    def quest(self, quest_id: str) -> JsonObject:
        """``GET /munus/<id>``: one quest's signed page."""
        return self._signed(f"/munus/{quest_id}", "conduct.munus-quest/v1")

    def health(self) -> JsonObject:
        """``GET /health`` (not signed: a live answer), whether the answer is 200 or 503."""
        r = self._request("GET", "/health", ok=(200, 503))
        doc = parse_json(r.content, "/health")
        if not isinstance(doc, dict):
            raise MalformedError("/health", "not a JSON object")
        return doc


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def _account(key: str) -> Any:
    try:
        from eth_account import Account
    except ImportError as e:  # pragma: no cover
        raise ImportError("wallet signatures need the 'pay' extra: pip install 'conduct-kit[pay]'") from e
    return Account.from_key(key)


def _personal_sign(account: Any, text: str) -> str:
    from eth_account.messages import encode_defunct

    sig = account.sign_message(encode_defunct(text=text)).signature.hex()
    return "0x" + str(sig).removeprefix("0x")
