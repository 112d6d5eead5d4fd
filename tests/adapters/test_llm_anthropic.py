"""AnthropicLlm: the real `anthropic` client against the fake Messages API on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from adr_review.adapters.llm import PROMPT_HEADER, AnthropicLlm, make_llm
from adr_review.config import (
    DEFAULT_FALLBACK_MODEL,
    DEFAULT_MODELS,
    LlmSettings,
    ModelPrice,
    RepoConfig,
    Settings,
)
from adr_review.core.results import Usage
from adr_review.pipeline.ports import LlmError, LlmRequest
from tests.fakes.messages_server import FakeMessagesServer, Reply

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["citations"],
    "properties": {"citations": {"type": "array", "maxItems": 5}},
}
CANDIDATE_BLOCK = (
    "<candidate_adrs>\n" + "### ADR-0001 — A\nsummary: a long stable block\n" * 200 + "</candidate_adrs>"
)


def request(model: str = "claude-sonnet-4-6", temperature: float | None = 0.0) -> LlmRequest:
    return LlmRequest(
        prompt_name="recall-pre-gate",
        system="You recall ADRs.",
        user="<proposal>Use Kafka</proposal>",
        cacheable_prefix=CANDIDATE_BLOCK,
        output_schema=SCHEMA,
        model=model,
        temperature=temperature,
        max_tokens=300,
    )


def settings(**kw: object) -> LlmSettings:
    """Fast test settings; no fallback model unless a test asks for one (tests/adapters/test_llm_fallback.py)."""
    base: dict[str, object] = {
        "timeout_s": 2.0,
        "max_retries": 2,
        "total_budget_s": 20.0,
        "fallback_model": None,
    }
    base.update(kw)
    return LlmSettings.model_validate(base)


@pytest.fixture
def llm(fake_anthropic: FakeMessagesServer) -> AnthropicLlm:
    return AnthropicLlm("test-key", settings(), base_url=fake_anthropic.base_url)


ANSWER = {
    "citations": [{"adr_id": "ADR-0001", "relevance": "high", "relevance_reason": "a long stable block"}]
}


def test_a_good_answer_comes_back_parsed_with_usage_and_cost(
    fake_anthropic: FakeMessagesServer, llm: AnthropicLlm
) -> None:
    fake_anthropic.script(
        "recall-pre-gate",
        Reply(
            answer=ANSWER,
            usage={
                "input_tokens": 1000,
                "output_tokens": 200,
                "cache_creation_input_tokens": 3000,
                "cache_read_input_tokens": 500,
            },
        ),
    )
    response = llm.complete(request())
    assert json.loads(response.text) == ANSWER
    u = response.usage
    assert (u.input_tokens, u.output_tokens, u.cache_write_tokens, u.cache_read_tokens) == (
        1000,
        200,
        3000,
        500,
    )
    assert u.model == "claude-sonnet-4-6" and u.calls == 1 and u.latency_s > 0
    # sonnet-4*: 3 / 15 / 0.30 read / 3.75 write per MTok
    assert u.cost_usd == pytest.approx((1000 * 3 + 200 * 15 + 500 * 0.3 + 3000 * 3.75) / 1e6)
    assert fake_anthropic.count("recall-pre-gate") == 1


def test_the_request_asks_for_the_schema_and_names_the_prompt(
    fake_anthropic: FakeMessagesServer, llm: AnthropicLlm
) -> None:
    fake_anthropic.script("recall-pre-gate", Reply(answer=ANSWER))
    llm.complete(request())
    call = fake_anthropic.calls()[0]
    body = call.request
    assert call.headers[PROMPT_HEADER] == "recall-pre-gate"
    fmt = body["output_config"]["format"]
    assert fmt["type"] == "json_schema"
    assert fmt["schema"]["required"] == ["citations"] and "$schema" not in fmt["schema"]
    assert (
        "maxItems: 5" in fmt["schema"]["properties"]["citations"]["description"]
    )  # moved by transform_schema
    assert "tools" not in body and "tool_choice" not in body  # forced tools are refused by newer models
    assert body["system"] == [{"type": "text", "text": "You recall ADRs."}]
    candidates, user = body["messages"][0]["content"]
    # One ADR's candidates are never sent again: no cache_control where the cache can never be read.
    assert candidates == {"type": "text", "text": CANDIDATE_BLOCK}
    assert user == {"type": "text", "text": "<proposal>Use Kafka</proposal>"}
    assert body["max_tokens"] == 300
    assert body["model"] == "claude-sonnet-4-6"


def test_the_review_s_shared_prefix_comes_first_and_is_cached_for_the_next_node(
    fake_anthropic: FakeMessagesServer, llm: AnthropicLlm
) -> None:
    from dataclasses import replace as with_

    doc = "<adr_document>\n" + "We adopt Kafka for order events. " * 200 + "\n</adr_document>"
    fake_anthropic.script("recall-pre-gate", Reply(answer=ANSWER), Reply(answer=ANSWER))
    first = llm.complete(with_(request(), shared_prefix=doc, system="Node one."))
    second = llm.complete(with_(request(), shared_prefix=doc, system="Node two."))
    body = fake_anthropic.calls()[0].request
    assert body["system"] == [
        {"type": "text", "text": doc, "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "Node one."},
    ]
    assert first.usage.cache_write_tokens > 0 and first.usage.cache_read_tokens == 0
    assert second.usage.cache_read_tokens > 0  # the second node read the ADR from the cache


def test_structured_output_can_be_switched_off(fake_anthropic: FakeMessagesServer) -> None:
    llm = AnthropicLlm("k", settings(structured_output=False), base_url=fake_anthropic.base_url)
    llm.complete(request())
    assert "output_config" not in fake_anthropic.calls()[0].request


def test_the_synthetic_cache_is_written_once_then_read(
    fake_anthropic: FakeMessagesServer, llm: AnthropicLlm
) -> None:
    from dataclasses import replace as with_

    shared = with_(
        request(), shared_prefix="<adr_document>\n" + "Kafka for order events. " * 100 + "</adr_document>"
    )
    first = llm.complete(shared).usage
    second = llm.complete(shared).usage
    assert first.cache_write_tokens > 0 and first.cache_read_tokens == 0
    assert second.cache_read_tokens == first.cache_write_tokens and second.cache_write_tokens == 0


@pytest.mark.parametrize(
    "model", ["claude-sonnet-4-6", "claude-haiku-4-5", "claude-opus-5-5", "claude-haiku-5-5", "claude-next"]
)
def test_temperature_is_never_sent_and_each_dropped_one_is_recorded(
    fake_anthropic: FakeMessagesServer, llm: AnthropicLlm, model: str
) -> None:
    """API 2026-10-21 (what SDK 2.x speaks) answers any sampling parameter with a 400, on every model;
    the fake server does too, so sending one would fail this test with an LlmError."""
    response = llm.complete(request(model=model, temperature=0.2))
    call = fake_anthropic.calls()[0]
    assert call.headers["anthropic-version"] >= "2026-10-21"
    assert not {"temperature", "top_p", "top_k"} & set(call.request)
    assert response.usage.temperature_not_sent == (("recall-pre-gate", 0.2),)


def test_the_fake_rejects_a_temperature_like_the_api(fake_anthropic: FakeMessagesServer) -> None:
    import anthropic

    client = anthropic.Anthropic(api_key="k", base_url=fake_anthropic.base_url, max_retries=0)
    with pytest.raises(anthropic.BadRequestError, match="temperature"):
        client.messages.create(
            model="claude-sonnet-4-6",
            max_tokens=10,
            messages=[{"role": "user", "content": "hi"}],
            extra_body={"temperature": 0.2},
        )


def test_no_temperature_configured_records_none(
    fake_anthropic: FakeMessagesServer, llm: AnthropicLlm
) -> None:
    assert llm.complete(request(temperature=None)).usage.temperature_not_sent == ()
    assert "temperature" not in fake_anthropic.calls()[0].request


def test_529_is_retried_then_succeeds(fake_anthropic: FakeMessagesServer, llm: AnthropicLlm) -> None:
    fake_anthropic.script("recall-pre-gate", Reply(status=529), Reply(answer=ANSWER))
    assert json.loads(llm.complete(request()).text) == ANSWER
    assert [c.status for c in fake_anthropic.calls()] == [529, 200]


@pytest.mark.parametrize("status", [408, 409, 429, 500, 503])
def test_other_retryable_statuses_are_retried(
    fake_anthropic: FakeMessagesServer, llm: AnthropicLlm, status: int
) -> None:
    fake_anthropic.script(
        "recall-pre-gate", Reply(status=status, headers={"retry-after-ms": "10"}), Reply(answer=ANSWER)
    )
    assert json.loads(llm.complete(request()).text) == ANSWER
    assert fake_anthropic.count() == 2


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413])
def test_client_errors_are_not_retried(
    fake_anthropic: FakeMessagesServer, llm: AnthropicLlm, status: int
) -> None:
    fake_anthropic.script("recall-pre-gate", Reply(status=status), Reply(answer=ANSWER))
    with pytest.raises(LlmError) as err:
        llm.complete(request())
    assert err.value.kind == ("auth" if status in (401, 403) else "http_error")  # refused credentials
    assert f"HTTP {status}" in err.value.message
    assert fake_anthropic.count() == 1
    assert err.value.usage.calls == 1 and err.value.usage.input_tokens == 0


def test_retries_are_bounded_by_max_retries(fake_anthropic: FakeMessagesServer) -> None:
    llm = AnthropicLlm("k", settings(max_retries=1), base_url=fake_anthropic.base_url)
    fake_anthropic.script("recall-pre-gate", *[Reply(status=529, headers={"retry-after-ms": "1"})] * 5)
    with pytest.raises(LlmError) as err:
        llm.complete(request())
    assert err.value.kind == "http_error" and "529" in err.value.message
    assert fake_anthropic.count() == 2


def test_a_slow_answer_times_out_per_attempt_and_is_retried(fake_anthropic: FakeMessagesServer) -> None:
    llm = AnthropicLlm("k", settings(timeout_s=0.3, max_retries=1), base_url=fake_anthropic.base_url)
    fake_anthropic.script("recall-pre-gate", Reply(delay=3, answer=ANSWER), Reply(delay=3, answer=ANSWER))
    with pytest.raises(LlmError) as err:
        llm.complete(request())
    # both answers would have come (after 3 s each): a timeout error after two attempts means each
    # attempt gave up at its own 0.3 s timeout, not at the server's pace
    assert err.value.kind == "timeout"
    assert fake_anthropic.count() == 2


def test_the_total_budget_stops_retries_early(fake_anthropic: FakeMessagesServer) -> None:
    llm = AnthropicLlm(
        "k", settings(timeout_s=5, max_retries=10, total_budget_s=1.0), base_url=fake_anthropic.base_url
    )
    fake_anthropic.script("recall-pre-gate", *[Reply(status=529, headers={"retry-after": "0.3"})] * 20)
    with pytest.raises(LlmError) as err:
        llm.complete(request())
    assert 2 <= fake_anthropic.count() <= 4  # the budget stopped it: the retries allowed 11 attempts
    assert err.value.kind == "http_error" and "budget" in err.value.message


def test_a_retry_after_longer_than_the_budget_is_not_waited_for(fake_anthropic: FakeMessagesServer) -> None:
    llm = AnthropicLlm("k", settings(total_budget_s=5.0), base_url=fake_anthropic.base_url)
    fake_anthropic.script("recall-pre-gate", Reply(status=429, headers={"retry-after": "60"}))
    outcome: list[BaseException] = []

    def call() -> None:
        try:
            llm.complete(request())
        except LlmError as exc:
            outcome.append(exc)

    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    worker.join(timeout=30)  # a deadline for the outcome, half the 60 s the server asked to wait
    assert not worker.is_alive() and len(outcome) == 1
    assert fake_anthropic.count() == 1


def test_the_budget_caps_a_slow_attempt(fake_anthropic: FakeMessagesServer) -> None:
    llm = AnthropicLlm(
        "k", settings(timeout_s=10, max_retries=3, total_budget_s=0.8), base_url=fake_anthropic.base_url
    )
    fake_anthropic.script("recall-pre-gate", *[Reply(delay=5, answer=ANSWER)] * 4)
    with pytest.raises(LlmError) as err:
        llm.complete(request())
    # the answer comes after 5 s, inside the 10 s attempt timeout: only the 0.8 s budget makes it a timeout
    assert err.value.kind == "timeout"


def test_a_text_answer_is_returned_as_text_for_tolerant_parsing(
    fake_anthropic: FakeMessagesServer, llm: AnthropicLlm
) -> None:
    fake_anthropic.script("recall-pre-gate", Reply(text='Here you go:\n```json\n{"citations": []}\n```'))
    response = llm.complete(request())
    assert response.data is None
    assert response.text.startswith("Here you go")  # call_prompt's tolerant parser finds the JSON
    assert response.usage.output_tokens > 0


def test_an_empty_answer_is_an_error(fake_anthropic: FakeMessagesServer, llm: AnthropicLlm) -> None:
    fake_anthropic.script("recall-pre-gate", Reply(text=""))
    with pytest.raises(LlmError) as err:
        llm.complete(request())
    assert err.value.kind == "empty"
    assert err.value.usage.calls == 1  # the call was paid for


def test_a_refusal_is_an_error(fake_anthropic: FakeMessagesServer, llm: AnthropicLlm) -> None:
    body: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": [],
        "stop_reason": "refusal",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 0},
    }
    fake_anthropic.script("recall-pre-gate", Reply(body=body))
    with pytest.raises(LlmError) as err:
        llm.complete(request())
    assert err.value.kind == "refused" and err.value.usage.input_tokens == 10


def test_connection_refused_is_a_connection_error() -> None:
    with FakeMessagesServer() as server:
        url = server.base_url
    llm = AnthropicLlm("k", settings(max_retries=0), base_url=url)
    with pytest.raises(LlmError) as err:
        llm.complete(request())
    assert err.value.kind == "connection"


def test_a_model_with_no_price_has_an_unknown_cost_not_zero(fake_anthropic: FakeMessagesServer) -> None:
    llm = AnthropicLlm(
        "k",
        settings(prices={"x-*": ModelPrice(input=1, output=1, cache_read=1, cache_write=1)}),
        base_url=fake_anthropic.base_url,
    )
    usage = llm.complete(request(model="claude-unknown")).usage
    assert usage.input_tokens > 0 and usage.cost_usd == 0
    assert not usage.cost_known and usage.unpriced_models == ("claude-unknown",)
    priced = llm.cost("x-1", Usage(model="x-1", input_tokens=10, calls=1))
    total = usage + priced
    assert total.cost_usd > 0 and not total.cost_known  # a sum with one unpriced call stays "unknown"


def test_a_long_prompt_is_priced_at_its_tier(llm: AnthropicLlm) -> None:
    """Haiku 5.5: $0.10 / $0.50 per MTok up to 100,000 prompt tokens, five times that above."""
    short = llm.cost(
        "claude-haiku-5-5", Usage(input_tokens=90_000, cache_read_tokens=10_000, output_tokens=1000)
    )
    long = llm.cost(
        "claude-haiku-5-5", Usage(input_tokens=90_000, cache_read_tokens=10_001, output_tokens=1000)
    )
    assert short.cost_usd == pytest.approx((90_000 * 0.1 + 10_000 * 0.01 + 1000 * 0.5) / 1e6)
    assert long.cost_usd == pytest.approx(5 * (90_000 * 0.1 + 10_001 * 0.01 + 1000 * 0.5) / 1e6)
    assert short.cost_known and long.cost_known


def test_every_default_model_and_the_fallback_have_a_price() -> None:
    prices = LlmSettings()
    for model in [*DEFAULT_MODELS.values(), DEFAULT_FALLBACK_MODEL]:
        assert prices.price_for(model) is not None, model


def test_make_llm_needs_a_key() -> None:
    assert make_llm(Settings(anthropic_api_key=None), RepoConfig()) is None
    assert isinstance(make_llm(Settings(anthropic_api_key="k"), RepoConfig()), AnthropicLlm)


def test_the_client_is_built_lazily_and_once(fake_anthropic: FakeMessagesServer, llm: AnthropicLlm) -> None:
    assert llm._client is None
    llm.complete(request())
    client = llm._client
    llm.complete(request())
    assert client is not None and llm._client is client
