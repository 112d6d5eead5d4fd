"""The Devil's Advocate constitution, the perspectives' relevance weights and their reproducible seeded draw."""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from adr_review.core.perspectives import (
    WEIGHT_FLOOR,
    ConstitutionError,
    Perspective,
    draw_perspectives,
    parse_constitution,
    perspective_weights,
)

CONSTITUTION = Path(__file__).resolve().parents[2] / "prompts" / "constitution.yaml"


@pytest.fixture(scope="module")
def constitution() -> tuple[Perspective, ...]:
    return parse_constitution(yaml.safe_load(CONSTITUTION.read_text(encoding="utf-8")))


def test_constitution_has_at_least_22_distinct_perspectives_each_with_a_question(
    constitution: tuple[Perspective, ...],
) -> None:
    assert len(constitution) >= 22
    assert len({p.id for p in constitution}) == len(constitution)
    assert len({p.name.casefold() for p in constitution}) == len(constitution)
    assert len({p.question for p in constitution}) == len(constitution)
    for p in constitution:
        assert p.question.endswith("?"), p.id
        assert p.question_ja.endswith("？"), p.id
        assert p.name_ja, p.id


def test_constitution_covers_the_perspectives_the_issue_names(constitution: tuple[Perspective, ...]) -> None:
    ids = {p.id for p in constitution}
    required = {"security", "cost", "operability", "reversibility", "compliance", "data_lifecycle"}
    assert required | {"vendor_lock_in", "team_cognitive_load"} <= ids


def test_same_seed_same_draw(constitution: tuple[Perspective, ...]) -> None:
    first = draw_perspectives(constitution, seed=1234)
    assert len(first) == 3
    assert len({p.id for p in first}) == 3
    assert draw_perspectives(constitution, seed=1234) == first
    # independent of the order the constitution lists them in
    assert draw_perspectives(tuple(reversed(constitution)), seed=1234) == first


def test_different_seeds_give_different_draws(constitution: tuple[Perspective, ...]) -> None:
    draws = {tuple(p.id for p in draw_perspectives(constitution, seed=s)) for s in range(20)}
    assert len(draws) >= 15  # C(30, 3) = 4060 possible draws: collisions should be rare
    used = {pid for d in draws for pid in d}
    assert len(used) >= 20  # every part of the constitution gets drawn, not a favoured few


@pytest.mark.parametrize(
    ("seed", "ids"),
    [
        (0, ["disaster_recovery", "simplicity", "opportunity_cost"]),
        (42, ["vendor_lock_in", "disaster_recovery", "scalability"]),
        (20260527, ["interoperability", "performance", "second_order_effects"]),
    ],
)
def test_the_draw_is_pinned_for_known_seeds(
    constitution: tuple[Perspective, ...], seed: int, ids: list[str]
) -> None:
    """A recorded run must replay with the same perspectives on any machine and Python version: if this
    fails, the draw algorithm (or a perspective id) changed and past results are no longer reproducible."""
    assert [p.id for p in draw_perspectives(constitution, seed)] == ids


def test_adding_a_perspective_only_changes_draws_it_ranks_into(constitution: tuple[Perspective, ...]) -> None:
    extra = Perspective("new_one", "New", "Is this new?")
    changed = 0
    for seed in range(50):
        before = draw_perspectives(constitution, seed)
        after = draw_perspectives((*constitution, extra), seed)
        if extra in after:
            changed += 1
        else:
            assert after == before
    assert changed < 25


def test_draw_more_than_available_is_an_error() -> None:
    with pytest.raises(ConstitutionError):
        draw_perspectives([Perspective("a", "A", "a?"), Perspective("b", "B", "b?")], seed=1, k=3)


def test_localized_falls_back_to_english() -> None:
    p = Perspective("cost", "Cost", "How much?", name_ja="コスト", question_ja="いくら？")
    assert p.localized("ja") == ("コスト", "いくら？")
    assert p.localized("en") == ("Cost", "How much?")
    assert Perspective("x", "X", "x?").localized("ja") == ("X", "x?")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (None, "non-empty 'perspectives'"),
        ({"perspectives": []}, "non-empty 'perspectives'"),
        ({"perspectives": ["security"]}, "not a mapping"),
        ({"perspectives": [{"id": "a", "name": "A"}]}, "lacks question"),
        (
            {
                "perspectives": [
                    {"id": "a", "name": "A", "question": "?"},
                    {"id": "a", "name": "B", "question": "?"},
                ]
            },
            "duplicate perspective id 'a'",
        ),
    ],
)
def test_malformed_constitution_is_rejected(data: object, message: str) -> None:
    with pytest.raises(ConstitutionError, match=message):
        parse_constitution(data)


