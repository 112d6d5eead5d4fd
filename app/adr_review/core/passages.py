"""The passages of a document as a reader sees it on GitHub: what a verbatim quote may be taken from. Pure.

The verifiers (citations.py, findings.py, extractive.py) see only this interface: a `Passage` has the
visible `text` of one block, the `section` (heading) it stands under and its `kind`, and
`passages_of(adr)` / `reader_passages(text, markdown=...)` give a document's passages in reading
order. The ADR parser owns what "visible" means (app/adr_review/core/adr/reader.py, built on the same
markdown-it-py tokens it parses with: code-span content kept, nothing joined across blocks, nothing
from HTML comments, tags, link targets or alt text, front-matter values as table cells, plain-text
files as written), so a quote is checked against exactly the blocks the summary and sections are cut
from.
"""

from __future__ import annotations

from adr_review.core.adr import ReaderBlock, is_markdown_path, reader_blocks, text_reader_blocks

Passage = ReaderBlock
passages_of = reader_blocks
reader_passages = text_reader_blocks

__all__ = ["Passage", "is_markdown_path", "passages_of", "reader_passages"]
