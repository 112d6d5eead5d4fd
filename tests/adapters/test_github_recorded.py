"""The PyGithub adapter on REST responses as GitHub writes them (tests/fixtures/github/rest/, see the
README there): what it reads of each into the port's types, and the comment rules on a real listing."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import responses

from adr_review.adapters.github import GitHubAdapter
from adr_review.pipeline.plans.publish import upsert_comment

REST = Path(__file__).resolve().parents[1] / "fixtures" / "github" / "rest"
REPO = "Codertocat/Hello-World"
API = r"https://api\.github\.com(?::443)?"
ADR = "docs/adr/0002-b.md"


def recorded(name: str) -> Any:
    return json.loads((REST / name).read_text(encoding="utf-8"))


def route(rsps: responses.RequestsMock, method: str, path: str, body: Any, status: int = 200) -> None:
    rsps.add(method, re.compile(API + path + r"(?:\?.*)?$"), json=body, status=status)


@pytest.fixture
def rsps() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        route(mock, "POST", "/graphql", recorded("graphql-viewer.json"))
        yield mock


@pytest.fixture
def gh() -> GitHubAdapter:
    return GitHubAdapter("t0ken", sleep=lambda s: None, seconds_between_writes=None)


def test_a_pull_request(rsps: responses.RequestsMock, gh: GitHubAdapter) -> None:
    route(rsps, "GET", f"/repos/{REPO}/pulls/2", recorded("pulls-2.json"))
    info = gh.pull_request(REPO, 2)
    assert (info.number, info.state, info.draft, info.base_ref) == (2, "open", False, "master")
    assert info.head_sha == "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
    assert info.base_sha == "f95f852bd8fca8fcc58a9a2d6c842781e32a215e"
    assert info.head_repo == REPO and info.html_url == "https://github.com/Codertocat/Hello-World/pull/2"


def test_the_changed_files_with_a_rename(rsps: responses.RequestsMock, gh: GitHubAdapter) -> None:
    route(rsps, "GET", f"/repos/{REPO}/pulls/2/files", recorded("pulls-2-files.json"))
    files = gh.changed_files(REPO, 2)
    assert [(f.path, f.status, f.previous_path) for f in files] == [
        (ADR, "added", None),
        ("docs/adr/0003-c.md", "renamed", "docs/adr/0003-old.md"),
        ("README.md", "modified", None),
    ]
    assert files[0].blob_sha == "3d21ec53a331a6f037a91c368710b99387d012c1"


def test_a_file_in_base64_lines_and_a_missing_one(rsps: responses.RequestsMock, gh: GitHubAdapter) -> None:
    route(rsps, "GET", f"/repos/{REPO}/contents/{ADR}", recorded("contents-docs-adr-0002-b.md.json"))
    missing = {"message": "Not Found", "documentation_url": "https://docs.github.com/rest/repos/contents"}
    route(rsps, "GET", f"/repos/{REPO}/contents/docs/adr/none.md", missing, status=404)
    content = gh.read_file(REPO, ADR, "ec26c3e57ca3a959ca5aad62de7213c562f8c821")
    assert (
        content is not None and content.decode().startswith("# ADR-0002 B") and "日本語" in content.decode()
    )
    assert gh.read_file(REPO, "docs/adr/none.md", "master") is None


def test_a_collaborators_permission(rsps: responses.RequestsMock, gh: GitHubAdapter) -> None:
    route(rsps, "GET", f"/repos/{REPO}/collaborators/Codertocat/permission", recorded("collaborators-Codertocat-permission.json"))  # fmt: skip
    assert gh.permission(REPO, "Codertocat") == "write"


def test_ours_on_a_listing_is_the_newest_by_the_tokens_identity(
    rsps: responses.RequestsMock, gh: GitHubAdapter
) -> None:
    """The listing holds a person's comment, two of ours and a person's with our marker pasted."""
    route(rsps, "GET", f"/repos/{REPO}/issues/2/comments", recorded("issues-2-comments.json"))
    ours = gh.find_comment(REPO, 2, ADR)
    assert ours is not None and (ours.id, ours.marker_key, ours.author_type) == (492700403, "k2", "Bot")
    assert [c.id for c in gh.our_comments(REPO, 2)] == [492700403]
    pasted = [c for c in gh.pr_comments(REPO, 2) if c.marker_key == "forged"]
    assert [(c.author, c.author_association) for c in pasted] == [("Codertocat", "OWNER")]


def test_a_refused_edit_of_ours_creates_a_new_comment(
    rsps: responses.RequestsMock, gh: GitHubAdapter
) -> None:
    listing = recorded("issues-2-comments.json")
    route(rsps, "GET", f"/repos/{REPO}/issues/2/comments", listing)
    refused = {
        "message": "Resource not accessible by integration",
        "documentation_url": "https://docs.github.com/rest/issues/comments#update-an-issue-comment",
        "status": "403",
    }
    route(rsps, "PATCH", f"/repos/{REPO}/issues/comments/492700403", refused, status=403)
    created = dict(
        listing[-1], id=492700404, body="<!-- adr-review:v1 path=docs/adr/0002-b.md key=k3 -->\nnew"
    )
    route(rsps, "POST", f"/repos/{REPO}/issues/2/comments", created, status=201)
    comment, was_created = upsert_comment(gh, REPO, 2, ADR, created["body"])
    assert was_created and comment.id == 492700404 and comment.marker_key == "k3"
    writes = [(c.request.method, c.request.url) for c in rsps.calls if c.request.method in ("PATCH", "POST")]
    assert [m for m, _ in writes if "graphql" not in _] == ["PATCH", "POST"]