# --- relevance weights ---------------------------------------------------------------------------------

PRIVACY_EN = """# ADR-0042: Store customer profiles for personalised recommendations
## Context
Marketing wants to personalise the home page. We will collect personal data (name, email, purchase
history, location) and keep a profile per customer.
## Decision
Profiles are stored in the analytics warehouse. Users give consent in the sign-up form; under GDPR they
may ask for their data to be erased. PII is pseudonymised before export to the recommendation vendor.
Our auditors and the legal team must approve the data processing agreement.
"""
PRIVACY_JA = """# ADR-0043: 顧客プロファイルを保存してレコメンドに使う
## 背景
マーケティング部門がトップページを個人化したい。氏名・メールアドレス・購買履歴・位置情報などの個人情報を
収集し、顧客ごとにプロファイルを保持する。
## 決定
プロファイルは分析基盤に保存する。利用者は登録時に同意する。個人情報保護法に基づき本人から削除を求められたら
応じる。外部委託先へ渡す前に個人データを仮名化する。法務部と監査の承認を得る。
"""
UNRELATED_EN = """# ADR-0044: Name meeting rooms after rivers
## Context
The office has six meeting rooms numbered one to six and people mix them up.
## Decision
We will name the rooms after rivers: Thames, Rhine, Danube, Nile, Amazon, Mekong. Signs go on each door.
"""
UNRELATED_JA = """# ADR-0045: 会議室に川の名前を付ける
## 背景
オフィスには 1 から 6 までの番号の会議室があり、よく取り違えられる。
## 決定
会議室に川の名前を付ける。各扉に表示を貼る。
"""


