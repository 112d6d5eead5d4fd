"""`adr-review guard`: a real ADR folder and a real diff in tmp_path, through the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from adr_review.cli import main

ADRS = {
    "0001-postgres.md": (
        "# ADR-0001: PostgreSQL as the primary data store\n\n## Status\n\nAccepted\n\n## Context\n\n"
        "Orders and payments need multi-row transactions and foreign keys.\n\n## Decision\n\n"
        "Every service keeps its data in its own PostgreSQL database on Amazon RDS. "
        "We will not adopt MongoDB or another document database for orders, payments or carts.\n"
    ),
    "0002-rabbitmq.md": (
        "# ADR-0002: Outbox polling to RabbitMQ\n\n## Status\n\nAccepted\n\n## Decision\n\n"
        "Services publish domain events through a transactional outbox table that a relay polls and "
        "forwards to RabbitMQ exchanges.\n"
    ),
    "0003-url-versioning.md": (
        "# ADR-0003: API versioning in the URL\n\n## Status\n\nAccepted\n\n## Decision\n\n"
        "Public HTTP APIs carry their major version in the path, such as /v1/orders.\n"
    ),
    "0004-mongodb-catalog.md": (
        "# ADR-0004: MongoDB for the product catalog\n\n## Status\n\nProposed\n\n## Decision\n\n"
        "The catalog service stores product documents in MongoDB collections with pymongo.\n"
    ),
    "0005-log-retention.md": (
        "# ADR-0005: Log retention\n\n## Status\n\nAccepted\n\n## Decision\n\n"
        "Application logs are kept for 30 days in the central logging cluster, audit logs for a year.\n"
    ),
}

MONGO = """\
diff --git a/services/order/pyproject.toml b/services/order/pyproject.toml
--- a/services/order/pyproject.toml
+++ b/services/order/pyproject.toml
@@ -3,3 +3,3 @@
     "fastapi>=0.110",
-    "psycopg[binary]>=3.1",
+    "pymongo>=4.6",
 ]
diff --git a/services/order/store.py b/services/order/store.py
--- a/services/order/store.py
+++ b/services/order/store.py
@@ -1,3 +1,3 @@
-import psycopg  # the order service's PostgreSQL database
+from pymongo import MongoClient  # orders move to a MongoDB document database
 pass
-def connect(dsn): return psycopg.connect(dsn)  # PostgreSQL transactions for orders and payments
+def connect(url): return MongoClient(url).orders  # MongoDB document database for orders and payments
"""

AUDIT = """\
diff --git a/ops/logging.py b/ops/logging.py
--- a/ops/logging.py
+++ b/ops/logging.py
@@ -1,2 +1,2 @@
-AUDIT_DAYS = 365  # audit logs kept for a year
+AUDIT_DAYS = 90  # audit logs kept for a quarter
"""

UNRELATED = """\
diff --git a/web/src/button.tsx b/web/src/button.tsx
--- a/web/src/button.tsx
+++ b/web/src/button.tsx
@@ -1,2 +1,2 @@
-export const Button = () => <button className="primary">Save</button>;
+export const Button = () => <button className="primary rounded">Save</button>;
"""

DECISION_KEYS = {
    "path",
    "id",
    "title",
    "status",
    "evidence",
    "reason",
    "decision",
    "section",
    "via",
    "named",  # the PR's title or body names it (app/adr_review/core/guard_named.py)
    "diff_evidence",
    "verdict",  # the verified model answer; null offline
}


def folder(tmp_path: Path) -> Path:
    adr_dir = tmp_path / "docs" / "adr"
    adr_dir.mkdir(parents=True)
    for name, text in ADRS.items():
        (adr_dir / name).write_text(text, encoding="utf-8")
    return adr_dir


def guard(capsys: pytest.CaptureFixture[str], tmp_path: Path, diff: str, *extra: str) -> str:
    adr_dir = folder(tmp_path) if not (tmp_path / "docs").exists() else tmp_path / "docs" / "adr"
    diff_file = tmp_path / "change.diff"
    diff_file.write_text(diff, encoding="utf-8")
    argv = ["guard", "--adr-dir", str(adr_dir), "--store", str(tmp_path / "store"), "--diff", str(diff_file)]
    assert main([*argv, *extra]) == 0
    return capsys.readouterr().out


def as_json(capsys: pytest.CaptureFixture[str], tmp_path: Path, diff: str, *extra: str) -> dict[str, Any]:
    return json.loads(guard(capsys, tmp_path, diff, "--json", *extra))


def test_a_change_against_an_accepted_decision_lists_it_with_verbatim_evidence(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = as_json(capsys, tmp_path, MONGO, "--title", "Move orders to MongoDB")
    assert out["silent_reason"] is None
    assert [d["id"] for d in out["decisions"]] == ["ADR-0001"]
    d = out["decisions"][0]
    assert set(d) == DECISION_KEYS
    assert d["path"] == "0001-postgres.md" and d["status"] == "accepted"
    assert d["decision"] in ADRS["0001-postgres.md"]
    assert d["section"] == "Decision"
    changed = {line[1:] for line in MONGO.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")}
    assert d["diff_evidence"] and all(e["text"] in changed for e in d["diff_evidence"])
    assert {"pymongo", "psycopg"} <= {x["name"] for x in out["dependencies"]}
    assert out["floor"] <= d["evidence"]


def test_the_shipped_model_does_not_pay_for_the_guard_features_it_does_not_weigh(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The folder-wide guard features read every ADR of the folder; the shipped model gives them no
    weight (it weighs title_text, read from the candidates alone)."""
    from adr_review.core import guard_features

    def unused(*_args: object) -> None:
        raise AssertionError("the folder-wide features were computed for a model that does not weigh them")

    monkeypatch.setattr(guard_features, "_folder_wide", unused)
    out = as_json(capsys, tmp_path, MONGO, "--title", "Move orders to MongoDB")
    assert [d["id"] for d in out["decisions"]] == ["ADR-0001"]


