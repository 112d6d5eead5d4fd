"""Tokeniser and text variants for benchmarks/recall_variants.py (issue 18 experiments, not product code)."""

from __future__ import annotations

import re

from adr_review.core import text as T

_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def tokenize_ident(text: str) -> list[str]:
    base = T.tokenize(text)
    extra = []
    for m in re.finditer(r"[A-Za-z][A-Za-z0-9]*", text):
        w = m.group(0)
        parts = _CAMEL.findall(w)
        if len(parts) > 1:
            extra.extend(p.casefold() for p in parts)
    # joined dotted/snake identifiers kept whole
    for m in re.finditer(r"[A-Za-z0-9]+(?:[._][A-Za-z0-9]+)+", text):
        extra.append(m.group(0).casefold())
    return base + extra


_HIRA = re.compile(r"^[\u3040-\u309f]+$")
_KATA_RUN = re.compile(r"[\u30a0-\u30ff]{2,}")
_KANJI_RUN = re.compile(r"[\u4e00-\u9fff]{3,}")


def tokenize_nohira(text):
    return [t for t in T.tokenize(text) if not _HIRA.match(t)]


def tokenize_kata(text):
    n = T.normalize(text)
    return T.tokenize(text) + ["k:" + m.group(0) for m in _KATA_RUN.finditer(n)]


def tokenize_nohira_kata(text):
    n = T.normalize(text)
    return tokenize_nohira(text) + ["k:" + m.group(0) for m in _KATA_RUN.finditer(n)]


def tokenize_runs(text):
    n = T.normalize(text)
    return (
        T.tokenize(text)
        + ["k:" + m.group(0) for m in _KATA_RUN.finditer(n)]
        + ["j:" + m.group(0) for m in _KANJI_RUN.finditer(n)]
    )


def tokenize_seg(text):
    out = []
    for t in T._TOKEN.finditer(T.normalize(text)):
        piece = t.group(0)
        if T._is_cjk(piece[0]):
            for seg in re.split(r"[\u3040-\u309f]+", piece):
                if seg:
                    out.extend(T._bigrams(seg))
        else:
            out.append(piece)
    return out


def tokenize_seg_keep(text):
    """segments' bigrams, plus cross-boundary bigrams that are not hiragana-only"""
    return tokenize_nohira(text)


def tokenize_seg2(text):
    out = []
    for t in T._TOKEN.finditer(T.normalize(text)):
        piece = t.group(0)
        if T._is_cjk(piece[0]):
            segs = [s for s in re.split(r"[\u3040-\u309f]+", piece) if s]
            if not segs:
                out.extend(T._bigrams(piece))
            for seg in segs:
                out.extend(T._bigrams(seg))
        else:
            out.append(piece)
    return out


TOKS = {
    "search": T.search_tokens,
    "tokenize": T.tokenize,
    "ident": tokenize_ident,
    "seg2": tokenize_seg2,
    "seg": tokenize_seg,
    "nohira": tokenize_nohira,
    "kata": tokenize_kata,
    "nohira_kata": tokenize_nohira_kata,
    "runs": tokenize_runs,
}


def strip_code(text: str) -> str:
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    text = re.sub(r"https?://\S+", " ", text)
    return text
