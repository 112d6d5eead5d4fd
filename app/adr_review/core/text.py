"""Text normalisation and tokenisation shared by retrieval, verification and dedupe.

Japanese has no spaces between words, so CJK runs become overlapping character bigrams
(Lucene CJKBigram style): searchable without a dictionary, and robust to inflection.
"""

from __future__ import annotations

import functools
import re
import unicodedata

_WS = re.compile(r"\s+")
# Zero-width and BOM characters that NFKC leaves alone but that break verbatim matching.
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff"), None)


def _is_cjk(ch: str) -> bool:
    cp = ord(ch)
    return (
        0x3040 <= cp <= 0x30FF  # hiragana, katakana
        or 0x3400 <= cp <= 0x4DBF  # CJK ext A
        or 0x4E00 <= cp <= 0x9FFF  # CJK unified
        or 0xF900 <= cp <= 0xFAFF  # compatibility ideographs
        or 0xAC00 <= cp <= 0xD7AF  # hangul syllables
        or 0x31F0 <= cp <= 0x31FF  # katakana extensions
        or 0x20000 <= cp <= 0x2FA1F
    )


def fold_whitespace(text: str) -> str:
    return _WS.sub(" ", text).strip()


# NFKC sorts each run of non-starters (combining class != 0) by insertion: quadratic in the run, and a
# run of 200,000 alternating marks took CPython 29 s. Unicode's stream-safe format (UAX #15) caps a
# run at 30 non-starters; no real text comes near it.
MAX_NON_STARTERS = 30


def nfkc(text: str) -> str:
    """NFKC of untrusted text, its runs of non-starters first capped at MAX_NON_STARTERS (linear).
    Every NFKC of text from an ADR, a model or a diff goes through here."""
    if text.isascii() or unicodedata.is_normalized("NFKC", text):
        return text  # is_normalized answers "no" at the first out-of-order mark, before any sorting
    return unicodedata.normalize("NFKC", cap_non_starters(text))


def cap_non_starters(text: str) -> str:
    """The text with every run of more than MAX_NON_STARTERS non-starters cut to its first ones."""
    return _candidate_runs().sub(_cap_run, text)


@functools.cache
def _candidate_runs() -> re.Pattern[str]:
    """Runs of characters that may be non-starters: the BMP's (listed exactly, built on first use) and
    any astral character (checked one by one in _cap_run: such runs are rare)."""
    marks = [cp for cp in range(0x300, 0x10000) if unicodedata.combining(chr(cp))]
    ranges: list[list[int]] = []
    for cp in marks:
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp])
    members = "".join(f"{re.escape(chr(lo))}-{re.escape(chr(hi))}" for lo, hi in ranges)
    return re.compile(f"[{members}\U00010000-\U0010ffff]{{{MAX_NON_STARTERS + 1},}}")


def _cap_run(match: re.Match[str]) -> str:
    out: list[str] = []
    run = 0
    for ch in match[0]:
        run = run + 1 if unicodedata.combining(ch) else 0
        if run <= MAX_NON_STARTERS:
            out.append(ch)
    return "".join(out)


_INVISIBLE_CHARS = tuple(chr(cp) for cp in _INVISIBLE)


def _visible(text: str) -> str:
    """NFKC, the invisible characters out: only when there are any (`str.translate` costs more than
    the NFKC of the text, and an ASCII text has none)."""
    text = nfkc(text)
    if not text.isascii() and any(ch in text for ch in _INVISIBLE_CHARS):
        text = text.translate(_INVISIBLE)
    return text


def normalize_for_match(text: str) -> str:
    """NFKC + whitespace folding: the seed's normalizeForCitationMatch (case is kept)."""
    return fold_whitespace(_visible(text))


def normalize(text: str) -> str:
    """NFKC + case folding + whitespace folding, for search and comparison."""
    return normalize_for_match(text).casefold()


def token_form(text: str) -> str:
    """`normalize` without its whitespace folding, which cannot change what the token patterns find
    (none of them matches whitespace): what `tokenize`, `search_tokens` and the offline embedding read."""
    return _visible(text).casefold()


