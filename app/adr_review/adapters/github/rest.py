"""GitHubPort over PyGithub: the REST client of one run, whatever its credentials.

Credentials: a token (the Action, local development), or an installation token of the App (built by
GitHubClients: one repository, the App's permissions, minted and cached through PyGithub). A client made
for a webhook delivery sends its id in `X-GitHub-Delivery` on every request. Every call runs under the
one retry policy (retry.py); a 401 with an installation token drops the token and tries once more.

Comments: one per ADR, found by the hidden marker the renderer writes (the rules: app/adr_review/core/comments.py;
the upsert over them: app/adr_review/pipeline/plans/publish.py). Only comments written by the
identity of these credentials count as ours (the App's bot user `<slug>[bot]`, the Action token's user,
`github-actions[bot]` for GITHUB_TOKEN): another bot's or a collaborator's comment that carries our
marker is never edited, so nobody can capture the review of an ADR, nor block it with a comment we may
not edit. The identity is given (GitHubClients knows the App's) or asked once (GraphQL `viewer`, which
answers for personal, installation and GITHUB_TOKEN tokens alike).
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from adr_review.adapters.github.retry import Retrier, RetryPolicy
from adr_review.core.comments import ours_per_path, pick_comment
from adr_review.core.triggers import ChangedFile
from adr_review.pipeline.ports import GitHubError, PullRequestInfo, RepoComment, RepoFile

if TYPE_CHECKING:
    from adr_review.adapters.github.app import InstallationAuth

T = TypeVar("T")
DEFAULT_API_URL = "https://api.github.com"
USER_AGENT = "adr-review"
DIFF_MEDIA_TYPE = "application/vnd.github.diff"


class GitHubAdapter:
    """The GitHubPort for one run: one API host (GITHUB_API_URL on GitHub Enterprise Server) and one
    set of credentials, `token` or an App installation's `auth` (GitHubClients.for_run builds those)."""

    def __init__(
        self,
        token: str | None = None,
        *,
        base_url: str = DEFAULT_API_URL,
        policy: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
        seconds_between_writes: float | None = 1.0,
        timeout: int = 30,
        auth: InstallationAuth | None = None,
        delivery_id: str | None = None,
        identity: str | Callable[[], str] | None = None,
    ) -> None:
        from github import Auth, Github  # PyGithub: imported only when GitHub is used

        from adr_review.adapters.github.app import API_VERSION, RunAuth

        if token and auth is not None:
            raise ValueError("a GitHub client takes a token or an installation auth, not both")
        inner: Any = auth if auth is not None else (Auth.Token(token) if token else None)
        self._gh = Github(
            auth=RunAuth(inner, delivery_id) if delivery_id or auth is not None else inner,
            base_url=(base_url or DEFAULT_API_URL).rstrip("/"),
            retry=None,  # the Retrier is the one policy (retry.py says why)
            seconds_between_requests=None,
            seconds_between_writes=seconds_between_writes,
            per_page=100,
            timeout=timeout,
            user_agent=USER_AGENT,
            lazy=True,
            api_version=API_VERSION,
        )
        self._retry = Retrier(policy, sleep=sleep, clock=clock)
        self._reauth = auth.forget if auth is not None else None  # a 401: mint once more
        self._identity = identity
        self._login: str | None = identity if isinstance(identity, str) else None

    def _call(
        self, operation: str, fn: Callable[[], T], *, before_retry: Callable[[], T | None] | None = None
    ) -> T:
        return self._retry.call(operation, fn, before_retry=before_retry, reauth=self._reauth)

    def _repo(self, repo: str) -> Any:
        return self._gh.get_repo(repo)  # lazy: no request

    # ---------------------------------------------------------------------------------------------
    # reads

    def default_branch(self, repo: str) -> str:
        return self._call("get repository", lambda: str(self._gh.get_repo(repo).raw_data["default_branch"]))

    def pull_request(self, repo: str, number: int) -> PullRequestInfo:
        def get() -> PullRequestInfo:
            data = self._repo(repo).get_pull(number).raw_data
            head_repo = (data.get("head") or {}).get("repo")
            return PullRequestInfo(
                repo=repo,
                number=int(data["number"]),
                head_sha=data["head"]["sha"],
                base_sha=data["base"]["sha"],
                base_ref=data["base"]["ref"],
                head_repo=head_repo.get("full_name") if head_repo else None,
                draft=bool(data.get("draft")),
                state=str(data.get("state", "")),
                html_url=str(data.get("html_url", "")),
                title=str(data.get("title") or ""),
                body=str(data.get("body") or ""),
            )

        return self._call(f"get pull request #{number}", get)

    def pull_diff(self, repo: str, number: int) -> str:
        """The PR's .diff through the one client stack (its retries, auth and delivery header): the
        same GET as pull_request, asking for the diff media type; PyGithub hands a body that is not JSON
        back as {"data": text}."""

        def get() -> str:
            _, data = self._gh.requester.requestJsonAndCheck(
                "GET", f"/repos/{repo}/pulls/{number}", headers={"Accept": DIFF_MEDIA_TYPE}
            )
            if data is None:
                return ""
            text = data.get("data") if isinstance(data, dict) else None
            if not isinstance(text, str):
                raise GitHubError(f"read the diff of #{number}", "the answer was JSON, not a diff")
            return text

        return self._call(f"read the diff of #{number}", get)

    def changed_files(self, repo: str, number: int) -> list[ChangedFile]:
        def get() -> list[ChangedFile]:
            return [
                ChangedFile(
                    path=f.filename,
                    status=f.status,
                    previous_path=f.raw_data.get("previous_filename"),
                    blob_sha=f.raw_data.get("sha"),
                )
                for f in self._repo(repo).get_pull(number).get_files()  # PaginatedList: every page
            ]

        return self._call(f"list files of #{number}", get)

    def read_file(self, repo: str, path: str, ref: str) -> bytes | None:
        from github import UnknownObjectException

        def get() -> bytes | None:
            try:
                content = self._repo(repo).get_contents(path, ref=ref)
            except UnknownObjectException:
                return None
            if isinstance(content, list) or content.type != "file":
                return None  # a folder or a submodule
            if content.raw_data.get("encoding") == "base64" and content.raw_data.get("content") is not None:
                return bytes(content.decoded_content)
            return self._blob(repo, content.sha)  # > 1 MB: the contents API sends no content

        return self._call(f"read {path}@{ref[:12]}", get)

    def read_blob(self, repo: str, blob_sha: str) -> bytes:
        return self._call(f"read blob {blob_sha[:12]}", lambda: self._blob(repo, blob_sha))

    def _blob(self, repo: str, blob_sha: str) -> bytes:
        blob = self._repo(repo).get_git_blob(blob_sha)
        if blob.encoding == "base64":
            return base64.b64decode(blob.content)
        return str(blob.content).encode("utf-8")

    def list_files(self, repo: str, ref: str, folders: Sequence[str]) -> list[RepoFile]:
        """One recursive tree call; a truncated tree (huge repos) falls back to walking `folders`."""

        def get() -> list[RepoFile]:
            tree = self._repo(repo).get_git_tree(ref, recursive=True)
            if tree.raw_data.get("truncated"):
                return self._walk(repo, ref, folders)
            return [
                RepoFile(path=e.path, blob_sha=e.sha, size=e.size)
                for e in tree.tree
                if e.type == "blob" and _under(e.path, folders)
            ]

        return self._call(f"list files at {ref[:12]}", get)

    def _walk(self, repo: str, ref: str, folders: Sequence[str]) -> list[RepoFile]:
        from github import UnknownObjectException

        out: list[RepoFile] = []
        pending = sorted(set(folders)) or [""]
        while pending:
            folder = pending.pop()
            try:
                items = self._repo(repo).get_contents(folder, ref=ref)
            except UnknownObjectException:
                continue
            for item in items if isinstance(items, list) else [items]:
                if item.type == "dir":
                    pending.append(item.path)
                elif item.type == "file":
                    out.append(RepoFile(path=item.path, blob_sha=item.sha, size=item.size))
        return sorted(out, key=lambda f: f.path)

    def permission(self, repo: str, login: str) -> str:
        from github import GithubException

        def get() -> str:
            try:
                return str(self._repo(repo).get_collaborator_permission(login))
            except GithubException as exc:
                if exc.status == 404:  # not a collaborator (or the user does not exist)
                    return "none"
                raise

        return self._call(f"read the permission of {login}", get)

    # ---------------------------------------------------------------------------------------------
    # comments

    def list_comments(self, repo: str, number: int) -> list[RepoComment]:
        def get() -> list[RepoComment]:
            return [_comment(c) for c in self._repo(repo).get_issue(number).get_comments()]

        return self._call(f"list comments of #{number}", get)

    def identity(self) -> str:
        """The login these credentials write as (the author of our comments)."""
        if self._login is None:
            if callable(self._identity):
                self._login = self._identity()
            else:
                query = "query { viewer { login } }"
                _, data = self._call(
                    "read the token's identity", lambda: self._gh.requester.graphql_query(query, {})
                )
                self._login = str(data["data"]["viewer"]["login"])
        return self._login

    def find_comment(self, repo: str, number: int, adr_path: str) -> RepoComment | None:
        return pick_comment(self.list_comments(repo, number), adr_path, self.identity())

    def pr_comments(self, repo: str, number: int) -> list[RepoComment]:
        return self.list_comments(repo, number)

    def our_comments(self, repo: str, number: int) -> list[RepoComment]:
        return ours_per_path(self.list_comments(repo, number), self.identity())

    def recent_pulls(self, repo: str, since: float) -> list[int]:
        def get() -> list[int]:
            out = []
            pulls = self._repo(repo).get_pulls(state="all", sort="updated", direction="desc")
            for p in pulls:  # newest update first: stop at the first one older than `since`
                if p.updated_at is not None and p.updated_at.timestamp() < since:
                    break
                out.append(int(p.number))
            return out

        return self._call("list recently updated pull requests", get)

    def our_comments_since(self, repo: str, since: float) -> list[RepoComment]:
        from datetime import UTC, datetime

        from adr_review.core.comments import is_ours

        def get() -> list[RepoComment]:
            listed = self._repo(repo).get_issues_comments(since=datetime.fromtimestamp(since, UTC))
            me = self.identity()
            return [c for c in map(_comment, listed) if is_ours(c, me)]

        return self._call("list this month's comments", get)

    def create_comment(self, repo: str, number: int, body: str) -> RepoComment:
        def post() -> RepoComment:
            return _comment(self._repo(repo).get_issue(number).create_comment(body))

        def landed() -> RepoComment | None:  # a 5xx after the POST may still have created it
            me = self.identity()
            return next(
                (c for c in reversed(self.list_comments(repo, number)) if c.author == me and c.body == body),
                None,
            )

        return self._call(f"comment on #{number}", post, before_retry=landed)

    def edit_comment(self, repo: str, number: int, comment_id: int, body: str) -> RepoComment:
        def edit() -> RepoComment:
            comment = self._repo(repo).get_issue(number).get_comment(comment_id)  # lazy: PATCH only
            comment.edit(body)
            return _comment(comment)

        return self._call(f"edit comment {comment_id}", edit)

    def add_reaction(self, repo: str, comment_id: int, content: str) -> None:
        def react() -> None:
            # Issue numbers do not matter for the comment's URL: /repos/o/r/issues/comments/{id}.
            self._repo(repo).get_issue(0).get_comment(comment_id).create_reaction(content)

        self._call(f"react {content} to comment {comment_id}", react)


def _comment(c: Any) -> RepoComment:
    """From a PyGithub IssueComment. Attributes, not raw_data: a listed comment is "incomplete" in lazy
    mode and raw_data would fetch it again, one GET per comment."""
    from adr_review.core.marker import read_marker

    body = str(c.body or "")
    marker = read_marker(body)
    return RepoComment(
        id=int(c.id),
        body=body,
        html_url=str(c.html_url or ""),
        author=str(c.user.login) if c.user else "",
        author_type=str(c.user.type) if c.user else "User",
        author_association=str(c.author_association or "NONE"),
        marker_path=marker.path if marker else None,
        marker_key=marker.key if marker else None,
        marker_head=marker.head if marker else None,
        marker_order=marker.order if marker else None,
    )


def _under(path: str, folders: Sequence[str]) -> bool:
    if not folders or "" in folders:
        return True
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)
