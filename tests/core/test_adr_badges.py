"""Statuses stated by badges, Docusaurus page-slug ids and the front matter title (app/adr_review/core/adr/badges.py,
app/adr_review/core/adr/parse.py): table-driven on the forms real collections use, and property-based on the
shields.io URL encoding and on badges that say nothing about the status."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adr_review.core.adr import STATUS_WORDS, normalize_status, parse_adr
from adr_review.core.adr.badges import badge_text

SHIELD = "https://img.shields.io/badge"


def _status(text: str, path: str = "0007-x.md") -> tuple[str, str]:
    adr = parse_adr(path, text.encode())
    return adr.status, adr.raw_status


@pytest.mark.parametrize(
    ("text", "status", "raw"),
    [
        # dxw's adr-tools template (DFE-Digital): the badge is the whole Status section.
        (
            f"# 7. X\n\nDate: 2020-11-30\n\n## Status\n\n![Accepted]({SHIELD}/adr-accepted-green)\n\n## Context\n\nC.\n",
            "accepted",
            "accepted",
        ),
        (
            f"# 5. X\n\n## Status\n\n![Superseded]({SHIELD}/adr-superseded-orange)\n\nSuperseded by [ADR-0032](0032-x.md)\n\n## Context\n\nC.\n",
            "superseded",
            "Superseded by ADR-0032",  # the text beside the badge says more
        ),
        # Under the title, labelled "status" (any case), with a query string, beside a date badge.
        (
            f"# ADR-009: X\n\n![Status]({SHIELD}/status-Accepted-brightgreen) ![Date]({SHIELD}/date-2026--05--09-blue)\n\n## Context\n\nC.\n",
            "accepted",
            "Accepted",
        ),
        (
            f"# X\n\n![Status]({SHIELD}/Status-ACCEPTED-brightgreen?style=for-the-badge)\n\n## Context\n\nC.\n",
            "accepted",
            "ACCEPTED",
        ),
        (
            f"# X\n\n**Author**: P\n\n![Accepted]({SHIELD}/status-accepted-success)\n\n## Context and Problem Statement\n\nC.\n",
            "accepted",
            "accepted",
        ),
        # HTML images: the alt text says it is the ADR's status; a document-status badge beside it is not.
        (
            f'# ADR-0202: X\n\nOne line.\n\n<p align="center">\n  <img alt="Document status: review" src="{SHIELD}/doc-review-f0ad4e" />\n  <img alt="ADR status: accepted" src="{SHIELD}/ADR-accepted-2ea44f" />\n</p>\n\n## Context\n\nC.\n',
            "accepted",
            "accepted",
        ),
        (
            f'# X\n\n<img src="{SHIELD}/ADR-accepted%20%7C%20release%20blocked-f59f00" alt="ADR status: accepted with release blocked">\n\n## Context\n\nC.\n',
            "accepted",
            "accepted | release blocked",
        ),
        # A template's other statuses commented out: only the live badge counts (before or after them).
        (
            f"---\nstatus: new\n---\n\n# X\n\n![Draft]({SHIELD}/Status-Draft-blue?style=for-the-badge)\n<!-- Other statuses:\n![Accepted]({SHIELD}/Status-Accepted-brightgreen)\n-->\n\n## Context\n\nC.\n",
            "proposed",
            "Draft",
        ),
        (
            f"# X\n\n<!-- ![Proposed]({SHIELD}/status-proposed-informational) -->\n![Accepted]({SHIELD}/status-accepted-brightgreen)\n<!-- ![Superseded]({SHIELD}/status-superseded-yellow) -->\n\n## Context\n\nC.\n",
            "accepted",
            "accepted",
        ),
        # The status words of the other language the parser reads, in the URL (percent-encoded) or the alt.
        (
            f"# X\n\n## ステータス\n\n![承認済み]({SHIELD}/{quote('ステータス')}-{quote('承認済み')}-green)\n\n## 背景\n\nC。\n",
            "accepted",
            "承認済み",
        ),
        (
            f"# X\n\n![状態]({SHIELD}/{quote('状態')}-{quote('承認待ち')}-yellow)\n\n## 背景\n\nC。\n",
            "proposed",
            "承認待ち",
        ),
        (
            "# X\n\n## Status\n\n![却下](images/rejected.svg)\n\n## Context\n\nC.\n",
            "rejected",
            "却下",
        ),  # alt text
        # Other badge services and forms.
        (
            "# X\n\n![status](https://img.shields.io/static/v1?label=status&message=deprecated&color=red)\n\n## Context\n\nC.\n",
            "deprecated",
            "deprecated",
        ),
        (
            "# X\n\n![status](https://badgen.net/badge/status/rejected/red)\n\n## Context\n\nC.\n",
            "rejected",
            "rejected",
        ),
        (
            f"# X\n\n![Accepted]({SHIELD}/accepted-green)\n\n## Context\n\nC.\n",
            "accepted",
            "accepted",
        ),  # message-color
        # What the text says wins over a badge; the typed front matter over both.
        (
            f"# X\n\n## Status\n\nRejected\n\n![Accepted]({SHIELD}/adr-accepted-green)\n\n## Context\n\nC.\n",
            "rejected",
            "Rejected",
        ),
        (
            f"---\nstatus: deprecated\n---\n\n# X\n\n![Status]({SHIELD}/status-accepted-green)\n\n## Context\n\nC.\n",
            "deprecated",
            "deprecated",
        ),
    ],
)
def test_a_badge_states_the_status(text: str, status: str, raw: str) -> None:
    assert _status(text) == (status, raw)


@pytest.mark.parametrize(
    "text",
    [
        # Badges that are not the ADR's status: build, coverage, a date, a topic.
        f"# X\n\n![Build]({SHIELD}/build-passing-green) ![Date]({SHIELD}/Date-03_Aug_2023-lightblue)\n\n## Context\n\nC.\n",
        f"# X\n\n![Topic]({SHIELD}/Topic-Accepted%20answers-blue)\n\n## Context\n\nC.\n",  # a status word, not labelled
        # Only commented out, or inside a code block: nothing stated.
        f"# X\n\n<!-- ![Accepted]({SHIELD}/status-accepted-green) -->\n\n## Context\n\nC.\n",
        f"# X\n\n```markdown\n![Accepted]({SHIELD}/status-accepted-green)\n```\n\n## Context\n\nC.\n",
        # A status badge far below the head (in the Decision) is about something else.
        f"# X\n\n## Context\n\nC.\n\n## Decision\n\nWe copy ![Status]({SHIELD}/status-accepted-green) badges.\n",
        # An image that is not a badge, outside a Status section.
        "# X\n\n![Accepted](images/accepted.svg)\n\n## Context\n\nC.\n",
        # An unclosed comment hides the rest of the head.
        f"# X\n\n<!-- ![Accepted]({SHIELD}/status-accepted-green)\n\n## Context\n\nC.\n",
    ],
)
def test_a_badge_that_is_not_the_status_is_not_read_as_one(text: str) -> None:
    assert _status(text) == ("unknown", "")


@pytest.mark.parametrize(
    ("url", "text"),
    [
        (f"{SHIELD}/adr-accepted-green", ("adr", "accepted")),
        (f"{SHIELD}/status-not__adopted-red.svg", ("status", "not_adopted")),
        (f"{SHIELD}/status-in_review-yellow", ("status", "in review")),
        (f"{SHIELD}/date-2026--05--09-blue", ("date", "2026-05-09")),
        (
            f"{SHIELD}/Status-Superseded%20by%20ADR--0012-orange?style=flat",
            ("Status", "Superseded by ADR-0012"),
        ),
        (f"{SHIELD}/just-green", ("", "just")),
        (
            "https://img.shields.io/static/v1?label=Status&message=Accepted&color=green",
            ("Status", "Accepted"),
        ),
        ("https://badgen.net/badge/status/proposed/blue", ("status", "proposed")),
        ("https://img.shields.io/github/actions/workflow/status/o/r/ci.yml", None),  # a dynamic badge
        ("https://example.com/badge/status-accepted-green", None),  # not a badge service
        ("images/accepted.svg", None),
        ("http://[::1", None),  # unparseable
    ],
)
def test_badge_text_decodes_the_url(url: str, text: tuple[str, str] | None) -> None:
    assert badge_text(url) == text


def _shields(part: str) -> str:
    """How shields.io wants a label or message written in the URL path."""
    return quote(part.replace("-", "--").replace("_", "__").replace(" ", "_"), safe="")


# A part that starts or ends with "-" has no unambiguous URL ("x---y": shields.io itself reads no
# separator there), so the property is stated for the others.
_parts = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=30
).filter(lambda s: s.strip() == s and "  " not in s and not s.startswith("-") and not s.endswith("-"))


@given(label=_parts, message=_parts)
def test_shields_urls_round_trip(label: str, message: str) -> None:
    assert badge_text(f"{SHIELD}/{_shields(label)}-{_shields(message)}-green") == (label, message)


_ascii_words = sorted(w for w in STATUS_WORDS if w.isascii())


@given(word=st.sampled_from(_ascii_words), label=st.sampled_from(["status", "Status", "ADR", "adr"]))
def test_every_status_word_on_a_status_badge_reads_as_that_word(word: str, label: str) -> None:
    text = f"# X\n\n![{label}]({SHIELD}/{label}-{_shields(word)}-green)\n\n## Context\n\nC.\n"
    assert _status(text) == (normalize_status(word), word)


@given(
    label=st.sampled_from(["build", "coverage", "license", "python", "date", "topic", "doc"]),
    word=st.sampled_from(_ascii_words),
    alt=st.sampled_from(["", "badge", "Build", "Coverage"]),
)
def test_a_badge_labelled_otherwise_never_sets_the_status(label: str, word: str, alt: str) -> None:
    text = f"# X\n\n![{alt}]({SHIELD}/{label}-{_shields(word)}-green)\n\n## Context\n\nC.\n"
    assert _status(text) == ("unknown", "")


# --- Docusaurus / log4brains front matter -----------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "front", "adr_id", "title"),
    [
        # The page slug is not the id; the file name's number is.
        (
            "adr-0010-image-validation.md",
            'id: adrs-adr010\ntitle: "ADR010: Image Validation Workflow"',
            "ADR-0010",
            "Image Validation Workflow",
        ),
        (
            "adr002-default-catalog-file-format.md",
            "id: adrs-adr002\ntitle: 'ADR002: Default Catalog Format'",
            "ADR-0002",
            "Default Catalog Format",
        ),
        # No number in the file name: the title's, then the slug's.
        (
            "image-validation.md",
            "id: adrs-adr010\ntitle: 'ADR011: Image Validation'",
            "ADR-0011",
            "Image Validation",
        ),
        ("catalog-format.md", "id: adrs-adr014\ntitle: Catalog format", "ADR-0014", "Catalog format"),
        (
            "catalog-format.md",
            "id: catalog-format\ntitle: Catalog format",
            "catalog-format",
            "Catalog format",
        ),
        # An id that is an ADR id (or a custom upper-case scheme) still decides.
        ("0001-x.md", "id: ADR-0033\ntitle: X", "ADR-0033", "X"),
        ("0001-x.md", "id: adr-33\ntitle: X", "ADR-0033", "X"),
        ("0001-x.md", "id: 33\ntitle: X", "ADR-0033", "X"),
        ("0001-x.md", "id: SEC-001\ntitle: X", "SEC-001", "X"),
    ],
)
def test_a_front_matter_page_slug_is_not_the_adr_id(path: str, front: str, adr_id: str, title: str) -> None:
    adr = parse_adr(
        path, f"---\n{front}\nstatus: accepted\n---\n\n## Context\n\nC.\n\n## Decision\n\nD.\n".encode()
    )
    assert (adr.adr_id, adr.title, adr.status) == (adr_id, title, "accepted")
    slug = front.split("\n")[0].removeprefix("id: ")
    is_slug = slug.islower() and not slug.startswith("adr-") and not slug.isdigit()
    assert any("is a page slug" in n and slug in n for n in adr.notes) is is_slug


def test_an_h1_title_still_wins_over_the_front_matter_title() -> None:
    adr = parse_adr("0001-x.md", b"---\ntitle: Front\n---\n\n# 1. Body title\n\n## Context\n\nC.\n")
    assert adr.title == "Body title"