def contains_verbatim(haystack: str, needle: str) -> bool:
    """True when needle occurs in haystack after NFKC + whitespace folding on both sides.

    Whitespace between a CJK character and anything else is dropped on both sides, so a
    quote that a model re-wrapped across a line break in Japanese text still matches.
    """
    n = verbatim_form(needle)
    if not n:
        return False
    return n in verbatim_form(haystack)


@functools.lru_cache(maxsize=8192)
def verbatim_form(text: str) -> str:
    """The form contains_verbatim compares (cached: verification checks many quotes against the same
    passages)."""
    return _squeeze_cjk_spaces(normalize_for_match(text))


def _squeeze_cjk_spaces(text: str) -> str:
    if " " not in text:
        return text
    out: list[str] = []
    for i, ch in enumerate(text):
        if ch == " " and 0 < i < len(text) - 1 and (_is_cjk(text[i - 1]) or _is_cjk(text[i + 1])):
            continue
        out.append(ch)
    return "".join(out)


_CJK_CLASS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u31f0-\u31ff"
# A CJK run, or a word of other letters/digits (underscore splits words: snake_case -> two tokens).
_TOKEN = re.compile(rf"[{_CJK_CLASS}]+|[^\W_{_CJK_CLASS}]+", re.UNICODE)
# Every character `_is_cjk` accepts (the class above plus the supplementary ideographs).
_CJK_ANY = re.compile(rf"[{_CJK_CLASS}\U00020000-\U0002FA1F]+")


def tokenize(text: str) -> list[str]:
    """Words for alphabetic scripts, overlapping bigrams for CJK runs (a lone CJK char stays a unigram)."""
    norm = token_form(text)
    if _CJK_ANY.search(norm) is None:  # no CJK character: every token is a word (most English ADRs)
        return _TOKEN.findall(norm)
    tokens: list[str] = []
    for match in _TOKEN.finditer(norm):
        piece = match.group(0)
        if _is_cjk(piece[0]):
            tokens.extend(_bigrams(piece))
        else:
            tokens.append(piece)
    return tokens


# Function words: terms that make every text look alike (English words; Japanese kana bigrams as
# search_tokens cuts them). They carry no weight where a term's rarity counts as evidence.
FUNCTION_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "but",
        "by",
        "can",
        "could",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "how",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "may",
        "might",
        "must",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "should",
        "so",
        "such",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "will",
        "with",
        "would",
        "you",
        "use",
        "used",
        "using",
    ]
    + [
        "する",
        "して",
        "した",
        "ます",
        "です",
        "この",
        "その",
        "ある",
        "いる",
        "こと",
        "ため",
        "れる",
        "られ",
        "ない",
    ]
)

_HIRAGANA_RUN = re.compile("[\u3040-\u309f]+")


def search_tokens(text: str) -> list[str]:
    """The terms lexical retrieval counts: `tokenize`, except that a CJK run is first cut at its
    hiragana, and only the pieces between are bigrammed (a lone character stays a unigram).

    Hiragana carry Japanese grammar (particles, inflections: の, を, する, している), so a bigram with
    a hiragana in it ("の設", "計す", "する") is a function-word feature that matches across unrelated
    ADRs; the kanji and katakana pieces are the content words. The offline embedding drops
    hiragana-only n-grams for the same reason. A run of nothing but hiragana keeps its bigrams, so
    text written in kana alone stays searchable. Other scripts are tokenised exactly as `tokenize`.
    """
    norm = token_form(text)
    if _CJK_ANY.search(norm) is None:  # no CJK character: every token is a word (most English ADRs)
        return _TOKEN.findall(norm)
    tokens: list[str] = []
    for match in _TOKEN.finditer(norm):
        piece = match.group(0)
        if not _is_cjk(piece[0]):
            tokens.append(piece)
            continue
        pieces = [p for p in _HIRAGANA_RUN.split(piece) if p]
        for part in pieces or [piece]:
            tokens.extend(_bigrams(part))
    return tokens


def _bigrams(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def is_japanese(text: str, threshold: float = 0.15) -> bool:
    """Language guess: share of kana/kanji among the letters (counted in C: `str.isalpha` over the
    text, and over its CJK runs, instead of a Python test per character)."""
    letters = sum(map(str.isalpha, text))
    if not letters:
        return False
    cjk = sum(map(str.isalpha, "".join(_CJK_ANY.findall(text))))
    return cjk / letters >= threshold
