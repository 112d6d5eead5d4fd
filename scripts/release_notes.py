#!/usr/bin/env python3
"""The release notes of a tag, from CHANGELOG.md, after checking that the tag can be released.

Usage: python scripts/release_notes.py vX.Y.Z [--owner OWNER] > notes.md

Fails (exit 1, one line per problem) unless: the tag is vX.Y.Z; pyproject.toml's version is X.Y.Z;
action.yml runs docker://ghcr.io/<OWNER>/adr-review:vX.Y.Z (OWNER: where the release workflow
pushes, the repository owner in lower case); .github/actions/source/action.yml is in step
(scripts/sync_action.py); CHANGELOG.md has a dated `## [X.Y.Z] - YYYY-MM-DD` section with text.
The release workflow runs it before it builds anything, so a wrong tag publishes nothing.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sync_action  # noqa: E402  (the sibling script: one definition of where the version lives)

CHANGELOG = sync_action.ROOT / "CHANGELOG.md"
TAG = re.compile(r"v(\d+\.\d+\.\d+)")
HEADING = re.compile(r"^## \[(?P<version>[^\]]+)\](?: - (?P<date>\S+))?\s*$", re.M)


def section(changelog: str, version: str) -> tuple[str | None, str]:
    """(date, body) of `version`'s section; body is "" when there is none."""
    matches = list(HEADING.finditer(changelog))
    for i, m in enumerate(matches):
        if m.group("version") == version:
            end = matches[i + 1].start() if i + 1 < len(matches) else len(changelog)
            body = changelog[m.end() : end]
            body = re.split(r"^\[[^\]]+\]: ", body, maxsplit=1, flags=re.M)[0]  # link references
            return m.group("date"), body.strip()
    return None, ""


def problems(tag: str, owner: str | None) -> tuple[list[str], str]:
    found: list[str] = []
    m = TAG.fullmatch(tag)
    if not m:
        return [f"tag {tag!r} is not vX.Y.Z"], ""
    version = m.group(1)
    if sync_action.project_version() != version:
        found.append(f"pyproject.toml says {sync_action.project_version()}, the tag {version}")
    image_owner, image_version = sync_action.image_ref(sync_action.ACTION.read_text(encoding="utf-8"))
    if image_version != version:
        found.append(f"action.yml runs image v{image_version}, the tag is v{version}")
    if owner and image_owner != owner.lower():
        found.append(
            f"action.yml pulls from ghcr.io/{image_owner}, the release pushes to ghcr.io/{owner.lower()}: "
            f"python scripts/sync_action.py --owner {owner.lower()}"
        )
    source = sync_action.source_action(sync_action.ACTION.read_text(encoding="utf-8"))
    if sync_action.SOURCE_ACTION.read_text(encoding="utf-8") != source:
        found.append(".github/actions/source/action.yml is out of step: python scripts/sync_action.py")
    date, body = section(CHANGELOG.read_text(encoding="utf-8"), version)
    if not body:
        found.append(f"CHANGELOG.md has no `## [{version}] - YYYY-MM-DD` section with text")
    elif not (date and re.fullmatch(r"\d{4}-\d{2}-\d{2}", date)):
        found.append(f"CHANGELOG.md: the [{version}] section has no release date (YYYY-MM-DD)")
    return found, body


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("tag")
    parser.add_argument("--owner", help="the GHCR owner the release pushes to")
    args = parser.parse_args()
    found, body = problems(args.tag, args.owner)
    for line in found:
        print(f"::error::{line}", file=sys.stderr)
    if found:
        return 1
    print(body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
