"""Which credentials `adr-review serve` refuses to start without (the process test is in
tests/server/test_app_process.py): the App's id and key (or, for local development only, a static
token), and for a process that receives webhooks the secret (or --insecure-no-secret)."""

from __future__ import annotations

import pytest

from adr_review.config import AppSettings
from adr_review.entrypoints.commands.serve_auth import missing_credentials

APP = {"ADR_REVIEW_APP_ID": "1", "ADR_REVIEW_APP_PRIVATE_KEY": "pem"}
SECRET = {"ADR_REVIEW_WEBHOOK_SECRET": "s"}
ID, KEY, HOOK = "ADR_REVIEW_APP_ID", "ADR_REVIEW_APP_PRIVATE_KEY_PATH", "ADR_REVIEW_WEBHOOK_SECRET"


@pytest.mark.parametrize(
    ("env", "web", "insecure", "named"),
    [
        ({**APP, **SECRET}, True, False, []),
        (APP, False, False, []),  # a worker receives no webhooks
        (APP, True, False, [HOOK]),
        (APP, True, True, []),
        ({}, True, False, [ID, KEY, HOOK]),
        ({}, False, False, [ID, KEY]),
        ({"ADR_REVIEW_APP_ID": "1"}, False, False, [KEY]),
        ({"ADR_REVIEW_APP_PRIVATE_KEY_PATH": "/k.pem"}, False, False, [ID]),
        (
            {"GITHUB_APP_ID": "1", "GITHUB_APP_PRIVATE_KEY": "pem", "GITHUB_WEBHOOK_SECRET": "s"},
            True,
            False,
            [],
        ),
        ({"ADR_REVIEW_GITHUB_TOKEN": "ghp_dev"}, False, False, []),  # local development
        (
            {"ADR_REVIEW_GITHUB_TOKEN": "ghp_dev", "ADR_REVIEW_APP_ID": "1"},
            False,
            False,
            [KEY],
        ),  # half an App
    ],
)
def test_missing_credentials_are_named(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], web: bool, insecure: bool, named: list[str]
) -> None:
    for var in ("GITHUB_TOKEN", "ADR_REVIEW_GITHUB_TOKEN", "GITHUB_APP_ID", "GITHUB_APP_PRIVATE_KEY",
                "GITHUB_APP_PRIVATE_KEY_PATH", "GITHUB_WEBHOOK_SECRET", ID, KEY, HOOK,
                "ADR_REVIEW_APP_PRIVATE_KEY"):  # fmt: skip
        monkeypatch.delenv(var, raising=False)
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    said = missing_credentials(AppSettings(), web=web, insecure_no_secret=insecure)
    if not named:
        assert said is None
        return
    assert said is not None
    listed = said.split("missing: ", 1)[1].split(".", 1)[0]
    assert [n for n in (ID, KEY, HOOK) if n in listed] == named
