"""POST /webhook and GET /healthz in-process: what is answered, and what is (not) stored."""

from __future__ import annotations

import json
from typing import Any

import pytest
from starlette.testclient import TestClient

from adr_review.adapters.state_sqlite import SqliteStateStore
from adr_review.entrypoints.server import WebhookConfig, create_app
from tests.server.conftest import SECRET, payload, signed_headers


def client(queue: SqliteStateStore, **cfg: Any) -> TestClient:
    config = WebhookConfig(secret=cfg.pop("secret", SECRET), **cfg)
    return TestClient(create_app(config, queue))


def post(c: TestClient, event: str, data: dict[str, Any], **kw: Any) -> Any:
    body = json.dumps(data).encode()
    headers = signed_headers(body, event, kw.pop("delivery", None))
    headers.update(kw.pop("headers", {}))
    for drop in kw.pop("drop", ()):
        headers.pop(drop, None)
    return c.post("/webhook", content=kw.pop("body", body), headers=headers)


def test_signed_pull_request_is_stored_with_its_plan_run(queue: SqliteStateStore) -> None:
    data = payload("pull_request__opened.payload.json")
    resp = post(client(queue), "pull_request", data, delivery="d-1")
    assert resp.status_code == 202, resp.text
    sha = data["pull_request"]["head"]["sha"]
    key = f"plan:Codertocat/Hello-World#2@{sha}:ready"
    assert resp.json() == {"delivery": "d-1", "duplicate": False, "runs": [key]}
    assert queue.delivery_count() == 1
    [item] = queue.items()
    assert (item.run_key, item.kind, item.state, item.head_sha) == (key, "plan", "queued", sha)
    assert queue.delivery_payload("4242", "d-1") == json.dumps(data)


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"body": b'{"action": "opened", "tampered": true}'}, "tampered body"),
        ({"drop": ["X-Hub-Signature-256"]}, "missing header"),
        (
            {"drop": ["X-Hub-Signature-256"], "headers": {"X-Hub-Signature": "sha1=" + "0" * 40}},
            "SHA-1 header only",
        ),
        ({"headers": {"X-Hub-Signature-256": "sha256=" + "0" * 64}}, "wrong digest"),
    ],
)
def test_bad_signature_is_401_and_nothing_is_queued(
    queue: SqliteStateStore, change: dict[str, Any], why: str
) -> None:
    resp = post(client(queue), "pull_request", payload("pull_request__opened.payload.json"), **change)
    assert resp.status_code == 401, why
    assert queue.delivery_count() == 0 and queue.items() == []


def test_sha1_signature_of_the_right_secret_is_still_rejected(queue: SqliteStateStore) -> None:
    import hashlib
    import hmac

    body = json.dumps(payload("pull_request__opened.payload.json")).encode()
    headers = signed_headers(body, "pull_request")
    del headers["X-Hub-Signature-256"]
    headers["X-Hub-Signature"] = "sha1=" + hmac.new(SECRET.encode(), body, hashlib.sha1).hexdigest()
    assert client(queue).post("/webhook", content=body, headers=headers).status_code == 401
    assert queue.delivery_count() == 0


@pytest.mark.parametrize(
    ("event", "name"),
    [
        ("ping", "ping__payload.json"),
        ("installation", "installation__created.payload.json"),
        ("pull_request", "pull_request__closed.payload.json"),
        ("issue_comment", "issue_comment__created.payload.json"),  # a comment on an issue, not a PR
        ("issue_comment", "issue_comment__edited.payload.json"),
    ],
)
def test_events_we_do_not_handle_are_204_and_not_stored(
    queue: SqliteStateStore, event: str, name: str
) -> None:
    resp = post(client(queue), event, payload(name))
    assert resp.status_code == 204
    assert queue.delivery_count() == 0 and queue.items() == []


def test_pr_command_comment_queues_a_plan_keyed_by_the_comment(queue: SqliteStateStore) -> None:
    data = payload("issue_comment__created.payload.json")
    data["issue"]["pull_request"] = {"url": "https://api.github.com/repos/Codertocat/Hello-World/pulls/1"}
    data["comment"]["body"] = "/adr-review recall"
    resp = post(client(queue), "issue_comment", data)
    assert resp.status_code == 202
    [item] = queue.items()
    assert item.run_key == f"plan:Codertocat/Hello-World#1:comment:{data['comment']['id']}"
    assert item.spec["comment_id"] == data["comment"]["id"]


def test_redelivery_is_a_duplicate(queue: SqliteStateStore) -> None:
    c = client(queue)
    data = payload("pull_request__opened.payload.json")
    first = post(c, "pull_request", data, delivery="same")
    again = post(c, "pull_request", data, delivery="same")
    assert first.status_code == again.status_code == 202
    assert again.json()["duplicate"] is True and again.json()["runs"] == first.json()["runs"]
    assert queue.delivery_count() == 1 and len(queue.items()) == 1


