"""The review use case over fakes at the ports (LLM, index) and the real state store: recall -> blind
spots -> Review, checkpoint reuse after an interruption (in one process and across two processes on
SQLite), run keys, ADR isolation. review_adr computes only: no run rows, no leases."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from adr_review.adapters.adr_files import load_adr_folder
from adr_review.adapters.state_sqlite import SqliteStateStore
from adr_review.config import RepoConfig
from adr_review.core.adr import Adr
from adr_review.core.marker import parse_marker
from adr_review.core.render import render_comment
from adr_review.core.results import Candidate, RetrievalResult
from adr_review.core.serde import review_from_dict, review_to_dict
from adr_review.core.text import tokenize
from adr_review.pipeline.adr.blindspot import CRITIC_PROMPTS, JUDGE_PROMPT
from adr_review.pipeline.adr.review import ReviewDeps, ReviewTarget, relative_adr_path, review_adr
from adr_review.pipeline.checkpoint import memo_for
from adr_review.pipeline.ports import LlmError, LlmRequest
from adr_review.pipeline.state_ports import CheckpointStore
from adr_review.prompts import PromptFiles, packaged
from tests.fakes.blindspot_answers import judge_echo_answer
from tests.fakes.llm import FakeLlm

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
RECALL = "recall-pre-gate"
DA, PM = CRITIC_PROMPTS["devils_advocate"], CRITIC_PROMPTS["premortem"]
JUDGE = JUDGE_PROMPT
KAFKA = "examples/proposals/0008-adopt-kafka-for-order-events.md"
REDIS = "examples/proposals/0009-session-store-redis.md"


# --- fakes at the ports ------------------------------------------------------------------------------


class FakeIndex:
    """AdrIndex over an in-memory folder: token overlap as the score (a stand-in for hybrid search)."""

    def __init__(self, adrs: Sequence[Adr]) -> None:
        self.adrs = list(adrs)
        self.searches = 0

    def sync(self, adrs: Sequence[Adr]) -> Any:  # pragma: no cover - not used by the review
        raise NotImplementedError

    def search(
        self,
        query: str,
        *,
        top_n: int = 20,
        exclude_paths: frozenset[str] = frozenset(),
        pool: frozenset[str] | None = None,
    ) -> RetrievalResult:
        self.searches += 1
        q = set(tokenize(query))
        scored = [
            (len(q & set(tokenize(a.title + " " + a.summary + " " + a.text))), a)
            for a in self.adrs
            if a.path not in exclude_paths
        ]
        scored = [(s, a) for s, a in scored if s > 0]
        scored.sort(key=lambda p: -p[0])
        best = scored[0][0] if scored else 1
        cands = tuple(
            Candidate(a, None, float(s), s / best, s / best, s / best >= 0.3, "fake overlap")
            for s, a in scored[:top_n]
        )
        return RetrievalResult(cands, None if cands else "empty_index", {"embedding": "fake-overlap"})


def folder() -> list[Adr]:
    adrs, errors = load_adr_folder(EXAMPLES / "adr")
    assert not errors and len(adrs) >= 5
    return adrs


def recall_answer(adrs: Sequence[Adr], *, limit: int = 3) -> Any:
    """A recall model that cites the first candidates listed in the prompt, quoting their summaries."""
    by_id = {a.adr_id: a for a in adrs}

    def reply(request: LlmRequest) -> dict[str, Any]:
        listed = re.findall(r"^### (ADR-\d+) ", request.cacheable_prefix or request.user, re.MULTILINE)
        picks = [by_id[i] for i in dict.fromkeys(listed) if i in by_id][:limit]
        return {
            "citations": [
                {
                    "adr_id": a.adr_id,
                    "relevance": ("high", "med", "low")[min(n, 2)],
                    "relevance_reason": _first_sentence(a.summary),
                }
                for n, a in enumerate(picks)
            ]
        }

    return reply


def _first_sentence(text: str) -> str:
    m = re.match(r"(.{20,200}?[.。])(\s|$)", " ".join(text.split()))
    return m.group(1) if m else " ".join(text.split())[:120]


EN_DA = {
    "conclusion": "Move order events to Kafka and make them self-contained.",
    "counter_arguments": [
        {
            "perspective": "privacy",
            "title": "Self-contained events copy personal data into a 30-day log",
            "argument": "Addresses and phone numbers will sit in a replayable topic for 30 days and in the compacted topic forever.",
            "quote": "`OrderPlaced` carries the delivery address, the phone number and the line items",
            "section": "",
            "gap": "Addresses and phone numbers will sit in a replayable topic for 30 days and in the compacted topic forever.",
            "severity": "critical",
            "actionability": "revise_adr",
            "suggested_action": "Keep personal data out of the event (reference it by customer id) or encrypt it per customer so that erasure can crypto-shred it.",
            "dedupe_group": "pii-in-events",
        },
        {
            "perspective": "operability",
            "title": "Two event buses double the on-call surface",
            "argument": "ADR-0005 rejected two buses for this reason; the proposal gives no new answer to it.",
            "quote": "Keeping two event buses was rejected in ADR-0005",
            "section": "",
            "gap": "ADR-0005 rejected two buses for this reason; the proposal gives no new answer to it.",
            "severity": "high",
            "actionability": "add_to_risks",
            "suggested_action": "Name the owner of each bus, the runbooks and the alerting before the cut-over.",
            "dedupe_group": "two-buses",
        },
    ],
}
EN_PM = {
    "failure_story": "Six months later the fraud team replayed 14 days of orders and the notification consumer re-sent 2 million SMS.",
    "scenarios": [
        {
            "category": "operational",
            "title": "A replay re-triggers side effects in consumers that are not idempotent",
            "scenario": "Fraud scoring replays orders.v1 from an old offset through a shared consumer group.",
            "quote": "Fraud scoring wants to replay 14 days of `orders.order.placed` and `payments.*` events",
            "section": "",
            "gap": "Fraud scoring replays orders.v1 from an old offset through a shared consumer group.",
            "severity_score": 4,
            "probability": 3,
            "impact": 4,
            "suggested_action": "Give replays their own consumer groups and document which consumers must be idempotent.",
            "dedupe_group": "replay-side-effects",
        },
        {
            "category": "technical",
            "title": "24 partitions keyed by order id cap the consumer parallelism",
            "scenario": "A hot sale needs more consumers than partitions; repartitioning breaks per-order ordering.",
            "quote": "a Kafka topic `orders.v1` with 24 partitions, keyed by order id",
            "section": "",
            "gap": "A hot sale needs more consumers than partitions; repartitioning breaks per-order ordering.",
            "severity_score": 2,
            "probability": 2,
            "impact": 3,
            "suggested_action": "Size partitions for the 10,000 events/s target with headroom.",
            "dedupe_group": "partitions",
        },
    ],
}
JA_DA = {
    "conclusion": "セッションストアを Redis に移行する。",
    "counter_arguments": [
        {
            "perspective": "security",
            "title": "Redis 障害時に全ユーザーがログアウトされる",
            "argument": "セッションが Redis だけにあるため、フェイルオーバーでデータが失われると全員が再ログインになる。",
            "quote": "ElastiCache for Redis は運用が安定しており",
            "section": "",
            "gap": "セッションが Redis だけにあるため、フェイルオーバーでデータが失われると全員が再ログインになる。",
            "severity": "high",
            "actionability": "revise_adr",
            "suggested_action": "永続化とレプリカ昇格時の挙動を ADR に明記し、障害時のログイン集中に備える。",
            "dedupe_group": "redis-failover",
        }
    ],
}
JA_PM = {
    "failure_story": "半年後、キャッシュと同じクラスターにセッションを置いたため、キャッシュの eviction でセッションが消えた。",
    "scenarios": [
        {
            "category": "technical",
            "title": "キャッシュ用 Redis の eviction でセッションが消える",
            "scenario": "maxmemory に達した時点でセッションキーが追い出される。",
            "quote": "ADR-0007 で導入した ElastiCache for Redis",
            "section": "",
            "gap": "maxmemory に達した時点でセッションキーが追い出される。",
            "severity_score": 4,
            "probability": 3,
            "impact": 4,
            "suggested_action": "セッション専用のクラスターか noeviction ポリシーを使う。",
            "dedupe_group": "eviction",
        }
    ],
}


def scripted_llm(adrs: Sequence[Adr], *, language: str = "en") -> FakeLlm:
    fake = FakeLlm()
    fake.on(RECALL, recall_answer(adrs))
    fake.on(DA, EN_DA if language == "en" else JA_DA)
    fake.on(PM, EN_PM if language == "en" else JA_PM)
    fake.on(JUDGE, lambda req: judge_echo_answer(req.user))
    return fake


def target(path: str = KAFKA, **kw: Any) -> ReviewTarget:
    return ReviewTarget(
        repo=kw.pop("repo", "acme/shop"),
        pr=kw.pop("pr", 42),
        head_sha=kw.pop("head_sha", "a" * 40),
        base_sha=kw.pop("base_sha", "b" * 40),
        adr_path=kw.pop("adr_path", path),
        content=kw.pop("content", (ROOT / path).read_bytes()),
        **kw,
    )


def deps(llm: FakeLlm | None, adrs: Sequence[Adr] | None = None, **kw: Any) -> ReviewDeps:
    adrs = list(adrs if adrs is not None else folder())
    return ReviewDeps(
        index=kw.pop("index", FakeIndex(adrs)),
        folder=adrs,
        llm=llm,
        config=kw.pop("config", RepoConfig()),
        prompts=kw.pop("prompts", packaged()),
        link_base=kw.pop("link_base", "https://github.com/acme/shop/blob/" + "b" * 40),
        adr_dir=kw.pop("adr_dir", "examples/adr"),
        **kw,
    )


def memory() -> SqliteStateStore:
    return SqliteStateStore(":memory:")


def key_of(t: ReviewTarget, d: ReviewDeps) -> str:
    return t.key(d.config, packaged().hash, online=d.llm is not None)


def run_review(store: CheckpointStore, t: ReviewTarget, d: ReviewDeps) -> Any:
    """What a caller does: bind a memo over the store to the run key, then review."""
    key = key_of(t, d)
    reused: list[str] = []
    return review_adr(t, d, memo_for(store, key, on_reuse=reused.append), run_key=key, reused=reused)


def outcomes(store: CheckpointStore, key: str) -> list[tuple[str, str]]:
    return [(a.stage, a.outcome) for a in store.attempts(key)]


# --- the use case ------------------------------------------------------------------------------------


def test_offline_review_is_still_a_useful_comment() -> None:
    store = memory()
    review = run_review(store, target(), deps(None, llm_unavailable_reason="offline"))
    assert review.error is None
    assert review.recall is not None and review.recall.mode == "extractive"
    assert review.recall.citations, "extractive recall should cite the related example ADRs"
    assert review.blindspots is None
    assert ("blindspots", "offline") in review.skipped
    assert review.meta.usage.calls == 0
    body = render_comment(review, link_base=None)
    assert "Blind-spot analysis**: needs an API key" in body
    assert "Extractive recall (no model)" in body
    assert store.get_run(review.meta.run_key) is None  # the run row is the caller's, not review_adr's


def test_full_review_through_the_fake_llm() -> None:
    adrs = folder()
    llm = scripted_llm(adrs)
    store = memory()
    review = run_review(store, target(), deps(llm, adrs))
    assert review.recall is not None and review.recall.mode == "llm"
    assert [c.adr_id for c in review.recall.citations] and review.recall.dropped == {}
    assert review.blindspots is not None and review.blindspots.status == "judged"
    assert {f.severity for f in review.blindspots.findings} >= {"critical", "high"}
    assert len(review.blindspots.selected_perspectives) == 3
    constitution = {p.id: p.name for p in packaged().constitution()}
    assert review.meta.perspectives == tuple(constitution[i] for i in review.blindspots.selected_perspectives)
    assert review.meta.usage.calls == 4 == sum(llm.counts().values())
    assert review.meta.usage.cost_usd > 0 and review.meta.models
    assert review.meta.reused_stages == ()
    assert review.skipped == ()
    key = review.meta.run_key
    assert sorted(outcomes(store, key)) == sorted(
        [
            ("recall", "executed"),
            ("critic:devils_advocate", "executed"),
            ("critic:premortem", "executed"),
            ("judge", "executed"),
        ]
    )
    body = render_comment(review, link_base=None)
    assert parse_marker(body) == ("examples/proposals/0008-adopt-kafka-for-order-events.md", key)
    assert "Self-contained events copy personal data" in body


def test_a_rerun_of_the_same_inputs_pays_for_nothing() -> None:
    adrs = folder()
    llm = scripted_llm(adrs)
    store = memory()
    first = run_review(store, target(), deps(llm, adrs))
    second = run_review(store, target(), deps(llm, adrs))
    assert llm.count() == 4  # no new call
    assert second.meta.run_key == first.meta.run_key
    assert set(second.meta.reused_stages) == {"recall", "critic:devils_advocate", "critic:premortem", "judge"}
    assert second.recall is not None and first.recall is not None
    assert second.recall.citations == first.recall.citations and second.blindspots == first.blindspots
    assert second.recall.diagnostics["replayed"] is True
    assert second.meta.usage == first.meta.usage  # the cost of what is shown, not of this run
    skipped = [s for s, o in outcomes(store, first.meta.run_key) if o == "skipped-checkpoint"]
    assert sorted(skipped) == ["critic:devils_advocate", "critic:premortem", "judge", "recall"]


class Crash(BaseException):
    """A worker killed mid-run: not an Exception, so no stage catches it."""


def test_interrupted_after_the_critics_resumes_from_checkpoints() -> None:
    adrs = folder()
    llm = scripted_llm(adrs)
    llm.queue(JUDGE, Crash("killed during the judge"))
    store = memory()
    with pytest.raises(Crash):
        run_review(store, target(), deps(llm, adrs))
    key = target().key(RepoConfig(), packaged().hash, online=True)
    assert store.get(key, "judge") is None
    before = llm.counts()
    assert before == {RECALL: 1, DA: 1, PM: 1, JUDGE: 1}

    review = run_review(store, target(), deps(llm, adrs))
    assert llm.counts() == {RECALL: 1, DA: 1, PM: 1, JUDGE: 2}  # only the judge ran again
    assert review.blindspots is not None and review.blindspots.status == "judged"
    assert set(review.meta.reused_stages) == {"recall", "critic:devils_advocate", "critic:premortem"}
    rows = outcomes(store, key)
    assert sorted(rows) == sorted(  # concurrent critics finish in any order: compare as multisets
        [
            ("recall", "executed"),
            ("critic:devils_advocate", "executed"),
            ("critic:premortem", "executed"),
            ("judge", "failed"),
            ("recall", "skipped-checkpoint"),
            ("critic:devils_advocate", "skipped-checkpoint"),
            ("critic:premortem", "skipped-checkpoint"),
            ("judge", "executed"),
        ]
    )
    judge_rows = [a for a in store.attempts(key) if a.stage == "judge"]
    assert [(a.attempt, a.outcome, a.authoritative) for a in judge_rows] == [
        (1, "failed", False),
        (2, "executed", True),
    ]
    assert "Crash: killed during the judge" in (judge_rows[0].error or "")


def test_a_failed_judge_degrades_and_a_rerun_heals_it() -> None:
    adrs = folder()
    llm = scripted_llm(adrs)
    llm.fail_first(JUDGE, 1, LlmError("timeout", "no answer within 150 s"))
    store = memory()
    first = run_review(store, target(), deps(llm, adrs))
    assert first.blindspots is not None and first.blindspots.status == "unjudged"
    assert ("judge", "judge_failed: llm_error: timeout: no answer within 150 s") in first.skipped
    assert "The Judge did not run" in render_comment(first, link_base=None)
    second = run_review(store, target(), deps(llm, adrs))
    assert second.blindspots is not None and second.blindspots.status == "judged"
    assert llm.counts() == {RECALL: 1, DA: 1, PM: 1, JUDGE: 2}
    assert second.skipped == ()


SUBPROCESS = textwrap.dedent(
    """
    import json, os, sys
    from adr_review.adapters.state_sqlite import SqliteStateStore
    from tests.pipeline.test_review import JUDGE, deps, folder, run_review, scripted_llm, target

    store = SqliteStateStore(sys.argv[1])
    adrs = folder()
    llm = scripted_llm(adrs)

    def killed(request):
        # A hard kill during the judge call: no exception handler, no finally.
        print(json.dumps({"status": "killed", "calls": llm.counts()}), flush=True)
        os._exit(9)

    if sys.argv[2] == "kill":
        llm.queue(JUDGE, killed)
    result = run_review(store, target(), deps(llm, adrs))
    print(json.dumps({"status": result.blindspots.status, "calls": llm.counts()}))
    """
)


def _run_child(db: Path, mode: str) -> tuple[int, dict[str, Any]]:
    proc = subprocess.run(
        [sys.executable, "-c", SUBPROCESS, str(db), mode],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.stdout.strip(), proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return proc.returncode, result


@pytest.mark.real_process
def test_sqlite_checkpoints_survive_a_killed_process(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    rc, first = _run_child(db, "kill")
    assert rc == 9 and first == {"status": "killed", "calls": {RECALL: 1, DA: 1, PM: 1, JUDGE: 1}}
    rc, second = _run_child(db, "ok")
    assert rc == 0
    assert second == {"status": "judged", "calls": {JUDGE: 1}}  # a fresh fake: no call for recall or critics
    key = target().key(RepoConfig(), packaged().hash, online=True)
    store = SqliteStateStore(db)
    try:
        rows = [(a.stage, a.outcome) for a in store.attempts(key)]
        for stage in ("recall", "critic:devils_advocate", "critic:premortem"):
            assert rows.count((stage, "executed")) == 1 and rows.count((stage, "skipped-checkpoint")) == 1
        # The killed judge call left no row (nothing ran to record it); the re-run's is authoritative.
        assert [(a.outcome, a.authoritative) for a in store.attempts(key) if a.stage == "judge"] == [
            ("executed", True)
        ]
    finally:
        store.close()


# --- ADR-level problems ------------------------------------------------------------------------------


# A sentence of each example proposal: what a model quotes when it has no reason in the cited ADR.
PROPOSAL_SENTENCE = {
    KAFKA: "The Data Platform team already runs Kafka (Amazon MSK) for clickstream data and has the skills to operate it.",
    REDIS: "期限切れ行の削除ジョブ（1 時間ごと）が長時間ロックを取り、そのたびにログインが数秒止まる",
}


@pytest.mark.parametrize(
    ("path", "label", "high", "medium"),
    [
        (KAFKA, " _(from this proposal)_ |", "🟢 high", "🔵 medium"),
        (REDIS, "（この提案から） |", "🟢 高", "🔵 中"),
    ],
)
def test_a_high_citation_whose_reason_is_the_proposals_is_labelled_and_not_high(
    path: str, label: str, high: str, medium: str
) -> None:
    """The model cites its first candidate with that ADR's words and its last, unrelated one with a
    sentence of the proposal, both "high": the second is shown as the proposal's words, at most medium."""
    adrs = folder()
    by_id = {a.adr_id: a for a in adrs}
    cited: list[str] = []

    def reply(request: LlmRequest) -> dict[str, Any]:
        listed = list(
            dict.fromkeys(re.findall(r"^### (ADR-\d+) ", request.cacheable_prefix or "", re.MULTILINE))
        )
        assert len(listed) >= 2
        cited[:] = [listed[0], listed[-1]]
        own = _first_sentence(by_id[listed[0]].summary)
        return {
            "citations": [
                {"adr_id": listed[0], "relevance": "high", "relevance_reason": own},
                {"adr_id": listed[-1], "relevance": "high", "relevance_reason": PROPOSAL_SENTENCE[path]},
            ]
        }

    llm = scripted_llm(adrs, language="en" if path == KAFKA else "ja")
    llm.on(RECALL, reply)
    review = run_review(memory(), target(path), deps(llm, adrs))
    assert review.recall is not None and review.recall.mode == "llm" and review.recall.dropped == {}
    assert [(c.adr_id, c.quoted_from, c.relevance) for c in review.recall.citations] == [
        (cited[0], "candidate", "high"),
        (cited[1], "proposal", "med"),
    ]
    assert review.recall.diagnostics["relevance_capped"] == 1

    body = render_comment(review, link_base=None)
    rows = {ln.split(" | ", 1)[0]: ln for ln in body.splitlines() if ln.startswith("| **ADR-")}
    own_row, proposal_row = rows[f"| **{cited[0]}**"], rows[f"| **{cited[1]}**"]
    assert high in own_row and not own_row.endswith(label)
    assert medium in proposal_row and high not in proposal_row and proposal_row.endswith(label)
    recall_part = body.split("### 🔍", 1)[0]
    assert "every id and quoted reason was checked" not in recall_part and "照合済み" not in recall_part


