"""`adr-review serve` as a real process: redeliveries, a burst (on SQLite and on PostgreSQL), and the
refusal to start unsigned."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from benchmarks.webhook_burst import check_settled, send_burst
from tests.server.harness import REPO_ROOT, Stack, post_webhook, pr_payload, repo_seed

pytestmark = pytest.mark.real_process  # every test here runs `adr-review serve` processes


def test_the_same_delivery_50_times_at_once_is_one_delivery_one_run_one_comment(stack: Stack) -> None:
    stack.fresh("redelivery")
    _, port = stack.serve()
    assert port is not None
    payload = pr_payload()
    with ThreadPoolExecutor(50) as pool:
        answers = list(
            pool.map(lambda _: post_webhook(port, "pull_request", payload, "same-guid"), range(50))
        )
    try:
        assert [status for status, _ in answers] == [202] * 50
        assert sum(1 for _, body in answers if body["duplicate"] is False) == 1
        stack.wait_until("runs settled", lambda: stack.settled(2))
        [delivery] = stack.query("SELECT delivery_id, duplicates FROM deliveries")
        assert (delivery["delivery_id"], delivery["duplicates"]) == ("same-guid", 49)
        kinds = [r["kind"] for r in stack.query("SELECT kind FROM queue")]
        assert sorted(kinds) == ["plan", "review"]
        assert stack.gh_state()["counters"]["comments_created"] == 1
        assert set(stack.llm_calls().values()) == {1}
    finally:
        stack.stop_apps()


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_a_burst_of_200_signed_deliveries_loses_and_duplicates_nothing(
    stack: Stack, engine: str, request: pytest.FixtureRequest
) -> None:
    n, adr_every = 200, 20  # every 20th PR adds an ADR: 10 reviews, the rest plan and stop
    stack.seed(repo_seed(pulls=n, adr_every=adr_every))
    postgres = request.getfixturevalue("postgres") if engine == "postgres" else None
    stack.fresh(f"burst-{engine}", postgres=postgres)
    _, port = stack.serve("--workers", "2", "--no-catch-up", env={"ADR_REVIEW_LOG_LEVEL": "WARNING"})
    assert port is not None
    try:
        burst = send_burst(port, n, concurrency=8)
        assert burst.statuses == [202] * n and burst.duplicates_reported == 0
        reviews = n // adr_every
        stack.wait_until("burst settled", lambda: stack.settled(n + reviews), timeout=600)
        facts = check_settled(stack, burst.guids, reviews)
        assert facts == {
            "deliveries_stored": n,
            "deliveries_unique": n,
            "burst_guids_missing": 0,
            "plan_runs": n,
            "review_runs": reviews,
            "not_completed": 0,
            "comments_created": reviews,
            "expected_reviews": reviews,
        }
    finally:
        stack.stop_apps()


@pytest.mark.parametrize(
    ("role", "given", "named"),
    [
        ("all", {}, ["ADR_REVIEW_APP_ID", "ADR_REVIEW_APP_PRIVATE_KEY_PATH", "ADR_REVIEW_WEBHOOK_SECRET"]),
        (
            "all",
            {"ADR_REVIEW_APP_ID": "1", "ADR_REVIEW_APP_PRIVATE_KEY": "pem"},
            ["ADR_REVIEW_WEBHOOK_SECRET"],
        ),
        ("worker", {"ADR_REVIEW_WEBHOOK_SECRET": "s"}, ["ADR_REVIEW_APP_ID", "ADR_REVIEW_APP_PRIVATE_KEY"]),
        ("worker", {"ADR_REVIEW_APP_PRIVATE_KEY_PATH": "/nonexistent.pem"}, ["ADR_REVIEW_APP_ID"]),
    ],
)
def test_serve_refuses_to_start_without_the_apps_credentials_naming_them(
    tmp_path: Path, role: str, given: dict[str, str], named: list[str]
) -> None:
    env = {"PATH": "/usr/bin:/bin", "ADR_REVIEW_STORE_DIR": str(tmp_path), "HOME": str(tmp_path), **given}
    done = subprocess.run(
        [sys.executable, "-m", "adr_review", "serve", "--port", "0", "--role", role],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "refusing to start" in done.stderr.lower() and all(n in done.stderr for n in named), done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "app.sqlite3").exists()  # nothing was opened either


def test_serve_refuses_an_unreadable_private_key_before_opening_anything(tmp_path: Path) -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        "ADR_REVIEW_STORE_DIR": str(tmp_path),
        "HOME": str(tmp_path),
        "ADR_REVIEW_APP_ID": "1",
        "ADR_REVIEW_APP_PRIVATE_KEY_PATH": str(tmp_path / "missing.pem"),
    }
    done = subprocess.run(
        [sys.executable, "-m", "adr_review", "serve", "--role", "worker"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "private key" in done.stderr and "missing.pem" in done.stderr, done.stderr
    assert not (tmp_path / "app.sqlite3").exists()


def test_a_worker_beats_while_it_runs_and_a_hung_one_fails_its_healthcheck(stack: Stack) -> None:
    """The worker role serves no HTTP: its liveness is the heartbeat file `adr-review health --worker`
    checks (the compose healthcheck). SIGSTOP stands for a hung process."""
    import os
    import signal

    stack.fresh("liveness")
    beat_file = stack.store_dir / "worker.heartbeat"
    worker, _ = stack.serve(role="worker", env={"ADR_REVIEW_HEARTBEAT_EVERY_S": "0.2"})

    def health() -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "ADR_REVIEW_STORE_DIR": str(stack.store_dir)}
        cmd = [sys.executable, "-m", "adr_review", "health", "--worker", "--max-age", "2"]
        return subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=60)

    try:
        stack.wait_until("the first beat", beat_file.exists, timeout=30)
        assert health().returncode == 0
        os.kill(worker.popen.pid, signal.SIGSTOP)
        try:
            stack.wait_until("the healthcheck fails", lambda: health().returncode == 1, timeout=60)
            assert "hung or stopped" in health().stderr
        finally:
            os.kill(worker.popen.pid, signal.SIGCONT)
        stack.wait_until("it beats again", lambda: health().returncode == 0, timeout=60)
    finally:
        stack.stop_apps()
