"""Review -> GitHub-flavoured Markdown through templates/, with every untrusted string sanitised.

Untrusted: anything that came from an ADR (titles, ids, paths, quoted reasons) or from a model
(findings, self-assessments, error messages). The view model wraps each such string in `Untrusted`,
and the Jinja environment refuses to print an `Untrusted` value that did not go through one of the
sanitising filters (`inline`, `block`, `code`), so a template cannot forget it.

What sanitising guarantees, on GitHub's renderer:
- no @-mentions of users or teams and no #123 / GH-123 cross-references (a zero-width space entity
  after the sigil; GitHub does not link mentions inside code spans, so those are left alone);
- no raw HTML (`<`, `>` and `&` become entities), hence no <img>, <script>, forged `<!-- marker -->`
  or `</details>`; no Markdown images or links (a link becomes "text (url)", so the target is shown);
- no breaking out of a table cell (pipes escaped, newlines folded) or of a block (line starts that
  open headings, lists, quotes, fences or tables are escaped; code spans never span lines);
- no invisible steering: bidi overrides, zero-width and other format characters, C0/C1 controls and
  Unicode tag characters are removed.

Size: GitHub rejects a comment body over 65,536 characters. Each untrusted field is clipped, and if
the comment is still too long the lowest-severity findings are left out (and counted) until it fits.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import jinja2

from app.core.results import Citation, Finding, RecallResult, Review

TEMPLATES_DIR = Path(__file__).resolve().parents[2] / "templates"
MARKER_PREFIX = "<!-- adr-review:v1"
GITHUB_COMMENT_LIMIT = 65_536
DEFAULT_BUDGET = 65_000  # a margin under GitHub's limit
MIN_FINDING_CHARS = 30  # the shortest a rendered finding can be ("\n**1. x**\n<sub>Monitor</sub>\n")

SEVERITIES = ("critical", "high", "medium", "low")
OPEN_SEVERITIES = frozenset({"critical", "high"})

# Per-field caps (characters of the raw text, before escaping).
CAPS = {
    "title": 200,
    "id": 60,
    "path": 300,
    "reason": 600,
    "finding_title": 240,
    "evidence": 1500,
    "action": 900,
    "assessment": 1200,
    "detail": 500,
    "error": 1500,
    "perspective": 80,
    "model": 80,
}

# --------------------------------------------------------------------------------------------------
# Sanitising

_ZW_SPACE = "&#8203;"
# Characters removed outright: C0 controls except tab/newline, DEL, C1, soft hyphen, Arabic letter mark,
# Mongolian vowel separator, zero-width and bidi controls, word joiner and invisible operators,
# BOM, interlinear annotation, Hangul fillers, Unicode tags and variation selectors supplement.
_STRIP = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\ufeff\ufff9-\ufffb\u115f\u1160\u3164\uffa0"
    "\U000e0000-\U000e007f\U000e0100-\U000e01ef]"
)
_NEWLINES = re.compile("\r\n|[\r\u2028\u2029\x85]")
_WS = re.compile(r"\s+")
_LINK = re.compile(
    r"(!?)\[([^\[\]\n]{0,1000})\]\(\s*<?([^()\s<>]{0,2000})>?(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'))?\s*\)"
)
_AUTOLINK = re.compile(r"<((?:https?|ftp|mailto):[^<>\s]{1,2000})>", re.IGNORECASE)
_ESCAPES = {
    "\\": "\\\\",
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
    "[": "\\[",
    "]": "\\]",
    "|": "\\|",
    "`": "\\`",
}
_ESCAPE_RE = re.compile("[\\\\&<>\\[\\]|`]")
_MENTION = re.compile(r"@(?=[A-Za-z0-9_])")
_ISSUE_REF = re.compile(r"#(?=\d)")
_GH_REF = re.compile(r"\b(GH)-(?=\d)", re.IGNORECASE)
_LINE_START = re.compile(r"^([#=+*_~-])")
_ORDERED = re.compile(r"^(\d{1,9})([.)])")


def clean(text: str) -> str:
    """Remove invisible and control characters; unify line breaks to \\n."""
    return _STRIP.sub("", _NEWLINES.sub("\n", text))


def clip(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    return text[: max(0, limit - 1)].rstrip() + "…"


def _code_spans(line: str) -> list[tuple[bool, str]]:
    """Split one line into (is_code, piece): a run of n backticks opens a code span closed by the next
    run of exactly n. Unmatched backticks stay text (and get escaped)."""
    out: list[tuple[bool, str]] = []
    buf: list[str] = []
    i, n = 0, len(line)
    while i < n:
        if line[i] != "`":
            buf.append(line[i])
            i += 1
            continue
        j = i
        while j < n and line[j] == "`":
            j += 1
        run = j - i
        k = j
        close = -1
        while k < n:
            if line[k] == "`":
                m = k
                while m < n and line[m] == "`":
                    m += 1
                if m - k == run:
                    close = k
                    break
                k = m
            else:
                k += 1
        if close == -1 or close == j:  # unmatched, or an empty span (not a code span in CommonMark)
            buf.append(line[i:j])
            i = j
            continue
        if buf:
            out.append((False, "".join(buf)))
            buf = []
        out.append((True, line[i : close + run]))
        i = close + run
    if buf:
        out.append((False, "".join(buf)))
    return out


def _delink(text: str) -> str:
    def link(m: re.Match[str]) -> str:
        bang, label, url = m.group(1), m.group(2).strip(), m.group(3)
        if bang:
            return f"{label or 'image'} ({url})" if url else label
        if not url or url == label:
            return label or url
        return f"{label} ({url})"

    return _AUTOLINK.sub(r"\1", _LINK.sub(link, text))


def _escape_text(text: str) -> str:
    text = _ESCAPE_RE.sub(lambda m: _ESCAPES[m.group(0)], _delink(text))
    # References first: the mention entity itself contains "#8203".
    text = _ISSUE_REF.sub("#" + _ZW_SPACE, text)
    text = _GH_REF.sub(lambda m: m.group(1) + _ZW_SPACE + "-", text)
    return _MENTION.sub("@" + _ZW_SPACE, text)


def _escape_line(line: str, *, in_table: bool) -> str:
    parts = []
    for is_code, piece in _code_spans(line):
        if is_code:
            # Code spans render literally (no mentions, HTML or links); GFM splits table cells on `|`
            # even inside code, and `\|` there renders as `|`.
            parts.append(piece.replace("|", "\\|") if in_table else piece)
        else:
            parts.append(_escape_text(piece))
    return "".join(parts)


def sanitize_inline(text: str, limit: int | None = None, *, in_table: bool = True) -> str:
    """One line of untrusted text, safe anywhere inline (including a table cell)."""
    one_line = _WS.sub(" ", clip(clean(text), limit)).strip()
    return _escape_line(one_line, in_table=in_table)


def sanitize_block(text: str, limit: int | None = None) -> str:
    """Untrusted multi-line text as Markdown paragraphs: line breaks kept (GitHub shows them), blank
    lines separate paragraphs, and nothing at a line start can open a block construct."""
    lines = [ln.strip() for ln in clip(clean(text), limit).split("\n")]
    out: list[str] = []
    for ln in lines:
        if not ln:
            if out and out[-1] != "":
                out.append("")
            continue
        esc = _escape_line(_WS.sub(" ", ln), in_table=False)
        esc = _ORDERED.sub(r"\1\\\2", _LINE_START.sub(r"\\\1", esc))
        out.append(esc)
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out)


def sanitize_code(text: str, limit: int | None = None) -> str:
    """Untrusted text as one inline code span (paths, model names): a fence longer than any backtick
    run inside, so it cannot be closed early. Not for table cells (pipes would split the cell)."""
    one_line = _WS.sub(" ", clip(clean(text), limit)).strip()
    if not one_line:
        return ""
    longest = max((len(m) for m in re.findall(r"`+", one_line)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if one_line.startswith("`") or one_line.endswith("`") else ""
    return f"{fence}{pad}{one_line}{pad}{fence}"


class Untrusted(str):
    """A string from an ADR or a model: must pass a sanitising filter before it is printed."""


class UnsanitizedOutput(RuntimeError):
    pass


def _finalize(value: Any) -> Any:
    if isinstance(value, Untrusted):
        raise UnsanitizedOutput(f"template printed an untrusted string without a filter: {value[:60]!r}")
    return value


def _u(text: str | None) -> Untrusted | None:
    return None if text is None else Untrusted(text)


# --------------------------------------------------------------------------------------------------
# Marker

_MARKER_RE = re.compile(r"^<!-- adr-review:v1 path=(\S+) key=([A-Za-z0-9_.:-]{1,128}) -->[ \t]*$")


def marker(path: str, run_key: str) -> str:
    """The hidden first line that finds this ADR's comment again. The path is percent-encoded, so a
    file name cannot end the comment or forge a key."""
    if not re.fullmatch(r"[A-Za-z0-9_.:-]{1,128}", run_key):
        raise ValueError(f"run key {run_key!r} is not marker-safe")
    return f"{MARKER_PREFIX} path={quote(clean(path), safe='/')} key={run_key} -->"


def parse_marker(body: str) -> tuple[str, str] | None:
    """(ADR path, run key) from a comment written by render_comment, else None. Only the first line
    counts: untrusted text further down cannot pose as the marker."""
    first = body.lstrip("\ufeff").split("\n", 1)[0].rstrip("\r")
    m = _MARKER_RE.match(first)
    if not m:
        return None
    return unquote(m.group(1)), m.group(2)


# --------------------------------------------------------------------------------------------------
# Fixed strings

STRINGS: Mapping[str, Mapping[str, str]] = {
    "en": {
        "title": "ADR review",
        "advisory": "Advisory review: it never blocks the merge. Reviewed file:",
        "recall_heading": "Related past decisions",
        "col_adr": "ADR",
        "col_title": "Title",
        "col_status": "Status",
        "col_relevance": "Relevance",
        "col_reason": "Why it is related",
        "recall_mode_llm": "Picked by the model from {n} retrieved candidate(s); every id and quoted reason was checked against the repository's ADRs.",
        "recall_mode_llm_plain": "Picked by the model; every id and quoted reason was checked against the repository's ADRs.",
        "recall_mode_extractive": "Extractive recall (no model): the closest past ADRs by hybrid search, each with the sentence of its summary that best matches this ADR.",
        "recall_dropped": "Dropped by verification: {items}.",
        "no_citations": "No related past decisions found.",
        "no_citations_because": "No related past decisions found: {reason}",
        "blind_heading": "Blind spots",
        "blind_intro_judged": "{n} finding(s) from {critics}, merged and classified by the Judge; risks this ADR already lists are left out.",
        "blind_intro_unjudged": "{n} finding(s) from {critics}. The Judge did not run, so these are the critics' own findings after a code-level dedupe: severities are unconfirmed.",
        "blind_none": "No blind spots found that this ADR does not already cover.",
        "blind_assessment": "Judge's note",
        "blind_coverage": "The pre-mortem did not cover: {items}.",
        "findings_omitted": "{n} more finding(s) not shown ({why}).",
        "omitted_cap": "{n} beyond the display limit",
        "omitted_size": "{n} lower-severity left out to keep this comment under GitHub's size limit",
        "suggested": "Suggested",
        "count_partial": "{shown} of {total}",
        "raised_by": "Raised by",
        "skipped_heading": "What did not run",
        "footer_recall": "recall",
        "footer_blind": "blind spots",
        "footer_models": "models",
        "footer_tokens": "tokens",
        "footer_perspectives": "perspectives",
        "footer_embedding": "embedding",
        "footer_run": "run",
        "footer_reused": "{n} stage(s) reused from checkpoints",
        "none": "none",
        "error_heading": "Could not review this ADR",
        "error_hint": "The file could not be read as an ADR, so no recall or blind-spot analysis ran. Fix the file and push again, or comment `/adr-review` to retry.",
        "summary_title": "ADR review",
        "summary_col_adr": "ADR",
        "summary_col_citations": "Related",
        "summary_col_findings": "Blind spots",
        "summary_col_state": "Result",
        "state_ok": "✅ reviewed",
        "state_degraded": "⚠️ partial",
        "state_error": "❌ error",
        "summary_empty": "No ADRs were changed in this pull request.",
        "list_sep": ", ",
        "not_run": "—",
        "quote_open": "“",
        "quote_close": "”",
    },
    "ja": {
        "title": "ADR レビュー",
        "advisory": "助言のみのレビューです (マージをブロックしません)。対象ファイル:",
        "recall_heading": "関連する過去の決定",
        "col_adr": "ADR",
        "col_title": "タイトル",
        "col_status": "ステータス",
        "col_relevance": "関連度",
        "col_reason": "関連する理由",
        "recall_mode_llm": "検索で得た {n} 件の候補からモデルが選択しました。ID と引用された理由はすべてリポジトリの ADR と照合済みです。",
        "recall_mode_llm_plain": "モデルが選択しました。ID と引用された理由はすべてリポジトリの ADR と照合済みです。",
        "recall_mode_extractive": "抽出モード (モデル不使用): ハイブリッド検索で最も近い過去の ADR と、その要約のうちこの ADR に最も合致する一文を示します。",
        "recall_dropped": "検証で除外: {items}。",
        "no_citations": "関連する過去の決定は見つかりませんでした。",
        "no_citations_because": "関連する過去の決定は見つかりませんでした。{reason}",
        "blind_heading": "見落としの可能性 (Blind spots)",
        "blind_intro_judged": "{critics} による指摘 {n} 件を Judge が統合・分類しました。この ADR が既に挙げているリスクは除いています。",
        "blind_intro_unjudged": "{critics} による指摘 {n} 件。Judge が実行されなかったため、コード上の重複除去のみを行った批評者の指摘そのままです (重大度は未確認)。",
        "blind_none": "この ADR が既に扱っている以外の見落としは見つかりませんでした。",
        "blind_assessment": "Judge のコメント",
        "blind_coverage": "プレモーテムが扱わなかった観点: {items}。",
        "findings_omitted": "ほかに {n} 件の指摘を表示していません ({why})。",
        "omitted_cap": "表示上限を超えた {n} 件",
        "omitted_size": "GitHub のコメント長上限に収めるため重大度の低い {n} 件を省略",
        "suggested": "提案",
        "count_partial": "{total} 件中 {shown} 件",
        "raised_by": "指摘元",
        "skipped_heading": "実行されなかった処理",
        "footer_recall": "想起",
        "footer_blind": "見落とし分析",
        "footer_models": "モデル",
        "footer_tokens": "トークン",
        "footer_perspectives": "観点",
        "footer_embedding": "埋め込み",
        "footer_run": "実行",
        "footer_reused": "{n} 段階をチェックポイントから再利用",
        "none": "なし",
        "error_heading": "この ADR をレビューできませんでした",
        "error_hint": "ファイルを ADR として読み込めなかったため、想起と見落とし分析は実行されていません。ファイルを修正して push するか、`/adr-review` とコメントして再実行してください。",
        "summary_title": "ADR レビュー",
        "summary_col_adr": "ADR",
        "summary_col_citations": "関連",
        "summary_col_findings": "見落とし",
        "summary_col_state": "結果",
        "state_ok": "✅ 完了",
        "state_degraded": "⚠️ 一部のみ",
        "state_error": "❌ エラー",
        "summary_empty": "このプルリクエストで変更された ADR はありません。",
        "list_sep": "、",
        "not_run": "—",
        "quote_open": "「",
        "quote_close": "」",
    },
}

LABELS: Mapping[str, Mapping[str, Mapping[str, str]]] = {
    "en": {
        "severity": {"critical": "Critical", "high": "High", "medium": "Medium", "low": "Low"},
        "relevance": {"high": "high", "med": "medium", "low": "low"},
        "status": {
            "proposed": "Proposed",
            "accepted": "Accepted",
            "deprecated": "Deprecated",
            "superseded": "Superseded",
            "rejected": "Rejected",
            "unknown": "Unknown",
        },
        "superseded_by": {"": "Superseded by {id}"},
        "actionability": {
            "block": "Resolve before accepting",
            "revise_adr": "Revise the ADR",
            "add_to_risks": "Add to Risks",
            "monitor": "Monitor",
        },
        "source": {
            "devils_advocate": "Devil's Advocate",
            "premortem": "Pre-mortem",
            "adjacent_domain": "Adjacent Domain",
            "judge": "Judge",
        },
        "category": {
            "technical": "technical",
            "operational": "operational",
            "business_regulatory": "business/regulatory",
            "cognitive": "cognitive",
        },
        "stage": {
            "recall": "Recall",
            "blindspots": "Blind-spot analysis",
            "devils_advocate": "Devil's Advocate",
            "premortem": "Pre-mortem",
            "adjacent_domain": "Adjacent Domain",
            "judge": "Judge",
            "index": "Index",
            "run": "Review",
        },
        "mode_recall": {
            "llm": "LLM, verified",
            "extractive": "extractive",
            "disabled": "off",
            "none": "not run",
        },
        "mode_blind": {
            "judged": "judged",
            "unjudged": "un-judged",
            "skipped": "skipped",
            "disabled": "off",
            "none": "not run",
        },
        "dropped": {
            "malformed": "{n} malformed",
            "not_a_candidate": "{n} id(s) not among the candidates",
            "duplicate": "{n} duplicate(s)",
            "empty_reason": "{n} without a reason",
            "not_verbatim": "{n} reason(s) not found verbatim",
            "over_limit": "{n} over the limit",
        },
        "reason": {
            "no_api_key": "needs an API key (set `ANTHROPIC_API_KEY` and run again).",
            "offline": "needs an API key; this run was offline (`--offline`).",
            "disabled": "turned off in the repository configuration (`.github/adr-review.yml`).",
            "not_requested": "not requested in this run.",
            "extractive_no_key": "no API key, so recall ran in extractive mode (no model).",
            "extractive_offline": "offline run, so recall ran in extractive mode (no model).",
            "search_failed": "the search of past ADRs failed.",
            "llm_fallback": "the model call failed, so recall fell back to extractive mode",
            "empty_input": "the ADR has no title, context or decision text to search with.",
            "empty_index": "the ADR index is empty (no past ADRs were found in the folder).",
            "embedding_failed": "embeddings failed, so search ran on keywords (BM25) only.",
            "no_candidates": "search returned no past ADRs.",
            "none_qualified": "no past ADR was similar enough to cite.",
            "none_relevant": "the model found none of the candidates relevant.",
            "llm_failed": "the model call failed",
            "all_dropped_by_verification": "every citation the model proposed failed verification.",
            "all_critics_failed": "every critic failed, so no findings could be produced.",
            "judge_failed": "the Judge failed; findings are shown un-judged",
            "failed": "failed",
            "coverage_gap": "did not cover every category",
        },
    },
    "ja": {
        "severity": {"critical": "致命的", "high": "高", "medium": "中", "low": "低"},
        "relevance": {"high": "高", "med": "中", "low": "低"},
        "status": {
            "proposed": "提案中",
            "accepted": "承認済み",
            "deprecated": "非推奨",
            "superseded": "置換済み",
            "rejected": "却下",
            "unknown": "不明",
        },
        "superseded_by": {"": "{id} により置換"},
        "actionability": {
            "block": "採択前に解決",
            "revise_adr": "ADR を修正",
            "add_to_risks": "リスクに追記",
            "monitor": "監視",
        },
        "source": {
            "devils_advocate": "悪魔の代弁者",
            "premortem": "プレモーテム",
            "adjacent_domain": "隣接ドメイン",
            "judge": "Judge",
        },
        "category": {
            "technical": "技術",
            "operational": "運用",
            "business_regulatory": "ビジネス・規制",
            "cognitive": "認知",
        },
        "stage": {
            "recall": "想起",
            "blindspots": "見落とし分析",
            "devils_advocate": "悪魔の代弁者",
            "premortem": "プレモーテム",
            "adjacent_domain": "隣接ドメイン",
            "judge": "Judge",
            "index": "インデックス",
            "run": "レビュー",
        },
        "mode_recall": {"llm": "LLM・検証済み", "extractive": "抽出", "disabled": "無効", "none": "未実行"},
        "mode_blind": {
            "judged": "Judge 済み",
            "unjudged": "Judge なし",
            "skipped": "スキップ",
            "disabled": "無効",
            "none": "未実行",
        },
        "dropped": {
            "malformed": "形式不正 {n} 件",
            "not_a_candidate": "候補にない ID {n} 件",
            "duplicate": "重複 {n} 件",
            "empty_reason": "理由なし {n} 件",
            "not_verbatim": "原文に見つからない理由 {n} 件",
            "over_limit": "上限超過 {n} 件",
        },
        "reason": {
            "no_api_key": "API キーが必要です: `ANTHROPIC_API_KEY` を設定して再実行してください。",
            "offline": "API キーが必要です (今回はオフライン実行 `--offline`)。",
            "disabled": "リポジトリ設定 (`.github/adr-review.yml`) で無効になっています。",
            "not_requested": "今回の実行では要求されていません。",
            "extractive_no_key": "API キーがないため、抽出モード (モデル不使用) で想起しました。",
            "extractive_offline": "オフライン実行のため、抽出モード (モデル不使用) で想起しました。",
            "search_failed": "過去の ADR の検索に失敗しました。",
            "llm_fallback": "モデル呼び出しに失敗したため、抽出モードで想起しました",
            "empty_input": "ADR に検索に使えるタイトル・コンテキスト・決定の記述がありません。",
            "empty_index": "ADR インデックスが空です (フォルダに過去の ADR がありません)。",
            "embedding_failed": "埋め込みに失敗したため、キーワード検索 (BM25) のみで検索しました。",
            "no_candidates": "検索結果に過去の ADR がありませんでした。",
            "none_qualified": "引用できるほど類似した過去の ADR はありませんでした。",
            "none_relevant": "モデルはどの候補も関連なしと判断しました。",
            "llm_failed": "モデル呼び出しに失敗しました",
            "all_dropped_by_verification": "モデルが提案した引用はすべて検証で除外されました。",
            "all_critics_failed": "すべての批評者が失敗したため、指摘を生成できませんでした。",
            "judge_failed": "Judge が失敗したため、指摘は未判定のまま表示しています",
            "failed": "失敗しました",
            "coverage_gap": "一部の観点を扱いませんでした",
        },
    },
}


def _n(template: str, n: int, **kw: object) -> str:
    """Format with a count; "(s)" becomes the English plural ending (Japanese strings have none)."""
    return template.format(n=n, **kw).replace("(s)", "" if n == 1 else "s")


def _label(lang: str, table: str, key: str) -> str:
    return LABELS[lang][table].get(key, key)


# --------------------------------------------------------------------------------------------------
# View model


@dataclass(frozen=True)
class _Limits:
    keep_findings: int | None = None  # None: all shown findings
    size_trimmed: int = 0


def _citation_url(link_base: str | None, adr_dir: str, c: Citation) -> str | None:
    if link_base is None or not c.path:
        return None
    rel = "/".join(p for p in (adr_dir.strip("/"), c.path.lstrip("/")) if p)
    target = quote(clean(rel), safe="/")
    return f"{link_base.rstrip('/')}/{target}" if link_base else target


def _findings_by_severity(findings: Sequence[Finding]) -> list[Finding]:
    order = {s: i for i, s in enumerate(SEVERITIES)}
    return sorted(findings, key=lambda f: order.get(f.severity, len(SEVERITIES)))


def _split_reason(reason: str) -> tuple[str, str]:
    code, sep, detail = reason.partition(": ")
    if sep and re.fullmatch(r"[a-z_]+", code):
        return code, detail
    if re.fullmatch(r"[a-z_]+", reason):
        return reason, ""
    return "", reason


def _fmt_int(n: int, lang: str) -> str:
    return f"{n:,}"


def _fmt_cost(usd: float) -> str:
    return f"${usd:.4f}" if usd < 1 else f"${usd:.2f}"


def _fmt_duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    return f"{int(seconds // 60)} min {seconds % 60:.0f} s"


def _no_citations_text(recall: RecallResult | None, lang: str) -> str:
    t, reasons = STRINGS[lang], LABELS[lang]["reason"]
    code: str | None = recall.empty_reason if recall else None
    if code == "embedding_failed" and recall is not None and not recall.candidates:
        code = "search_failed"  # nothing came back at all, not a keyword-only search
    if code and code in reasons:
        return t["no_citations_because"].format(reason=reasons[code])
    return t["no_citations"]


def _recall_mode_text(recall: RecallResult | None, t: Mapping[str, str]) -> str | None:
    if recall is None:
        return None
    if recall.mode == "llm":
        return (
            _n(t["recall_mode_llm"], len(recall.candidates))
            if recall.candidates
            else t["recall_mode_llm_plain"]
        )
    return t["recall_mode_extractive"] if recall.mode == "extractive" else None


def _view(review: Review, lang: str, link_base: str | None, limits: _Limits) -> dict[str, Any]:
    t = STRINGS[lang]
    recall = review.recall
    citations = []
    for c in recall.citations if recall else ():
        status_key = c.status if c.status in LABELS[lang]["status"] else ""
        citations.append(
            {
                "id": Untrusted(c.adr_id),
                "url": _citation_url(link_base, review.adr_dir, c),
                "title": Untrusted(c.title),
                "status": _label(lang, "status", status_key) if status_key else None,
                "raw_status": Untrusted(c.status),
                "successor": _u(c.superseded_by),
                "successor_text": LABELS[lang]["superseded_by"][""].split("{id}"),
                "relevance": _label(lang, "relevance", c.relevance),
                "relevance_key": c.relevance,
                "reason": Untrusted(c.relevance_reason),
            }
        )
    dropped = []
    if recall:
        for key, n in sorted(recall.dropped.items()):
            if n and key in LABELS[lang]["dropped"]:
                dropped.append(_n(LABELS[lang]["dropped"][key], n))

    bs = review.blindspots
    groups: list[dict[str, Any]] = []
    shown_total = 0
    omitted_cap = bs.omitted_count if bs else 0
    if bs is not None:
        ordered = _findings_by_severity(bs.findings)
        if limits.keep_findings is not None:
            ordered = ordered[: limits.keep_findings]
        shown_total = len(ordered)
        number = 0
        for sev in SEVERITIES:
            items = []
            for f in ordered:
                if f.severity != sev:
                    continue
                number += 1
                items.append(
                    {
                        "n": number,
                        "title": Untrusted(f.title),
                        "action": _label(lang, "actionability", f.actionability),
                        "sources": t["list_sep"].join(_label(lang, "source", s) for s in f.source),
                        "category": _label(lang, "category", f.category) if f.category else None,
                        "evidence": Untrusted(f.evidence),
                        "suggested": Untrusted(f.suggested_action),
                    }
                )
            if items:
                total = sum(1 for f in bs.findings if f.severity == sev)
                groups.append(
                    {
                        "key": sev,
                        "label": _label(lang, "severity", sev),
                        "open": sev in OPEN_SEVERITIES,
                        "items": items,
                        "count": str(len(items))
                        if len(items) == total
                        else t["count_partial"].format(shown=len(items), total=total),
                    }
                )
    critics = []
    if bs is not None:
        ran = sorted({s for f in bs.findings for s in f.source} | set(bs.usage_by_node))
        failed = {e.node for e in bs.errors}
        critics = [_label(lang, "source", s) for s in ran if s != "judge" and s not in failed]

    omitted_parts = []
    if omitted_cap:
        omitted_parts.append(_n(t["omitted_cap"], omitted_cap))
    if limits.size_trimmed:
        omitted_parts.append(_n(t["omitted_size"], limits.size_trimmed))
    omitted_text = (
        _n(t["findings_omitted"], omitted_cap + limits.size_trimmed, why="; ".join(omitted_parts))
        if omitted_parts
        else None
    )

    skipped = []
    for stage, reason in review.skipped[:30]:
        code, detail = _split_reason(reason)
        known = LABELS[lang]["reason"].get(code) if code else None
        skipped.append(
            {
                "stage": _label(lang, "stage", stage),
                "reason": known,
                "detail": Untrusted(detail if known else (detail or reason)),
            }
        )

    meta = review.meta
    usage = meta.usage
    tokens = usage.input_tokens + usage.output_tokens + usage.cache_read_tokens + usage.cache_write_tokens
    footer = {
        "recall": _label(lang, "mode_recall", recall.mode if recall else "none"),
        "blind": _label(lang, "mode_blind", bs.status if bs else "none"),
        "models": [Untrusted(m) for m in meta.models],
        "tokens": _fmt_int(tokens, lang),
        "cost": _fmt_cost(usage.cost_usd),
        "duration": _fmt_duration(meta.duration_s),
        "perspectives": [Untrusted(p) for p in meta.perspectives],
        "embedding": _u(meta.embedding or None),
        "run_key": meta.run_key[:12],
        "reused": _n(t["footer_reused"], len(meta.reused_stages)) if meta.reused_stages else None,
    }
    severity_counts = {s: sum(1 for f in (bs.findings if bs else ()) if f.severity == s) for s in SEVERITIES}
    return {
        "t": t,
        "lang": lang,
        "path": Untrusted(review.adr_path),
        "adr_id": Untrusted(review.adr_id),
        "adr_title": Untrusted(review.adr_title),
        "error": _u(review.error),
        "recall": recall,
        "recall_mode_text": _recall_mode_text(recall, t) if citations else None,
        "citations": citations,
        "dropped": "; ".join(dropped) if dropped else None,
        "no_citations_text": _no_citations_text(recall, lang),
        "blind": bs,
        "blind_ran": bs is not None and bs.status in ("judged", "unjudged"),
        "blind_intro": (
            _n(
                t["blind_intro_judged"] if bs.status == "judged" else t["blind_intro_unjudged"],
                len(bs.findings) + bs.omitted_count,
                critics=t["list_sep"].join(critics) if critics else "—",
            )
            if bs is not None and bs.status in ("judged", "unjudged") and bs.findings
            else None
        ),
        "assessment": _u(bs.self_assessment) if bs and bs.self_assessment else None,
        "coverage": (
            t["blind_coverage"].format(
                items=t["list_sep"].join(_label(lang, "category", c) for c in bs.coverage_gaps)
            )
            if bs and bs.coverage_gaps
            else None
        ),
        "groups": groups,
        "shown_total": shown_total,
        "severity_counts": severity_counts,
        "omitted_text": omitted_text,
        "skipped": skipped,
        "footer": footer,
        "caps": CAPS,
        "emoji": {"critical": "🔴", "high": "🟠", "medium": "🟡", "low": "⚪"},
        "relevance_emoji": {"high": "🟢", "med": "🔵", "low": "⚪"},
    }


# --------------------------------------------------------------------------------------------------
# Environment and entry points


def _environment(templates_dir: Path | None) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir or TEMPLATES_DIR)),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        finalize=_finalize,
    )
    env.filters["inline"] = lambda s, limit=None: sanitize_inline(str(s), limit)
    env.filters["text"] = lambda s, limit=None: sanitize_inline(str(s), limit, in_table=False)
    env.filters["block"] = lambda s, limit=None: sanitize_block(str(s), limit)
    env.filters["code"] = lambda s, limit=None: sanitize_code(str(s), limit)
    env.filters["quote_lines"] = lambda s: "\n".join(("> " + ln) if ln else ">" for ln in str(s).split("\n"))
    return env


_ENVS: dict[str, jinja2.Environment] = {}


def _env(templates_dir: Path | None) -> jinja2.Environment:
    key = str(templates_dir or TEMPLATES_DIR)
    if key not in _ENVS:
        _ENVS[key] = _environment(templates_dir)
    return _ENVS[key]


def choose_language(review: Review, language: str | None) -> str:
    if language in STRINGS:
        return str(language)
    return review.language if review.language in STRINGS else "en"


def _render(
    template: str,
    review: Review,
    lang: str,
    link_base: str | None,
    limits: _Limits,
    templates_dir: Path | None,
) -> str:
    view = _view(review, lang, link_base, limits)
    view["h"] = "##"
    mark = marker(review.adr_path, review.meta.run_key) if review.meta.run_key else ""
    return _env(templates_dir).get_template(template).render(r=view, marker=mark)


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
        return _render("comment.md.j2", review, lang, link_base, _Limits(keep, total - keep), templates_dir)

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
        _Limits(0, total),
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
    from dataclasses import replace

    recall = replace(review.recall, citations=review.recall.citations[:1]) if review.recall else None
    return replace(review, recall=recall, skipped=review.skipped[:5])


def is_degraded(review: Review) -> bool:
    """Something that should have run did not (a config switch or a narrowed re-run does not count)."""
    benign = {"disabled", "not_requested"}
    if any(_split_reason(reason)[0] not in benign for _, reason in review.skipped):
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
    if language in STRINGS:
        lang = str(language)
    elif reviews and all(r.language == "ja" for r in reviews):
        lang = "ja"
    else:
        lang = "en"
    items = []
    for r in reviews:
        view = _view(r, lang, link_base, _Limits())
        view["h"] = "##"
        degraded = is_degraded(r)
        view["state"] = STRINGS[lang][
            "state_error" if r.error else "state_degraded" if degraded else "state_ok"
        ]
        items.append(view)
    return (
        _env(templates_dir)
        .get_template("step_summary.md.j2")
        .render(t=STRINGS[lang], items=items, title=_u(title))
    )
