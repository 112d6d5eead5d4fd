"""The GitHubPort in memory: the fake at the port for the use-case tests (the adapters have their own
tests against `responses` and the fake GitHub server). Which comment is ours is the product's rule
(app/adr_review/core/comments.py), never a copy; the fake only plays GitHub (ids, a refused edit is a 403)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from adr_review.core.comments import is_ours, ours_per_path, pick_comment
from adr_review.core.marker import read_marker
from adr_review.core.triggers import ChangedFile
from adr_review.pipeline.ports import GitHubError, PullRequestInfo, RepoComment, RepoFile


@dataclass
class MemoryGitHub:
    repo: str = "acme/shop"
    default: str = "main"
    files: dict[str, dict[str, bytes]] = field(default_factory=dict)  # ref -> path -> bytes
    pulls: dict[int, PullRequestInfo] = field(default_factory=dict)
    changes: dict[int, list[ChangedFile]] = field(default_factory=dict)
    diffs: dict[int, str] = field(default_factory=dict)  # PR number -> its unified diff
    comments: dict[int, list[RepoComment]] = field(default_factory=dict)
    permissions: dict[str, str] = field(default_factory=dict)
    reactions: list[tuple[int, str]] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)
    fail: dict[str, GitHubError] = field(default_factory=dict)  # operation -> error to raise
    me: str = "adr-review[bot]"  # the identity our writes carry
    refuse_edits: set[int] = field(default_factory=set)  # comment ids GitHub will not let us edit
    _next_id: int = 100

    def _call(self, op: str) -> None:
        self.calls.append(op)
        if op in self.fail:
            raise self.fail[op]

    def default_branch(self, repo: str) -> str:
        self._call("default_branch")
        return self.default

    def pull_request(self, repo: str, number: int) -> PullRequestInfo:
        self._call("pull_request")
        return self.pulls[number]

    def changed_files(self, repo: str, number: int) -> list[ChangedFile]:
        self._call("changed_files")
        return list(self.changes.get(number, []))

    def pull_diff(self, repo: str, number: int) -> str:
        self._call("pull_diff")
        return self.diffs.get(number, "")

    def read_file(self, repo: str, path: str, ref: str) -> bytes | None:
        self._call("read_file")
        return self.files.get(ref, {}).get(path)

    def list_files(self, repo: str, ref: str, folders: Sequence[str]) -> list[RepoFile]:
        self._call("list_files")
        return [
            RepoFile(p, f"blob:{ref}:{p}", len(b))
            for p, b in sorted(self.files.get(ref, {}).items())
            if any(not f or p.startswith(f.rstrip("/") + "/") for f in folders)
        ]

    def read_blob(self, repo: str, blob_sha: str) -> bytes:
        self._call("read_blob")
        _, ref, path = blob_sha.split(":", 2)
        return self.files[ref][path]

    def find_comment(self, repo: str, number: int, adr_path: str) -> RepoComment | None:
        self._call("find_comment")
        return pick_comment(self.comments.get(number, []), adr_path, self.me)

    def pr_comments(self, repo: str, number: int) -> list[RepoComment]:
        self._call("pr_comments")
        return list(self.comments.get(number, []))

    def our_comments(self, repo: str, number: int) -> list[RepoComment]:
        self._call("our_comments")
        return ours_per_path(self.comments.get(number, []), self.me)

    def recent_pulls(self, repo: str, since: float) -> list[int]:
        self._call("recent_pulls")
        return sorted(self.pulls, reverse=True)

    def our_comments_since(self, repo: str, since: float) -> list[RepoComment]:
        self._call("our_comments_since")  # every comment here was written "now"
        return [c for listed in self.comments.values() for c in listed if is_ours(c, self.me)]

    def edit_comment(self, repo: str, number: int, comment_id: int, body: str) -> RepoComment:
        self._call("edit_comment")
        listed = self.comments.get(number, [])
        old = next(c for c in listed if c.id == comment_id)
        if comment_id in self.refuse_edits or old.author != self.me:
            raise GitHubError(f"edit comment {comment_id}", "Resource not accessible by integration", 403)
        comment = self._comment(body, comment_id)
        listed[listed.index(old)] = comment
        return comment

    def create_comment(self, repo: str, number: int, body: str) -> RepoComment:
        self._call("create_comment")
        comment = self._comment(body, None)
        self.comments.setdefault(number, []).append(comment)
        return comment

    def add_comment(self, number: int, body: str, author: str) -> RepoComment:
        """A comment somebody else wrote (another bot, a collaborator): never ours."""
        comment = self._comment(body, None, author)
        self.comments.setdefault(number, []).append(comment)
        return comment

    def add_reaction(self, repo: str, comment_id: int, content: str) -> None:
        self._call("add_reaction")
        self.reactions.append((comment_id, content))

    def permission(self, repo: str, login: str) -> str:
        self._call("permission")
        return self.permissions.get(login, "none")

    def _comment(self, body: str, cid: int | None, author: str | None = None) -> RepoComment:
        if cid is None:
            self._next_id += 1
            cid = self._next_id
        marker = read_marker(body)
        author = author or self.me
        return RepoComment(
            cid,
            body,
            f"https://github.com/{self.repo}/pull/1#issuecomment-{cid}",
            author,
            "Bot" if author.endswith("[bot]") else "User",
            "NONE",
            marker.path if marker else None,
            marker.key if marker else None,
            marker.head if marker else None,
            marker.order if marker else None,
        )