def test_a_file_that_is_not_an_adr_becomes_an_error_comment() -> None:
    store = memory()
    bad = target(adr_path="docs/adr/0010-empty.md", content=b"")
    review = run_review(store, bad, deps(None))
    assert review.error and review.recall is None
    body = render_comment(review, link_base=None)
    assert parse_marker(body) == ("docs/adr/0010-empty.md", review.meta.run_key)
    assert "Could not review this ADR" in body


def test_japanese_adr_gets_a_japanese_comment_unless_forced() -> None:
    review = run_review(memory(), target(REDIS), deps(None))
    assert review.language == "ja"
    assert "### 📚 関連する過去の決定" in render_comment(review, link_base=None)
    forced = run_review(memory(), target(REDIS), deps(None, config=RepoConfig(language="en")))
    assert forced.language == "en"


@pytest.mark.parametrize(
    ("path", "filler", "said"),
    [
        (KAFKA, "Order events carry the order id and the line items. ", "were sent only the first 60,000"),
        (REDIS, "セッションはユーザー ID をキーに保存する。", "先頭の 60,000 文字だけを送りました"),
    ],
)
def test_an_adr_longer_than_the_critics_are_sent_says_so_in_its_comment(
    path: str, filler: str, said: str
) -> None:
    long = (ROOT / path).read_text(encoding="utf-8") + "\n## Notes\n\n" + filler * (70_000 // len(filler))
    adrs = folder()
    llm = scripted_llm(adrs, language="en" if path == KAFKA else "ja")
    review = run_review(memory(), target(path, content=long.encode()), deps(llm, adrs))
    assert review.blindspots is not None and review.blindspots.status == "judged"
    sent = llm.requests(DA)[0]
    assert (sent.shared_prefix or "").endswith("[... truncated ...]\n</adr_document>")
    body = render_comment(review, link_base=None)
    assert said in body and f"{len(long):,}" in body
    short = run_review(memory(), target(path), deps(scripted_llm(adrs), adrs))
    assert "60,000" not in render_comment(short, link_base=None)


def test_recall_excludes_the_adr_under_review_when_it_is_in_the_folder() -> None:
    adrs = folder()
    path = "examples/adr/0005-nats-jetstream-event-bus.md"
    review = run_review(memory(), target(path), deps(None, adrs))
    assert review.recall is not None
    assert "ADR-0005" not in [c.adr_id for c in review.recall.citations]


@pytest.mark.parametrize(
    ("adr_path", "adr_dir", "expected"),
    [
        ("docs/adr/0001-x.md", "docs/adr", "0001-x.md"),
        ("docs/adr/sub/0001-x.md", "docs/adr/", "sub/0001-x.md"),
        ("elsewhere/0001-x.md", "docs/adr", "0001-x.md"),
        ("0001-x.md", "", "0001-x.md"),
    ],
)
def test_relative_adr_path(adr_path: str, adr_dir: str, expected: str) -> None:
    assert relative_adr_path(adr_path, adr_dir) == expected


def test_stages_can_be_narrowed() -> None:
    adrs = folder()
    llm = scripted_llm(adrs)
    review = run_review(memory(), target(stages=frozenset({"recall"})), deps(llm, adrs))
    assert review.blindspots is None and ("blindspots", "not_requested") in review.skipped
    assert llm.counts() == {RECALL: 1}


# --- run keys ----------------------------------------------------------------------------------------

BASE_KEY = target().key(RepoConfig(), "p1", online=True)


@pytest.mark.parametrize(
    ("change", "same"),
    [
        (lambda: target().key(RepoConfig(), "p1", online=True), True),
        # The commit is not an input: a push that changes nothing the review reads keeps the key.
        (lambda: target(head_sha="c" * 40).key(RepoConfig(), "p1", online=True), True),
        (lambda: target(base_sha="c" * 40).key(RepoConfig(), "p1", online=True), True),
        (lambda: target().key(RepoConfig(), "p1", online=True, folder_digest="changed"), False),
        (lambda: target(pr=43).key(RepoConfig(), "p1", online=True), False),
        (lambda: target(adr_path="docs/adr/x.md").key(RepoConfig(), "p1", online=True), False),
        (lambda: target(content=b"# other").key(RepoConfig(), "p1", online=True), False),
        (lambda: target().key(RepoConfig(language="ja"), "p1", online=True), False),
        (lambda: target().key(RepoConfig(), "p2", online=True), False),
        (lambda: target().key(RepoConfig(), "p1", online=False), False),
        (lambda: target(force_nonce="comment-123").key(RepoConfig(), "p1", online=True), False),
        (lambda: target(stages=frozenset({"recall"})).key(RepoConfig(), "p1", online=True), False),
    ],
)
def test_run_key_changes_with_every_input(change: Any, same: bool) -> None:
    key = change()
    assert re.fullmatch(r"rk2-[0-9a-f]{32}", key)
    assert (key == BASE_KEY) is same


def test_the_prompt_hash_follows_prompt_files_but_not_golden_cases(tmp_path: Path) -> None:
    (tmp_path / "p" / "golden").mkdir(parents=True)
    (tmp_path / "p" / "prompt.md").write_text("a")
    library = PromptFiles(tmp_path)
    h1 = library.hash
    (tmp_path / "p" / "golden" / "case.yaml").write_text("x")
    assert PromptFiles(tmp_path).hash == h1
    (tmp_path / "p" / "prompt.md").write_text("b")
    assert PromptFiles(tmp_path).hash != h1
    assert library.hash == h1  # hashed once: a running process keeps the key of what it loaded


def test_review_round_trips_through_json() -> None:
    adrs = folder()
    review = run_review(memory(), target(), deps(scripted_llm(adrs), adrs))
    data = json.loads(json.dumps(review_to_dict(review), ensure_ascii=False))
    assert review_from_dict(data) == review
    assert dataclasses.asdict(review_from_dict(data)) == dataclasses.asdict(review)


def test_a_review_stored_before_citations_kept_their_source_still_loads_and_claims_nothing_of_it() -> None:
    adrs = folder()
    review = run_review(memory(), target(), deps(scripted_llm(adrs), adrs))
    data = json.loads(json.dumps(review_to_dict(review), ensure_ascii=False))
    for citation in data["recall"]["citations"]:
        assert citation.pop("quoted_from") == "candidate"
    old = review_from_dict(data)
    assert old.recall is not None and old.recall.citations
    assert {c.quoted_from for c in old.recall.citations} == {None}
    body = render_comment(old, link_base=None)
    assert "each reason is a verbatim quote of the ADR it cites or of this proposal." in body
    assert "(from this proposal)" not in body


# --- the CLI: `adr-review review` --------------------------------------------------------------------


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A throwaway index folder shared by the CLI tests (never the repository's ./.adr-review)."""
    return tmp_path_factory.mktemp("index")


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], index_dir: Path) -> Any:
    from adr_review.cli import main

    def run(*argv: str) -> tuple[int, str]:
        monkeypatch.chdir(ROOT)
        rc = main(["review", *argv, "--index-dir", str(index_dir)])
        return rc, capsys.readouterr().out

    return run


