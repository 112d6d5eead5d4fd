"""The words real ADRs use, as data: section headings (English and Japanese), metadata labels, status
keywords and front-matter relation keys. A new team's dialect is one line here, not a code change.

Only constants live here; the functions that read them are in sections.py, fields.py and links.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from adr_review.core.adr.model import LinkKind, Status

# Canonical section names.
SECTIONS = ("context", "decision", "alternatives", "consequences", "risks", "rollback", "confirmation")

# Heading tables. Keys are compared after sections.heading_key(): NFKC-ish lowercasing, numbering ("1.",
# "§1.1"), a trailing "(English gloss)" / "（注記）", emphasis and a trailing colon removed.

# Primary headings: the section itself.
SECTION_HEADINGS: Mapping[str, str] = {
    # context
    "context": "context",
    "context and problem statement": "context",
    "context and problem": "context",
    "context and motivation": "context",
    "problem statement": "context",
    "problem": "context",
    "background": "context",
    "background and context": "context",
    "context and background": "context",
    "コンテキスト": "context",
    "背景": "context",
    "背景と課題": "context",
    "課題": "context",
    "問題": "context",
    "経緯": "context",
    # decision
    "decision": "decision",
    "decision outcome": "decision",
    "decisions": "decision",
    "the decision": "decision",
    "決定": "decision",
    "決定事項": "decision",
    "決定内容": "decision",
    "結論": "decision",
    # alternatives
    "considered options": "alternatives",
    "options considered": "alternatives",
    "alternatives": "alternatives",
    "alternatives considered": "alternatives",
    "alternative approaches": "alternatives",
    "alternative approach": "alternatives",
    "alternative solutions": "alternatives",
    "other options": "alternatives",
    "options": "alternatives",
    "pros and cons of the options": "alternatives",
    "rejected alternatives": "alternatives",
    "検討した代替案": "alternatives",
    "代替案": "alternatives",
    "検討した選択肢": "alternatives",
    "選択肢": "alternatives",
    "却下した案": "alternatives",
    "却下案": "alternatives",
    "却下した代替": "alternatives",
    "却下した代替案": "alternatives",
    "却下した選択肢": "alternatives",
    "検討した代替": "alternatives",
    "検討した候補": "alternatives",
    "採用しなかった案と理由": "alternatives",
    "alternative designs": "alternatives",
    "比較": "alternatives",
    # consequences
    "consequences": "consequences",
    "consequence": "consequences",
    "implications": "consequences",
    "impact": "consequences",
    "positive consequences": "consequences",
    "negative consequences": "consequences",
    "影響": "consequences",
    "結果": "consequences",
    "影響範囲": "consequences",
    "実装への影響": "consequences",
    "影響と結果": "consequences",
    # risks
    "risks": "risks",
    "risk": "risks",
    "risks and mitigations": "risks",
    "known limitations": "risks",
    "リスク": "risks",
    "リスクと対策": "risks",
    "リスク分析の結論": "risks",
    "残課題": "risks",
    "トレードオフと既知の制約": "risks",
    # rollback
    "rollback": "rollback",
    "rollback plan": "rollback",
    "exit criteria": "rollback",
    "re-evaluation triggers": "rollback",
    "撤退条件": "rollback",
    "再評価の条件": "rollback",
    "再評価トリガ": "rollback",
    "再検討トリガー": "rollback",
    "撤退基準": "rollback",
    "ロールバック": "rollback",
    "ロールバック計画": "rollback",
    # confirmation
    "confirmation": "confirmation",
    "validation": "confirmation",
    "verification": "confirmation",
    "検証": "confirmation",
    "確認方法": "confirmation",
}

# Fallback headings: used for a section only when the document has no primary heading for it
# (Cosmos puts an Abstract before its Context; some NATS ADRs only have Motivation / Design).
FALLBACK_HEADINGS: Mapping[str, str] = {
    "abstract": "context",
    "motivation": "context",
    "summary": "context",
    "overview": "context",
    "introduction": "context",
    "purpose": "context",
    "概要": "context",
    "目的": "context",
    "proposal": "decision",
    "what's proposed": "decision",
    "what’s proposed": "decision",
    "proposed solution": "decision",
    "solution": "decision",
    "design": "decision",
    "detailed design": "decision",
    "specification": "decision",
    "implementation": "decision",
    "理由": "decision",
    "現時点の方針": "decision",
    "方針": "decision",
    "outcome": "decision",
    "proposed implementation": "decision",
    "basic design": "decision",
    "pros and cons": "alternatives",
    "security implications and review": "risks",
    "limitations": "risks",
}

# Headings that hold metadata, not prose; never a title.
META_HEADINGS = frozenset({"status", "ステータス", "changelog", "change log", "metadata", "状態"})

# Status vocabulary: the earliest keyword in the raw status wins ("PROPOSED Implemented" -> proposed,
# "Superseded (as never implemented) by ADR 32" -> superseded). At one position the longer keyword
# wins, so "not_adopted" beats "adopted" and "承認待ち" beats "承認"; an accepting word right after
# "not" / "never" / 未 / 不 does not count. adr-tools itself writes "Superceded".
STATUS_WORDS: Mapping[str, Status] = {
    "superseded": "superseded",
    "superceded": "superseded",
    "supersede": "superseded",
    "replaced by": "superseded",
    "置換": "superseded",
    "置き換え": "superseded",
    "上書き": "superseded",
    "deprecated": "deprecated",
    "obsolete": "deprecated",
    "reverted": "deprecated",
    "retired": "deprecated",
    "廃止": "deprecated",
    "非推奨": "deprecated",
    "rejected": "rejected",
    "declined": "rejected",
    "abandoned": "rejected",
    "withdrawn": "rejected",
    "not adopted": "rejected",
    "not_adopted": "rejected",
    "not accepted": "rejected",
    "not approved": "rejected",
    "cancelled": "rejected",
    "canceled": "rejected",
    "却下": "rejected",
    "否認": "rejected",
    "棄却": "rejected",
    "不採用": "rejected",
    "取り下げ": "rejected",
    "見送り": "rejected",
    "accepted": "accepted",
    "approved": "accepted",
    "decided": "accepted",
    "implemented": "accepted",
    "adopted": "accepted",
    "done": "accepted",
    "final": "accepted",
    "active": "accepted",
    "決定済み": "accepted",
    "決定": "accepted",
    "承認済み": "accepted",
    "承認": "accepted",
    "採用": "accepted",
    "採択": "accepted",
    "受理": "accepted",
    "実装済み": "accepted",
    "proposed": "proposed",
    "proposal": "proposed",
    "not yet accepted": "proposed",
    "not yet approved": "proposed",
    "not yet decided": "proposed",
    "undecided": "proposed",
    "未承認": "proposed",
    "承認待ち": "proposed",
    "承認前": "proposed",
    "未決定": "proposed",
    "未決": "proposed",
    "決定待ち": "proposed",
    "未採用": "proposed",
    "未採択": "proposed",
    "draft": "proposed",
    "in review": "proposed",
    "in progress": "proposed",
    "pending": "proposed",
    "open": "proposed",
    "incomplete": "proposed",
    "wip": "proposed",
    "on hold": "proposed",
    "保留": "proposed",
    "提案": "proposed",
    "起案": "proposed",
    "検討中": "proposed",
    "レビュー中": "proposed",
    "草案": "proposed",
    "下書き": "proposed",
}

# Metadata labels (bullets, tables, plain "Key: value" lines, front matter) -> field.
META_LABELS: Mapping[str, str] = {
    "status": "status",
    "ステータス": "status",
    "状態": "status",
    "date": "date",
    "日付": "date",
    "日時": "date",
    "作成日": "date",
    "作成日時": "date",
    "決定日": "date",
    "承認日時": "date",
    "承認日": "date",
    "起案日時": "proposed_at",
    "起案日": "proposed_at",
    "created": "date",
    "last updated": "updated",
    "関連": "related",
    "related": "related",
    "related adrs": "related",
    "supersedes": "supersedes",
    "supercedes": "supersedes",
    "superseded by": "superseded_by",
    "superceded by": "superseded_by",
    "置換": "supersedes",
    "置換された": "superseded_by",
}

# Front matter keys holding typed relations.
FRONT_MATTER_RELATIONS: Mapping[str, LinkKind] = {
    "supersedes": "supersedes",
    "replaces": "supersedes",
    "superseded_by": "superseded_by",
    "superseded-by": "superseded_by",
    "replaced_by": "superseded_by",
    "related_to": "related",
    "related": "related",
    "depends_on": "related",
    "refines": "related",
    "amends": "related",
    "see_also": "related",
}

# Relation phrases in prose (regular expressions, matched case-insensitively): (pattern, kind, where
# the target sits relative to the phrase). "Superseded by ADR-3" names it after; "ADR-3 により上書き"
# before. "Superceded" / "Supercedes" are adr-tools' own spelling.
RELATION_PHRASES: tuple[tuple[str, LinkKind, Literal["after", "before"]], ...] = (
    (r"本\s*ADR\s*を\s*(?:上書き|置換|置き換え|supersede)", "superseded_by", "before"),
    (r"により\s*(?:上書き|置換|置き換え)|で\s*supersede", "superseded_by", "before"),
    (
        r"super[sc]eded\s+(?:\([^()]{0,80}\)\s+)?(?:in\s+part\s+)?by|replaced\s+by|置換された|置き換えられた",
        "superseded_by",
        "after",
    ),
    (
        r"\bsuper[sc]edes?\b(?!\s+by)|\b(?:has|have)\s+super[sc]eded\b(?!\s+by)|\breplaces\b",
        "supersedes",
        "after",
    ),
    (r"を\s*(?:置換|置き換え|上書き)", "supersedes", "before"),
)
# Every match of a phrase above contains one of these, case-folded (tests/core/test_adr_links_hint.py
# checks each pattern): a text without any has no relation phrase, and is not searched for one.
RELATION_HINTS = ("supers", "superc", "replace", "上書き", "置換", "置き換え")
