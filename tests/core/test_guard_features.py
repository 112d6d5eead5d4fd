"""The guard's evidence features: each one singles out the ADR the diff speaks about, on the
folder's own background, and what a diff adds in unrelated lines does not change which ADR that is."""

from __future__ import annotations

import pytest

from adr_review.core.adr import parse_adr
from adr_review.core.diff import parse_diff
from adr_review.core.evidence import GUARD_FEATURES, Background, EvidenceModel
from adr_review.core.guard import build_query
from adr_review.core.guard_features import FOLDER_WIDE, guard_features
from adr_review.core.results import Candidate


def _adr(path: str, decision: str) -> object:
    text = f"# {path}\n\n## Status\n\nAccepted\n\n## Decision\n\n{decision}\n"
    return parse_adr(path, text.encode())


FOLDER = [
    _adr("0001-store.md", "Orders live in PostgreSQL through psycopg; no service uses MongoDB."),
    _adr("0002-csp.md", "Every response sets Content-Security-Policy headers with the helmet middleware."),
    _adr("0003-logging.md", "Services write JSON log lines through structlog, one event per line."),
    _adr("0004-gateway.md", "The gateway owns ingress; its routing rules live under the routes folder."),
]


def _file(path: str, added: list[str], removed: tuple[str, ...] = ()) -> str:
    body = "".join(f"-{r}\n" for r in removed) + "".join(f"+{a}\n" for a in added)
    return (
        f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
        f"@@ -1,{len(removed)} +1,{len(added)} @@\n{body}"
    )


MONGO = _file("svc/store.py", ["client = MongoClient(url)  # orders"], ("conn = psycopg.connect(dsn)",))
HELMET = _file("web/package.json", ['    "helmet": "^7.1.0",']) + _file("web/server.js", ["app.use(csp())"])
ROUTES = _file("gateway/routes/api.go", ["x := 1"])
NOISE = _file("misc/counter.go", [f"total{i} := compute{i}(window{i}, stride{i})" for i in range(300)])


def _features(
    diff: str, title: str = "", *, wide: bool = True, body: str = ""
) -> dict[str, dict[str, float]]:
    query = build_query(parse_diff(diff), title, body)
    candidates = [
        Candidate(a, None, bm25, 0.0, 0.5, True, "")  # type: ignore[arg-type]
        for a, bm25 in zip(FOLDER, [4.0, 3.0, 2.0, 1.0], strict=True)
    ]
    rows = guard_features(candidates, Background(len(FOLDER), 2.5, 1.0), query, FOLDER, wide=wide)  # type: ignore[arg-type]
    return {c.adr.path: f for c, f in zip(candidates, rows, strict=True)}


def _best(rows: dict[str, dict[str, float]], feature: str) -> str:
    return max(rows, key=lambda p: (rows[p][feature], p))


@pytest.mark.parametrize(
    ("diff", "feature", "adr"),
    [
        (MONGO, "added_rare_z", "0001-store.md"),  # its rare terms (mongo, orders) in added lines
        (MONGO + NOISE, "added_rare_z", "0001-store.md"),  # 300 unrelated lines change nothing
        (HELMET, "deps", "0002-csp.md"),  # a manifest adds the dependency it names
        (ROUTES, "path_z", "0004-gateway.md"),  # the changed paths are the components it names
        (ROUTES + NOISE, "path_z", "0004-gateway.md"),
    ],
)
def test_each_feature_points_at_the_adr_the_diff_speaks_about(diff: str, feature: str, adr: str) -> None:
    rows = _features(diff)
    assert _best(rows, feature) == adr
    assert rows[adr][feature] > 0