@pytest.mark.parametrize(
    ("text", "raised"),
    [
        (PRIVACY_EN, ("privacy", "compliance")),
        (PRIVACY_JA, ("privacy", "compliance")),
    ],
    ids=["privacy-en", "privacy-ja"],
)
def test_a_privacy_heavy_adr_raises_privacy_and_compliance(
    constitution: tuple[Perspective, ...], text: str, raised: tuple[str, ...]
) -> None:
    weights = perspective_weights(constitution, text)
    assert set(weights) == {p.id for p in constitution}
    assert max(weights, key=lambda i: (weights[i], i)) == "privacy"
    median = sorted(weights.values())[len(weights) // 2]
    for pid in raised:
        assert weights[pid] > median, (pid, weights[pid], median)
    assert weights["privacy"] >= 3 * WEIGHT_FLOOR


@pytest.mark.parametrize(
    "text", [UNRELATED_EN, UNRELATED_JA, ""], ids=["unrelated-en", "unrelated-ja", "empty"]
)
def test_an_unrelated_adr_gives_near_uniform_weights(
    constitution: tuple[Perspective, ...], text: str
) -> None:
    weights = perspective_weights(constitution, text)
    assert min(weights.values()) == WEIGHT_FLOOR
    assert max(weights.values()) <= 2 * WEIGHT_FLOOR


TERMS = (Perspective("p", "P", "?", terms=("personal data", "anonymi*", "個人情報", "GDPR")),)


@pytest.mark.parametrize(
    ("text", "weight"),
    [
        ("nothing relevant here", 1),
        ("Personal data, PERSONAL  DATA.", 3),  # case and whitespace folded; one term counted twice
        ("personal views on data", 1),  # a phrase's words must be adjacent
        ("anonymised, anonymization, anonymity", 4),  # a trailing * is a prefix: 3 hits, capped at 3
        ("anonymous", 1),  # "anonymi*" does not match "anonymous"
        ("個人情報を保存し、個人情報を削除する", 3),  # Japanese bigrams, inside a longer run
        ("個人の情報", 1),  # the bigrams must be in a row
        ("gdpr gdpr gdpr gdpr gdpr", 4),  # at most MAX_COUNT_PER_TERM per term
        ("ＧＤＰＲ", 2),  # NFKC: full-width letters are the same word
    ],
)
def test_term_matching(text: str, weight: int) -> None:
    assert perspective_weights(TERMS, text) == {"p": weight}


def test_every_perspective_has_english_and_japanese_terms() -> None:
    raw = yaml.safe_load(CONSTITUTION.read_text(encoding="utf-8"))["perspectives"]
    for item in raw:
        assert item.get("terms") and item.get("terms_ja"), item["id"]


def test_terms_and_terms_ja_are_parsed_together() -> None:
    (p,) = parse_constitution(
        {
            "perspectives": [
                {"id": "a", "name": "A", "question": "?", "terms": ["x", "y"], "terms_ja": ["語", "x"]}
            ]
        }
    )
    assert p.terms == ("x", "y", "語")


@pytest.mark.parametrize("terms", ["privacy", [""], [1], {"a": 1}])
def test_malformed_terms_are_rejected(terms: object) -> None:
    with pytest.raises(ConstitutionError, match="list of terms"):
        parse_constitution({"perspectives": [{"id": "a", "name": "A", "question": "?", "terms": terms}]})


# --- the weighted draw ---------------------------------------------------------------------------------


def test_equal_weights_draw_exactly_like_the_unweighted_draw(constitution: tuple[Perspective, ...]) -> None:
    uniform = {p.id: WEIGHT_FLOOR for p in constitution}
    for seed in range(200):
        assert draw_perspectives(constitution, seed, 3, uniform) == draw_perspectives(constitution, seed)


@pytest.mark.parametrize(
    ("seed", "ids"),
    [
        (0, ["disaster_recovery", "user_impact", "simplicity"]),
        (42, ["vendor_lock_in", "privacy", "disaster_recovery"]),
        (20260527, ["interoperability", "performance", "second_order_effects"]),
    ],
)
def test_the_weighted_draw_is_pinned_for_known_seeds(
    constitution: tuple[Perspective, ...], seed: int, ids: list[str]
) -> None:
    """Like the unweighted pins: a recorded run must replay on any machine, Python version and platform
    (the keys are compared in integers, no floating point)."""
    weights = perspective_weights(constitution, PRIVACY_EN)
    assert [p.id for p in draw_perspectives(constitution, seed, 3, weights)] == ids


def test_the_exact_key_comparison_agrees_with_the_textbook_formula(
    constitution: tuple[Perspective, ...],
) -> None:
    """Efraimidis–Spirakis as usually written, in floating point: keep the k largest u^(1/w), i.e. the
    largest log(u)/w, with u from the same hash (the integer comparison must rank the same way)."""
    weights = perspective_weights(constitution, PRIVACY_EN)

    def u(seed: int, pid: str) -> float:
        digest = hashlib.sha256(f"{seed}:{pid}".encode()).digest()
        return (2 * (2**64 - 1 - int.from_bytes(digest[:8], "big")) + 1) / 2**65

    for seed in range(300):
        textbook = sorted(constitution, key=lambda p: math.log(u(seed, p.id)) / weights[p.id], reverse=True)
        assert draw_perspectives(constitution, seed, 5, weights) == tuple(textbook[:5])


IDS = [f"p{i}" for i in range(12)]


@given(
    weights=st.lists(st.integers(min_value=-2, max_value=60), min_size=len(IDS), max_size=len(IDS)),
    order=st.permutations(range(len(IDS))),
    seed=st.integers(min_value=0, max_value=2**63),
    k=st.integers(min_value=0, max_value=len(IDS)),
)
def test_the_draw_is_k_distinct_deterministic_and_order_independent(
    weights: list[int], order: list[int], seed: int, k: int
) -> None:
    perspectives = [Perspective(i, i.upper(), f"{i}?") for i in IDS]
    w = dict(zip(IDS, weights, strict=True))
    drawn = draw_perspectives(perspectives, seed, k, w)
    assert len(drawn) == k == len({p.id for p in drawn})
    assert set(drawn) <= set(perspectives)
    assert draw_perspectives(perspectives, seed, k, w) == drawn
    shuffled = [perspectives[i] for i in order]
    assert draw_perspectives(shuffled, seed, k, dict(reversed(list(w.items())))) == drawn


def test_the_more_relevant_perspective_is_drawn_more_often(constitution: tuple[Perspective, ...]) -> None:
    """Over many seeds (counts within this run, no timing): the most relevant perspective of the privacy
    ADR is drawn more often than the least relevant one, and every perspective is still drawn (the floor)."""
    weights = perspective_weights(constitution, PRIVACY_EN)
    counts = Counter(p.id for seed in range(3000) for p in draw_perspectives(constitution, seed, 3, weights))
    top = max(weights, key=lambda i: (weights[i], i))
    low = [i for i in weights if weights[i] == min(weights.values())]
    assert top == "privacy"
    assert all(counts[top] > 2 * counts[i] for i in low)
    assert set(counts) == set(weights)  # a draw, not a filter
    # the draw follows the weights' order: a heavier perspective is drawn at least as often on average
    by_weight: dict[int, list[int]] = {}
    for pid, w in weights.items():
        by_weight.setdefault(w, []).append(counts[pid])
    means = [sum(c) / len(c) for _, c in sorted(by_weight.items())]
    assert means == sorted(means)
