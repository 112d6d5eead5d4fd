"""The guard: which accepted decisions a code change touches, and the verbatim evidence for each. Pure.

Three steps, each a function here; the use case (app/adr_review/pipeline/code_guard/guard.py) runs them around the index:

1. `build_query`: what the change says, as one retrieval query: the PR title and body, the dependency
   names its manifests add or remove (app/adr_review/core/manifests.py), the words of its changed paths, and
   its added and removed lines (identifiers split at camelCase; language keywords dropped). Files in
   `DEFAULT_IGNORE` (lockfiles, generated, vendored, binary) are left out. The query is budgeted
   (`QUERY_BUDGET` characters; lines taken round-robin across files so one huge file cannot crowd
   out the rest) and `GuardQuery.cut` says what the budget left out: never a silent truncation.
2. `enforced_pool`: the accepted ADRs, and the superseded ones whose successor is accepted (a match
   on those points to the successor); proposed, rejected, deprecated and unknown ones are not enforced.
3. `implicate`: the candidates whose guard evidence (a calibrated probability, app/adr_review/core/guard_model.py)
   passes the floor, each with its decision sentence (from the Decision section when it has one) and
   the diff lines that share its terms; `check` verifies both verbatim before anything is shown.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from adr_review.core.adr import Adr
from adr_review.core.adr.sections import heading_section
from adr_review.core.citations import check_quote, successor_of
from adr_review.core.diff import DiffFile, DiffLine
from adr_review.core.evidence import HEAD, Background, EvidenceModel, assess
from adr_review.core.extractive import best_sentence
from adr_review.core.manifests import Dependency, dependencies
from adr_review.core.passages import passages_of
from adr_review.core.results import Candidate
from adr_review.core.text import FUNCTION_WORDS, tokenize

QUERY_BUDGET = (
    12_000  # characters of diff lines in the query (title, body, dependencies and paths come first)
)
BODY_BUDGET = 2_000  # characters of the PR body
MAX_SHOWN = 3  # implicated decisions listed at most
MAX_LINES = 3  # diff lines quoted per decision

# Not read by default: lockfiles (the manifest says what was chosen), generated and vendored code,
# binary and minified assets. Globs match the whole path or its file name.
DEFAULT_IGNORE: tuple[str, ...] = (
    # lockfiles
    "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "bun.lockb",
    "poetry.lock", "Pipfile.lock", "uv.lock", "pdm.lock", "Cargo.lock", "go.sum", "go.work.sum",
    "Gemfile.lock", "composer.lock", "mix.lock", "flake.lock", "*.terraform.lock.hcl",
    # generated
    "*.pb.go", "*.pb.gw.go", "*.pulsar.go", "*_pb2.py", "*_pb2_grpc.py", "*.pb.cc", "*.pb.h",
    "*_generated.*", "*.generated.*", "*.gen.go", "zz_generated*", "*_mock.go", "mock_*.go",
    "*.min.js", "*.min.css", "*.map", "*.snap", "*.golden",
    # vendored
    "vendor/*", "*/vendor/*", "node_modules/*", "*/node_modules/*", "third_party/*", "*/third_party/*",
    # binary and data
    "*.png", "*.jpg", "*.jpeg", "*.gif", "*.ico", "*.svg", "*.pdf", "*.woff", "*.woff2", "*.ttf",
    "*.zip", "*.gz", "*.jar", "*.so", "*.dylib", "*.exe",
)  # fmt: skip

# Words every program has: a query full of them matches every ADR that shows a code sample.
CODE_WORDS = frozenset(
    [
        "if",
        "else",
        "elif",
        "for",
        "while",
        "return",
        "func",
        "function",
        "def",
        "class",
        "struct",
        "interface",
        "type",
        "var",
        "let",
        "const",
        "import",
        "from",
        "package",
        "module",
        "public",
        "private",
        "protected",
        "static",
        "final",
        "void",
        "int",
        "string",
        "bool",
        "true",
        "false",
        "nil",
        "null",
        "none",
        "self",
        "this",
        "new",
        "err",
        "error",
        "ctx",
        "fmt",
        "len",
        "range",
        "make",
        "map",
        "go",
        "defer",
        "async",
        "await",
        "try",
        "catch",
        "except",
        "finally",
        "raise",
        "throw",
        "assert",
        "require",
        "expect",
        "test",
        "tests",
        "describe",
        "it",
        "should",
        "println",
        "printf",
        "sprintf",
        "errorf",
        "get",
        "set",
        "value",
        "values",
        "key",
        "keys",
        "item",
        "items",
        "data",
        "args",
        "kwargs",
    ]
)

_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")


def ignored(path: str, patterns: Sequence[str] = DEFAULT_IGNORE) -> bool:
    name = posixpath.basename(path)
    return any(fnmatch.fnmatchcase(path, p) or fnmatch.fnmatchcase(name, p) for p in patterns)


def words(text: str) -> list[str]:
    """The content words of code or prose: identifiers split at camelCase and underscores (the whole
    identifier kept too), lower-cased, without function words and `CODE_WORDS`."""
    out: list[str] = []
    for ident in _WORD.findall(text):
        parts = [p.lower() for p in _CAMEL.findall(ident)] if not ident.islower() else []
        for w in [ident.lower(), *parts]:
            if len(w) > 2 and w not in CODE_WORDS and w not in FUNCTION_WORDS and not w.isdigit():
                out.append(w)
    out.extend(t for t in tokenize(text) if not t.isascii())  # CJK and other scripts as the index cuts them
    return out


@dataclass(frozen=True)
class QueryLine:
    path: str
    change: Literal["added", "removed"]
    line: DiffLine


@dataclass(frozen=True)
class GuardQuery:
    text: str
    files: tuple[DiffFile, ...]  # the files read (not ignored)
    ignored: tuple[str, ...]  # paths left out by the ignore rules
    dependencies: tuple[Dependency, ...]
    lines: tuple[QueryLine, ...]  # every added or removed line of the files read
    used_lines: int  # how many of them the budget let into the query
    cut: tuple[str, ...] = ()  # what the budget left out, in words
    title: str = ""  # the PR title as given (app/adr_review/core/guard_features.py reads it alone)
    body: str = ""  # the PR body as far as the query took it (BODY_BUDGET)

    @property
    def empty(self) -> bool:
        return not self.text.strip()


def _diff_lines(files: Sequence[DiffFile]) -> list[list[QueryLine]]:
    per_file = []
    for f in files:
        lines = [QueryLine(f.path, "added", ln) for ln in f.added]
        lines += [QueryLine(f.path, "removed", ln) for ln in f.removed]
        per_file.append([q for q in lines if words(q.line.text)])
    return per_file


def build_query(
    files: Sequence[DiffFile],
    title: str = "",
    body: str = "",
    *,
    ignore: Sequence[str] = DEFAULT_IGNORE,
    budget: int = QUERY_BUDGET,
) -> GuardQuery:
    """The retrieval query of a change (see the module doc); deterministic for the same input."""
    kept = tuple(f for f in files if not f.binary and not ignored(f.path, ignore))
    skipped = tuple(f.path for f in files if f not in kept)
    deps = dependencies(kept)
    kept_body = body.strip()[:BODY_BUDGET]
    head = [title.strip(), kept_body]
    cut = (
        [f"PR body: {len(body.strip()) - BODY_BUDGET} characters"] if len(body.strip()) > BODY_BUDGET else []
    )
    head.append(" ".join(dict.fromkeys(d.name for d in deps)))
    head.append(" ".join(dict.fromkeys(w for f in kept for w in words(f.path.replace("/", " ")))))
    per_file = _diff_lines(kept)
    chosen: list[str] = []
    seen: set[str] = set()
    total = sum(len(x) for x in per_file)
    spent = over = 0
    for depth in range(max((len(x) for x in per_file), default=0)):
        for lines in per_file:
            if depth >= len(lines):
                continue
            text = lines[depth].line.text.strip()
            if text in seen:
                continue
            if spent + len(text) > budget:
                over += 1
                continue
            seen.add(text)
            chosen.append(text)
            spent += len(text) + 1
    used = total - over
    if over:
        cut.append(f"diff: {over} of {total} changed lines past the {budget}-character budget")
    text = "\n".join(p for p in [*head, " ".join(w for t in chosen for w in words(t))] if p)
    flat = tuple(q for x in per_file for q in x)
    return GuardQuery(text, kept, skipped, deps, flat, used, tuple(cut), title.strip(), kept_body)


def enforced_pool(adrs: Sequence[Adr]) -> tuple[frozenset[str], Mapping[str, str]]:
    """(paths the guard searches, superseded path -> its accepted successor's path)."""
    accepted = {a.path for a in adrs if a.status == "accepted"}
    by_id = {a.adr_id: a for a in adrs}
    redirect: dict[str, str] = {}
    for a in adrs:
        if a.status != "superseded":
            continue
        succ = by_id.get(successor_of(a, adrs) or "")
        if succ is not None and succ.path in accepted:
            redirect[a.path] = succ.path
    return frozenset(accepted | set(redirect)), redirect


@dataclass(frozen=True)
class Evidence:
    path: str
    change: Literal["added", "removed"]
    number: int
    text: str
    terms: tuple[str, ...]  # the terms it shares with the ADR


@dataclass(frozen=True)
class Implicated:
    adr: Adr
    probability: float
    decision: str  # verbatim in the ADR as a reader sees it
    section: str  # where the sentence stands
    lines: tuple[Evidence, ...]
    via: Adr | None = None  # the superseded ADR that matched, when this is its successor
    terms: tuple[str, ...] = field(default=())
    named: bool = False  # the PR's title or body names it (app/adr_review/core/guard_named.py): no floor


def _adr_terms(adr: Adr) -> frozenset[str]:
    return frozenset(words(f"{adr.title}\n{adr.text}"))


def matching_lines(adr: Adr, lines: Sequence[QueryLine], limit: int = MAX_LINES) -> tuple[Evidence, ...]:
    """The diff lines sharing the most of the ADR's content words (two at least, or one of a
    dependency-sized word), best first; ties keep diff order."""
    terms = _adr_terms(adr)
    scored = []
    for i, q in enumerate(lines):
        shared = tuple(dict.fromkeys(w for w in words(q.line.text) if w in terms))
        if len(shared) >= 2 or (shared and len(shared[0]) >= 6):
            scored.append((-len(shared), i, Evidence(q.path, q.change, q.line.number, q.line.text, shared)))
    scored.sort(key=lambda t: (t[0], t[1]))
    return tuple(e for _s, _i, e in scored[:limit])


def decision_sentence(adr: Adr, terms: set[str]) -> tuple[str, str] | None:
    """(sentence, heading) of the ADR's Decision section (else Context, else any passage) that best
    matches `terms`, cut from the passages a reader sees (so a reference-style link reads as its
    text, as on GitHub, and the verification in `check` holds by construction)."""
    prose = [p for p in passages_of(adr) if p.kind in _PROSE]
    for name in ("decision", "context", None):
        chosen = [p for p in prose if name is None or heading_section(p.section)[0] == name]
        sentence = best_sentence(chosen, terms) if chosen else None
        if sentence is not None:
            return sentence, next((p.section for p in chosen if sentence in p.text), "")
    return None


_PROSE = frozenset({"paragraph", "plain", "html", "cell"})


def rerank(
    candidates: Sequence[Candidate],
    background: Background,
    model: EvidenceModel,
    *,
    features: Sequence[Mapping[str, float]] | None = None,
) -> tuple[Candidate, ...]:
    """The candidates with the guard's evidence, by BM25 (ties by evidence), cut to HEAD.

    A diff is a long, code-heavy query: on the dev set the fused order (tuned on ADR-to-ADR queries)
    and the evidence order both placed the ADR a commit names lower than BM25 does (R@5 0.659 and
    0.659 against 0.747, docs/benchmarks.md); the evidence decides what is listed, not the order.
    `features`: each candidate's (app/adr_review/core/guard_features.py); else the review's."""
    scored = (
        assess(candidates, background, model)
        if features is None
        else tuple(
            replace(c, evidence=round(model.probability(f), 4))
            for c, f in zip(candidates, features, strict=True)
        )
    )
    return tuple(sorted(scored, key=lambda c: (-c.bm25, -(c.evidence or 0.0), c.adr.path))[:HEAD])


def implicate(
    ranked: Sequence[Candidate],
    model: EvidenceModel,
    query: GuardQuery,
    folder: Sequence[Adr],
    redirect: Mapping[str, str],
    *,
    limit: int = MAX_SHOWN,
    named: frozenset[str] = frozenset(),
) -> tuple[list[Implicated], dict[str, int]]:
    """The decisions to list (at most `limit`, in the order of `ranked`, candidates with the guard's
    evidence) and what was dropped, by reason. A `named` path passes whatever its evidence."""

    by_path = {a.path: a for a in folder}
    out: list[Implicated] = []
    dropped: dict[str, int] = {}
    shown: set[str] = set()
    for c in ranked:
        is_named = c.adr.path in named
        if not is_named and (c.evidence is None or c.evidence < model.floor):
            continue
        via = None
        adr = c.adr
        if adr.path in redirect:
            via, adr = adr, by_path[redirect[adr.path]]
        if adr.path in shown:
            continue
        lines = matching_lines(adr, query.lines) or (matching_lines(via, query.lines) if via else ())
        if not lines:
            dropped["no_diff_line"] = dropped.get("no_diff_line", 0) + 1
            continue
        shared = {t for e in lines for t in e.terms}
        picked = decision_sentence(adr, shared | set(words(query.text[:2000])))
        if picked is None:
            dropped["no_decision_sentence"] = dropped.get("no_decision_sentence", 0) + 1
            continue
        item = Implicated(
            adr, c.evidence or 0.0, picked[0], picked[1], lines, via, tuple(sorted(shared)), is_named
        )
        problem = check(item, query)
        if problem:
            dropped[problem] = dropped.get(problem, 0) + 1
            continue
        shown.add(adr.path)
        out.append(item)
        if len(out) >= limit:
            break
    return out, dropped


def check(item: Implicated, query: GuardQuery) -> str | None:
    """None when the decision sentence is verbatim in the ADR as a reader sees it and every quoted
    line is an added or removed line of the diff (at its path, number and side); else the problem."""
    if not check_quote(item.decision, passages_of(item.adr)).ok:
        return "decision_not_verbatim"
    changed = {(q.path, q.change, q.line.number, q.line.text) for q in query.lines}
    if any((e.path, e.change, e.number, e.text) not in changed for e in item.lines):
        return "diff_line_not_in_diff"
    return None
