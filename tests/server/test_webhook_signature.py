"""X-Hub-Signature-256: GitHub's documented test vector, and everything that must not verify."""

from __future__ import annotations

import pytest

from adr_review.core.webhook_signature import sign, verify

SECRET = "It's a Secret to Everybody"
BODY = b"Hello, World!"
EXPECTED = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"


def test_github_docs_test_vector() -> None:
    assert sign(SECRET, BODY) == EXPECTED
    assert verify(SECRET, BODY, EXPECTED)


@pytest.mark.parametrize(
    ("body", "header", "why"),
    [
        (b"Hello, World?", EXPECTED, "tampered body"),
        (BODY, None, "missing header"),
        (BODY, "", "empty header"),
        (BODY, EXPECTED.replace("sha256=", "sha1="), "sha1 prefix"),
        (BODY, "sha1=" + "0" * 40, "a SHA-1 signature is never accepted"),
        (BODY, EXPECTED[:-1], "truncated digest"),
        (BODY, EXPECTED[:-1] + "f", "one digit off"),
        (BODY, "sha256=" + "z" * 64, "not hex"),
        (BODY, EXPECTED.replace("sha256=", ""), "no prefix"),
        (BODY, sign("another secret", BODY), "other secret"),
    ],
)
def test_rejects(body: bytes, header: str | None, why: str) -> None:
    assert not verify(SECRET, body, header), why


def test_uppercase_hex_is_the_same_digest() -> None:
    assert verify(SECRET, BODY, "sha256=" + EXPECTED.removeprefix("sha256=").upper())


def test_bytes_secret_equals_str_secret() -> None:
    assert sign(SECRET.encode(), BODY) == sign(SECRET, BODY)
