"""App auth (JWT -> installation tokens, cached) and catch-up on start, against the fake GitHub server."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from app.adapters.github_app_auth import GitHubAppAuth, GitHubAppError, HookDelivery, load_private_key
from app.adapters.queue_store import QueueStore
from app.pipeline.catchup import catch_up, to_redeliver
from tests.fakes.github_server import FakeGitHubServer


def _keypair() -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return private, public


PRIVATE, PUBLIC = _keypair()


@pytest.fixture
def gh() -> Iterator[FakeGitHubServer]:
    with FakeGitHubServer(token_ttl_s=3600) as server:
        yield server


class Clock:
    def __init__(self) -> None:
        self.t = time.time()

    def __call__(self) -> float:
        return self.t


def test_app_jwt_is_rs256_signed_by_the_app_key_and_short_lived() -> None:
    clock = Clock()
    auth = GitHubAppAuth(123, PRIVATE, clock=clock)
    claims = jwt.decode(auth.app_jwt(), PUBLIC, algorithms=["RS256"], options={"verify_exp": False})
    assert claims["iss"] == "123"
    assert claims["iat"] < clock.t and claims["exp"] - claims["iat"] <= 600  # GitHub's 10-minute cap


def test_installation_tokens_are_cached_until_shortly_before_expiry(gh: FakeGitHubServer) -> None:
    clock = Clock()
    auth = GitHubAppAuth(1, PRIVATE, api_url=gh.base_url, clock=clock, refresh_margin_s=300)
    t1 = auth.installation_token(42)
    assert auth.installation_token(42) == t1
    other = auth.installation_token(43)
    assert other != t1 and gh.counters["tokens_minted"] == 2
    clock.t += 3600 - 301  # still outside the refresh margin
    assert auth.installation_token(42) == t1
    clock.t += 2  # now within 5 minutes of expiry: mint a new one
    t2 = auth.installation_token(42)
    assert t2 != t1 and gh.counters["tokens_minted"] == 3
    auth.close()


def test_token_cache_is_shared_by_threads(gh: FakeGitHubServer) -> None:
    auth = GitHubAppAuth(1, PRIVATE, api_url=gh.base_url)
    tokens: list[str] = []
    threads = [threading.Thread(target=lambda: tokens.append(auth.installation_token(7))) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(tokens)) == 1 and gh.counters["tokens_minted"] == 1
    auth.close()


def test_api_errors_raise_with_status(gh: FakeGitHubServer) -> None:
    auth = GitHubAppAuth(1, PRIVATE, api_url=gh.base_url)
    with pytest.raises(GitHubAppError) as err:
        auth.redeliver(999_999)
    assert err.value.status == 404
    auth.close()


def test_enterprise_base_url_is_used_verbatim(gh: FakeGitHubServer) -> None:
    auth = GitHubAppAuth(1, PRIVATE, api_url=gh.base_url + "/")
    assert auth.api_url == gh.base_url
    assert auth.app_info()["slug"] == "adr-review"
    auth.close()


def test_private_key_from_env_text_with_escaped_newlines() -> None:
    escaped = PRIVATE.strip().replace("\n", "\\n")
    assert load_private_key(key=escaped) == PRIVATE.strip() + "\n"
    with pytest.raises(GitHubAppError):
        load_private_key()


# -- catch-up --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    id: int
    guid: str
    delivered_at: str
    event: str
    ok: bool


NOW = 1_700_000_000.0


def at(seconds_ago: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(NOW - seconds_ago))


@pytest.mark.parametrize(
    ("rows", "stored", "expected"),
    [
        ([Row(1, "a", at(60), "pull_request", False)], set(), [1]),
        ([Row(1, "a", at(60), "pull_request", False)], {"a"}, []),  # we have it
        ([Row(1, "a", at(90), "pull_request", False), Row(2, "a", at(60), "pull_request", True)], set(), []),
        (
            [Row(1, "a", at(90), "pull_request", False), Row(2, "a", at(60), "pull_request", False)],
            set(),
            [2],
        ),
        ([Row(1, "a", at(60), "ping", False)], set(), []),  # not an event we handle
        ([Row(1, "a", at(4 * 86400), "pull_request", False)], set(), []),  # outside the window
        (
            [Row(1, "a", at(60), "issue_comment", False), Row(2, "b", at(50), "pull_request", False)],
            {"b"},
            [1],
        ),
    ],
)
def test_what_is_redelivered(rows: list[Row], stored: set[str], expected: list[int]) -> None:
    assert [r.id for r in to_redeliver(rows, stored, now=NOW, window_s=3 * 86400)] == expected


class _WebhookSink:
    """A stand-in for our server during a downtime test: records what arrives."""

    def __init__(self) -> None:
        self.received: list[tuple[str, dict[str, Any]]] = []
        sink = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers["Content-Length"]))
                sink.received.append((self.headers["X-GitHub-Delivery"], json.loads(body)))
                self.send_response(202)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/webhook"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_catch_up_redelivers_what_failed_while_we_were_down(gh: FakeGitHubServer, queue: QueueStore) -> None:
    sink = _WebhookSink()
    down_url = "http://127.0.0.1:9/webhook"  # nothing listens: "failed to connect"
    pr = {"action": "opened", "installation": {"id": 1}}
    lost = gh.deliver(down_url, "pull_request", pr, "s")
    seen = gh.deliver(down_url, "pull_request", pr, "s")
    gh.deliver(down_url, "ping", {"zen": "x"}, "s")  # not ours to care about
    for row in gh.state()["deliveries"]:
        assert row["status_code"] == 0
    # `seen` reached us through another path before (we stored it): not asked again.
    from app.pipeline.queue import Delivery

    queue.accept_delivery(Delivery("1", seen["guid"], "pull_request", "opened", 1, "o/r", "0", "{}"), [])
    for d in gh.deliveries:  # point the recorded requests at the live sink, as a restarted server
        d["request"]["url"] = sink.url
    auth = GitHubAppAuth(1, PRIVATE, api_url=gh.base_url)
    report = catch_up(auth, queue, now=time.time(), window_s=3 * 86400)
    assert report.redelivered == [lost["guid"]] and report.errors == []
    deadline = time.monotonic() + 5

    def redelivered() -> list[dict[str, Any]]:  # recorded by the fake once our answer came back
        return [d for d in gh.state()["deliveries"] if d["redelivery"]]

    while not redelivered() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert [g for g, _ in sink.received] == [lost["guid"]]
    assert gh.counters["redeliveries_requested"] == 1
    assert [(d["guid"], d["status_code"]) for d in redelivered()] == [(lost["guid"], 202)]
    # A second catch-up finds the guid delivered now: nothing more is asked.
    assert catch_up(auth, queue, now=time.time(), window_s=3 * 86400).redelivered == []
    auth.close()
    sink.close()


def test_catch_up_survives_an_api_outage(gh: FakeGitHubServer, queue: QueueStore) -> None:
    gh.failures.append({"route_regex": "GET /app/hook/deliveries", "status": 500, "times": 1})
    auth = GitHubAppAuth(1, PRIVATE, api_url=gh.base_url)
    report = catch_up(auth, queue, now=time.time(), window_s=3 * 86400)
    assert report.listed == 0 and report.errors and "HTTP 500" in report.errors[0]
    auth.close()


def test_hook_delivery_from_github_json() -> None:
    row = HookDelivery.from_json(
        {
            "id": 5,
            "guid": "g",
            "delivered_at": "2024-01-01T00:00:00Z",
            "redelivery": False,
            "status": "OK",
            "status_code": 202,
            "event": "pull_request",
            "action": "opened",
            "installation_id": 3,
        }
    )
    assert row.ok and row.installation_id == 3