@pytest.fixture
def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)


def _table_ids(body: str) -> list[str]:
    return re.findall(r"^\| \[(ADR-\d+)\]\(examples/adr/[^)]+\) \|", body, re.MULTILINE)


def test_cli_offline_review_of_the_english_example(cli: Any, no_key: None) -> None:
    rc, body = cli(KAFKA, "--adr-dir", "examples/adr", "--offline")
    assert rc == 0
    assert parse_marker(body) is not None and parse_marker(body)[0] == KAFKA  # type: ignore[index]
    assert "## 📐 ADR review · ADR-0008: Adopt Kafka for order events" in body
    ids = _table_ids(body)
    assert "ADR-0005" in ids, body  # the NATS JetStream decision it revisits
    assert "**Blind-spot analysis**: needs an API key; this run was offline" in body
    assert "Extractive recall (no model)" in body
    assert "Recall**: failed" not in body


def test_cli_review_says_what_the_index_went_on_without(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path, no_key: None
) -> None:
    from adr_review.adapters import xl_channel
    from adr_review.cli import main

    monkeypatch.setattr(xl_channel, "multilingual_available", lambda scorer: False)  # no extra
    monkeypatch.chdir(ROOT)
    rc = main(["review", KAFKA, "--adr-dir", "examples/adr", "--offline", "--index-dir", str(tmp_path)])
    captured = capsys.readouterr()
    assert rc == 0 and "## 📐 ADR review" in captured.out
    assert "warning: this folder mixes en and ja ADRs" in captured.err
    assert "adr-review[multilingual]" in captured.err


