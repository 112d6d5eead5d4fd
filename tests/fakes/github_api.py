"""An in-memory GitHub REST API behind `responses`, for driving the real PyGithub adapter.

Stateful on purpose: a comment created by one run is listed, and edited, by the next. It answers the
endpoints app/adr_review/adapters/github.py uses, at https://api.github.com:443 (PyGithub adds the port), and
serves pages (`Link: rel="next"`) of `page_size` items so pagination is exercised. Faults are scripted
per route: `gh.fail("GET", r"/pulls/2/files", Fault(403, rate_limited=True), times=1)`.

    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        gh = FakeGitHub().install(rsps)
        gh.put_file("master", "docs/adr/0001-a.md", b"# ADR-0001 ...")
        gh.add_pull(2, head="h1", base="b1", files={"docs/adr/0002-b.md": b"..."})
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import re
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import responses

from tests.fakes.diffs import DIFF_MEDIA_TYPE, pull_diff

API = "https://api.github.com:443"  # what PyGithub requests
API_URL = "https://api.github.com"  # what GitHub writes into payloads and Link headers
WEB = "https://github.com"


def blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass(frozen=True)
class Fault:
    status: int
    body: Mapping[str, Any] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    rate_limited: bool = False  # a primary rate limit: remaining 0, reset in `reset_in` seconds
    reset_in: int = 30
    landed: bool = False  # the request takes effect, only its answer is this fault (a proxy's 502)

    def render(self, now: float) -> tuple[int, dict[str, str], str]:
        headers = dict(self.headers)
        body = dict(self.body or {"message": f"fault {self.status}"})
        if self.rate_limited:
            headers.setdefault("x-ratelimit-remaining", "0")
            headers.setdefault("x-ratelimit-limit", "5000")
            headers.setdefault("x-ratelimit-reset", str(int(now) + self.reset_in))
            body = dict(
                self.body
                or {
                    "message": "API rate limit exceeded for installation ID 1.",
                    "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
                }
            )
        headers["content-type"] = "application/json"
        return self.status, headers, json.dumps(body)


@dataclass
class Pull:
    number: int
    head_sha: str
    base_sha: str
    base_ref: str
    head_repo: str | None
    draft: bool = False
    files: list[dict[str, Any]] = field(default_factory=list)
    title: str = ""
    body: str | None = None  # GitHub sends null for a PR without a description


class FakeGitHub:
    def __init__(
        self, repo: str = "Codertocat/Hello-World", default_branch: str = "master", *, page_size: int = 2
    ):
        self.repo = repo
        self.default_branch = default_branch
        self.page_size = page_size
        self.trees: dict[str, dict[str, bytes]] = {default_branch: {}}  # ref (branch or sha) -> path -> bytes
        self.pulls: dict[int, Pull] = {}
        self.comments: list[dict[str, Any]] = []
        self.reactions: list[tuple[int, str]] = []
        self.permissions: dict[str, str] = {}
        self.known_comment_ids: set[int] = set()  # comments that exist outside this fake (a command comment)
        self.viewer = "github-actions[bot]"  # who the token writes as (GraphQL `viewer`)
        self.requests: list[tuple[str, str]] = []  # (method, path) of every request, in order
        self.request_headers: list[dict[str, str]] = []  # the headers of every request, in order
        self.now = 1_700_000_000.0
        self._faults: list[tuple[str, re.Pattern[str], deque[Fault]]] = []
        self.refuse_diff: dict[int, int] = {}  # PR number -> the status GitHub refuses its diff with
        self._ids = itertools.count(1_000_001)

    # ---------------------------------------------------------------- setup

    def install(self, rsps: responses.RequestsMock) -> FakeGitHub:
        for method in ("GET", "POST", "PATCH"):
            rsps.add_callback(method, re.compile(re.escape(API) + r"/.*"), callback=self._dispatch)
        return self

    def put_file(self, ref: str, path: str, data: bytes) -> None:
        self.trees.setdefault(ref, {})[path] = data

    def add_pull(
        self,
        number: int,
        *,
        head: str,
        base: str,
        changes: Mapping[str, bytes | None],
        base_ref: str | None = None,
        head_repo: str | None = "",
        draft: bool = False,
    ) -> Pull:
        """A PR whose head is the base tree plus `changes` (None deletes a file)."""
        base_tree = dict(self.trees.get(base) or self.trees[self.default_branch])
        self.trees[base] = base_tree
        head_tree = dict(base_tree)
        files = []
        for path, data in changes.items():
            if data is None:
                head_tree.pop(path, None)
                files.append({"filename": path, "status": "removed", "sha": None})
            else:
                status = "modified" if path in base_tree else "added"
                head_tree[path] = data
                files.append({"filename": path, "status": status, "sha": blob_sha(data)})
        self.trees[head] = head_tree
        pull = Pull(
            number,
            head,
            base,
            base_ref or self.default_branch,
            self.repo if head_repo == "" else head_repo,
            draft,
            files,
        )
        self.pulls[number] = pull
        return pull

    def fail(self, method: str, path_regex: str, *faults: Fault, times: int = 1) -> None:
        self._faults.append((method, re.compile(path_regex), deque(list(faults) * times)))

    def add_comment(
        self,
        number: int,
        body: str,
        *,
        login: str = "someone",
        user_type: str = "User",
        association: str = "NONE",
    ) -> dict[str, Any]:
        return self._new_comment(number, body, login=login, user_type=user_type, association=association)

    def comments_on(self, number: int) -> list[dict[str, Any]]:
        return [c for c in self.comments if c["_issue"] == number]

    def count(self, method: str, path_regex: str) -> int:
        pattern = re.compile(path_regex)
        return sum(1 for m, p in self.requests if m == method and pattern.search(p))

    # ---------------------------------------------------------------- dispatch

    def _diff(self, number: int) -> tuple[int, dict[str, str], str]:
        """GET /pulls/{n} as a diff: rendered from the trees, or GitHub's refusal of a too large one."""
        if number in self.refuse_diff:
            status = self.refuse_diff[number]
            body = {"message": "Sorry, the diff exceeded the maximum number of lines (20000)", "errors": [
                {"resource": "PullRequest", "field": "diff", "code": "too_large"}]}  # fmt: skip
            return status, {"content-type": "application/json"}, json.dumps(body)
        p = self.pulls[number]
        text = lambda ref: {k: v.decode("utf-8", "replace") for k, v in self.trees[ref].items()}  # noqa: E731
        diff = pull_diff((f["filename"] for f in p.files), text(p.base_sha), text(p.head_sha))
        return 200, {"content-type": f"{DIFF_MEDIA_TYPE}; charset=utf-8"}, diff

    def _dispatch(self, request: Any) -> tuple[int, dict[str, str], str]:
        url = urlsplit(request.url)
        path = unquote(url.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        method = request.method
        self.requests.append((method, path))
        self.request_headers.append(dict(request.headers))
        landed: Fault | None = None
        for m, pattern, queue in self._faults:
            if m == method and queue and pattern.search(path):
                fault = queue.popleft()
                if not fault.landed:
                    return fault.render(self.now)
                landed = fault
                break
        diff = re.match(rf"^/repos/{re.escape(self.repo)}/pulls/(\d+)$", path)
        if method == "GET" and diff and request.headers.get("Accept") == DIFF_MEDIA_TYPE:
            answer = self._diff(int(diff[1]))
        else:
            answer = self._route(method, path, query, request)
        return landed.render(self.now) if landed else answer

    def _route(
        self, method: str, path: str, query: Mapping[str, str], request: Any
    ) -> tuple[int, dict[str, str], str]:
        body = json.loads(request.body) if request.body else {}
        prefix = f"/repos/{self.repo}"
        routes: list[tuple[str, str, Any]] = [
            ("GET", rf"^{prefix}$", lambda m: self._repo_json()),
            ("GET", rf"^{prefix}/pulls/(\d+)$", lambda m: self._pull_json(int(m[1]))),
            (  # every pull request, newest first, all updated "now" (the scheduled run's scan)
                "GET",
                rf"^{prefix}/pulls$",
                lambda m: self._page(
                    [self._pull_json(n) for n in sorted(self.pulls, reverse=True)], query, path
                ),
            ),
            (
                "GET",
                rf"^{prefix}/pulls/(\d+)/files$",
                lambda m: self._page(self._pull(int(m[1])).files, query, path),
            ),
            (
                "GET",
                rf"^{prefix}/contents/(.+)$",
                lambda m: self._contents(m[1], query.get("ref", self.default_branch)),
            ),
            ("GET", rf"^{prefix}/git/trees/(.+)$", lambda m: self._tree(m[1])),
            ("GET", rf"^{prefix}/git/blobs/([0-9a-f]+)$", lambda m: self._blob(m[1])),
            (
                "GET",
                rf"^{prefix}/issues/(\d+)/comments$",
                lambda m: self._page(self._public(self.comments_on(int(m[1]))), query, path),
            ),
            (  # the repository's comments updated at or after `since`, oldest update first
                "GET",
                rf"^{prefix}/issues/comments$",
                lambda m: self._page(self._public(self._since(query.get("since"))), query, path),
            ),
            (
                "POST",
                rf"^{prefix}/issues/(\d+)/comments$",
                lambda m: (201, self._public([self._new_comment(int(m[1]), body["body"])])[0]),
            ),
            ("PATCH", rf"^{prefix}/issues/comments/(\d+)$", lambda m: self._edit(int(m[1]), body["body"])),
            (
                "POST",
                rf"^{prefix}/issues/comments/(\d+)/reactions$",
                lambda m: self._react(int(m[1]), body["content"]),
            ),
            ("GET", rf"^{prefix}/collaborators/([^/]+)/permission$", lambda m: self._permission(m[1])),
            ("POST", r"^/graphql$", lambda m: {"data": {"viewer": {"login": self.viewer}}}),
        ]
        for verb, regex, handler in routes:
            match = re.match(regex, path)
            if verb == method and match:
                result = handler(match)
                status, payload, headers = 200, result, {}
                if isinstance(result, tuple):
                    status, payload = result[0], result[1]
                    headers = result[2] if len(result) > 2 else {}
                headers = {"content-type": "application/json", "x-ratelimit-remaining": "4999", **headers}
                return status, headers, json.dumps(payload)
        return 404, {"content-type": "application/json"}, json.dumps({"message": "Not Found"})

    # ---------------------------------------------------------------- handlers

    def _repo_json(self) -> dict[str, Any]:
        return {
            "id": 1,
            "full_name": self.repo,
            "default_branch": self.default_branch,
            "url": f"{API_URL}/repos/{self.repo}",
        }

    def _pull(self, number: int) -> Pull:
        return self.pulls[number]

    def _pull_json(self, number: int) -> Any:
        if number not in self.pulls:
            return 404, {"message": "Not Found"}
        p = self.pulls[number]
        return {
            "number": p.number,
            "state": "open",
            "draft": p.draft,
            "title": p.title,
            "body": p.body,
            "html_url": f"{WEB}/{self.repo}/pull/{p.number}",
            "url": f"{API_URL}/repos/{self.repo}/pulls/{p.number}",
            "updated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "head": {
                "sha": p.head_sha,
                "ref": "feature",
                "repo": {"full_name": p.head_repo} if p.head_repo else None,
            },
            "base": {"sha": p.base_sha, "ref": p.base_ref, "repo": {"full_name": self.repo}},
        }

    def _page(self, items: list[dict[str, Any]], query: Mapping[str, str], path: str) -> Any:
        page = int(query.get("page", "1"))
        size = self.page_size
        chunk = items[(page - 1) * size : page * size]
        headers = {}
        if page * size < len(items):
            # GitHub's Link URLs carry no port, like the real API's.
            headers["Link"] = f'<{API_URL}{path}?per_page={size}&page={page + 1}>; rel="next"'
        return 200, chunk, headers

    def _contents(self, path: str, ref: str) -> Any:
        tree = self.trees.get(ref, {})
        if path in tree:
            data = tree[path]
            return {
                "type": "file",
                "encoding": "base64",
                "path": path,
                "name": path.rsplit("/", 1)[-1],
                "sha": blob_sha(data),
                "size": len(data),
                "content": base64.b64encode(data).decode(),
                "url": f"{API_URL}/repos/{self.repo}/contents/{path}?ref={ref}",
            }
        return 404, {"message": "Not Found"}

    def _tree(self, ref: str) -> Any:
        if ref not in self.trees:
            return 404, {"message": "Not Found"}
        entries = [
            {"path": p, "mode": "100644", "type": "blob", "sha": blob_sha(d), "size": len(d), "url": ""}
            for p, d in sorted(self.trees[ref].items())
        ]
        return {"sha": ref, "url": "", "tree": entries, "truncated": False}

    def _blob(self, sha: str) -> Any:
        for tree in self.trees.values():
            for data in tree.values():
                if blob_sha(data) == sha:
                    return {
                        "sha": sha,
                        "size": len(data),
                        "encoding": "base64",
                        "content": base64.b64encode(data).decode(),
                    }
        return 404, {"message": "Not Found"}

    def _new_comment(
        self,
        number: int,
        body: str,
        *,
        login: str = "github-actions[bot]",
        user_type: str = "Bot",
        association: str = "NONE",
    ) -> dict[str, Any]:
        cid = next(self._ids)
        comment = {
            "id": cid,
            "_issue": number,
            "body": body,
            "html_url": f"{WEB}/{self.repo}/pull/{number}#issuecomment-{cid}",
            "url": f"{API_URL}/repos/{self.repo}/issues/comments/{cid}",
            "user": {"login": login, "type": user_type},
            "author_association": association,
            "_updated": time.time(),
        }
        self.comments.append(comment)
        return comment

    def _since(self, since: str | None) -> list[dict[str, Any]]:
        start = datetime.fromisoformat(since.replace("Z", "+00:00")).timestamp() if since else 0.0
        return sorted((c for c in self.comments if c["_updated"] >= start), key=lambda c: c["_updated"])

    def _edit(self, cid: int, body: str) -> Any:
        for c in self.comments:
            if c["id"] == cid:
                c["body"] = body
                c["_updated"] = time.time()
                return self._public([c])[0]
        return 404, {"message": "Not Found"}

    def _react(self, cid: int, content: str) -> Any:
        if not any(c["id"] == cid for c in self.comments) and cid not in self.known_comment_ids:
            return 404, {"message": "Not Found"}
        self.reactions.append((cid, content))
        return 201, {"id": len(self.reactions), "content": content}

    def _permission(self, login: str) -> Any:
        if login not in self.permissions:
            return 404, {"message": f"{login} is not a user"}
        return {"permission": self.permissions[login], "user": {"login": login}}

    @staticmethod
    def _public(comments: list[dict[str, Any]]) -> list[dict[str, Any]]:
        def updated(c: dict[str, Any]) -> dict[str, str]:
            when = datetime.fromtimestamp(c["_updated"], UTC) if "_updated" in c else None
            return {"updated_at": when.strftime("%Y-%m-%dT%H:%M:%SZ")} if when else {}

        return [{**{k: v for k, v in c.items() if not k.startswith("_")}, **updated(c)} for c in comments]
