"""YAML front matter, loaded so that no file can blow it up.

YAML aliases are references: a 314-byte "billion laughs" front matter loads instantly but expands to
gigabytes the moment a value is turned into text (`status: *bomb`). So the document is composed
first, its size is measured as if every alias were written out (one pass over the node graph, each
node once), and only then constructed: aliases may add at most ALIAS_EXTRA_NODES values and
ALIAS_EXTRA_CHARS characters to what the file itself spells out, nesting stays under MAX_DEPTH, and a
recursive alias is refused. A refusal is a per-file error with the reason (`FrontMatterRefused`).

Scalars that SafeLoader would turn into values Python refuses (a 5,000-digit integer, the date
2024-13-45) stay strings, and so does an integer spelled with more than MAX_INT_CHARS characters:
PyYAML builds hex, octal, binary and base-60 integers without CPython's 4,300-digit guard, and the
first str() of such a value (a 4 kB `tags: 0x...`) would raise far from here. A front matter that is not valid YAML is read line by line as
"key: value" (`lenient` is then True).
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # PyYAML is imported by the first front matter read: most ADRs have none
    from yaml.nodes import Node

ALIAS_EXTRA_NODES = 10_000
ALIAS_EXTRA_CHARS = 100_000
MAX_DEPTH = 64
MAX_INT_CHARS = 100  # an integer written longer than this stays the string it is (any base)

_FRONT = re.compile(r"\A---[ \t]*\n(.*?\n)?(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_LENIENT_LINE = re.compile(r"^([A-Za-z_][\w-]*)[ \t]*:[ \t]*(.*)$")


class FrontMatterRefused(ValueError):
    """Front matter that would cost unbounded time or memory to read."""


@functools.cache
def _loader() -> Any:
    """SafeLoader whose int, float and timestamp scalars fall back to the string when Python refuses."""
    import yaml

    class Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
        pass

    for tag in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float", "tag:yaml.org,2002:timestamp"):
        Loader.add_constructor(tag, _tolerant(Loader.yaml_constructors[tag], tag == "tag:yaml.org,2002:int"))
    return Loader


def _tolerant(base: Any, bounded: bool) -> Any:
    def construct(loader: Any, node: Any) -> Any:
        if bounded and len(str(node.value)) > MAX_INT_CHARS:
            return loader.construct_scalar(node)
        try:
            return base(loader, node)
        except (ValueError, OverflowError):
            return loader.construct_scalar(node)

    return construct


def split_front_matter(text: str) -> tuple[dict[str, Any], str, bool]:
    """(front matter, body, lenient); raises FrontMatterRefused for an alias bomb or deep nesting."""
    m = _FRONT.match(text)
    if not m:
        return {}, text, False
    import yaml

    raw = m.group(1) or ""
    lenient = False
    try:
        loaded = _load(raw)
    except FrontMatterRefused:
        raise
    except (yaml.YAMLError, ValueError, TypeError, RecursionError):
        loaded, lenient = _lenient(raw), True
    if not isinstance(loaded, dict):
        return {}, text, False
    return {str(k): v for k, v in loaded.items()}, text[m.end() :], lenient


def strip_front_matter(text: str) -> str:
    """The text after the front matter block (all of it without one)."""
    m = _FRONT.match(text)
    return text[m.end() :] if m else text


def _load(raw: str) -> Any:
    loader = _loader()(raw)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expansion(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _check_expansion(root: Node) -> None:
    """Refuse a graph whose written-out size exceeds its own by the alias allowance (iterative)."""
    from yaml.nodes import MappingNode, ScalarNode, SequenceNode

    def _children(node: Node) -> list[Node]:
        if isinstance(node, SequenceNode):
            return list(node.value)
        if isinstance(node, MappingNode):
            return [part for pair in node.value for part in pair]
        return []

    expanded: dict[int, tuple[int, int]] = {}  # id(node) -> (values, characters) written out
    on_path: set[int] = set()
    distinct_nodes = distinct_chars = 0
    stack: list[tuple[Node, int, bool]] = [(root, 0, False)]
    while stack:
        node, depth, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            kids = _children(node)
            chars = len(str(node.value)) if isinstance(node, ScalarNode) else 0
            size = (1 + sum(expanded[id(k)][0] for k in kids), chars + sum(expanded[id(k)][1] for k in kids))
            expanded[key] = size
            distinct_nodes += 1
            distinct_chars += chars
            if size[0] > distinct_nodes + ALIAS_EXTRA_NODES or size[1] > distinct_chars + ALIAS_EXTRA_CHARS:
                raise FrontMatterRefused(
                    "front matter YAML aliases expand to too much (a billion-laughs pattern); "
                    "write the values out instead of using *aliases"
                )
            continue
        if key in expanded:
            continue
        if key in on_path:
            raise FrontMatterRefused("front matter has a recursive YAML alias")
        if depth > MAX_DEPTH:
            raise FrontMatterRefused(f"front matter nested more than {MAX_DEPTH} levels deep")
        on_path.add(key)
        stack.append((node, depth, True))
        stack.extend((kid, depth + 1, False) for kid in _children(node) if id(kid) not in expanded)


def _lenient(raw: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for line in raw.split("\n"):
        m = _LENIENT_LINE.match(line[:2_000])
        if m and m.group(2).strip():
            out[m.group(1)] = m.group(2).strip().strip("'\"")
    return out
