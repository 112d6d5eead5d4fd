"""`process_settings` reads the process settings without pydantic-settings (a recall's path), and
must read every environment exactly as `Settings()` does: one definition, two readers, pinned equal."""

from __future__ import annotations

import pytest

from adr_review.config import Settings
from adr_review.process_env import ENV_PREFIX, ProcessSettings, env_names, process_settings

ENVIRONMENTS: list[dict[str, str]] = [
    {},
    {"ADR_REVIEW_RECALL_ENABLED": "false"},
    {"RECALL_ENABLED": "0"},  # the seed's name, an alias
    {"ADR_REVIEW_RECALL_ENABLED": "true", "RECALL_ENABLED": "false"},  # the first alias wins
    {"adr_review_recall_enabled": "off"},  # names are case-insensitive
    {"ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"},
    {"anthropic_api_key": "lower"},
    {"ADR_REVIEW_ANTHROPIC_API_KEY": "prefixed"},  # an aliased field is not read under the prefix
    {"ADR_REVIEW_STORE_DIR": "/tmp/store", "ADR_REVIEW_LOG_LEVEL": "DEBUG"},
    {"ADR_REVIEW_LLM_PROVIDER": "bedrock", "ADR_REVIEW_VERTEX_ACCESS_TOKEN": "ya29"},
    {"ADR_REVIEW_ANTHROPIC_BASE_URL": "x", "STORE_DIR": "unprefixed", "ADR_REVIEW_UNKNOWN": "1"},
    {"ANTHROPIC_API_KEY": ""},  # empty is a value, as pydantic-settings reads it
]


def _clear(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for key in list(os.environ):
        if (
            key.upper().startswith(ENV_PREFIX)
            or key.upper() in {"RECALL_ENABLED", "STORE_DIR"}
            or (key.upper().startswith("ANTHROPIC_"))
        ):
            monkeypatch.delenv(key)


@pytest.mark.parametrize("environ", ENVIRONMENTS, ids=lambda e: ",".join(e) or "empty")
def test_the_small_reader_reads_an_environment_as_pydantic_settings_does(
    environ: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _clear(monkeypatch)
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    assert process_settings(environ).model_dump() == Settings().model_dump()


@pytest.mark.parametrize(
    ("environ", "error"),
    [({"ADR_REVIEW_RECALL_ENABLED": "maybe"}, "recall_enabled"), ({"ADR_REVIEW_LLM_PROVIDER": "x"}, "llm")],
)
def test_a_bad_value_is_refused_by_both_readers(
    environ: dict[str, str], error: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _clear(monkeypatch)
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(ValueError, match=f"(?i){error}"):
        process_settings(environ)
    with pytest.raises(ValueError, match=f"(?i){error}"):
        Settings()


def test_settings_has_exactly_the_fields_of_the_one_definition() -> None:
    assert Settings.model_fields.keys() == ProcessSettings.model_fields.keys()
    assert env_names(ProcessSettings, "recall_enabled") == ("ADR_REVIEW_RECALL_ENABLED", "RECALL_ENABLED")
    assert env_names(ProcessSettings, "store_dir") == ("ADR_REVIEW_STORE_DIR",)
