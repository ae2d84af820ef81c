"""Offline: problem documents become typed exceptions (library/ERRORS.md), served by a mock
transport of httpx (the live suite checks the real service's)."""

from __future__ import annotations

import base64
import json

import httpx
import pytest

from conduct_kit import PaymentError, PinnedKey, ProblemError, UnexpectedResponseError
from conduct_kit.client import Client

PROBLEM = {"type": "/library/ERRORS.md#invalid", "title": "The request does not satisfy the schema",
           "status": 422, "detail": "/turns/17/context/monitored: flag value must be 0 or 1 (got 2)",
           "instance": "/demo/profile",
           "errors": [{"pointer": "/turns/17/context/monitored", "detail": "flag value must be 0 or 1 (got 2)"}]}


def _client(fkey: PinnedKey, handler: object) -> Client:
    return Client("http://service.test", vkey=fkey, http=httpx.Client(transport=httpx.MockTransport(handler)))  # type: ignore[arg-type]


def test_a_problem_document_is_raised_with_its_fields(fkey: PinnedKey) -> None:
    def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(422, json=PROBLEM, headers={"content-type": "application/problem+json"})

    with pytest.raises(ProblemError) as e:
        _client(fkey, handler).demo_profile({"context_key": "monitored", "turns": []})
    p = e.value
    assert (p.type, p.name, p.status, p.title) == (PROBLEM["type"], "invalid", 422, PROBLEM["title"])
    assert p.detail == PROBLEM["detail"] and p.instance == "/demo/profile"
    assert p.pointers == ["/turns/17/context/monitored"]
    assert p.errors[0].detail == "flag value must be 0 or 1 (got 2)"
    assert "invalid" in str(p) and "/turns/17/context/monitored" in str(p)


def test_retry_after_is_kept(fkey: PinnedKey) -> None:
    def handler(req: httpx.Request) -> httpx.Response:
        doc = {"type": "/library/ERRORS.md#rate-limited", "title": "t", "status": 429, "detail": "cap"}
        return httpx.Response(429, json=doc, headers={"content-type": "application/problem+json", "retry-after": "42"})

    with pytest.raises(ProblemError) as e:
        _client(fkey, handler).demo_profile({"context_key": "monitored", "turns": []})
    assert e.value.name == "rate-limited" and e.value.retry_after == 42.0 and e.value.errors == []


def test_a_402_without_a_payer_carries_the_challenge_reason(fkey: PinnedKey) -> None:
    challenge = base64.b64encode(json.dumps({"x402Version": 2, "error": "payment required", "accepts": []}).encode())

    def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(402, content=b"", headers={"payment-required": challenge.decode()})

    with pytest.raises(PaymentError) as e:
        _client(fkey, handler).profile({"context_key": "monitored", "turns": []})
    assert e.value.reason == "payment required"


def test_an_answer_that_is_neither_is_unexpected(fkey: PinnedKey) -> None:
    def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(500, content=b"oops")

    with pytest.raises(UnexpectedResponseError) as e:
        _client(fkey, handler).predicates()
    assert e.value.status == 500 and e.value.body == b"oops"


def test_a_signed_answer_that_does_not_verify_is_never_returned(fkey: PinnedKey) -> None:
    from conduct_kit import SignatureError

    from conftest import fixture_json

    att = fixture_json("attestation.json")
    att["n_turns"] += 1

    def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=att)

    with pytest.raises(SignatureError):
        _client(fkey, handler).profile({"context_key": "monitored", "turns": []})
