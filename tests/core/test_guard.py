"""The guard's pure steps: the query and its budget, the ignore rules, the enforced pool, the matched
lines and the verification of what a comment would quote."""

from __future__ import annotations

from dataclasses import replace

import pytest

from adr_review.core.adr import parse_adr
from adr_review.core.diff import parse_diff
from adr_review.core.guard import (
    Evidence,
    Implicated,
    build_query,
    check,
    decision_sentence,
    enforced_pool,
    ignored,
    matching_lines,
    words,
)


def adr(path: str, status: str, body: str = "", title: str = "A decision") -> object:
    text = f"# {title}\n\n## Status\n\n{status}\n\n## Context\n\nWe need a store.\n\n## Decision\n\n{body or 'We will use PostgreSQL for every service database.'}\n"
    return parse_adr(path, text.encode())


POSTGRES = parse_adr(
    "0001-postgres.md",
    b"# ADR-0001: PostgreSQL as the primary store\n\n## Status\n\nAccepted\n\n## Context\n\n"
    b"Orders need transactions.\n\n## Decision\n\nEvery service keeps its data in its own PostgreSQL database. "
    b"No service uses a document store such as MongoDB for orders.\n",
)
DIFF = """\
diff --git a/svc/store.py b/svc/store.py
--- a/svc/store.py
+++ b/svc/store.py
@@ -1,2 +1,2 @@
-conn = psycopg.connect(dsn)  # PostgreSQL database
+client = MongoClient(url)  # MongoDB document store for orders
 pass
diff --git a/package-lock.json b/package-lock.json
--- a/package-lock.json
+++ b/package-lock.json
@@ -1 +1 @@
-"lockfileVersion": 2
+"lockfileVersion": 3
"""


@pytest.mark.parametrize(
    ("path", "skip"),
    [
        ("package-lock.json", True),
        ("web/yarn.lock", True),
        ("go.sum", True),
        ("api/v1/types.pb.go", True),
        ("vendor/github.com/x/y.go", True),
        ("web/node_modules/left-pad/index.js", True),
        ("static/app.min.js", True),
        ("docs/logo.png", True),
        ("pkg/zz_generated.deepcopy.go", True),
        ("svc/store.py", False),
        ("go.mod", False),
        ("package.json", False),
    ],
)
def test_ignore_rules(path: str, skip: bool) -> None:
    assert ignored(path) is skip


def test_words_split_identifiers_and_drop_code_keywords() -> None:
    assert words("return newMongoClient(ctx, HTTPServer)") == [
        "newmongoclient", "mongo", "client", "httpserver", "http", "server"
    ]  # fmt: skip


def test_query_reads_title_dependencies_paths_and_lines_and_skips_lockfiles() -> None:
    q = build_query(parse_diff(DIFF), "Move orders to a document store", "body text")
    assert q.ignored == ("package-lock.json",)
    assert [f.path for f in q.files] == ["svc/store.py"]
    for part in ("Move orders to a document store", "body text", "svc store", "mongo", "psycopg"):
        assert part in q.text
    assert "lockfileversion" not in q.text
    assert q.cut == () and q.used_lines == len(q.lines) == 2


def test_budget_says_what_it_left_out_and_spreads_over_files() -> None:
    animals = ["zebra", "yak", "walrus"]
    big = "".join(
        f"diff --git a/f{i}.py b/f{i}.py\n@@ -0,0 +1,200 @@\n"
        + "".join(f"+{animal}Count{n} = compute({n})\n" for n in range(200))
        for i, animal in enumerate(animals)
    )
    q = build_query(parse_diff(big), budget=3_000)
    assert len(q.lines) == 600 and q.used_lines < 600
    assert q.cut == (f"diff: {600 - q.used_lines} of 600 changed lines past the 3000-character budget",)
    for animal in animals:  # round-robin: every file got into the query
        assert f"{animal}count0" in q.text.split()


def test_long_body_is_cut_and_said_so() -> None:
    q = build_query(parse_diff(DIFF), "t", "x" * 2_500)
    assert q.cut == ("PR body: 500 characters",)


def test_enforced_pool_keeps_accepted_and_points_superseded_to_their_successor() -> None:
    folder = [
        adr("0001-a.md", "Accepted"),
        adr("0002-b.md", "Superseded by [ADR-0005](0005-e.md)"),
        adr("0003-c.md", "Proposed"),
        adr("0004-d.md", "Rejected"),
        adr("0005-e.md", "Accepted", title="ADR-0005: E"),
        adr("0006-f.md", "Superseded by [ADR-0003](0003-c.md)"),  # successor only proposed
    ]
    assert [a.status for a in folder] == [
        "accepted",
        "superseded",
        "proposed",
        "rejected",
        "accepted",
        "superseded",
    ]  # type: ignore[attr-defined]
    pool, redirect = enforced_pool(folder)  # type: ignore[arg-type]
    assert pool == {"0001-a.md", "0005-e.md", "0002-b.md"}
    assert redirect == {"0002-b.md": "0005-e.md"}


