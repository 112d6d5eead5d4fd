"""The comment footer tells the truth about cost: an unpriced model is "cost unknown", never $0; a
temperature that was not sent and an overload fallback are named. Rendered through the real templates."""

from __future__ import annotations

import pytest

from adr_review.core.render import render_comment
from adr_review.core.results import Review, RunMeta, Usage


def review(usage: Usage, language: str = "en") -> Review:
    meta = RunMeta(
        run_key="rk2-0123456789abcdef0123456789abcdef",
        mode="recall:llm blindspots:disabled",
        models=tuple(m for m in usage.model.split(",") if m),
        usage=usage,
        duration_s=3.2,
        perspectives=(),
        embedding="offline-hash",
    )
    return Review(
        adr_path="docs/adr/0007-queue.md",
        adr_id="ADR-0007",
        adr_title="Use a queue",
        language=language,  # type: ignore[arg-type]
        recall=None,
        blindspots=None,
        skipped=(),
        meta=meta,
    )


def footer(usage: Usage, language: str = "en") -> str:
    body = render_comment(review(usage, language), link_base=None)
    return next(line for line in body.splitlines() if line.startswith("<sub>adr-review"))


def test_a_priced_run_shows_its_cost_and_nothing_else() -> None:
    line = footer(Usage(model="claude-haiku-5-5", input_tokens=1000, cost_usd=0.0123, calls=1))
    assert "$0.0123" in line
    assert "unknown" not in line and "fallback" not in line and "temperature" not in line


def test_an_unpriced_model_is_cost_unknown_not_zero() -> None:
    line = footer(
        Usage(model="claude-next-9", input_tokens=1000, calls=1, unpriced_models=("claude-next-9",))
    )
    assert "cost unknown (no price for `claude-next-9`)" in line
    assert "$0.0000" not in line


def test_a_partly_priced_run_shows_the_known_part_plus_unknown() -> None:
    priced = Usage(model="claude-haiku-5-5", input_tokens=1000, cost_usd=0.0123, calls=1)
    unpriced = Usage(model="claude-next-9", input_tokens=1000, calls=1, unpriced_models=("claude-next-9",))
    line = footer(priced + unpriced)
    assert "$0.0123 + unknown (no price for `claude-next-9`)" in line


def test_temperatures_not_sent_and_a_fallback_are_named() -> None:
    usage = Usage(
        model="claude-opus-5-5,claude-sonnet-5-5",
        input_tokens=1000,
        cost_usd=0.01,
        calls=2,
        temperature_not_sent=(("blindspot-judge", 0.2), ("recall-pre-gate", 0.0)),
        fallbacks=(("claude-opus-5-5", "claude-sonnet-5-5"),),
    )
    line = footer(usage)
    assert "answered by the fallback model: `claude-opus-5-5` → `claude-sonnet-5-5`" in line
    assert "temperature not sent" in line
    assert "`blindspot-judge` 0.2" in line and "`recall-pre-gate` 0" in line


@pytest.mark.parametrize("language", ["ja"])
def test_the_japanese_footer_says_the_same(language: str) -> None:
    usage = Usage(
        model="claude-next-9",
        calls=1,
        unpriced_models=("claude-next-9",),
        temperature_not_sent=(("blindspot-judge", 0.2),),
        fallbacks=(("claude-opus-5-5", "claude-sonnet-5-5"),),
    )
    line = footer(usage, language)
    assert "費用不明 (価格未登録のモデル `claude-next-9`)" in line
    assert "代替モデル" in line and "temperature は未送信" in line


def test_a_model_name_from_the_config_cannot_inject_markup() -> None:
    from markdown_it import MarkdownIt

    line = footer(Usage(model="x", calls=1, unpriced_models=("</sub><img src=x>",)))
    inline = MarkdownIt("commonmark").parseInline(line)[0].children or []
    html = [t.content for t in inline if t.type == "html_inline"]
    assert html == ["<sub>", "</sub>"]  # the model name stays text inside a code span
    assert any(t.type == "code_inline" and "<img" in t.content for t in inline)
