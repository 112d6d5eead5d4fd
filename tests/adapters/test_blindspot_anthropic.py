"""The whole blind-spot DAG through the real `anthropic` client (AnthropicLlm) against the local fake
Messages API: structured output, per-step temperature (recorded, never sent), concurrency over HTTP,
accounting, failures."""

from __future__ import annotations

from typing import Any

import pytest

from adr_review.adapters.llm import PROMPT_HEADER, AnthropicLlm
from adr_review.config import BlindSpotConfig, LlmSettings
from adr_review.core.adr import Adr, parse_adr
from adr_review.pipeline.adr.blindspot import CRITIC_PROMPTS, JUDGE_PROMPT, run_blindspots
from adr_review.prompts import packaged
from tests.fakes.blindspot_answers import ad_answer, critic_items, da_answer, judge_echo_answer, pm_answer
from tests.fakes.messages_server import FakeMessagesServer, Reply, request_text

DA, PM, AD = (CRITIC_PROMPTS[n] for n in ("devils_advocate", "premortem", "adjacent_domain"))

ADR = b"""# ADR-0012: Use a hosted LLM to review ADRs

* Status: Proposed

## Context
We write many ADRs and reviews are slow.

## Decision
We will call a hosted LLM on every pull request that changes an ADR and post its findings as a comment.

## Consequences
- Costs grow linearly with the number of ADRs reviewed.
"""


@pytest.fixture
def adr() -> Adr:
    return parse_adr("0012-hosted-llm.md", ADR)


@pytest.fixture
def llm(fake_anthropic: FakeMessagesServer) -> AnthropicLlm:
    settings = LlmSettings(timeout_s=5.0, max_retries=0, total_budget_s=20.0)
    return AnthropicLlm("test-key", settings, base_url=fake_anthropic.base_url)


def judge_echo(request: dict[str, Any]) -> Reply:
    return Reply(answer=judge_echo_answer(request_text(request)))


def script_happy(server: FakeMessagesServer, delay: float = 0.0) -> None:
    server.set_default(DA, Reply(answer=da_answer(), delay=delay))
    server.set_default(PM, Reply(answer=pm_answer(), delay=delay))
    server.set_default(AD, Reply(answer=ad_answer(), delay=delay))
    server.set_default(JUDGE_PROMPT, Reply(fn=judge_echo))


def test_the_dag_runs_end_to_end_through_the_anthropic_client(
    fake_anthropic: FakeMessagesServer, llm: AnthropicLlm, adr: Adr
) -> None:
    delay = 0.5
    script_happy(fake_anthropic, delay)
    # warm-up: importing the SDK and building its client take seconds on a busy machine
    run_blindspots(adr, (), llm, config=BlindSpotConfig(adjacent_domain=True), seed=11, prompts=packaged())
    fake_anthropic.reset()
    result = run_blindspots(
        adr, (), llm, config=BlindSpotConfig(adjacent_domain=True), seed=11, prompts=packaged()
    )

    assert result.status == "judged", result.errors
    assert result.errors == ()
    assert fake_anthropic.counts() == {DA: 1, PM: 1, AD: 1, JUDGE_PROMPT: 1}
    # the three critics overlapped on the wire: every critic's request arrived before the first
    # answer (held back `delay` seconds) could have come back; in a row they arrive >= delay apart
    arrivals = [c.at for c in fake_anthropic.calls() if c.prompt in (DA, PM, AD)]
    assert len(arrivals) == 3 and max(arrivals) - min(arrivals) < delay, arrivals

    for call in fake_anthropic.calls():
        body = call.request
        assert call.headers[PROMPT_HEADER] == call.prompt
        assert body["output_config"]["format"]["type"] == "json_schema"  # structured output
        assert body["model"] == "claude-opus-5-5"
    # API 2026-10-21 takes no sampling parameters: each configured temperature is recorded as not sent
    assert not any("temperature" in c.request for c in fake_anthropic.calls())
    assert result.usage.temperature_not_sent == ((AD, 0.85), (DA, 0.95), (JUDGE_PROMPT, 0.2), (PM, 0.8))

    # the Judge was shown every critic's findings, with ids, over HTTP
    judge_text = request_text(fake_anthropic.calls(JUDGE_PROMPT)[0].request)
    ids = [it["id"] for it in critic_items(judge_text)]
    assert ids == ["da-1", "da-2", "da-3", "pm-1", "pm-2", "pm-3", "pm-4", "ad-1", "ad-2", "ad-3"]

    # accounting from the adapter: synthetic tokens, priced from the table (the ADR document is the
    # cached prefix every node shares, so cache reads and writes count too)
    from adr_review.config import LlmSettings

    price = LlmSettings().price_for("claude-opus-5-5")
    assert price is not None
    assert set(result.usage_by_node) == {"devils_advocate", "premortem", "adjacent_domain", "judge"}
    for node, u in result.usage_by_node.items():
        assert u.model == "claude-opus-5-5", node
        assert u.calls == 1 and u.input_tokens > 0 and u.output_tokens > 0, node
        expected = (
            u.input_tokens * price.input
            + u.output_tokens * price.output
            + u.cache_read_tokens * price.cache_read
            + u.cache_write_tokens * price.cache_write
        ) / 1e6
        assert u.cost_usd == pytest.approx(expected), node
        assert u.latency_s > 0, node
    assert sum(u.cache_read_tokens for u in result.usage_by_node.values()) > 0  # a later node read it
    assert result.usage.calls == 4
    # 3 + 4 + 3 findings; the 3 analogies share one topic and are merged by the code dedupe; of the
    # 8 left, the noise budget shows at most 5 (blindspot.max_findings) and counts the rest
    assert len(result.findings) == 5 and result.omitted_count == 3
    assert result.dropped["merged_duplicates"] == 2


def test_http_failures_degrade_node_by_node(
    fake_anthropic: FakeMessagesServer, llm: AnthropicLlm, adr: Adr
) -> None:
    script_happy(fake_anthropic)
    fake_anthropic.set_default(DA, Reply(status=529))
    fake_anthropic.set_default(JUDGE_PROMPT, Reply(status=400))
    result = run_blindspots(adr, (), llm, config=BlindSpotConfig(), seed=11, prompts=packaged())

    assert result.status == "unjudged"
    errors = {e.node: e.message for e in result.errors}
    assert set(errors) == {"devils_advocate", "judge"}
    assert errors["devils_advocate"].startswith("llm_error: http_error: HTTP 529")
    assert errors["judge"].startswith("llm_error: http_error: HTTP 400")
    assert {s for f in result.findings for s in f.source} == {"premortem"}
    # failed calls are still accounted (a call was made), with no tokens billed; the overloaded critic
    # was asked once more of the fallback model, which was overloaded too
    assert result.usage_by_node["devils_advocate"].calls == 2
    assert [c.model for c in fake_anthropic.calls(DA)] == ["claude-opus-5-5", "claude-sonnet-5-5"]
    assert result.usage_by_node["judge"].input_tokens == 0


def test_a_text_answer_that_is_not_json_fails_only_that_critic(
    fake_anthropic: FakeMessagesServer, llm: AnthropicLlm, adr: Adr
) -> None:
    script_happy(fake_anthropic)
    fake_anthropic.set_default(PM, Reply(text="Sorry, I cannot help with that."))
    result = run_blindspots(adr, (), llm, config=BlindSpotConfig(), seed=11, prompts=packaged())
    assert result.status == "judged"
    assert [e.node for e in result.errors] == ["premortem"]
    assert result.errors[0].message.startswith("not_json")
    assert result.coverage_gaps == ()
