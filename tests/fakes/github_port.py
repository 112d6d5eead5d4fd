"""The GitHubPort in memory: the fake at the port for the use-case tests (the adapters have their own
tests against `responses` and the fake GitHub server)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from app.core.marker import parse_marker
from app.core.triggers import ChangedFile
from app.pipeline.ports import GitHubError, PullRequestInfo, RepoComment, RepoFile


@dataclass
class MemoryGitHub:
    repo: str = "acme/shop"
    default: str = "main"
    files: dict[str, dict[str, bytes]] = field(default_factory=dict)  # ref -> path -> bytes
    pulls: dict[int, PullRequestInfo] = field(default_factory=dict)
    changes: dict[int, list[ChangedFile]] = field(default_factory=dict)
    comments: dict[int, list[RepoComment]] = field(default_factory=dict)
    permissions: dict[str, str] = field(default_factory=dict)
    reactions: list[tuple[int, str]] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)
    fail: dict[str, GitHubError] = field(default_factory=dict)  # operation -> error to raise
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
        return next((c for c in self.comments.get(number, []) if c.marker_path == adr_path), None)

    def upsert_comment(self, repo: str, number: int, adr_path: str, body: str) -> tuple[RepoComment, bool]:
        self._call("upsert_comment")
        existing = self.find_comment(repo, number, adr_path)
        comment = self._comment(body, existing.id if existing else None)
        listed = self.comments.setdefault(number, [])
        if existing is not None:
            listed[listed.index(existing)] = comment
            return comment, False
        listed.append(comment)
        return comment, True

    def create_comment(self, repo: str, number: int, body: str) -> RepoComment:
        self._call("create_comment")
        comment = self._comment(body, None)
        self.comments.setdefault(number, []).append(comment)
        return comment

    def add_reaction(self, repo: str, comment_id: int, content: str) -> None:
        self._call("add_reaction")
        self.reactions.append((comment_id, content))

    def permission(self, repo: str, login: str) -> str:
        self._call("permission")
        return self.permissions.get(login, "none")

    def _comment(self, body: str, cid: int | None) -> RepoComment:
        if cid is None:
            self._next_id += 1
            cid = self._next_id
        marker = parse_marker(body)
        return RepoComment(
            cid,
            body,
            f"https://github.com/{self.repo}/pull/1#issuecomment-{cid}",
            "adr-review[bot]",
            "Bot",
            "NONE",
            marker[0] if marker else None,
            marker[1] if marker else None,
        )
