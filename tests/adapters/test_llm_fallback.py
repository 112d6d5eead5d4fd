"""The overload fallback: after the SDK's retries end on HTTP 529, `llm.fallback_model` is asked once.
The real `anthropic` client against the fake Messages API on 127.0.0.1."""

from __future__ import annotations

import json

import pytest

from adr_review.adapters.llm import AnthropicLlm
from adr_review.config import LlmSettings
from adr_review.pipeline.ports import LlmError, LlmRequest
from tests.fakes.messages_server import FakeMessagesServer, Reply

ANSWER = {"citations": []}
BUSY = Reply(status=529, headers={"retry-after-ms": "1"})


def request(model: str = "claude-opus-5-5") -> LlmRequest:
    return LlmRequest(
        prompt_name="blindspot-judge",
        system="You judge.",
        user="<findings/>",
        output_schema={"type": "object"},
        model=model,
        temperature=0.2,
        max_tokens=300,
    )


def llm(
    server: FakeMessagesServer, fallback: str | None = "claude-sonnet-5-5", retries: int = 2
) -> AnthropicLlm:
    settings = LlmSettings(timeout_s=2.0, max_retries=retries, total_budget_s=20.0, fallback_model=fallback)
    return AnthropicLlm("k", settings, base_url=server.base_url)


def test_an_overloaded_model_is_answered_by_the_fallback_after_the_sdks_retries(
    fake_anthropic: FakeMessagesServer,
) -> None:
    fake_anthropic.script("blindspot-judge", BUSY, BUSY, BUSY, Reply(answer=ANSWER))
    response = llm(fake_anthropic).complete(request())
    assert json.loads(response.text) == ANSWER
    wire = [(c.model, c.status) for c in fake_anthropic.calls()]
    assert wire == [("claude-opus-5-5", 529)] * 3 + [("claude-sonnet-5-5", 200)]  # 1 + 2 retries, then once
    u = response.usage
    assert u.fallbacks == (("claude-opus-5-5", "claude-sonnet-5-5"),)
    assert u.calls == 2 and u.model == "claude-opus-5-5,claude-sonnet-5-5"
    assert u.cost_known  # priced as the model that answered (sonnet-5-5: 2 / 10 per MTok)
    assert u.cost_usd == pytest.approx((u.input_tokens * 2 + u.output_tokens * 10) / 1e6)
    assert u.temperature_not_sent == (("blindspot-judge", 0.2),)


def test_without_a_fallback_model_the_overload_is_the_error(fake_anthropic: FakeMessagesServer) -> None:
    fake_anthropic.script("blindspot-judge", BUSY, BUSY, BUSY, Reply(answer=ANSWER))
    with pytest.raises(LlmError) as err:
        llm(fake_anthropic, fallback=None).complete(request())
    assert err.value.kind == "http_error" and "HTTP 529" in err.value.message
    assert fake_anthropic.count() == 3 and err.value.usage.fallbacks == ()


def test_an_overloaded_fallback_fails_the_call_naming_both(fake_anthropic: FakeMessagesServer) -> None:
    fake_anthropic.set_default("blindspot-judge", BUSY)
    with pytest.raises(LlmError) as err:
        llm(fake_anthropic, retries=0).complete(request())
    assert err.value.message.startswith("HTTP 529")
    assert "fallback claude-sonnet-5-5: HTTP 529" in err.value.message
    assert [c.model for c in fake_anthropic.calls()] == ["claude-opus-5-5", "claude-sonnet-5-5"]
    assert err.value.usage.calls == 2 and err.value.usage.input_tokens == 0


@pytest.mark.parametrize("status", [500, 429, 400])
def test_other_failures_do_not_fall_back(fake_anthropic: FakeMessagesServer, status: int) -> None:
    fake_anthropic.set_default("blindspot-judge", Reply(status=status, headers={"retry-after-ms": "1"}))
    with pytest.raises(LlmError):
        llm(fake_anthropic, retries=1).complete(request())
    assert {c.model for c in fake_anthropic.calls()} == {"claude-opus-5-5"}


def test_a_fallback_equal_to_the_model_is_not_asked_twice(fake_anthropic: FakeMessagesServer) -> None:
    fake_anthropic.set_default("blindspot-judge", BUSY)
    with pytest.raises(LlmError):
        llm(fake_anthropic, fallback="claude-opus-5-5", retries=0).complete(request())
    assert fake_anthropic.count() == 1
