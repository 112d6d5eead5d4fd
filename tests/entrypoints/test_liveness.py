"""The worker role's liveness signal (app/adr_review/entrypoints/liveness.py): a heartbeat file rewritten while
the process is healthy, and `adr-review health --worker` failing once it is stale. The real process
(a SIGSTOPped worker stops beating) is tests/server/test_app_process.py."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from adr_review.cli import main
from adr_review.entrypoints.liveness import Liveness, stale, unhealthy

OK = {"workers_alive": 2, "background_alive": True, "store_ok": True}


@pytest.mark.parametrize(
    ("facts", "why"),
    [
        (OK, None),
        ({**OK, "workers_alive": 1}, "1 of 2 worker threads alive"),
        ({**OK, "background_alive": False}, "lease heartbeat"),
        ({**OK, "store_ok": False, "store_error": "connection refused"}, "connection refused"),
        ({"workers_alive": 2}, "state store does not answer"),  # no answer from the store at all
    ],
)
def test_unhealthy_names_what_is_wrong(facts: dict[str, Any], why: str | None) -> None:
    said = unhealthy(facts, 2)
    assert said is None if why is None else (said is not None and why in said)


def test_a_healthy_process_beats_every_interval_and_an_unhealthy_one_does_not(tmp_path: Path) -> None:
    path = tmp_path / "worker.heartbeat"
    facts = dict(OK)
    beats = Liveness(path, 2, lambda: facts, every_s=10.0)
    beats.tick(now=0.0)
    first = json.loads(path.read_text())
    assert first["workers_alive"] == 2
    os.utime(path, (1.0, 1.0))
    beats.tick(now=5.0)  # not yet due
    assert path.stat().st_mtime == 1.0
    facts["workers_alive"] = 1
    beats.tick(now=10.0)  # due, but a worker thread is gone: no beat
    assert path.stat().st_mtime == 1.0
    facts["workers_alive"] = 2
    beats.tick(now=20.0)
    assert path.stat().st_mtime > 1.0


def test_stale_is_none_for_a_fresh_file_and_says_why_otherwise(tmp_path: Path) -> None:
    path = tmp_path / "worker.heartbeat"
    assert "no heartbeat file" in (stale(path, 60) or "")
    path.write_text("{}")
    assert stale(path, 60) is None
    old = time.time() - 120
    os.utime(path, (old, old))
    assert "120 s old" in (stale(path, 60) or "")


def test_the_health_command_is_the_containers_healthcheck(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ADR_REVIEW_STORE_DIR", str(tmp_path))
    monkeypatch.delenv("ADR_REVIEW_HEARTBEAT_FILE", raising=False)
    assert main(["health", "--worker"]) == 1
    assert "no heartbeat file" in capsys.readouterr().err
    (tmp_path / "worker.heartbeat").write_text("{}")
    assert main(["health", "--worker"]) == 0
    old = time.time() - 61
    os.utime(tmp_path / "worker.heartbeat", (old, old))
    assert main(["health", "--worker"]) == 1
    assert main(["health", "--worker", "--max-age", "90"]) == 0
    assert main(["health"]) == 2
