"""`adr-review eval retrieval`: metrics, qrels, and an end-to-end run on a small synthetic corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adr_review.cli import main
from adr_review.evals.retrieval import (
    CorpusReport,
    Qrel,
    QueryRun,
    aggregate,
    evaluate_corpus,
    hit_at_k,
    load_qrels,
    metrics_of,
    recall_at_k,
    reciprocal_rank,
)


@pytest.mark.parametrize(
    ("ranked", "relevant", "recall", "hit", "rr"),
    [
        (["a", "b", "c"], ["a"], 1.0, 1.0, 1.0),
        (["x", "a", "b"], ["a", "b"], 1.0, 1.0, 0.5),
        (["x", "y", "z", "w", "v", "a"], ["a"], 0.0, 0.0, 1 / 6),  # found, but after the top 5
        (["x", "a", "y"], ["a", "b", "c", "d"], 0.25, 1.0, 0.5),
        ([], ["a"], 0.0, 0.0, 0.0),
    ],
)
def test_metrics_per_query(
    ranked: list[str], relevant: list[str], recall: float, hit: float, rr: float
) -> None:
    assert recall_at_k(ranked, relevant) == pytest.approx(recall)
    assert hit_at_k(ranked, relevant) == hit
    assert reciprocal_rank(ranked, relevant) == pytest.approx(rr)


def test_metrics_average_over_queries() -> None:
    m = metrics_of([(["a"], ["a"]), (["x", "b"], ["b", "c"])])
    assert (m.recall_at_5, m.hit_at_5, m.mrr, m.queries) == (pytest.approx(0.75), 1.0, pytest.approx(0.75), 2)
    assert metrics_of([]).queries == 0


def test_aggregate_is_micro_averaged_over_queries_not_corpora() -> None:
    def report(name: str, outcomes: list[bool]) -> CorpusReport:
        runs = tuple(
            QueryRun(
                Qrel(f"q{i}", "t", ("a",)), {k: ("a",) if ok else ("z",) for k in ("bm25", "dense", "hybrid")}
            )
            for i, ok in enumerate(outcomes)
        )
        return CorpusReport(name=name, runs=runs, embedding="offline-hash", adrs=1)

    agg = aggregate([report("small", [True]), report("big", [False, False, False])])
    assert agg["hybrid"].recall_at_5 == pytest.approx(0.25)  # macro over corpora would say 0.5
    assert agg["hybrid"].queries == 4


def test_load_qrels_reads_the_format_and_names_a_bad_line(tmp_path: Path) -> None:
    good = tmp_path / "qrels.jsonl"
    good.write_text(
        json.dumps({"query": "b.md", "query_text": "text", "relevant": ["a.md"], "pool": ["a.md"]})
        + "\n\n"
        + json.dumps({"query": "c.md", "query_text": "t", "relevant": ["a.md"]})
        + "\n"
    )
    qrels = load_qrels(good)
    assert qrels[0] == Qrel("b.md", "text", ("a.md",), ("a.md",))
    assert qrels[1].pool is None
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query": "x"}\n')
    with pytest.raises(ValueError, match="bad.jsonl:1"):
        load_qrels(bad)


TOPICS = {
    "0001-kafka.md": (
        "Publish domain events on Kafka",
        "Services react to order changes via Kafka topics and consumers.",
    ),
    "0002-postgres.md": (
        "Use PostgreSQL for orders",
        "Orders need transactions, so PostgreSQL stores them with backups.",
    ),
    "0003-redis.md": (
        "Cache product pages in Redis",
        "Product pages are slow; Redis caches rendered pages for minutes.",
    ),
    "0004-oauth.md": (
        "Authenticate users with OAuth",
        "Users sign in through an OAuth identity provider with tokens.",
    ),
    "0005-terraform.md": (
        "Provision infrastructure with Terraform",
        "Cloud resources are declared in Terraform modules.",
    ),
}
QUERIES = [
    (
        "0006-outbox.md",
        "Transactional outbox for Kafka events: write order events to PostgreSQL, relay to Kafka topics.",
        ["0001-kafka.md", "0002-postgres.md"],
    ),
    (
        "0007-sso.md",
        "Single sign-on: users authenticate with the OAuth identity provider, tokens expire hourly.",
        ["0004-oauth.md"],
    ),
    (
        "0008-cdn.md",
        "Serve cached product pages from a CDN in front of Redis to make pages fast.",
        ["0003-redis.md"],
    ),
]


def write_corpus(root: Path) -> Path:
    root.mkdir(parents=True)
    for name, (title, body) in TOPICS.items():
        (root / name).write_text(
            f"# {title}\n\n## Status\n\nAccepted\n\n## Context\n\n{body}\n\n## Decision\n\n{title}.\n"
        )
    pool = sorted(TOPICS)
    with (root / "qrels.jsonl").open("w") as f:
        for query, text, relevant in QUERIES:
            (root / query).write_text(f"# {query}\n\n## Context\n\n{text}\n")
            f.write(
                json.dumps({"query": query, "query_text": text, "relevant": relevant, "pool": pool}) + "\n"
            )
    return root


def test_evaluate_corpus_finds_what_the_queries_name(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus")
    report = evaluate_corpus(corpus, store_dir=tmp_path / "store")
    assert report.adrs == 8 and report.embedding == "offline-hash" and report.language == "en"
    metrics = report.metrics()
    for name in ("bm25", "dense", "hybrid"):
        assert metrics[name].queries == 3
    assert metrics["hybrid"].recall_at_5 == 1.0 and metrics["hybrid"].mrr == 1.0
    for run in report.runs:  # pool restriction: the other queries are never candidates
        assert set(run.ranked["hybrid"]) <= set(TOPICS)


def test_cli_prints_the_json_contract(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = write_corpus(tmp_path / "corpus")
    assert main(["eval", "retrieval", "--corpus", str(corpus), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["retrievers"]) == {"bm25", "dense", "hybrid"}
    for metrics in out["retrievers"].values():
        assert set(metrics) == {"recall@5", "hit@5", "mrr", "queries"}
        assert metrics["queries"] == 3
    assert out["retrievers"]["hybrid"]["recall@5"] == 1.0
    assert out["embedding"] == "offline-hash"


def test_cli_on_a_folder_of_corpora_aggregates_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_corpus(tmp_path / "all" / "one")
    write_corpus(tmp_path / "all" / "two")
    assert main(["eval", "retrieval", "--corpus", str(tmp_path / "all"), "--store", str(tmp_path / "s")]) == 0
    text = capsys.readouterr().out
    assert "one [en]" in text and "two [en]" in text and "ALL en" in text
    assert (
        main(
            ["eval", "retrieval", "--corpus", str(tmp_path / "all"), "--json", "--store", str(tmp_path / "s")]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["retrievers"]["hybrid"]["queries"] == 6
    assert set(out["corpora"]) == {"one", "two"} and set(out["by_language"]) == {"en"}


def test_cli_rejects_a_folder_without_qrels(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    assert main(["eval", "retrieval", "--corpus", str(tmp_path / "empty")]) == 2
    assert "no qrels.jsonl" in capsys.readouterr().err
