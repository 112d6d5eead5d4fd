"""GET /report and /report.png: off without a token, a bearer token compared in constant time, the
report of the store's feedback as Markdown, JSON or PNG."""

from __future__ import annotations

import logging
import sys

import pytest
from starlette.testclient import TestClient

from adr_review.adapters.state_sqlite import SqliteStateStore
from adr_review.core.feedback import Ledger, Revision, Shown
from adr_review.entrypoints.server import WebhookConfig, create_app
from tests.server.conftest import SECRET

TOKEN = "report-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def filled(queue: SqliteStateStore) -> SqliteStateStore:
    shown = tuple(Shown(f"aaaa000{i}", "high", "privacy", f"finding {i}") for i in range(4))
    queue.record_ledger("acme/shop", 7, "docs/adr/1.md", Ledger().add(Revision("1" * 16, shown, 0.2)))
    queue.record_ticks("acme/shop", 7, "docs/adr/1.md", {"aaaa0000": True}, "alice")
    queue.record_dismissal("acme/shop", 7, "aaaa0001", "bob", "out of scope")
    return queue


def client(store: SqliteStateStore, token: str | None = TOKEN) -> TestClient:
    return TestClient(create_app(WebhookConfig(secret=SECRET), store, feedback=store, report_token=token))


def test_without_a_token_the_report_is_off_and_the_log_says_why(
    filled: SqliteStateStore, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="adr_review.server"):
        c = client(filled, token=None)
    assert any(r.message == "report_disabled" for r in caplog.records)
    for path in ("/report", "/report.png"):
        resp = c.get(path, headers=AUTH)
        assert resp.status_code == 404
        assert "ADR_REVIEW_REPORT_TOKEN" in resp.json()["error"]


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}, {"Authorization": f"Basic {TOKEN}"}],
    ids=["none", "wrong token", "no scheme", "basic"],
)
def test_a_caller_without_the_token_gets_401(filled: SqliteStateStore, headers: dict[str, str]) -> None:
    resp = client(filled).get("/report", headers=headers)
    assert resp.status_code == 401
    assert resp.headers["www-authenticate"].startswith("Bearer")
    assert "finding" not in resp.text


def test_markdown_json_and_png(filled: SqliteStateStore) -> None:
    c = client(filled)
    md = c.get("/report", params={"repo": "acme/shop", "days": "30", "min_findings": "4"}, headers=AUTH)
    assert md.status_code == 200 and md.headers["content-type"].startswith("text/markdown")
    assert md.headers["cache-control"] == "no-store"
    assert "| **25 %** (1 of 4) | 20 % | ✅ |" in md.text and "out of scope" in md.text
    js = c.get("/report", params={"format": "json"}, headers=AUTH).json()
    assert (js["findings_shown"], js["findings_adopted"], js["findings_dismissed"]) == (4, 1, 1)
    assert js["sunset"]["verdict"] == "not_enough_data"
    ja = c.get("/report", params={"lang": "ja"}, headers=AUTH)
    assert "フィードバックレポート" in ja.text
    other = c.get("/report", params={"repo": "acme/other", "format": "json"}, headers=AUTH).json()
    assert other["findings_shown"] == 0
    pytest.importorskip("matplotlib")
    png = c.get("/report.png", params={"repo": "acme/shop"}, headers=AUTH)
    assert png.status_code == 200 and png.headers["content-type"] == "image/png"
    assert png.content[:4] == b"\x89PNG"


@pytest.mark.parametrize(
    "params",
    [{"repo": "not-a-repo"}, {"days": "-1"}, {"days": "many"}, {"format": "html"}, {"lang": "fr"}],
)
def test_a_bad_query_is_400(filled: SqliteStateStore, params: dict[str, str]) -> None:
    assert client(filled).get("/report", params=params, headers=AUTH).status_code == 400


def test_png_without_matplotlib_is_501(filled: SqliteStateStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    resp = client(filled).get("/report.png", headers=AUTH)
    assert resp.status_code == 501
    assert "pip install 'adr-review[report]'" in resp.json()["error"]
