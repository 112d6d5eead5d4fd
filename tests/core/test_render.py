"""The PR comment: snapshots (reviewed by eye once; UPDATE_SNAPSHOTS=1 regenerates), structure on a
real Markdown parser, the size limit, language choice and hostile content end to end."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from adr_review.core.feedback_boxes import finding_ids
from adr_review.core.marker import parse_marker
from adr_review.core.render import (
    DEFAULT_BUDGET,
    GITHUB_COMMENT_LIMIT,
    LABELS,
    STRINGS,
    TEMPLATES_DIR,
    is_degraded,
    render_comment,
    render_step_summary,
)
from adr_review.core.results import (
    INTERNAL_ERROR,
    BlindSpotResult,
    Citation,
    Exclusion,
    Finding,
    RecallResult,
    Review,
    RunMeta,
    StageError,
    Usage,
)

SNAPSHOTS = Path(__file__).resolve().parents[1] / "snapshots"
LINK_BASE = "https://github.com/acme/shop/blob/4b825dc642cb6eb9a060e54bf8d69288fbee4904"
MD = MarkdownIt("commonmark", {"html": True}).enable("table").enable("strikethrough")
USAGE = Usage(model="claude-sonnet-4-5", input_tokens=18_240, output_tokens=3_910, cost_usd=0.1134, calls=4)


def assert_snapshot(name: str, text: str) -> None:
    path = SNAPSHOTS / f"{name}.md"
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"missing snapshot {path}; run with UPDATE_SNAPSHOTS=1 and review it"
    assert text == path.read_text(encoding="utf-8"), f"{path} differs; UPDATE_SNAPSHOTS=1 after review"


# --- sample reviews ----------------------------------------------------------------------------------


def meta(**kw: object) -> RunMeta:
    base = RunMeta(
        run_key="rk1-5d41402abc4b2a76b9719d911017c592",
        mode="recall:llm blindspots:judged",
        models=("claude-sonnet-4-5",),
        usage=USAGE,
        duration_s=41.7,
        perspectives=("security-attacker", "cost-at-10x", "operability-3am"),
        embedding="offline-hash",
    )
    return dataclasses.replace(base, **kw)  # type: ignore[arg-type]


def english_review() -> Review:
    citations = (
        Citation(
            "ADR-0002",
            "0002-outbox-polling-to-rabbitmq.md",
            "Publish domain events through a polling outbox to RabbitMQ",
            "superseded",
            "high",
            "Order events are written to an outbox table in the same transaction as the order.",
            superseded_by="ADR-0008",
            quoted_from="candidate",
        ),
        Citation(
            "ADR-0001",
            "0001-postgres-as-primary-store.md",
            "PostgreSQL as the primary store",
            "accepted",
            "med",
            "All services keep their state in one PostgreSQL cluster.",
            quoted_from="proposal",
        ),
    )
    recall = RecallResult("llm", citations, (), None, {"not_verbatim": 1}, USAGE)
    findings = (
        Finding(
            ("devils_advocate", "premortem"),
            "Exactly-once is assumed but Kafka gives at-least-once to consumers",
            "critical",
            "revise_adr",
            "Consumers process each order event once.",
            "Decision",
            "Kafka delivers at least once: the consumers commit offsets after their side effects, so a "
            "rebalance replays the batch.",
            "State the delivery guarantee and make the billing consumer idempotent on the order id.",
            "delivery-semantics",
            "technical",
            confidence=0.9,
        ),
        Finding(
            ("premortem",),
            "Nobody on call knows Kafka",
            "high",
            "add_to_risks",
            "The platform team operates the Kafka cluster.",
            "Consequences",
            "The team has run RabbitMQ for four years; the ADR names no training or runbook for broker "
            "incidents.\n\nA partition leader election at 3 a.m. becomes an outage.",
            "Add a runbook and a game day before the cut-over.",
            "operability",
            "operational",
            confidence=0.8,
        ),
        Finding(
            ("devils_advocate",),
            "Retention of order events may conflict with GDPR erasure",
            "medium",
            "revise_adr",
            "Order events are retained for seven days.",
            "Decision",
            "Seven-day retention keeps customer addresses in event payloads, out of reach of an erasure.",
            "Keep personal data out of events or key them for crypto-shredding.",
            "privacy",
            "business_regulatory",
            confidence=0.7,
        ),
        Finding(
            ("devils_advocate",),
            "Schema registry becomes a new single point of failure",
            "low",
            "monitor",
            "Producers register every schema before they publish.",
            "Decision",
            "Producers fail closed when the registry is down.",
            "Cache schemas in producers.",
            "registry",
            confidence=0.6,
        ),
    )
    blind = BlindSpotResult(
        status="judged",
        findings=findings,
        omitted_count=0,
        total_count_by_severity={"critical": 1, "high": 1, "medium": 1, "low": 1},
        self_assessment="The decision is sound; the delivery guarantee is the one gap that changes the design.",
        selected_perspectives=("security-attacker", "cost-at-10x", "operability-3am"),
        seed=1234,
        coverage_gaps=("cognitive",),
        errors=(),
        usage_by_node={"devils_advocate": USAGE, "premortem": USAGE, "judge": USAGE},
    )
    return Review(
        adr_path="docs/adr/0008-adopt-kafka-for-order-events.md",
        adr_id="ADR-0008",
        adr_title="Adopt Kafka for order events",
        language="en",
        recall=recall,
        blindspots=blind,
        skipped=(),
        meta=meta(),
        adr_dir="docs/adr",
    )


def japanese_review() -> Review:
    citations = (
        Citation(
            "ADR-0089",
            "0089-gate-progress.md",
            "Gate 進捗の可視化",
            "accepted",
            "high",
            "run_id + gate_id + seq で「run X はどの gate で止まっているか」を 1 クエリで返せること",
            quoted_from="candidate",
        ),
        Citation(
            "ADR-0120",
            "0120-workflows.md",
            "Cloudflare Workflows への移行",
            "accepted",
            "low",
            "durable execution (step 単位の retry・状態永続化) を基盤に委譲できる",
            quoted_from="proposal",
        ),
    )
    recall = RecallResult("llm", citations, (), None, {}, USAGE)
    findings = (
        Finding(
            ("devils_advocate",),
            "CAS ロックの TTL 5 分が LLM 呼び出しより短い",
            "high",
            "revise_adr",
            "CAS ロックの TTL は 5 分とする。",
            "決定",
            "1 gate の LLM 呼び出しが 5 分を超えると、ロックが切れて別 consumer が同じ gate を実行する。",
            "ロックを heartbeat で延長するか、TTL を gate の最大実行時間より長くする。",
            "lock-ttl",
            "technical",
            confidence=0.9,
        ),
        Finding(
            ("premortem",),
            "128KB 上限の実測がないまま着手する",
            "medium",
            "add_to_risks",
            "DO の state が 128KB を超えないことを事前調査ゲートで確認する。",
            "リスク",
            "事前調査ゲートを置くとしているが、超過時の R2 オフロードは未実装。",
            "実測結果を ADR に追記し、CI の state サイズ回帰テストを先に入れる。",
            "do-size",
            "operational",
            confidence=0.7,
        ),
    )
    blind = BlindSpotResult(
        status="judged",
        findings=findings,
        omitted_count=0,
        total_count_by_severity={"high": 1, "medium": 1},
        self_assessment="主要なリスクは本文で扱われている。ロックの TTL だけが設計に影響する。",
        selected_perspectives=("security-attacker", "cost-at-10x", "operability-3am"),
        seed=7,
        coverage_gaps=(),
        errors=(),
        usage_by_node={"devils_advocate": USAGE, "premortem": USAGE, "judge": USAGE},
    )
    return Review(
        adr_path="docs/adr/0116-gate-chunk.md",
        adr_id="ADR-0116",
        adr_title="Decision Pipeline のフル run を gate 単位 chunk 実行に再設計する",
        language="ja",
        recall=recall,
        blindspots=blind,
        skipped=(("adjacent_domain", "disabled"),),
        meta=meta(reused_stages=("recall", "critic:devils_advocate")),
        adr_dir="docs/adr",
    )


def no_citations_review() -> Review:
    r = english_review()
    recall = RecallResult(
        "extractive", (), (), "none_qualified", {}, Usage(), {"retrieval": {"embedding": "offline-hash"}}
    )
    return dataclasses.replace(r, recall=recall)


def degraded_review() -> Review:
    """Offline: extractive recall found nothing, blind spots need a key; plus stage failures."""
    recall = RecallResult(
        "extractive",
        (),
        (),
        "empty_index",
        {},
        Usage(),
        {},
        (StageError("recall", "retrieval: index is empty"),),
    )
    return Review(
        adr_path="docs/adr/0009-session-store-redis.md",
        adr_id="ADR-0009",
        adr_title="Session store on Redis",
        language="en",
        recall=recall,
        blindspots=None,
        skipped=(
            ("recall", "extractive_no_key"),
            ("recall", "embedding_failed"),
            ("recall", "failed: retrieval: index is empty"),
            ("blindspots", "no_api_key"),
            ("judge", "judge_failed: timeout: no answer within 150 s"),
            ("premortem", "failed: schema: scenarios: at least 1 item"),
        ),
        meta=meta(models=(), usage=Usage(), duration_s=0.4, perspectives=(), mode="recall:extractive"),
        adr_dir="docs/adr",
    )


def many_findings_review(n: int = 400) -> Review:
    r = english_review()
    sev = ("low", "medium", "high", "critical")
    findings = tuple(
        Finding(
            ("devils_advocate",),
            f"Finding {i} about a {sev[i % 4]} concern",
            sev[i % 4],  # type: ignore[arg-type]
            "monitor",
            f"Quote {i}: the service scales out horizontally.",
            "Decision",
            f"Gap {i}: " + "the proposal does not say what happens under load. " * 20,
            "Write it down. " * 20,
            f"g{i}",
            confidence=0.9,
        )
        for i in range(n)
    )
    assert r.blindspots is not None
    blind = dataclasses.replace(r.blindspots, findings=findings, omitted_count=3)
    return dataclasses.replace(r, blindspots=blind)


def unverified_review(base: Callable[[], Review] = english_review) -> Review:
    """Findings whose quote is not in the ADR or that name an unknown ADR, and the exclusions section."""
    r = base()
    assert r.blindspots is not None
    ja = r.language == "ja"
    unverified = (
        Finding(
            ("premortem",),
            "ブローカーの認証情報が平文で置かれている"
            if ja
            else "Broker credentials are stored in plain text",
            "high",
            "revise_adr",
            "認証情報はリポジトリの .env に置く。"
            if ja
            else "Credentials live in the repository's .env file.",
            "セキュリティ" if ja else "Security",
            "読み取り権限があれば誰でも発行できる。" if ja else "Anyone with read access can publish orders.",
            "シークレットストアに移す。" if ja else "Move them to the secret store.",
            "secrets",
            "technical",
            unverified="quote_not_found",
        ),
        Finding(
            ("devils_advocate",),
            "ADR-9999 の順序保証と矛盾する" if ja else "Contradicts ADR-9999 on event ordering",
            "medium",
            "revise_adr",
            "Order events are partitioned by order id.",
            "Decision",
            "ADR-9999 requires one global order of events.",
            "Reconcile the two decisions.",
            "ordering",
            unverified="unknown_adr",
            unknown_ids=("ADR-9999",),
        ),
    )
    exclusions = (
        Exclusion(
            "ブローカー障害中に consumer の遅延が増える"
            if ja
            else "Consumer lag grows during a broker outage",
            "broker 障害中の遅延は許容し、注文は outbox に溜める。"
            if ja
            else "Consumer lag during a broker outage is accepted; orders queue in the outbox.",
            "リスク" if ja else "Risks",
            "judge",
            ("premortem",),
            "risks",
        ),
        Exclusion(
            "運用コストが増える" if ja else "Operating Kafka costs more than RabbitMQ",
            "運用コストは RabbitMQ の約 2 倍になる。"
            if ja
            else "Running Kafka costs about twice the RabbitMQ cluster.",
            "影響" if ja else "Consequences",
            "code",
            ("devils_advocate",),
            "consequences",
        ),
    )
    blind = dataclasses.replace(
        r.blindspots,
        unverified=unverified,
        exclusions=exclusions,
        dropped={
            "unverified": 2,
            "judge_excluded_as_covered": 1,
            "covered_by_adr": 1,
            "judge_dropped": 2,
            "judge_exclusion_off_subject": 1,
        },
        raised_count=9,
    )
    return dataclasses.replace(r, blindspots=blind)


SAMPLES = {
    "comment_en": (english_review, "en"),
    "comment_ja": (japanese_review, "ja"),
    "comment_unverified": (unverified_review, "en"),
    "comment_unverified_ja": (lambda: unverified_review(japanese_review), "ja"),
    "comment_no_citations": (no_citations_review, "en"),
    "comment_degraded": (degraded_review, "en"),
}


# --- snapshots ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_snapshot(name: str) -> None:
    builder, _ = SAMPLES[name]
    assert_snapshot(name, render_comment(builder(), link_base=LINK_BASE))


def test_snapshot_trimmed() -> None:
    body = render_comment(many_findings_review(), link_base=LINK_BASE)
    assert_snapshot("comment_trimmed", body)


def test_snapshot_step_summary() -> None:
    body = render_step_summary(
        [english_review(), degraded_review(), japanese_review()], link_base=LINK_BASE, title="acme/shop#42"
    )
    assert_snapshot("step_summary", body)


# --- structure ---------------------------------------------------------------------------------------


def _flat(tokens: list[Token]) -> list[Token]:
    out: list[Token] = []
    for t in tokens:
        out.append(t)
        out.extend(_flat(t.children or []))
    return out


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_marker_is_the_first_line(name: str) -> None:
    review = SAMPLES[name][0]()
    body = render_comment(review, link_base=LINK_BASE)
    assert parse_marker(body) == (review.adr_path, review.meta.run_key)
    assert body.count("adr-review:v1") == 1


def test_citations_table_links_to_the_base_commit() -> None:
    tokens = MD.parse(render_comment(english_review(), link_base=LINK_BASE))
    links = [t.attrGet("href") for t in _flat(tokens) if t.type == "link_open"]
    assert links == [
        f"{LINK_BASE}/docs/adr/0002-outbox-polling-to-rabbitmq.md",
        f"{LINK_BASE}/docs/adr/0001-postgres-as-primary-store.md",
    ]
    rows = [t for t in tokens if t.type == "tr_open"]
    assert len(rows) == 3  # header + 2 citations
    cells = [t.content for t in tokens if t.type == "inline"]
    assert "Superseded by ADR-0008" in cells
    assert any(c.startswith("“Order events are written") for c in cells)


@pytest.mark.parametrize(
    ("builder", "marked", "plain"),
    [
        (
            english_review,
            "| “All services keep their state in one PostgreSQL cluster.” _(from this proposal)_ |",
            "| “Order events are written to an outbox table in the same transaction as the order.” |",
        ),
        (
            japanese_review,
            "| 「durable execution (step 単位の retry・状態永続化) を基盤に委譲できる」（この提案から） |",
            "を 1 クエリで返せること」 |",
        ),
    ],
)
def test_a_reason_quoted_from_the_proposal_is_labelled_as_the_proposals(
    builder: Callable[[], Review], marked: str, plain: str
) -> None:
    body = render_comment(builder(), link_base=LINK_BASE)
    rows = [ln for ln in body.splitlines() if ln.startswith("| [ADR-")]
    assert len(rows) == 2 and rows[0].endswith(plain) and rows[1].endswith(marked)


def _recall_sub_line(body: str) -> str:
    after = body.split("|:--|:--|:--|:--|:--|\n", 1)[1]
    return next(ln for ln in after.splitlines() if ln.startswith("<sub>"))


def _with_recall(
    mode: str, sources: tuple[str | None, ...], *, fallback: bool = False, lang: str = "en"
) -> Review:
    r = english_review() if lang == "en" else japanese_review()
    assert r.recall is not None
    base = r.recall.citations[0]
    citations = tuple(
        dataclasses.replace(base, adr_id=f"ADR-00{i}", quoted_from=src)  # type: ignore[arg-type]
        for i, src in enumerate(sources, 10)
    )
    recall = dataclasses.replace(
        r.recall,
        mode=mode,  # type: ignore[arg-type]
        citations=citations,
        dropped={},
        diagnostics={"fallback_from": "llm"} if fallback else {},
    )
    return dataclasses.replace(r, recall=recall)


# What the sub-line under the citations says code checked, per mode and per source of the reasons.
CHECKED = "Code checked that each id is one of the retrieved candidates and that each reason is "
CAP_LLM = "A reason quoted from this proposal says nothing about the ADR it is given for, so it never makes a row high."
CAP_EXTRACTIVE = "Where marked, the ADR has no sentence to quote, so the reason is the sentence of this proposal closest to it; such a row is never high."
NOT_CHECKED_LLM = (
    "Code did not check that an ADR is really related: that, and its relevance, is the model's judgement."
)
NOT_CHECKED_EXTRACTIVE = (
    "Code did not check that an ADR is really related; it is listed because its search evidence reached the floor"
    " for a citation (the label says how strong it is)."
)


@pytest.mark.parametrize(
    ("mode", "sources", "fallback", "expected"),
    [
        (
            "llm",
            ("candidate", "candidate"),
            False,
            ["Picked by the model.", CHECKED + "a verbatim quote of the ADR it cites.", NOT_CHECKED_LLM],
        ),
        (
            "llm",
            ("proposal",),
            False,
            [
                "Picked by the model.",
                CHECKED + "a verbatim quote of this proposal.",
                CAP_LLM,
                NOT_CHECKED_LLM,
            ],
        ),
        (
            "llm",
            ("candidate", "proposal"),
            False,
            [
                "Picked by the model.",
                CHECKED + "a verbatim quote of the ADR it cites or, where marked, of this proposal.",
                CAP_LLM,
                NOT_CHECKED_LLM,
            ],
        ),
        # stored before the source was kept: nothing is claimed about which text each reason is in
        (
            "llm",
            ("candidate", None),
            False,
            [
                "Picked by the model.",
                CHECKED + "a verbatim quote of the ADR it cites or of this proposal.",
                NOT_CHECKED_LLM,
            ],
        ),
        (
            "extractive",
            ("candidate",),
            False,
            [
                "Extractive recall (no model):",
                CHECKED + "a verbatim quote of the ADR it cites.",
                NOT_CHECKED_EXTRACTIVE,
            ],
        ),
        (
            "extractive",
            ("proposal", "candidate"),
            False,
            [
                "Extractive recall (no model):",
                CHECKED + "a verbatim quote of the ADR it cites or, where marked, of this proposal.",
                CAP_EXTRACTIVE,
                NOT_CHECKED_EXTRACTIVE,
            ],
        ),
        (
            "extractive",
            ("proposal",),
            True,
            [
                "Extractive recall: the model call failed",
                CHECKED + "a verbatim quote of this proposal.",
                CAP_EXTRACTIVE,
                NOT_CHECKED_EXTRACTIVE,
            ],
        ),
    ],
)
def test_the_sub_line_says_exactly_what_code_checked(
    mode: str, sources: tuple[str | None, ...], fallback: bool, expected: list[str]
) -> None:
    line = _recall_sub_line(
        render_comment(_with_recall(mode, sources, fallback=fallback), link_base=LINK_BASE)
    )
    at = [line.find(part) for part in expected]
    assert -1 not in at and at == sorted(at), line
    for absent in {CAP_LLM, CAP_EXTRACTIVE, NOT_CHECKED_LLM, NOT_CHECKED_EXTRACTIVE} - set(expected):
        assert absent not in line
    assert "was checked against" not in line  # it never says the relation itself was checked


def test_the_japanese_sub_line_says_what_code_checked() -> None:
    line = _recall_sub_line(
        render_comment(_with_recall("llm", ("candidate", "proposal"), lang="ja"), link_base=LINK_BASE)
    )
    assert (
        "コードが確認したのは、各 ID が検索で得た候補の一つであることと、各理由がその ADR (印のあるものはこの提案) からの逐語引用であることです。"
        in line
    )
    assert "その行の関連度が「高」になることはありません。" in line
    assert "関連の有無と関連度はモデルの判断です。" in line
    assert "照合済み" not in line


@pytest.mark.parametrize(
    ("link_base", "expected"),
    [
        (None, []),
        ("", ["docs/adr/0002-outbox-polling-to-rabbitmq.md", "docs/adr/0001-postgres-as-primary-store.md"]),
    ],
)
def test_local_links(link_base: str | None, expected: list[str]) -> None:
    tokens = MD.parse(render_comment(english_review(), link_base=link_base))
    assert [t.attrGet("href") for t in _flat(tokens) if t.type == "link_open"] == expected


def test_critical_and_high_open_the_rest_collapsed() -> None:
    body = render_comment(english_review(), link_base=LINK_BASE)
    summaries = re.findall(r"<details( open)?>\n<summary><b>(\S+) (\w+) \((\d+)\)</b></summary>", body)
    assert [(bool(o), label, int(n)) for o, _, label, n in summaries] == [
        (True, "Critical", 1),
        (True, "High", 1),
        (False, "Medium", 1),
        (False, "Low", 1),
    ]
    assert body.count("<details") == body.count("</details>") == 4


def test_degraded_comment_says_what_did_not_run_and_why() -> None:
    body = render_comment(degraded_review(), link_base=LINK_BASE)
    section = body.split("### ⏭️ What did not run", 1)[1].split("\n---\n", 1)[0]
    items = [ln for ln in section.splitlines() if ln.startswith("- ")]
    assert len(items) == 6
    assert "**Blind-spot analysis**: needs an API key" in section
    assert "the ADR index is empty" in body
    assert "timeout: no answer within 150 s" in section
    assert "Blind spots" not in body.split("### ⏭️", 1)[0]  # the section is absent, not empty


def test_the_size_limit_drops_lowest_severity_first_and_counts_them() -> None:
    review = many_findings_review(400)
    body = render_comment(review, link_base=LINK_BASE)
    assert len(body) <= DEFAULT_BUDGET < GITHUB_COMMENT_LIMIT
    shown = re.findall(r"^\*\*\d+\. Finding \d+ about a (\w+) concern\*\*$", body, re.MULTILINE)
    assert 0 < len(shown) < 400
    order = ["critical", "high", "medium", "low"]
    assert shown == sorted(shown, key=order.index)
    # A prefix by severity: a severity is cut only when every lower one is gone.
    counts = [shown.count(s) for s in order]
    cut = next(i for i, c in enumerate(counts) if c < 100)
    assert all(c == 0 for c in counts[cut + 1 :]), counts
    left_out = 400 - len(shown)
    m = re.search(r"(\d+) more findings not shown \(3 beyond the display limit; (\d+) lower-severity", body)
    assert m and int(m.group(2)) == left_out and int(m.group(1)) == left_out + 3
    assert body.count("<details") == body.count("</details>")
    assert parse_marker(body) is not None
    cut_label = ["Critical", "High", "Medium", "Low"][cut]
    assert f"<summary><b>{cut_label} ({counts[cut]} of 100)</b></summary>" in body.replace("🔴 ", "").replace(
        "🟠 ", ""
    ).replace("🟡 ", "").replace("⚪ ", "")


def test_a_comment_that_fits_is_not_trimmed() -> None:
    body = render_comment(english_review(), link_base=LINK_BASE)
    assert "not shown" not in body


def test_a_tiny_budget_still_gives_a_well_formed_comment() -> None:
    body = render_comment(many_findings_review(10), link_base=LINK_BASE, budget=4000)
    assert len(body) <= 4000
    assert parse_marker(body) is not None
    assert body.count("<details") == body.count("</details>")


@pytest.mark.parametrize(
    ("forced", "heading"), [(None, "関連する過去の決定"), ("en", "Related past decisions")]
)
def test_language_follows_the_adr_unless_forced(forced: str | None, heading: str) -> None:
    body = render_comment(japanese_review(), link_base=LINK_BASE, language=forced)
    assert f"### 📚 {heading}" in body


def test_both_languages_have_every_string() -> None:
    assert STRINGS["en"].keys() == STRINGS["ja"].keys()
    for table in LABELS["en"]:
        assert LABELS["en"][table].keys() == LABELS["ja"][table].keys(), table


def test_the_strings_come_from_the_i18n_files_beside_the_templates(tmp_path: Path) -> None:
    templates = tmp_path / "templates"
    shutil.copytree(TEMPLATES_DIR, templates)
    ja = templates / "i18n" / "ja.yaml"
    ja.write_text(
        ja.read_text(encoding="utf-8").replace("関連する過去の決定", "過去の関連決定"), encoding="utf-8"
    )
    body = render_comment(japanese_review(), link_base=LINK_BASE, templates_dir=templates)
    assert "### 📚 過去の関連決定" in body and "関連する過去の決定" not in body


def test_a_malformed_i18n_file_is_named(tmp_path: Path) -> None:
    templates = tmp_path / "templates"
    shutil.copytree(TEMPLATES_DIR, templates)
    (templates / "i18n" / "en.yaml").write_text(
        "strings:\n  title: [not, a, string]\nlabels: {}\n", encoding="utf-8"
    )
    with pytest.raises(ValueError, match=r"i18n/en\.yaml"):
        render_comment(english_review(), link_base=LINK_BASE, templates_dir=templates)


def test_error_review_renders_an_error_comment() -> None:
    review = dataclasses.replace(
        english_review(), recall=None, blindspots=None, error="file is empty", adr_id="", adr_title=""
    )
    body = render_comment(review, link_base=LINK_BASE)
    assert parse_marker(body) == (review.adr_path, review.meta.run_key)
    assert "Could not review this ADR" in body and "> file is empty" in body
    assert "Related past decisions" not in body


@pytest.mark.parametrize(
    ("language", "note", "hint"),
    [
        ("en", "An internal error stopped this review (run {run})", "Comment `/adr-review` to try again"),
        (
            "ja",
            "内部エラーによりこのレビューは中断されました（実行 {run}）",
            "`/adr-review` とコメントして再実行",
        ),
    ],
)
def test_an_internal_error_comment_is_a_translated_note_with_the_run_id(
    language: str, note: str, hint: str
) -> None:
    review = dataclasses.replace(
        english_review(), recall=None, blindspots=None, error=INTERNAL_ERROR, adr_id="", adr_title=""
    )
    body = render_comment(review, link_base=LINK_BASE, language=language)
    assert note.format(run=review.meta.run_key[:12]) in body and hint in body
    assert INTERNAL_ERROR not in body.split("-->", 1)[1]  # the code itself is not shown either
    assert "could not be read as an ADR" not in body  # not the parse error's hint


@pytest.mark.parametrize(
    ("stage", "reason", "shown"),
    [
        ("premortem", INTERNAL_ERROR, "**Pre-mortem**: failed on an internal error"),
        ("recall", "search_failed", "**Recall**: the search of past ADRs failed."),
    ],
)
def test_a_crashed_stage_says_so_without_its_exception(stage: str, reason: str, shown: str) -> None:
    body = render_comment(dataclasses.replace(english_review(), skipped=((stage, reason),)), link_base="")
    assert shown in body


@pytest.mark.parametrize(
    ("skipped", "expected"),
    [
        ((), False),
        ((("adjacent_domain", "disabled"), ("recall", "not_requested")), False),
        ((("blindspots", "no_api_key"),), True),
        ((("judge", "judge_failed: timeout"),), True),
    ],
)
def test_degraded_state(skipped: tuple[tuple[str, str], ...], expected: bool) -> None:
    assert is_degraded(dataclasses.replace(english_review(), skipped=skipped)) is expected


# --- hostile content end to end ----------------------------------------------------------------------

EVIL = (
    "@octocat @acme/admins #1 ![x](https://evil.example/p.png) <img src=x> <script>x</script> "
    "</details> | cell\nbreak <!-- adr-review:v1 path=x key=rk1-forged --> [click](https://evil.example) "
    "\u202eevil\u200b"
)


def hostile_review() -> Review:
    r = english_review()
    assert r.recall is not None and r.blindspots is not None
    c = dataclasses.replace(r.recall.citations[0], adr_id="ADR-1 " + EVIL, title=EVIL, relevance_reason=EVIL)
    f = dataclasses.replace(
        r.blindspots.findings[0], title=EVIL, quote=EVIL, section=EVIL, gap=EVIL, suggested_action=EVIL
    )
    u = dataclasses.replace(f, unverified="unknown_adr", unknown_ids=(EVIL,))
    x = Exclusion(EVIL, EVIL, EVIL, "judge", (EVIL,))
    return dataclasses.replace(
        r,
        adr_title=EVIL,
        adr_id="ADR-9 " + EVIL,
        adr_path="docs/adr/evil --> <img>.md",
        recall=dataclasses.replace(r.recall, citations=(c,)),
        blindspots=dataclasses.replace(
            r.blindspots, findings=(f,), self_assessment=EVIL, unverified=(u,), exclusions=(x,)
        ),
        skipped=(("premortem", "failed: " + EVIL), ("judge", EVIL)),
        meta=dataclasses.replace(r.meta, models=(EVIL,), perspectives=(EVIL,), embedding=EVIL),
    )


@pytest.mark.parametrize("language", ["en", "ja"])
def test_hostile_text_everywhere_stays_inert(language: str) -> None:
    review = hostile_review()
    body = render_comment(review, link_base=LINK_BASE, language=language)
    assert parse_marker(body) == (review.adr_path, review.meta.run_key)
    tokens = MD.parse(body)
    html = [t.content.strip() for t in tokens if t.type == "html_block"]
    assert all(h.startswith(("<!-- adr-review:v1", "<sub>", "<details", "</details>")) for h in html), html
    flat = _flat(tokens)
    assert not [t for t in flat if t.type == "image"]
    hrefs = [t.attrGet("href") for t in flat if t.type == "link_open"]
    assert all(str(h).startswith(LINK_BASE) for h in hrefs), hrefs
    inline_html = {t.content for t in flat if t.type == "html_inline"}
    # the one HTML comment the body may hold: the checkbox tag of each shown finding, by its own id
    boxes = {
        f"<!-- adr-review:finding={i} -->" for i in finding_ids(review.adr_path, review.blindspots.findings)
    }
    assert inline_html <= {"<sub>", "</sub>", "<b>", "</b>"} | boxes, inline_html
    for t in flat:
        if t.type == "text":
            assert not re.search(r"(?<![\w/@`.])@[A-Za-z0-9]", t.content), t.content
            assert not re.search(r"(?<![\w&])#\d", t.content), t.content
    assert "\u202e" not in body and "\u200b" not in body
    rows = [t for t in tokens if t.type == "tr_open"]
    assert len(rows) == 2 and sum(1 for t in tokens if t.type == "td_open") == 5


def test_unverified_findings_and_exclusions_are_collapsed_apart_from_the_findings() -> None:
    body = render_comment(unverified_review(), link_base=LINK_BASE)
    tokens = MD.parse(body)
    details = [t.content for t in tokens if t.type == "html_block" and t.content.startswith("<details")]
    assert "<details>\n<summary>⚠️ Not verified (2)</summary>\n" in details  # closed
    assert (
        "<details>\n<summary>✅ Already covered by the ADR (2 · covered in Risks ×1, Consequences ×1)</summary>\n"
        in details
    )
    # the shown findings are still the four verified ones: the unverified are neither numbered nor counted
    assert "4 findings from" in body and "**5." not in body
    unverified_part = body.split("⚠️ Not verified")[1].split("</details>")[0]
    assert "Quoted, but not found in the ADR: “Credentials live" in unverified_part
    assert "names an ADR this review was not shown: ADR-9999" in unverified_part
    covered = body.split("Already covered by the ADR")[1].split("</details>")[0]
    assert (
        "“Consumer lag during a broker outage is accepted; orders queue in the outbox.” <sub>(Risks)</sub>"
        in covered
    )