def test_two_deliveries_of_the_same_intent_share_one_run(queue: SqliteStateStore) -> None:
    c = client(queue)
    data = payload("pull_request__opened.payload.json")
    reopened = dict(data, action="reopened")
    assert post(c, "pull_request", data).json()["duplicate"] is False
    assert post(c, "pull_request", reopened).json()["duplicate"] is False
    assert queue.delivery_count() == 2 and len(queue.items()) == 1


def test_draft_then_ready_are_two_plans(queue: SqliteStateStore) -> None:
    c = client(queue)
    data = payload("pull_request__opened.payload.json")
    data["pull_request"]["draft"] = True
    ready = payload("pull_request__opened.payload.json")
    ready["action"] = "ready_for_review"
    post(c, "pull_request", data)
    post(c, "pull_request", ready)
    assert sorted(i.run_key.rsplit(":", 1)[1] for i in queue.items()) == ["draft", "ready"]


def test_body_over_the_cap_is_413(queue: SqliteStateStore) -> None:
    resp = post(
        client(queue, max_body_bytes=1000), "pull_request", payload("pull_request__opened.payload.json")
    )
    assert resp.status_code == 413
    assert queue.delivery_count() == 0


@pytest.mark.parametrize("header", ["X-GitHub-Delivery", "X-GitHub-Event"])
def test_missing_github_headers_are_400(queue: SqliteStateStore, header: str) -> None:
    resp = post(client(queue), "pull_request", payload("pull_request__opened.payload.json"), drop=[header])
    assert resp.status_code == 400
    assert queue.delivery_count() == 0


def test_not_json_is_400(queue: SqliteStateStore) -> None:
    body = b"not json"
    resp = client(queue).post("/webhook", content=body, headers=signed_headers(body, "pull_request"))
    assert resp.status_code == 400


def test_insecure_mode_accepts_unsigned(queue: SqliteStateStore) -> None:
    c = client(queue, secret=None)
    resp = post(c, "pull_request", payload("pull_request__opened.payload.json"), drop=["X-Hub-Signature-256"])
    assert resp.status_code == 202


def test_healthz_reports_depth_and_age(queue: SqliteStateStore) -> None:
    c = client(queue)
    empty = c.get("/healthz").json()
    assert empty["ok"] and empty["store_ok"] and empty["queue_depth"] == 0
    assert empty["oldest_queued_age_s"] is None
    post(c, "pull_request", payload("pull_request__opened.payload.json"))
    facts = c.get("/healthz").json()
    assert facts["queue_depth"] == 1 and facts["oldest_queued_age_s"] >= 0


def test_the_default_body_cap_fits_real_payloads_and_refuses_the_rest(queue: SqliteStateStore) -> None:
    """Bodies are buffered before the signature check: the cap is sized for real payloads (1 MiB),
    not GitHub's 25 MB, and is configurable (ADR_REVIEW_MAX_BODY_BYTES)."""
    c = client(queue)
    big = payload("pull_request__opened.payload.json")
    big["pull_request"]["body"] = "x" * 65536 * 3  # GitHub's longest PR body, 3 bytes a character
    assert post(c, "pull_request", big).status_code == 202
    huge = json.dumps({**big, "padding": "y" * (1024 * 1024)}).encode()
    resp = c.post("/webhook", content=huge, headers=signed_headers(huge, "pull_request"))
    assert resp.status_code == 413 and queue.delivery_count() == 1


class Blipping:
    """The store behind the webhook drops its first `fails` writes, as a database restarting does."""

    def __init__(self, store: SqliteStateStore, fails: int) -> None:
        self.store, self.fails, self.writes = store, fails, 0

    def accept_delivery(self, *args: Any) -> Any:
        self.writes += 1
        if self.writes <= self.fails:
            raise ConnectionError("server closed the connection unexpectedly")
        return self.store.accept_delivery(*args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


@pytest.mark.parametrize(("fails", "status", "stored"), [(3, 202, 1), (100, 503, 0)])
def test_a_store_blip_is_retried_then_answered_503_naming_the_delivery(
    queue: SqliteStateStore,
    fails: int,
    status: int,
    stored: int,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import adr_review.entrypoints.server as server

    monkeypatch.setattr(server, "STORE_RETRY_WAITS_S", (0.01,) * 5)
    store = Blipping(queue, fails)
    c = TestClient(create_app(WebhookConfig(secret=SECRET), store))  # type: ignore[arg-type]
    resp = post(c, "pull_request", payload("pull_request__opened.payload.json"), delivery="d-blip")
    assert resp.status_code == status, resp.text
    assert queue.delivery_count() == stored
    assert store.writes == min(fails + 1, 6)  # the first write and five retries at most
    failed = [r for r in caplog.records if r.getMessage() == "webhook_store_failed"]
    assert [(r.levelname, r.__dict__["delivery"]) for r in failed] == (
        [("ERROR", "d-blip")] if stored == 0 else []
    )