def test_matching_lines_quote_the_changed_lines_that_share_the_adr_terms() -> None:
    q = build_query(parse_diff(DIFF))
    lines = matching_lines(POSTGRES, q.lines)
    assert [(e.change, e.number, e.text) for e in lines] == [
        ("added", 1, "client = MongoClient(url)  # MongoDB document store for orders"),
        ("removed", 1, "conn = psycopg.connect(dsn)  # PostgreSQL database"),
    ]
    assert set(lines[0].terms) >= {"mongodb", "document", "store", "orders"}


def test_decision_sentence_comes_from_the_decision_section() -> None:
    picked = decision_sentence(POSTGRES, {"mongodb", "document", "orders"})
    assert picked == ("No service uses a document store such as MongoDB for orders.", "Decision")


def _item() -> tuple[Implicated, object]:
    q = build_query(parse_diff(DIFF))
    lines = matching_lines(POSTGRES, q.lines)
    sentence, section = decision_sentence(POSTGRES, {"mongodb"})  # type: ignore[misc]
    return Implicated(POSTGRES, 0.9, sentence, section, lines), q


def test_check_accepts_verbatim_quotes() -> None:
    item, q = _item()
    assert check(item, q) is None  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda i: replace(i, decision="Every service uses MongoDB."), "decision_not_verbatim"),
        (lambda i: replace(i, decision="Orders need transactions."), None),  # verbatim elsewhere in the ADR
        (
            lambda i: replace(
                i, lines=(Evidence("svc/store.py", "added", 1, "client = MongoClient(other)", ()),)
            ),
            "diff_line_not_in_diff",
        ),
        (  # the right text on the wrong side
            lambda i: replace(i, lines=(replace(i.lines[0], change="removed"),)),
            "diff_line_not_in_diff",
        ),
        (  # a line of an ignored file is not evidence
            lambda i: replace(
                i, lines=(Evidence("package-lock.json", "added", 1, '"lockfileVersion": 3', ()),)
            ),
            "diff_line_not_in_diff",
        ),
    ],
)
def test_check_refuses_what_is_not_verbatim(change: object, problem: str | None) -> None:
    item, q = _item()
    assert check(change(item), q) == problem  # type: ignore[operator, arg-type]


def test_rerank_orders_by_bm25_and_scores_every_candidate() -> None:
    from adr_review.core.evidence import Background
    from adr_review.core.evidence_model import DEFAULT_EVIDENCE
    from adr_review.core.guard import rerank
    from adr_review.core.results import Candidate

    def cand(path: str, bm25: float, fused: float) -> Candidate:
        return Candidate(adr(path, "Accepted"), None, bm25, 0.0, fused, True, "")  # type: ignore[arg-type]

    fused_order = [
        cand(f"{i:04d}-x.md", bm25, fused)
        for i, (bm25, fused) in enumerate([(1, 0.9), (9, 0.8), (5, 0.7)] + [(0.5, 0.1)] * 4)
    ]
    head = rerank(fused_order, Background(7, 2.0, 3.0), DEFAULT_EVIDENCE)
    assert [c.adr.path for c in head[:3]] == ["0001-x.md", "0002-x.md", "0000-x.md"]
    assert len(head) == 5 and all(c.evidence is not None for c in head)


def test_decision_sentence_reads_reference_links_as_a_reader_sees_them() -> None:
    ref = parse_adr(
        "0106-grpc.md",
        b"# ADR 106: gRPC API\n\n## Status\n\nAccepted\n\n## Decision\n\n"
        b"Implement gRPC services for a minimal subset of the [JSON-RPC endpoints][rpc-docs].\n\n"
        b"## References\n\n[rpc-docs]: https://example.com/rpc\n",  # defined outside the Decision section
    )
    picked = decision_sentence(ref, {"grpc", "services", "endpoints"})
    assert picked == ("Implement gRPC services for a minimal subset of the JSON-RPC endpoints.", "Decision")
    q = build_query(
        parse_diff("diff --git a/a.go b/a.go\n@@ -0,0 +1 @@\n+// gRPC services endpoints subset\n")
    )
    item = Implicated(ref, 0.9, picked[0], picked[1], matching_lines(ref, q.lines))
    assert item.lines and check(item, q) is None
