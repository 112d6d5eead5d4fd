"""GitHub webhook signatures (`X-Hub-Signature-256`): HMAC-SHA256 of the raw body, compared in constant time.

Only the SHA-256 header is accepted: the legacy SHA-1 `X-Hub-Signature` is never a substitute, so a
request that carries only that header is rejected like an unsigned one.
"""

from __future__ import annotations

import hashlib
import hmac

PREFIX = "sha256="


def sign(secret: str | bytes, body: bytes) -> str:
    """The header value GitHub sends for `body`: `sha256=<hex>`."""
    key = secret.encode("utf-8") if isinstance(secret, str) else secret
    return PREFIX + hmac.new(key, body, hashlib.sha256).hexdigest()


def verify(secret: str | bytes, body: bytes, header: str | None) -> bool:
    """True only for a well-formed `sha256=` header whose digest matches; never raises."""
    if not header or not header.startswith(PREFIX):
        return False
    given = header[len(PREFIX) :].strip().lower()
    if len(given) != 64:
        return False
    expected = sign(secret, body)[len(PREFIX) :]
    return hmac.compare_digest(given.encode("ascii", "replace"), expected.encode("ascii"))