@pytest.mark.parametrize(
    ("diff", "title", "adr", "share"),
    [
        # log, event, json, lines of {log, every, event, json, lines}
        (NOISE, "Log every event as JSON lines", "0003-logging.md", 4 / 5),
        # csp (its file name), headers, every, response: all of the title
        (NOISE, "Set the CSP headers on every response", "0002-csp.md", 4 / 4),
        # gateway, routing, rules; not "move"
        (ROUTES + NOISE, "Move the gateway routing rules", "0004-gateway.md", 3 / 4),
    ],
)
def test_title_text_is_the_share_of_the_pr_titles_words_the_adr_names(
    diff: str, title: str, adr: str, share: float
) -> None:
    rows = _features(diff, title)
    assert _best(rows, "title_text") == adr
    assert rows[adr]["title_text"] == pytest.approx(share)


def test_title_text_is_zero_without_a_title_and_does_not_grow_with_the_diff() -> None:
    assert all(f["title_text"] == 0.0 for f in _features(MONGO + NOISE).values())
    small = _features(ROUTES, "Move the gateway routing rules")
    large = _features(ROUTES + NOISE, "Move the gateway routing rules")
    assert {p: f["title_text"] for p, f in small.items()} == {p: f["title_text"] for p, f in large.items()}


def test_body_text_is_the_share_of_the_bodys_words_the_adr_names_and_zero_without_one() -> None:
    # gateway, routing, rules, ingress of {gateway, routing, rules, ingress, cleanup}
    rows = _features(NOISE, "Tidy up", body="Gateway routing rules: an ingress cleanup.")
    assert _best(rows, "body_text") == "0004-gateway.md"
    assert rows["0004-gateway.md"]["body_text"] == pytest.approx(4 / 5)
    assert all(f["body_text"] == 0.0 for f in _features(NOISE, "Gateway routing rules").values())


def test_body_text_reads_the_body_only_as_far_as_the_query_took_it() -> None:
    from adr_review.core.guard import BODY_BUDGET

    past_the_budget = "x" * BODY_BUDGET + " structlog JSON"
    assert _features(NOISE, body=past_the_budget)["0003-logging.md"]["body_text"] == 0.0


def test_without_wide_the_folder_wide_features_are_left_out_and_the_others_kept() -> None:
    full = _features(MONGO, "Move orders to MongoDB")
    narrow = _features(MONGO, "Move orders to MongoDB", wide=False)
    for path, f in narrow.items():
        assert not set(f) & set(FOLDER_WIDE)
        assert f == {k: v for k, v in full[path].items() if k not in FOLDER_WIDE}


def test_deps_is_zero_without_a_manifest_and_margin_is_positive_only_at_the_top() -> None:
    rows = _features(MONGO)
    assert all(f["deps"] == 0.0 for f in rows.values())
    margins = [
        rows[p]["margin"] for p in ("0001-store.md", "0002-csp.md", "0003-logging.md", "0004-gateway.md")
    ]
    assert margins[0] == pytest.approx(1.0) and all(m < 0 for m in margins[1:])


def test_a_model_may_weigh_the_guard_features() -> None:
    model = EvidenceModel(intercept=0.0, weights={name: 1.0 for name in GUARD_FEATURES})
    rows = _features(MONGO)
    assert model.probability(rows["0001-store.md"]) > model.probability(rows["0003-logging.md"])
    with pytest.raises(ValueError, match="unknown"):
        EvidenceModel(intercept=0.0, weights={"diff_size": 1.0})


@pytest.mark.parametrize(
    ("weights", "weighs"),
    [
        ({"bm25_z": 1.0}, False),
        ({"bm25_z": 1.0, "deps": 0.0}, False),  # a zero weight moves nothing
        ({"bm25_z": 1.0, "margin": -0.2}, True),
        ({name: 1.0 for name in GUARD_FEATURES}, True),
    ],
)
def test_a_model_weighs_the_guard_features_only_with_a_nonzero_weight(
    weights: dict[str, float], weighs: bool
) -> None:
    assert EvidenceModel(intercept=0.0, weights=weights).weighs(GUARD_FEATURES) is weighs
