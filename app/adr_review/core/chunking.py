"""Section-aware chunks of an ADR for embedding.

Embedding models see a window of a few hundred tokens, so a long ADR embedded whole is mostly
truncated (or, for bag-of-n-gram embedders, averaged into mush). We cut at markdown headings, pack
small neighbouring sections together up to `target` characters, split oversized sections at paragraph
and then line boundaries, and prefix every chunk after the first with the document title so a chunk
still says what it belongs to. A document then scores by its best chunk.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_HEADING = re.compile(r"^ {0,3}#{1,6}\s", re.MULTILINE)
_FRONT_MATTER = re.compile(r"\A---\s*\n.*?\n---\s*(?:\n|\Z)", re.DOTALL)
_PARA = re.compile(r"\n\s*\n")


@dataclass(frozen=True)
class ChunkParams:
    target: int = 2000  # characters: pack sections up to this size
    maximum: int = 4000  # characters: never exceed (oversized sections are split)
    title_prefix: bool = True

    def key(self) -> str:
        """Stable description, stored with the index: changing it rebuilds the embeddings."""
        return f"sections:t{self.target}:m{self.maximum}:p{int(self.title_prefix)}"


def chunk_text(text: str, title: str = "", params: ChunkParams | None = None) -> list[str]:
    """Chunks covering the whole text in order; a short document is a single chunk."""
    p = params or ChunkParams()
    text = text.strip()
    if not text:
        return []
    if len(text) <= p.target:
        return [text]
    pieces: list[str] = []
    for section in _sections(text):
        pieces.extend(_split_long(section, p.target, p.maximum))
    chunks = _pack(pieces, p.target)
    if p.title_prefix and title:
        chunks = [chunks[0]] + [c if title in c[: len(title) + 16] else f"{title}\n\n{c}" for c in chunks[1:]]
    return chunks


def _sections(text: str) -> list[str]:
    m = _FRONT_MATTER.match(text)
    head = m.group(0) if m else ""
    body = text[len(head) :]
    starts = [h.start() for h in _HEADING.finditer(body)]
    if not starts or starts[0] != 0:
        starts = [0, *starts]
    bounds = [*starts, len(body)]
    sections = [body[a:b].strip() for a, b in zip(bounds, bounds[1:], strict=False)]
    sections = [s for s in sections if s]
    if head.strip():
        # front matter travels with the first section (title, status, ids)
        sections = [head.strip() + ("\n\n" + sections[0] if sections else "")] + sections[1:]
    return sections


def _split_long(section: str, target: int, maximum: int) -> list[str]:
    if len(section) <= maximum:
        return [section]
    return _pack(_units(section, maximum), target)


def _units(section: str, maximum: int) -> list[str]:
    """Paragraphs, then lines, then hard cuts: every unit is at most `maximum` characters."""
    units: list[str] = []
    for para in _PARA.split(section):
        para = para.strip()
        if not para:
            continue
        if len(para) <= maximum:
            units.append(para)
            continue
        line_buf = ""
        for line in para.split("\n"):
            while len(line) > maximum:
                if line_buf:
                    units.append(line_buf)
                    line_buf = ""
                units.append(line[:maximum])
                line = line[maximum:]
            if line_buf and len(line_buf) + 1 + len(line) > maximum:
                units.append(line_buf)
                line_buf = ""
            line_buf = f"{line_buf}\n{line}" if line_buf else line
        if line_buf:
            units.append(line_buf)
    return units


def _pack(pieces: list[str], target: int) -> list[str]:
    out: list[str] = []
    buf = ""
    for piece in pieces:
        if buf and len(buf) + 2 + len(piece) > target:
            out.append(buf)
            buf = ""
        buf = f"{buf}\n\n{piece}" if buf else piece
    if buf:
        out.append(buf)
    return out
