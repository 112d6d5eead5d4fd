"""App auth on PyGithub (App JWT -> installation tokens per repository, cached, retried, re-minted on a
401; the delivery header) and catch-up on start, against the fake GitHub server over loopback HTTP."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from adr_review.adapters.github import GitHubClients, load_private_key
from adr_review.adapters.github.app import APP_PERMISSIONS, HookDelivery
from adr_review.pipeline.plans.publish import upsert_comment
from adr_review.pipeline.ports import GitHubError
from adr_review.pipeline.server.catchup import catch_up, to_redeliver
from adr_review.pipeline.state_ports import DeliveryLog
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
APP_ID = "123"
REPO, OTHER = "acme/decisions", "acme/other"
SEED = {
    "repos": {
        REPO: {"default_branch": "main", "refs": {"main": {"docs/adr/0001-a.md": "# ADR-0001"}}},
        OTHER: {"default_branch": "trunk"},
    }
}
MINT = r"POST /app/installations/\d+/access_tokens"


def server(token_ttl_s: float = 3600) -> FakeGitHubServer:
    return FakeGitHubServer(token_ttl_s=token_ttl_s, app_id=APP_ID, app_public_key=PUBLIC).seed(SEED)


@pytest.fixture
def gh() -> Iterator[FakeGitHubServer]:
    with server() as fake:
        yield fake


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def clients(gh: FakeGitHubServer, sleeps: list[float]) -> Iterator[GitHubClients]:
    c = GitHubClients(gh.base_url, app_id=APP_ID, private_key=PRIVATE, sleep=sleeps.append)
    yield c
    c.close()


def test_installation_token_is_requested_for_the_repo_and_the_permissions_the_app_needs(
    gh: FakeGitHubServer, clients: GitHubClients
) -> None:
    assert clients.for_run(42, REPO).default_branch(REPO) == "main"  # the fake checked the App JWT
    (mint,) = gh.token_requests
    assert mint["installation"] == 42
    assert mint["body"] == {
        "repositories": ["decisions"],
        "permissions": {"metadata": "read", "contents": "read", "pull_requests": "read", "issues": "write"},
    }
    assert mint["body"]["permissions"] == dict(APP_PERMISSIONS)
    rest = [r for r in gh.request_log if r["path"].startswith("/repos/")]
    assert rest and all(r["authorization"].startswith("token ghs_fake") for r in rest)
    with pytest.raises(GitHubError) as err:  # the token cannot reach another repository of the installation
        clients.for_run(42, REPO).default_branch(OTHER)
    assert err.value.status == 404


def test_a_jwt_signed_by_another_key_is_refused(gh: FakeGitHubServer, sleeps: list[float]) -> None:
    other, _ = _keypair()
    stranger = GitHubClients(gh.base_url, app_id=APP_ID, private_key=other, sleep=sleeps.append)
    with pytest.raises(GitHubError) as err:
        stranger.for_run(42, REPO).default_branch(REPO)
    assert err.value.status == 401 and "mint an installation token for acme/decisions" in str(err.value)
    assert sleeps == [] and not any(r["path"].startswith("/repos/") for r in gh.request_log)
    stranger.close()


def test_tokens_are_cached_per_installation_and_repository(
    gh: FakeGitHubServer, clients: GitHubClients
) -> None:
    for _ in range(3):  # three runs on one repo share one token
        clients.for_run(42, REPO).default_branch(REPO)
    clients.for_run(42, OTHER).default_branch(OTHER)
    clients.for_run(43, REPO).default_branch(REPO)
    assert gh.counters["tokens_minted"] == 3
    assert [(m["installation"], m["body"]["repositories"]) for m in gh.token_requests] == [
        (42, ["decisions"]),
        (42, ["other"]),
        (43, ["decisions"]),
    ]


def test_a_token_about_to_expire_is_minted_again(sleeps: list[float]) -> None:
    with server(token_ttl_s=10) as gh:  # inside PyGithub's refresh margin from the start
        clients = GitHubClients(gh.base_url, app_id=APP_ID, private_key=PRIVATE, sleep=sleeps.append)
        run = clients.for_run(42, REPO)
        run.default_branch(REPO)
        run.default_branch(REPO)
        assert gh.counters["tokens_minted"] == 2
        clients.close()


def test_token_cache_is_shared_by_threads(gh: FakeGitHubServer, clients: GitHubClients) -> None:
    branches: list[str] = []
    threads = [
        threading.Thread(target=lambda: branches.append(clients.for_run(7, REPO).default_branch(REPO)))
        for _ in range(10)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert branches == ["main"] * 10 and gh.counters["tokens_minted"] == 1


def test_the_token_mint_is_retried_under_the_policy(
    gh: FakeGitHubServer, clients: GitHubClients, sleeps: list[float]
) -> None:
    gh.failures.append({"route_regex": MINT, "status": 502, "times": 2})
    gh.failures.append({"route_regex": MINT, "status": 429, "times": 1, "headers": {"Retry-After": "7"}})
    assert clients.for_run(42, REPO).default_branch(REPO) == "main"
    assert sleeps == [2.0, 4.0, 7.0]
    assert gh.counters["tokens_minted"] == 1


def test_a_mint_that_keeps_failing_ends_in_a_reported_failure(
    gh: FakeGitHubServer, clients: GitHubClients, sleeps: list[float]
) -> None:
    gh.failures.append({"route_regex": MINT, "status": 500, "times": 100})
    with pytest.raises(GitHubError) as err:
        clients.for_run(42, REPO).default_branch(REPO)
    assert err.value.status == 500 and "gave up after 5 attempt(s)" in str(err.value)
    assert sleeps == [2.0, 4.0, 8.0, 16.0]
    assert not any(r["path"].startswith("/repos/") for r in gh.request_log)


def test_a_401_drops_the_token_mints_once_more_and_retries(
    gh: FakeGitHubServer, clients: GitHubClients, sleeps: list[float]
) -> None:
    run = clients.for_run(42, REPO)
    assert run.default_branch(REPO) == "main"
    gh.revoke_tokens()  # GitHub no longer takes the cached token
    assert run.default_branch(REPO) == "main"
    assert gh.counters["tokens_minted"] == 2 and sleeps == []
    assert clients.for_run(42, REPO).default_branch(REPO) == "main"  # the new token is the cached one now
    assert gh.counters["tokens_minted"] == 2


def test_a_second_401_fails_the_call(gh: FakeGitHubServer, clients: GitHubClients) -> None:
    gh.failures.append({"route_regex": r"GET /repos/acme/decisions$", "status": 401, "times": 5})
    with pytest.raises(GitHubError) as err:
        clients.for_run(42, REPO).default_branch(REPO)
    assert err.value.status == 401
    assert gh.counters["tokens_minted"] == 2  # the first token and one more, no third
    assert [r["path"] for r in gh.request_log if r["path"].startswith("/repos/")] == [f"/repos/{REPO}"] * 2


def test_every_request_of_a_delivery_scoped_client_carries_the_delivery_id(
    gh: FakeGitHubServer, clients: GitHubClients
) -> None:
    gh.seed({"repos": {REPO: {"pulls": {"7": {"head_sha": "h" * 40, "base_sha": "b" * 40}}}}})
    gh.seed({"repos": {REPO: {"refs": {"h" * 40: {"docs/adr/0001-a.md": "# ADR-0001 v2"}}}}})
    first = clients.for_run(42, REPO, delivery_id="guid-1")
    first.pull_request(REPO, 7)
    assert first.read_file(REPO, "docs/adr/0001-a.md", "main") == b"# ADR-0001"
    first.list_files(REPO, "main", ["docs/adr"])
    upsert_comment(first, REPO, 7, "docs/adr/0001-a.md", "<!-- x -->\nbody")
    second = clients.for_run(42, REPO, delivery_id="guid-2")  # the cached token; its own header
    second.default_branch(REPO)
    clients.for_run(42, REPO).default_branch(REPO)  # not made for a delivery: no header
    # GET /app (the App's bot login, whose comments are ours) is asked once per process, for no delivery
    assert [r["delivery"] for r in gh.request_log if r["path"] == "/app"] == [None]
    deliveries = [(r["method"], r["path"], r["delivery"]) for r in gh.request_log if r["path"] != "/app"]
    assert deliveries[0] == ("POST", "/app/installations/42/access_tokens", "guid-1")  # the mint too
    by_delivery: dict[str | None, int] = {}
    for _method, _path, delivery in deliveries:
        by_delivery[delivery] = by_delivery.get(delivery, 0) + 1
    assert set(by_delivery) == {"guid-1", "guid-2", None}
    assert by_delivery["guid-2"] == 1 and by_delivery[None] == 1 and by_delivery["guid-1"] >= 6


def test_runs_without_an_installation_use_the_static_token(gh: FakeGitHubServer) -> None:
    dev = GitHubClients(gh.base_url + "/", token="dev-token")  # a trailing slash is tolerated
    assert not dev.has_app
    assert dev.for_run(None, REPO, "guid-9").default_branch(REPO) == "main"
    assert (
        gh.request_log[-1]["authorization"] == "token dev-token"
        and gh.request_log[-1]["delivery"] == "guid-9"
    )
    with pytest.raises(GitHubError, match="no GitHub credentials"):
        GitHubClients(gh.base_url).for_run(42, REPO)
    with pytest.raises(GitHubError, match="no GitHub App credentials"):
        dev.deliveries()
    with pytest.raises(ValueError, match="private key"):
        GitHubClients(gh.base_url, app_id=APP_ID)


def test_private_key_from_env_text_with_escaped_newlines() -> None:
    escaped = PRIVATE.strip().replace("\n", "\\n")
    assert load_private_key(key=escaped) == PRIVATE.strip() + "\n"
    with pytest.raises(ValueError):
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


def test_catch_up_redelivers_what_failed_while_we_were_down(
    gh: FakeGitHubServer, clients: GitHubClients, queue: DeliveryLog
) -> None:
    sink = _WebhookSink()
    down_url = "http://127.0.0.1:9/webhook"  # nothing listens: "failed to connect"
    pr = {"action": "opened", "installation": {"id": 1}}
    lost = gh.deliver(down_url, "pull_request", pr, "s")
    seen = gh.deliver(down_url, "pull_request", pr, "s")
    gh.deliver(down_url, "ping", {"zen": "x"}, "s")  # not ours to care about
    for row in gh.state()["deliveries"]:
        assert row["status_code"] == 0
    # `seen` reached us through another path before (we stored it): not asked again.
    from adr_review.pipeline.queue import Delivery

    queue.accept_delivery(Delivery("1", seen["guid"], "pull_request", "opened", 1, "o/r", "0", "{}"), [])
    for d in gh.deliveries:  # point the recorded requests at the live sink, as a restarted server
        d["request"]["url"] = sink.url
    api = clients.deliveries(per_page=2)  # three deliveries: two pages
    report = catch_up(api, queue, now=time.time(), window_s=3 * 86400)
    assert report.listed == 3 and gh.counters["delivery_lists"] == 2
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
    assert catch_up(api, queue, now=time.time(), window_s=3 * 86400).redelivered == []
    sink.close()


def test_deliveries_calls_are_retried_under_the_policy(
    gh: FakeGitHubServer, clients: GitHubClients, queue: DeliveryLog, sleeps: list[float]
) -> None:
    gh.deliver("http://127.0.0.1:9/webhook", "pull_request", {"action": "opened"}, "s")
    gh.failures.append({"route_regex": "GET /app/hook/deliveries", "status": 503, "times": 1})
    gh.failures.append({"route_regex": "POST /app/hook/deliveries/.*/attempts", "status": 502, "times": 1})
    report = catch_up(clients.deliveries(), queue, now=time.time(), window_s=3 * 86400)
    assert report.listed == 1 and len(report.redelivered) == 1 and report.errors == []
    assert sleeps == [2.0, 2.0] and gh.counters["redeliveries_requested"] == 1
    assert all(r["authorization"].startswith("Bearer ") for r in gh.request_log)  # the App JWT


def test_catch_up_survives_an_api_outage(
    gh: FakeGitHubServer, clients: GitHubClients, queue: DeliveryLog, sleeps: list[float]
) -> None:
    gh.failures.append({"route_regex": "GET /app/hook/deliveries", "status": 500, "times": 100})
    report = catch_up(clients.deliveries(), queue, now=time.time(), window_s=3 * 86400)
    assert report.listed == 0 and report.errors and "HTTP 500" in report.errors[0]
    assert "gave up after 5 attempt(s)" in report.errors[0] and sum(sleeps) <= 180


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


class Hooks:
    """The DeliveriesApi port over a list of attempts (newest last); counts the rows a pass reads."""

    def __init__(self) -> None:
        self.rows: list[Row] = []
        self.read = 0
        self.asked: list[int] = []
        self.refuse = 0  # the next redelivery requests that fail

    def add(self, guid: str, ok: bool, seconds_ago: float = 600) -> Row:
        row = Row(len(self.rows) + 1, guid, at(seconds_ago), "pull_request", ok)
        self.rows.append(row)
        return row

    def iter_deliveries(self) -> Iterator[Row]:
        for row in reversed(self.rows):
            self.read += 1
            yield row

    def redeliver(self, delivery_id: int) -> None:
        if self.refuse:
            self.refuse -= 1
            raise GitHubError("redeliver", "HTTP 502")
        self.asked.append(delivery_id)


def test_periodic_passes_read_only_what_is_new_and_ask_once_per_failed_attempt(queue: DeliveryLog) -> None:
    from adr_review.pipeline.queue import Delivery
    from adr_review.pipeline.server.catchup import CatchUp

    hooks = Hooks()
    for i in range(20):
        hooks.add(f"ok-{i}", True)
    lost = hooks.add("lost", False)
    catch = CatchUp(hooks, queue, 3 * 86400)  # type: ignore[arg-type]
    assert catch.run(NOW).redelivered == ["lost"] and hooks.asked == [lost.id] and hooks.read == 21
    # Its redelivery is not listed yet: the pass reads back to it, and does not ask again.
    hooks.read = 0
    assert (
        catch.run(NOW).redelivered == [] and hooks.asked == [lost.id] and hooks.read == 2
    )  # + where it stops
    # The redelivery failed too (the store still down): asked again, under the new attempt.
    again = hooks.add("lost", False)
    hooks.refuse = 1  # ... and that request fails: the next pass asks once more
    assert catch.run(NOW).errors and hooks.asked == [lost.id]
    assert catch.run(NOW).redelivered == ["lost"] and hooks.asked == [lost.id, again.id]
    # The next redelivery was stored: settled, and later passes read only what came after it.
    hooks.add("lost", True)
    queue.accept_delivery(Delivery("1", "lost", "pull_request", "opened", 1, "o/r", "0", "{}"), [])
    assert catch.run(NOW).redelivered == []
    hooks.add("new", True)
    hooks.read = 0
    assert catch.run(NOW).redelivered == [] and hooks.read == 2  # the new row, then where it stops
