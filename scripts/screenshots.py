#!/usr/bin/env python3
"""Regenerate the README's screenshots (docs/images/*.png): comments rendered the way GitHub shows
them, GitHub-flavoured Markdown to HTML (markdown-it-py: CommonMark, tables, strikethrough, the
HTML GitHub allows) with a GitHub-like stylesheet, captured by headless Chromium.

  review-en.png / review-ja.png  the README's two example reviews, exactly as `adr-review review`
                                 prints them offline (no API key: extractive recall, no critics)
  findings-en.png / findings-ja.png  a review with blind-spot findings: the comment snapshots the
                                 tests render from fixtures (tests/snapshots/comment_{en,ja}.md);
                                 the findings are the fixture's, not a model's answers

Usage: python scripts/screenshots.py  (from a checkout with adr-review installed; needs Chromium
and fonts for Japanese and emoji: apt-get install chromium fonts-noto-cjk fonts-noto-color-emoji)
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "images"
WIDTH = 860  # CSS pixels: about a PR conversation column
SCALE = 1.5  # device pixels per CSS pixel: sharp on high-density screens, small files

EXAMPLES = {
    "review-en": "examples/proposals/0008-adopt-kafka-for-order-events.md",
    "review-ja": "examples/proposals/0009-session-store-redis.md",
}
SNAPSHOTS = {"findings-en": "tests/snapshots/comment_en.md", "findings-ja": "tests/snapshots/comment_ja.md"}

# GitHub's comment look, written for these pages: its font stacks, sizes, colours, table and code
# styles (light theme), inside a comment box with a header bar.
CSS = """
:root { color-scheme: light; }
body { margin: 0; padding: 16px; background: #ffffff; width: %(width)dpx; box-sizing: border-box;
  font-family: -apple-system, BlinkMacSystemFont, "Segoe UI", "Noto Sans", Helvetica, Arial,
  "Noto Sans CJK JP", sans-serif, "Apple Color Emoji", "Segoe UI Emoji", "Noto Color Emoji";
  font-size: 14px; line-height: 1.5; color: #1f2328; }
.box { border: 1px solid #d1d9e0; border-radius: 6px; }
.head { background: #f6f8fa; border-bottom: 1px solid #d1d9e0; border-radius: 6px 6px 0 0;
  padding: 8px 16px; color: #59636e; }
.head b { color: #1f2328; }
.bot { border: 1px solid #d1d9e0; border-radius: 2em; padding: 0 7px; font-size: 12px; margin-left: 4px; }
.md { padding: 16px; overflow-wrap: break-word; }
.md > *:first-child { margin-top: 0 !important; }
.md h2 { font-size: 1.5em; font-weight: 600; padding-bottom: .3em; border-bottom: 1px solid #d1d9e0b3;
  margin: 24px 0 16px; line-height: 1.25; }
.md h3 { font-size: 1.25em; font-weight: 600; margin: 24px 0 16px; line-height: 1.25; }
.md p, .md ul, .md ol, .md table, .md blockquote, .md details { margin: 0 0 16px; }
.md ul, .md ol { padding-left: 2em; }
.md a { color: #0969da; text-decoration: none; }
.md code { font-family: ui-monospace, SFMono-Regular, "SF Mono", Menlo, Consolas, "Liberation Mono",
  monospace; font-size: 85%%; padding: .2em .4em; background: #818b981f; border-radius: 6px; }
.md table { border-spacing: 0; border-collapse: collapse; display: block; width: max-content;
  max-width: 100%%; overflow: auto; }
.md th { font-weight: 600; }
.md th, .md td { padding: 6px 13px; border: 1px solid #d1d9e0; }
.md tr { background: #ffffff; border-top: 1px solid #d1d9e0b3; }
.md tr:nth-child(2n) { background: #f6f8fa; }
.md blockquote { padding: 0 1em; color: #59636e; border-left: .25em solid #d1d9e0; }
.md sub { font-size: 75%%; line-height: 0; vertical-align: baseline; }
.md hr { height: .25em; padding: 0; margin: 24px 0; background: #d1d9e0; border: 0; }
.md summary { cursor: pointer; display: list-item; }
.md details > *:not(summary) { margin-top: 8px; }
"""

PAGE = """<!doctype html>
<html lang="%(lang)s"><head><meta charset="utf-8"><title>0</title><style>%(css)s</style></head>
<body><div class="box"><div class="head"><b>github-actions</b><span class="bot">bot</span> commented</div>
<div class="md">%(body)s</div></div>
<script>document.title = String(Math.ceil(document.documentElement.getBoundingClientRect().height));</script>
</body></html>
"""

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--hide-scrollbars",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
]


def gfm(markdown: str) -> str:
    """GitHub-flavoured Markdown to HTML as a PR comment shows it: a newline is a line break there,
    HTML comments (the hidden marker and ledger lines) are dropped, the tags the comment uses (<sub>,
    <details>, <summary>, <b>) are kept, and task-list items (the Adopted boxes) show as GitHub's
    checkboxes (markdown-it's commonmark preset has no task lists)."""
    md = MarkdownIt("commonmark", {"html": True, "breaks": True}).enable(["table", "strikethrough"])
    html = md.render(re.sub(r"<!--.*?-->\n?", "", markdown, flags=re.S))
    return re.sub(
        r"<li>\[( |x)\] ",
        lambda m: (
            '<li style="list-style:none;margin-left:-1.4em"><input type="checkbox" disabled'
            + (" checked" if m[1] == "x" else "")
            + "> "
        ),
        html,
    )


def review_markdown(proposal: str, work: Path) -> str:
    """The comment `adr-review review` prints for a README example, offline, run in a scratch copy."""
    shutil.copytree(ROOT / "examples", work / "examples", dirs_exist_ok=True)
    cmd = [sys.executable, "-m", "adr_review", "review", proposal, "--adr-dir", "examples/adr"]
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(work)}
    return subprocess.run(cmd, cwd=work, env=env, check=True, capture_output=True, text=True).stdout


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if found := shutil.which(name):
            return found
    raise SystemExit("needs Chromium: apt-get install chromium fonts-noto-cjk fonts-noto-color-emoji")


def capture(markdown: str, lang: str, png: Path, work: Path) -> None:
    page = work / f"{png.stem}.html"
    page.write_text(
        PAGE % {"lang": lang, "css": CSS % {"width": WIDTH}, "body": gfm(markdown)}, encoding="utf-8"
    )
    browser = chromium()
    profile = ["--user-data-dir=" + str(work / "profile")]
    dom = subprocess.run(
        [browser, *CHROMIUM_FLAGS, *profile, f"--window-size={WIDTH},1000", "--dump-dom", page.as_uri()],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    m = re.search(r"<title>(\d+)</title>", dom)
    height = int(m.group(1)) if m else 2000
    png.unlink(missing_ok=True)
    for _attempt in range(3):  # headless Chromium now and then exits 0 without writing the file
        subprocess.run(
            [
                browser,
                *CHROMIUM_FLAGS,
                *profile,
                f"--window-size={WIDTH},{height}",
                f"--force-device-scale-factor={SCALE}",
                f"--screenshot={png}",
                page.as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
        if png.is_file():
            break
    else:
        raise SystemExit(f"Chromium wrote no {png.name}")
    print(f"wrote {png.relative_to(ROOT)} ({WIDTH}x{height} CSS px, {png.stat().st_size // 1024} KiB)")


def main() -> int:
    for lang, package in ((":lang=ja", "fonts-noto-cjk"), (":charset=1f4d0", "fonts-noto-color-emoji")):
        fonts = (
            subprocess.run(["fc-list", lang], capture_output=True, text=True).stdout
            if shutil.which("fc-list")
            else ""
        )
        if not fonts.strip():
            print(
                f"warning: no font for {lang}: characters would render as boxes (apt-get install {package})"
            )
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name, proposal in EXAMPLES.items():
            capture(review_markdown(proposal, work), name[-2:], OUT / f"{name}.png", work)
        for name, snapshot in SNAPSHOTS.items():
            capture((ROOT / snapshot).read_text(encoding="utf-8"), name[-2:], OUT / f"{name}.png", work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
