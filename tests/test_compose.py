"""compose.yaml keeps the properties an operator relies on (there is no Docker here to run it; the
file is parsed as compose reads it, anchors and merge keys included): Chroma is healthy before anything
starts, the database password never sits in a URL, `--scale web=N` has no fixed host port to collide
on, a worker has a liveness check, a lease TTL that suits its stop grace period, and nothing of the
Action's runner leaks in."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from adr_review.cli import COMMANDS
from adr_review.config import AppSettings
from adr_review.pipeline.server.worker import lease_problem

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "compose.yaml").read_text(encoding="utf-8"))
    return data


def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return dict(compose["services"])


def app_services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {n: s for n, s in services(compose).items() if s.get("image") == "adr-review:local"}


def seconds(value: str) -> float:
    m = re.fullmatch(r"(?:(\d+)m)?(?:(\d+)s)?", value)
    assert m and value, value
    return int(m[1] or 0) * 60 + int(m[2] or 0)


def test_every_dependency_waits_for_a_healthy_service_and_chroma_has_a_healthcheck(
    compose: dict[str, Any],
) -> None:
    all_services = services(compose)
    assert "healthcheck" in all_services["chroma"]
    waited = 0
    for name, service in all_services.items():
        for dep, how in (service.get("depends_on") or {}).items():
            assert how == {"condition": "service_healthy"}, (name, dep)
            assert "healthcheck" in all_services[dep], f"{name} waits for {dep}, which has no healthcheck"
            waited += 1
    assert {"web", "worker"} <= {
        n for n, s in all_services.items() if "chroma" in (s.get("depends_on") or {})
    }
    assert waited >= 5


def test_the_database_password_is_never_pasted_into_the_url(compose: dict[str, Any]) -> None:
    for name, service in app_services(compose).items():
        env = service["environment"]
        url = urlsplit(env["ADR_REVIEW_DATABASE_URL"])
        assert url.scheme == "postgresql" and url.password is None and "POSTGRES_PASSWORD" not in url.geturl()
        assert re.fullmatch(r"\$\{POSTGRES_PASSWORD(:\?[^}]*)?\}", env["PGPASSWORD"]), name  # libpq reads it


def test_web_can_be_scaled_behind_one_proxy_with_the_only_host_port(compose: dict[str, Any]) -> None:
    all_services = services(compose)
    web = all_services["web"]
    assert "ports" not in web and "container_name" not in web  # `--scale web=N` has nothing to collide on
    published = {n for n, s in all_services.items() if s.get("ports")}
    assert published == {"proxy"}
    proxy = all_services["proxy"]
    assert "web:8080" in proxy["command"] and proxy["depends_on"] == {"web": {"condition": "service_healthy"}}
    assert "8080" in [str(p) for p in web["expose"]]


def test_a_worker_has_a_liveness_check_the_app_implements(compose: dict[str, Any]) -> None:
    check = services(compose)["worker"]["healthcheck"]
    command = check["test"]
    assert command[:2] == ["CMD", "adr-review"] and command[2] in COMMANDS and "--worker" in command
    assert seconds(check["interval"]) * check["retries"] >= 60  # not restarted for one slow beat


def test_the_lease_ttl_suits_the_stop_grace_period(compose: dict[str, Any]) -> None:
    worker = services(compose)["worker"]
    env = worker["environment"]
    ttl = float(env["ADR_REVIEW_LEASE_TTL_S"])
    shutdown_wait = float(env.get("ADR_REVIEW_SHUTDOWN_WAIT_S", AppSettings().shutdown_wait_s))
    grace = seconds(worker["stop_grace_period"])
    assert shutdown_wait < grace  # SIGTERM: the threads' wait ends before the orchestrator's SIGKILL
    assert lease_problem(ttl, shutdown_wait) is None  # the worker would start: the lease outlives that wait
    assert ttl <= 120  # an OOM-killed worker's run is taken over within two minutes, not five


def test_no_action_runner_path_or_variable_leaks_in(compose: dict[str, Any]) -> None:
    text = (ROOT / "compose.yaml").read_text(encoding="utf-8")
    assert "/github/workspace" not in text and "GITHUB_WORKSPACE" not in text and "INPUT_" not in text
    for service in app_services(compose).values():
        assert not [k for k in service["environment"] if k.startswith("ADR_REVIEW_MODEL_CACHE")]


def test_healthcheck_shell_variables_are_escaped_from_compose_interpolation(compose: dict[str, Any]) -> None:
    for name, service in services(compose).items():
        test = service.get("healthcheck", {}).get("test", [])
        for part in test if isinstance(test, list) else [test]:
            assert not re.search(r"(?<!\$)\$(?!\$)[{A-Za-z_]", part.replace("$$", "")), (name, part)