def test_cli_without_a_key_reviews_the_japanese_example_in_japanese(cli: Any, no_key: None) -> None:
    rc, body = cli(REDIS, "--adr-dir", "examples/adr")
    assert rc == 0
    assert "### 📚 関連する過去の決定" in body
    assert {"ADR-0004", "ADR-0007"} & set(_table_ids(body)), body
    assert "**見落とし分析**: API キーが必要です" in body


def test_cli_json_output(cli: Any, no_key: None) -> None:
    rc, out = cli(KAFKA, "--adr-dir", "examples/adr", "--format", "json")
    assert rc == 0
    data = json.loads(out)
    assert data["review"]["recall"]["mode"] == "extractive"
    assert data["review"]["blindspots"] is None
    assert ["blindspots", "no_api_key"] in data["review"]["skipped"]
    assert all(c["adr"]["text"] == "" for c in data["review"]["recall"]["candidates"])
    assert parse_marker(data["comment"]) is not None


def test_cli_unusable_arguments(cli: Any) -> None:
    rc, _ = cli("examples/proposals/missing.md")
    assert rc == 2


def test_cli_a_file_that_is_not_an_adr_prints_the_error_comment(
    cli: Any, tmp_path: Path, no_key: None
) -> None:
    empty = tmp_path / "0001-empty.md"
    empty.write_bytes(b"")
    rc, body = cli(str(empty), "--adr-dir", "examples/adr")
    assert rc == 1 and "Could not review this ADR" in body


