#!/usr/bin/env python3
"""Keep the version in its three places in step: pyproject.toml's `version`, the image action.yml runs
(`docker://ghcr.io/<owner>/adr-review:v<version>`) and .github/actions/source/action.yml, the same
action built from this checkout's Dockerfile (this repository's own workflows use it, and so can
anyone who wants to build from source).

Usage:
    python scripts/sync_action.py                     # rewrite the copy and the image tag from pyproject
    python scripts/sync_action.py --version 0.2.0     # a new version, before the CHANGELOG entry and tag
    python scripts/sync_action.py --owner my-org      # where the release workflow pushes (GHCR owner)
    python scripts/sync_action.py --check             # exit 1 if anything is out of step (CI, release)

Text edits, not a YAML round trip, so action.yml keeps its comments and layout.
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ACTION = ROOT / "action.yml"
SOURCE_ACTION = ROOT / ".github" / "actions" / "source" / "action.yml"
PYPROJECT = ROOT / "pyproject.toml"

IMAGE_LINE = re.compile(r"^(  image: )docker://ghcr\.io/([a-z0-9][a-z0-9-]*)/adr-review:v(\S+)$", re.M)
NAME_LINE = re.compile(r"^name: .*$", re.M)
VERSION_LINE = re.compile(r'^version = "[^"]*"$', re.M)
SEMVER = re.compile(r"\d+\.\d+\.\d+")
SOURCE_HEADER = (
    "# Generated from ../../../action.yml by scripts/sync_action.py: edit action.yml, then run it.\n"
    "# The same action, built from the Dockerfile of the checkout it comes from instead of pulled:\n"
    "#   uses: <owner>/adr-review/.github/actions/source@<ref>\n"
    "# The runner builds ../../../Dockerfile with the repository root as the context.\n"
)


def image_ref(action_text: str) -> tuple[str, str]:
    """(owner, version) of the image action.yml runs."""
    m = IMAGE_LINE.search(action_text)
    if not m:
        raise SystemExit("action.yml: no `  image: docker://ghcr.io/<owner>/adr-review:v<version>` line")
    return m.group(2), m.group(3)


def with_image(action_text: str, owner: str, version: str) -> str:
    return IMAGE_LINE.sub(
        lambda m: f"{m.group(1)}docker://ghcr.io/{owner}/adr-review:v{version}", action_text
    )


def source_action(action_text: str) -> str:
    """action.yml as the build-from-source action: another name, the Dockerfile instead of the image."""
    text = NAME_LINE.sub("name: adr-review (from source)", action_text, count=1)
    text = IMAGE_LINE.sub(lambda m: f"{m.group(1)}../../../Dockerfile", text)
    return SOURCE_HEADER + text


def project_version() -> str:
    return str(tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["version"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--version", help="set pyproject.toml's version first (X.Y.Z)")
    parser.add_argument(
        "--owner", help="GHCR owner of the image (the GitHub user or organisation, lower case)"
    )
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when out of step")
    args = parser.parse_args()
    if args.version and not SEMVER.fullmatch(args.version):
        parser.error("--version takes X.Y.Z")
    if args.owner and not re.fullmatch(r"[a-z0-9][a-z0-9-]*", args.owner):
        parser.error("--owner: GHCR names are lower case")
    pyproject = PYPROJECT.read_text(encoding="utf-8")
    if args.version:
        pyproject = VERSION_LINE.sub(f'version = "{args.version}"', pyproject, count=1)
    version = args.version or project_version()
    action = ACTION.read_text(encoding="utf-8")
    owner = args.owner or image_ref(action)[0]
    action = with_image(action, owner, version)
    wanted = {PYPROJECT: pyproject, ACTION: action, SOURCE_ACTION: source_action(action)}
    stale = [p for p, text in wanted.items() if not p.is_file() or p.read_text(encoding="utf-8") != text]
    if args.check:
        for p in stale:
            print(f"{p.relative_to(ROOT)} is out of step: run python scripts/sync_action.py", file=sys.stderr)
        return 1 if stale else 0
    for p in stale:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(wanted[p], encoding="utf-8")
        print(f"wrote {p.relative_to(ROOT)}")
    print(f"version {version}, image ghcr.io/{owner}/adr-review:v{version}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
