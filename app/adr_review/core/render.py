"""Review -> GitHub-flavoured Markdown through templates/, with every untrusted string sanitised.

The pieces: markdown_safe.py sanitises by construction (the Jinja environment built here refuses an
`Untrusted` value that skipped a filter), marker.py writes the hidden first line, comment_view.py builds
what the templates print, and the English and Japanese strings are data in templates/i18n/<lang>.yaml.
This module is the one place that loads templates/ (the templates and the strings, through the same
Jinja loader, on first use) and fits the comment into GitHub's limit.

Size: GitHub rejects a comment body over 65,536 characters. Each untrusted field is clipped, and if
the comment is still too long the lowest-severity findings are left out (and counted) until it fits.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import jinja2
import yaml

from adr_review.core.comment_format import split_reason
from adr_review.core.comment_view import (
    CAPS,
    OPEN_SEVERITIES,
    SEVERITIES,
    Labels,
    Limits,
    Strings,
    build_view,
)
from adr_review.core.guard import Implicated
from adr_review.core.guard_view import guard_view
from adr_review.core.markdown_safe import (
    FILTERS,
    UnsanitizedOutput,
    Untrusted,
    clean,
    clip,
    refuse_untrusted,
    sanitize_block,
    sanitize_code,
    sanitize_inline,
    untrusted,
)
from adr_review.core.marker import MARKER_PREFIX, marker, parse_marker
from adr_review.core.report import Report
from adr_review.core.report_view import build_report_view
from adr_review.core.results import Review
from adr_review.core.shipped import shipped_dir

__all__ = [
    "CAPS",
    "DEFAULT_BUDGET",
    "GITHUB_COMMENT_LIMIT",
    "LANGUAGES",
    "MARKER_PREFIX",
    "OPEN_SEVERITIES",
    "SEVERITIES",
    "TEMPLATES_DIR",
    "UnsanitizedOutput",
    "Untrusted",
    "choose_language",
    "clean",
    "clip",
    "is_degraded",
    "marker",
    "parse_marker",
    "render_comment",
    "render_guard",
    "render_report",
    "render_step_summary",
    "sanitize_block",
    "sanitize_code",
    "sanitize_inline",
]

TEMPLATES_DIR = shipped_dir("templates")  # package data of the install, or the checkout's templates/
LANGUAGES = ("en", "ja")  # each has templates/i18n/<lang>.yaml
GITHUB_COMMENT_LIMIT = 65_536
# A margin under GitHub's limit for the marker line and the feedback ledger (app/adr_review/core/feedback.py),
# which publishing adds to the rendered body.
DEFAULT_BUDGET = GITHUB_COMMENT_LIMIT - 4_000
MIN_FINDING_CHARS = 30  # the shortest a rendered finding can be ("\n**1. x**\n<sub>Monitor</sub>\n")

# --------------------------------------------------------------------------------------------------
# Templates and strings


@dataclass(frozen=True)
class _Catalog:
    env: jinja2.Environment
    strings: Mapping[str, Strings]  # language -> its fixed strings
    labels: Mapping[str, Labels]  # language -> its label tables
    report: Mapping[str, Strings]  # language -> the feedback report's strings (optional table)


def _load(templates_dir: Path) -> _Catalog:
    loader = jinja2.FileSystemLoader(str(templates_dir))
    env = jinja2.Environment(
        loader=loader,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        finalize=refuse_untrusted,
    )
    env.filters.update(FILTERS)
    strings: dict[str, Strings] = {}
    labels: dict[str, Labels] = {}
    report: dict[str, Strings] = {}
    for lang in LANGUAGES:
        name = f"i18n/{lang}.yaml"
        source, _filename, _uptodate = loader.get_source(env, name)
        data = yaml.safe_load(source)
        if not _is_catalog(data):
            raise ValueError(
                f"{templates_dir / name}: needs `strings` (key: text) and `labels` (table: key: text)"
            )
        strings[lang], labels[lang] = data["strings"], data["labels"]
        report[lang] = data.get("report") or {}
    return _Catalog(env, strings, labels, report)


def _is_catalog(data: Any) -> bool:
    def flat(m: Any) -> bool:
        return isinstance(m, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in m.items())

    return (
        isinstance(data, dict)
        and flat(data.get("strings"))
        and isinstance(data.get("labels"), dict)
        and (data.get("report") is None or flat(data["report"]))
        and all(isinstance(k, str) and flat(v) for k, v in data["labels"].items())
    )


_CATALOGS: dict[str, _Catalog] = {}


def _catalog(templates_dir: Path | None) -> _Catalog:
    key = str(templates_dir or TEMPLATES_DIR)
    if key not in _CATALOGS:
        _CATALOGS[key] = _load(Path(key))
    return _CATALOGS[key]


def _env(templates_dir: Path | None) -> jinja2.Environment:
    return _catalog(templates_dir).env


def __getattr__(name: str) -> Any:
    """`STRINGS` and `LABELS` (language -> table) of the shipped templates, read on first use: the
    strings are files, and the core reads them only when it renders (so not in `__all__`)."""
    if name == "STRINGS":
        return _catalog(None).strings
    if name == "LABELS":
        return _catalog(None).labels
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --------------------------------------------------------------------------------------------------
# Entry points


def choose_language(review: Review, language: str | None) -> str:
    if language in LANGUAGES:
        return str(language)
    return review.language if review.language in LANGUAGES else "en"


def _render(
    template: str,
    review: Review,
    lang: str,
    link_base: str | None,
    limits: Limits,
    templates_dir: Path | None,
) -> str:
    cat = _catalog(templates_dir)
    view = build_view(review, lang, cat.strings[lang], cat.labels[lang], link_base, limits)
    view["h"] = "##"
    mark = marker(review.adr_path, review.meta.run_key) if review.meta.run_key else ""
    return cat.env.get_template(template).render(r=view, marker=mark)


def render_comment(
    review: Review,
    *,
    link_base: str | None,
    language: str | None = None,
    budget: int = DEFAULT_BUDGET,
    templates_dir: Path | None = None,
) -> str:
    """The PR comment for one ADR. link_base: URL prefix of the repository files at the base commit
    (".../blob/<sha>"), "" for relative links, None for no links. language: force "en" / "ja"."""
    lang = choose_language(review, language)
    total = len(review.blindspots.findings) if review.blindspots else 0

    def render(keep: int) -> str:
        return _render("comment.md.j2", review, lang, link_base, Limits(keep, total - keep), templates_dir)

    # A finding takes at least MIN_FINDING_CHARS, so more than budget / that can never fit: do not
    # sanitise thousands of findings only to throw them away.
    most = min(total, budget // MIN_FINDING_CHARS)
    if most == total:
        body = render(total)
        if len(body) <= budget:
            return body
    fits = _largest_fitting(most, render, budget)
    if fits is not None:
        return fits
    # Even without findings it is too long (should not happen with the per-field caps): say so.
    return _render(
        "comment.md.j2",
        _without_details(review),
        lang,
        link_base,
        Limits(0, total),
        templates_dir,
    )[:budget]


def _largest_fitting(total: int, render: Callable[[int], str], budget: int) -> str | None:
    """Binary search on how many findings (highest severity first) to keep."""
    lo, hi, best = 0, total, None
    while lo <= hi:
        mid = (lo + hi) // 2
        body = render(mid)
        if len(body) <= budget:
            best, lo = body, mid + 1
        else:
            hi = mid - 1
    return best


def _without_details(review: Review) -> Review:
    recall = replace(review.recall, citations=review.recall.citations[:1]) if review.recall else None
    return replace(review, recall=recall, skipped=review.skipped[:5])


def is_degraded(review: Review) -> bool:
    """Something that should have run did not (a config switch or a narrowed re-run does not count)."""
    benign = {"disabled", "not_requested"}
    if any(split_reason(reason)[0] not in benign for _, reason in review.skipped):
        return True
    return review.blindspots is not None and review.blindspots.status not in ("judged", "disabled")


def render_step_summary(
    reviews: Sequence[Review],
    *,
    link_base: str | None,
    language: str | None = None,
    title: str | None = None,
    templates_dir: Path | None = None,
) -> str:
    """All ADRs of a PR on one page (the Action's job summary). Language: forced, else Japanese only
    when every reviewed ADR is Japanese."""
    if language in LANGUAGES:
        lang = str(language)
    elif reviews and all(r.language == "ja" for r in reviews):
        lang = "ja"
    else:
        lang = "en"
    cat = _catalog(templates_dir)
    t = cat.strings[lang]
    items = []
    for r in reviews:
        view = build_view(r, lang, t, cat.labels[lang], link_base, Limits())
        view["h"] = "##"
        degraded = is_degraded(r)
        view["state"] = t["state_error" if r.error else "state_degraded" if degraded else "state_ok"]
        items.append(view)
    return cat.env.get_template("step_summary.md.j2").render(t=t, items=items, title=untrusted(title))


def render_report(report: Report, *, language: str | None = None, templates_dir: Path | None = None) -> str:
    """The feedback report (app/adr_review/core/report.py) as Markdown with Mermaid charts; English unless "ja"."""
    lang = str(language) if language in LANGUAGES else "en"
    cat = _catalog(templates_dir)
    t = cat.report[lang]
    if not t:
        raise ValueError(f"templates/i18n/{lang}.yaml has no `report` table")
    view = build_report_view(report, t)
    return cat.env.get_template("report.md.j2").render(t=t, r=view)


def render_guard(
    decisions: Sequence[Implicated],
    cut: Sequence[str],
    floor: float,
    *,
    check: Any = None,
    language: str | None = None,
    templates_dir: Path | None = None,
    cleared: bool = False,
) -> str:
    """The guard's comment (templates/guard.md.j2), or its one-line silent note when nothing is
    implicated; `cleared`: the text that replaces an earlier guard comment when nothing is implicated
    any more. Language: forced, else Japanese only when every implicated ADR is Japanese. `check`:
    the model check's result (app/adr_review/pipeline/code_guard/guard_check.py GuardCheckResult), if one ran."""
    if language in LANGUAGES:
        lang = str(language)
    else:
        lang = "ja" if decisions and all(d.adr.language == "ja" for d in decisions) else "en"
    cat = _catalog(templates_dir)
    t = cat.strings[lang]
    if not decisions and cleared:
        return f"## 🛡️ {t['guard_title']}\n\n{t['guard_cleared']}\n"
    if not decisions:
        return t["guard_silent"] + "\n"
    return cat.env.get_template("guard.md.j2").render(t=t, g=guard_view(decisions, cut, floor, check, t))