def test_the_proposed_adr_is_not_enforced(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = as_json(capsys, tmp_path, MONGO, "--title", "Move orders to MongoDB")
    assert out["pool_size"] == 4
    assert "0004-mongodb-catalog.md" not in {c["path"] for c in out["candidates"]}


def test_an_unrelated_change_gets_silence(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = as_json(capsys, tmp_path, UNRELATED, "--title", "Round the save button")
    assert out["decisions"] == [] and out["silent_reason"] in ("below_floor", "no_candidates")
    text = guard(capsys, tmp_path, UNRELATED, "--title", "Round the save button")
    assert text.count("\n") == 1 and text.startswith("adr-review guard: no decision implicated")


def test_the_comment_is_the_rendered_template(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    text = guard(capsys, tmp_path, MONGO, "--title", "Move orders to MongoDB")
    assert text.startswith("## 🛡️ Decisions this change touches")
    assert "ADR-0001" in text and "`services/order/store.py`" in text


def test_an_empty_diff_is_silent_and_says_why(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = as_json(capsys, tmp_path, "")
    assert out["decisions"] == [] and out["silent_reason"] == "empty_diff"


def test_a_missing_diff_file_is_a_usage_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    adr_dir = folder(tmp_path)
    assert main(["guard", "--adr-dir", str(adr_dir), "--diff", str(tmp_path / "nope.diff")]) == 2
    assert "nope.diff" in capsys.readouterr().err


# --- with a model: the real client against the fake Messages API on 127.0.0.1 --------------------------

DECISION = "We will not adopt MongoDB or another document database for orders, payments or carts."
ADDED = "from pymongo import MongoClient  # orders move to a MongoDB document database"


def test_with_a_key_each_listed_decision_is_checked_by_the_model(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.fakes.messages_server import FakeMessagesServer, Reply

    answer = {"verdict": "conflicts", "adr_quote": DECISION, "diff_quote": ADDED,
              "reason": "Orders move to MongoDB, which the decision rules out.", "confidence": 0.9}  # fmt: skip
    with FakeMessagesServer() as server:
        server.set_default("guard-check", Reply(answer=answer))
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        out = as_json(capsys, tmp_path, MONGO, "--title", "Move orders to MongoDB")
        assert server.count("guard-check") == 1
        [d] = out["decisions"]
        assert d["verdict"]["verdict"] == "conflicts" and d["verdict"]["adr_quote"] == DECISION
        assert d["verdict"]["diff_line"]["change"] == "added" and d["verdict"]["section"] == "decision"
        assert out["check"]["usage"]["calls"] == 1 and out["check"]["usage"]["input_tokens"] > 0
        text = guard(capsys, tmp_path, MONGO, "--title", "Move orders to MongoDB")
        assert "### ⚠️ Conflicts · ADR-0001" in text and f"> {DECISION}" in text
        offline = guard(capsys, tmp_path, MONGO, "--title", "Move orders to MongoDB", "--offline")
        assert server.count("guard-check") == 2 and "Conflicts" not in offline  # --offline calls nothing


def test_a_refused_key_prints_the_offline_comment_and_fails_loudly(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from adr_review.cli import main as cli_main
    from tests.fakes.messages_server import FakeMessagesServer, Reply

    with FakeMessagesServer() as server:
        server.set_default("guard-check", Reply(status=401))
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-wrong")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        adr_dir = folder(tmp_path)
        diff_file = tmp_path / "change.diff"
        diff_file.write_text(MONGO, encoding="utf-8")
        argv = [
            "guard",
            "--adr-dir",
            str(adr_dir),
            "--store",
            str(tmp_path / "store"),
            "--diff",
            str(diff_file),
        ]
        assert cli_main([*argv, "--title", "Move orders to MongoDB"]) == 1
        captured = capsys.readouterr()
        assert "Changed lines that share its terms" in captured.out  # the offline listing, with a note
        assert "No usable model answer for ADR-0001 (llm_error)" in captured.out
        assert "ANTHROPIC_API_KEY" in captured.err


def test_a_decision_the_pr_names_is_listed_below_the_floor_and_says_why(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    unnamed = as_json(capsys, tmp_path, AUDIT, "--title", "Tidy the ops settings")
    assert unnamed["decisions"] == [] and unnamed["silent_reason"] == "below_floor"
    (below,) = [c for c in unnamed["candidates"] if c["path"] == "0005-log-retention.md"]
    assert below["evidence"] < unnamed["floor"]  # the score alone keeps it out

    named = as_json(capsys, tmp_path, AUDIT, "--title", "Tidy the ops settings", "--body", "As ADR 5 says.")
    (d,) = named["decisions"]
    assert (d["id"], d["named"], d["section"]) == ("ADR-0005", True, "Decision")
    assert d["reason"].startswith("named in the pull request") and d["evidence"] < named["floor"]
    assert d["decision"] in ADRS["0005-log-retention.md"] and d["diff_evidence"]

    text = guard(capsys, tmp_path, AUDIT, "--title", "Tidy the ops settings", "--body", "As ADR 5 says.")
    assert "named in the pull request" in text and "ADR-0005" in text


AUDIT_NAMED = AUDIT.replace("kept for a quarter", "kept for a quarter, below ADR-0005's year")
AUDIT_UNNAMED_NOW = AUDIT.replace("kept for a year", "kept for a year, as ADR-0005 says")


def test_a_decision_a_changed_line_names_is_listed_below_the_floor(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = as_json(capsys, tmp_path, AUDIT_NAMED, "--title", "Tidy the ops settings")
    (d,) = out["decisions"]
    assert (d["id"], d["named"]) == ("ADR-0005", True) and d["evidence"] < out["floor"]
    assert d["reason"].startswith("named in the pull request")
    # a name only on a removed line asks nothing of the change: the score alone decides, as unnamed
    gone = as_json(capsys, tmp_path, AUDIT_UNNAMED_NOW, "--title", "Tidy the ops settings")
    assert gone["decisions"] == [] and gone["silent_reason"] == "below_floor"


INDEX_PAGE = (
    AUDIT
    + """\
diff --git a/docs/README.md b/docs/README.md
--- a/docs/README.md
+++ b/docs/README.md
@@ -1,1 +1,5 @@
 # Decisions
+- [ADR-0001: PostgreSQL as the primary data store](adr/0001-postgres.md)
+- [ADR-0002: Outbox polling to RabbitMQ](adr/0002-rabbitmq.md)
+- [ADR-0003: API versioning in the URL](adr/0003-url-versioning.md)
+- [ADR-0005: Log retention](adr/0005-log-retention.md)
"""
)


def test_of_more_named_decisions_than_it_shows_the_ranking_picks(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # an index page names four accepted ADRs, each beside its own title; the code change is about one
    out = as_json(capsys, tmp_path, INDEX_PAGE, "--title", "Audit logs for a quarter")
    ids = [d["id"] for d in out["decisions"]]
    assert len(ids) == 3 and all(d["named"] for d in out["decisions"])
    assert ids[0] == "ADR-0005"  # the one the change is about, not the folder's first three


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ("As ADR 4 says.", "proposed: naming it enforces nothing"),
        ("As ADR-3 says.", "accepted, but the diff has no line that matches it"),
        ("Bumps MADR 5.0.0.", "a version number, not an ADR"),
        ("See `ADR-5` in the code.", "a code span is not a mention"),
    ],
)
def test_a_name_alone_does_not_list_a_decision(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, body: str, why: str
) -> None:
    out = as_json(capsys, tmp_path, AUDIT, "--title", "Tidy the ops settings", "--body", body)
    assert out["decisions"] == [], why


def test_naming_a_proposed_decision_does_not_enforce_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # ADR-0004 (proposed) names pymongo and MongoDB, which the diff adds: only its status keeps it out
    out = as_json(capsys, tmp_path, MONGO, "--title", "Move orders to MongoDB", "--body", "As ADR 4 plans.")
    assert [d["id"] for d in out["decisions"]] == ["ADR-0001"]
    assert not out["decisions"][0]["named"]