def _user_text(request: dict[str, Any]) -> str:
    parts: list[str] = []
    for message in request.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        else:
            parts.extend(block.get("text", "") for block in content or [] if isinstance(block, dict))
    return "\n".join(parts)


def test_cli_through_the_anthropic_adapter_and_a_fake_api(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.fakes.messages_server import FakeMessagesServer, Reply

    with FakeMessagesServer() as server:
        server.set_default(DA, Reply(answer=EN_DA)).set_default(PM, Reply(answer=EN_PM))
        server.set_default(JUDGE, lambda req: Reply(answer=judge_echo_answer(_user_text(req))))
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        db = tmp_path / "checkpoints.sqlite"
        rc, body = cli(KAFKA, "--adr-dir", "examples/adr", "--store", str(db))
        assert rc == 0, body
        assert server.counts() == {RECALL: 1, DA: 1, PM: 1, JUDGE: 1}
        assert "<summary><b>🔴 Critical (1)</b></summary>" in body
        assert "Self-contained events copy personal data into a 30-day log" in body
        assert "Picked by the model from" in body and _table_ids(body)
        assert "What did not run" not in body

        rc, again = cli(KAFKA, "--adr-dir", "examples/adr", "--store", str(db))
        assert rc == 0 and server.count() == 4  # every stage reused from the SQLite checkpoints
        assert "4 stages reused from checkpoints" in again
        assert parse_marker(again) == parse_marker(body)


def test_cli_store_is_the_store_folder_as_for_index_and_recall(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--store DIR` holds the index and the review's checkpoints; a SQLite file is the old meaning,
    still accepted with a deprecation note."""
    from adr_review.cli import main
    from tests.fakes.messages_server import FakeMessagesServer, Reply

    monkeypatch.chdir(ROOT)
    store = tmp_path / ".adr-review"
    with FakeMessagesServer() as server:
        server.set_default(DA, Reply(answer=EN_DA)).set_default(PM, Reply(answer=EN_PM))
        server.set_default(JUDGE, lambda req: Reply(answer=judge_echo_answer(_user_text(req))))
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        assert main(["index", "--adr-dir", "examples/adr", "--store", str(store)]) == 0
        capsys.readouterr()
        assert main(["review", KAFKA, "--adr-dir", "examples/adr", "--store", str(store)]) == 0
        first = capsys.readouterr()
        assert "not saved" not in first.err and "Is a directory" not in first.err, first.err
        assert (store / "checkpoints.sqlite3").is_file()
        assert main(["review", KAFKA, "--adr-dir", "examples/adr", "--store", str(store)]) == 0
        again = capsys.readouterr()
        assert server.count() == 4 and "4 stages reused from checkpoints" in again.out
        index_files = {p.name for p in store.iterdir()}
        assert main(["recall", "--adr-dir", "examples/adr", "--store", str(store), "--file", KAFKA]) == 0
        assert {p.name for p in store.iterdir()} == index_files  # one index, shared: nothing new was built

        old = tmp_path / "checkpoints.sqlite"
        assert main(["review", KAFKA, "--adr-dir", "examples/adr", "--store", str(old)]) == 0
        assert "deprecated" in capsys.readouterr().err and old.is_file()


def test_cli_a_refused_api_key_prints_the_comment_and_exits_non_zero_naming_the_key(
    cli: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.fakes.messages_server import FakeMessagesServer, Reply

    with FakeMessagesServer() as server:
        for prompt in (RECALL, DA, PM, JUDGE):
            server.set_default(prompt, Reply(status=401))
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-wrong")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.chdir(ROOT)
        from adr_review.cli import main

        rc = main(["review", KAFKA, "--adr-dir", "examples/adr"])
        captured = capsys.readouterr()
        assert rc == 1
        assert "authentication_error" in captured.out  # the comment still says why the model's steps failed
        errors = [line for line in captured.err.splitlines() if "refused the credentials" in line]
        assert len(errors) == 1 and "HTTP 401" in errors[0] and "ANTHROPIC_API_KEY" in errors[0], captured.err


@pytest.mark.parametrize("where", ["repo root", "elsewhere"])
def test_cli_links_lead_to_the_cited_files_from_the_working_directory(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    no_key: None,
    where: str,
) -> None:
    """Relative links inside the working directory, absolute ones (leading slash kept) outside it."""
    import shutil

    from adr_review.cli import main

    folder = tmp_path / "decisions"
    shutil.copytree(EXAMPLES / "adr", folder)
    proposal = tmp_path / "0008-adopt-kafka-for-order-events.md"
    shutil.copy(ROOT / KAFKA, proposal)
    cwd = ROOT if where == "repo root" else tmp_path / "elsewhere"
    cwd.mkdir(exist_ok=True)
    monkeypatch.chdir(cwd)
    adr_dir = str(folder) if where == "repo root" else "../decisions"
    rc = main(
        ["review", str(proposal), "--adr-dir", adr_dir, "--offline", "--index-dir", str(tmp_path / "ix")]
    )
    body = capsys.readouterr().out
    targets = re.findall(r"^\| \[ADR-\d+\]\(([^)]+)\) \|", body, re.MULTILINE)
    assert rc == 0 and targets, body
    assert all(t.startswith(str(folder) + "/") and (cwd / t).is_file() for t in targets), targets
