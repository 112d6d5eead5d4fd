"""A fake GitHub REST API on 127.0.0.1 for PyGithub (via `base_url`): REST, App auth, hook deliveries.

It keeps repositories, pull requests, files at refs, issue comments and reactions in memory and counts
what matters to the idempotency tests: comment creations and edits per issue, installation tokens
minted, redeliveries requested. Installation tokens behave like GitHub's: each minted token is limited
to the `repositories` its request named (another repository answers 404), a revoked one answers 401
(`revoke_tokens()`), and given the App's public key the fake checks the App JWT (RS256, `iss`). Every
request is logged with its Authorization and X-GitHub-Delivery headers (`request_log`).

Runs in-process (`FakeGitHubServer().start()`) or as its own process (`python -m
tests.fakes.github_server --port 0 --state seed.json` prints `PORT <n>`), so a worker in a subprocess
that gets SIGKILLed and restarted talks to one counter.

REST routes (the handful the adapters use):
    GET  /repos/{o}/{r}                               GET  /repos/{o}/{r}/installation
    GET  /repos/{o}/{r}/pulls/{n} (also as a diff)    GET  /repos/{o}/{r}/pulls/{n}/files
    GET  /repos/{o}/{r}/contents/{path}?ref=          GET  /repos/{o}/{r}/git/trees/{ref}?recursive=1
    GET  /repos/{o}/{r}/issues/{n}                    GET|POST /repos/{o}/{r}/issues/{n}/comments
    GET|PATCH /repos/{o}/{r}/issues/comments/{id}     POST /repos/{o}/{r}/issues/comments/{id}/reactions
    GET  /repos/{o}/{r}/collaborators/{u}/permission  GET  /repos/{o}/{r}/commits/{ref}
    POST /app/installations/{id}/access_tokens        GET  /app, /app/hook/deliveries
    POST /app/hook/deliveries/{id}/attempts           (re-sends the stored request to its URL)
    POST /graphql (the `viewer { login }` query only)
Comments are written by the caller's identity: an installation token's is the App's bot user
(`adr-review[bot]`), a static token's is `token_logins[token]` (default `adr-review[bot]`); a PATCH of a
comment somebody else wrote is refused with 403, as GitHub refuses a token what it may not edit.
Control routes: GET /_state (counters + comments), POST /_seed (merge a state document), POST /_reset,
POST /_deliver {url, event, payload, secret, delivery?} (send a signed webhook and record the delivery,
failed or not, as GitHub would), POST /_fail {route_regex, status, times, headers?} (scripted failures).

Seed document: {"repos": {"o/r": {"default_branch": "main", "installation_id": 1,
  "refs": {"main": {"path": "text"}, "<sha>": {...}},
  "pulls": {"7": {"head_sha": "<sha>", "base_sha": "<sha>", "base_ref": "main", "head_ref": "f",
                  "draft": false, "user": "alice", "files": [{"filename", "status"}],
                  "diff_refused": 406 (optional: the diff is too large to render)}},
  "permissions": {"alice": "admin"}}},
 "comments": [{"repo": "o/r", "issue": 7, "body": "...", "user": "someone"}],  (written by others)
 "token_logins": {"<static token>": "<login>"}}
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import json
import re
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler
from itertools import count
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from tests.fakes.diffs import DIFF_MEDIA_TYPE, pull_diff
from tests.fakes.http_server import JsonHandler, LocalServer, serve_until_interrupted


def _now_iso(offset_s: float = 0.0) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + offset_s))


class FakeGitHubServer(LocalServer):
    thread_name = "fake-github"

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        token_ttl_s: float = 3600.0,
        *,
        app_id: str | None = None,
        app_public_key: str | None = None,
    ) -> None:
        super().__init__(host, port)
        self.token_ttl_s = token_ttl_s
        self.app_id = app_id
        self.app_public_key = app_public_key  # PEM: App JWTs are verified (else any Bearer passes)
        self.tokens: dict[str, dict[str, Any]] = {}  # minted token -> installation, repositories, permissions
        self.token_requests: list[dict[str, Any]] = []  # body and delivery header of every mint
        self.request_log: list[dict[str, Any]] = []  # method, path, authorization, delivery
        self.lock = threading.RLock()
        self.repos: dict[str, dict[str, Any]] = {}
        self.comments: dict[int, dict[str, Any]] = {}
        self.reactions: list[dict[str, Any]] = []
        self.deliveries: list[dict[str, Any]] = []
        self.failures: list[dict[str, Any]] = []
        self.counters: Counter[str] = Counter()
        self.requests: list[tuple[str, str]] = []
        self.token_logins: dict[str, str] = {}  # static token -> the login it writes as
        self._ids = count(1000)

    def handler(self) -> type[BaseHTTPRequestHandler]:
        return _make_handler(self)

    # -- state -------------------------------------------------------------------------------------
    def seed(self, doc: Mapping[str, Any]) -> FakeGitHubServer:
        with self.lock:
            for name, spec in (doc.get("repos") or {}).items():
                repo = self.repos.setdefault(
                    name,
                    {
                        "default_branch": "main",
                        "installation_id": 1,
                        "refs": {},
                        "pulls": {},
                        "permissions": {},
                    },
                )
                for key in ("default_branch", "installation_id", "id"):
                    if key in spec:
                        repo[key] = spec[key]
                for ref, files in (spec.get("refs") or {}).items():
                    repo["refs"].setdefault(ref, {}).update(files)
                for n, pull in (spec.get("pulls") or {}).items():
                    repo["pulls"][int(n)] = dict(pull)
                repo["permissions"].update(spec.get("permissions") or {})
            for d in doc.get("deliveries") or []:
                self.deliveries.append(dict(d))
            for c in doc.get("comments") or []:
                self.add_comment(
                    str(c["repo"]), int(c["issue"]), str(c["body"]), str(c.get("user", "someone"))
                )
            self.token_logins.update(doc.get("token_logins") or {})
        return self

    def add_comment(self, repo: str, issue: int, body: str, user: str) -> dict[str, Any]:
        """A comment somebody wrote (not counted as one of ours)."""
        with self.lock:
            cid = next(self._ids)
            now = _now_iso()
            c = {"id": cid, "repo": repo, "issue": issue, "body": body, "user": user}
            c.update(created_at=now, updated_at=now, edits=0)
            self.comments[cid] = c
            return c

    def login_of(self, authorization: str) -> str:
        """Who a request's credentials write as."""
        token = authorization.split(" ", 1)[-1].strip()
        if token in self.tokens:
            return "adr-review[bot]"  # the App's bot user: `<slug>[bot]`, the slug of GET /app
        return self.token_logins.get(token, "adr-review[bot]")

    def revoke_tokens(self) -> None:
        """Every installation token minted so far answers 401 from now on (as after a key rotation)."""
        with self.lock:
            for t in self.tokens.values():
                t["revoked"] = True

    def reset(self) -> None:
        with self.lock:
            self.tokens.clear()
            self.token_requests.clear()
            self.request_log.clear()
            self.comments.clear()
            self.reactions.clear()
            self.counters.clear()
            self.requests.clear()
            self.failures.clear()

    def state(self) -> dict[str, Any]:
        with self.lock:
            return {
                "counters": dict(self.counters),
                "comments": [dict(c) for c in self.comments.values()],
                "reactions": list(self.reactions),
                "deliveries": [{k: v for k, v in d.items() if k != "request"} for d in self.deliveries],
                "requests": len(self.requests),
                "token_requests": list(self.token_requests),
            }

    def comments_on(self, repo: str, issue: int) -> list[dict[str, Any]]:
        with self.lock:
            return [c for c in self.comments.values() if c["repo"] == repo and c["issue"] == issue]

    # -- webhooks out --------------------------------------------------------------------------------
    def deliver(
        self,
        url: str,
        event: str,
        payload: Mapping[str, Any],
        secret: str | None,
        *,
        guid: str | None = None,
        redelivery: bool = False,
        hook_id: int = 1,
    ) -> dict[str, Any]:
        """Send a webhook like GitHub does and record the delivery (status 0 = connection failed)."""
        body = json.dumps(payload).encode()
        guid = guid or str(uuid.uuid4())
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "GitHub-Hookshot/fake",
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": guid,
            "X-GitHub-Hook-ID": str(hook_id),
            "X-GitHub-Hook-Installation-Target-Type": "integration",
        }
        if secret is not None:
            headers["X-Hub-Signature-256"] = (
                "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
            )
        status = 0
        try:
            req = urllib.request.Request(url, data=body, headers=headers, method="POST")
            with urllib.request.urlopen(req, timeout=10) as resp:
                status = resp.status
        except urllib.error.HTTPError as exc:
            status = exc.code
        except OSError:
            status = 0
        row = {
            "id": next(self._ids),
            "guid": guid,
            "delivered_at": _now_iso(),
            "redelivery": redelivery,
            "duration": 0.01,
            "status": "OK"
            if 200 <= status < 300
            else ("failed to connect" if status == 0 else "Invalid HTTP Response"),
            "status_code": status,
            "event": event,
            "action": payload.get("action"),
            "installation_id": (payload.get("installation") or {}).get("id"),
            "repository_id": (payload.get("repository") or {}).get("id"),
            "request": {
                "url": url,
                "event": event,
                "payload": dict(payload),
                "secret": secret,
                "hook_id": hook_id,
            },
        }
        with self.lock:
            self.deliveries.append(row)
            self.counters["deliveries_sent"] += 1
        return {k: v for k, v in row.items() if k != "request"}

    # -- helpers used by the handler -----------------------------------------------------------------
    def repo_json(self, name: str) -> dict[str, Any]:
        repo = self.repos[name]
        owner, short = name.split("/", 1)
        return {
            "id": repo.get("id", abs(hash(name)) % 10**8),
            "name": short,
            "full_name": name,
            "owner": {"login": owner, "id": 1, "type": "Organization"},
            "private": False,
            "default_branch": repo["default_branch"],
            "url": f"{self.base_url}/repos/{name}",
            "html_url": f"https://github.example/{name}",
        }

    def pull_json(self, name: str, n: int) -> dict[str, Any]:
        p = self.repos[name]["pulls"][n]
        base = f"{self.base_url}/repos/{name}"
        return {
            "id": n * 10,
            "number": n,
            "state": p.get("state", "open"),
            "draft": bool(p.get("draft", False)),
            "title": p.get("title", f"PR {n}"),
            "body": p.get("body"),
            "user": {"login": p.get("user", "alice"), "id": 2, "type": "User"},
            "head": {"sha": p["head_sha"], "ref": p.get("head_ref", "feature"), "repo": self.repo_json(name)},
            "base": {"sha": p["base_sha"], "ref": p.get("base_ref", "main"), "repo": self.repo_json(name)},
            "url": f"{base}/pulls/{n}",
            "issue_url": f"{base}/issues/{n}",
            "html_url": f"https://github.example/{name}/pull/{n}",
        }

    def comment_json(self, c: Mapping[str, Any]) -> dict[str, Any]:
        base = f"{self.base_url}/repos/{c['repo']}"
        return {
            "id": c["id"],
            "body": c["body"],
            "user": {"login": c.get("user", "adr-review[bot]"), "id": 3, "type": _user_type(c)},
            "created_at": c["created_at"],
            "updated_at": c["updated_at"],
            "url": f"{base}/issues/comments/{c['id']}",
            "issue_url": f"{base}/issues/{c['issue']}",
            "html_url": f"https://github.example/{c['repo']}/pull/{c['issue']}#issuecomment-{c['id']}",
            "author_association": "NONE",
        }

    def files_at(self, name: str, ref: str) -> dict[str, str]:
        repo = self.repos[name]
        if ref in repo["refs"]:
            return repo["refs"][ref]
        for pull in repo["pulls"].values():  # a branch name of a PR resolves to its head / base
            if ref == pull.get("head_ref"):
                return repo["refs"].get(pull["head_sha"], {})
        raise KeyError(ref)


class _Diff(str):
    """A route's answer sent as the diff media type."""


def _user_type(c: Mapping[str, Any]) -> str:
    return "Bot" if str(c.get("user", "adr-review[bot]")).endswith("[bot]") else "User"


_ROUTES: list[tuple[str, re.Pattern[str], str]] = [
    (m, re.compile("^" + p + "$"), h)
    for m, p, h in [
        ("GET", r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)", "get_repo"),
        ("GET", r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/installation", "get_repo_installation"),
        ("GET", r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/pulls/(?P<n>\d+)", "get_pull"),
        ("GET", r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/pulls/(?P<n>\d+)/files", "get_pull_files"),
        ("GET", r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/contents(?:/(?P<path>.*))?", "get_contents"),
        ("GET", r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/git/trees/(?P<ref>.+)", "get_tree"),
        ("GET", r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/git/blobs/(?P<sha>[0-9a-f]+)", "get_blob"),
        ("GET", r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/commits/(?P<ref>[^/]+)", "get_commit"),
        ("GET", r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/issues/(?P<n>\d+)", "get_issue"),
        ("GET", r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/issues/(?P<n>\d+)/comments", "list_comments"),
        ("POST", r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/issues/(?P<n>\d+)/comments", "create_comment"),
        ("GET", r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/issues/comments/(?P<id>\d+)", "get_comment"),
        ("PATCH", r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/issues/comments/(?P<id>\d+)", "edit_comment"),
        (
            "POST",
            r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/issues/comments/(?P<id>\d+)/reactions",
            "create_reaction",
        ),
        ("GET", r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/collaborators/(?P<u>[^/]+)/permission", "get_permission"),
        ("POST", r"/graphql", "graphql"),
        ("POST", r"/app/installations/(?P<id>\d+)/access_tokens", "create_token"),
        ("GET", r"/app", "get_app"),
        ("GET", r"/app/hook/deliveries", "list_deliveries"),
        ("POST", r"/app/hook/deliveries/(?P<id>\d+)/attempts", "redeliver"),
    ]
]


class _NotFound(Exception):
    pass


def _make_handler(gh: FakeGitHubServer) -> type[BaseHTTPRequestHandler]:
    class Handler(JsonHandler):
        def _send(self, status: int, payload: Any = None, headers: Mapping[str, str] | None = None) -> None:
            if isinstance(payload, _Diff):  # a pull request as a diff: text, not JSON
                data = payload.encode()
                kind = f"{DIFF_MEDIA_TYPE}; charset=utf-8"
            else:
                data = b"" if payload is None else json.dumps(payload).encode()
                kind = "application/json; charset=utf-8"
            base = {"Content-Type": kind, "Content-Length": str(len(data))}
            self.write_response(status, data, base, headers or {})

        def _dispatch(self, method: str) -> None:
            parts = urlsplit(self.path)
            path = unquote(parts.path)
            query = {k: v[0] for k, v in parse_qs(parts.query).items()}
            try:
                body = self.read_json() if method in ("POST", "PATCH", "PUT") else {}
            except ValueError:
                self._send(400, {"message": "Problems parsing JSON"})
                return
            if path.startswith("/_"):
                self._control(method, path, body)
                return
            with gh.lock:
                gh.requests.append((method, path))
                gh.request_log.append(
                    {
                        "method": method,
                        "path": path,
                        "authorization": self.headers.get("Authorization"),
                        "delivery": self.headers.get("X-GitHub-Delivery"),
                    }
                )
                for fail in gh.failures:
                    if fail["times"] > 0 and re.search(fail["route_regex"], f"{method} {path}"):
                        fail["times"] -= 1
                        self._send(
                            int(fail["status"]), {"message": "scripted failure"}, fail.get("headers") or {}
                        )
                        return
                refused = self._refused(path)
            if refused is not None:
                self._send(*refused)
                return
            for m, pattern, name in _ROUTES:
                match = pattern.match(path)
                if m == method and match:
                    try:
                        with gh.lock:
                            status, payload, headers = getattr(self, "h_" + name)(
                                match.groupdict(), query, body
                            )
                    except (_NotFound, KeyError) as exc:
                        self._send(404, {"message": f"Not Found ({exc})"})
                        return
                    self._send(status, payload, headers)
                    return
            self._send(404, {"message": f"Not Found: no fake route {method} {path}"})

        def _refused(self, path: str) -> tuple[int, dict[str, str]] | None:
            """GitHub's answer to a request its credentials do not allow, or None."""
            auth = str(self.headers.get("Authorization") or "")
            if path.startswith("/app"):
                return self._check_jwt(auth)
            minted = gh.tokens.get(auth.removeprefix("token ").strip()) if auth.startswith("token ") else None
            if minted is None:  # a static token (the Action, dev): not checked
                return None
            if minted.get("revoked"):
                return 401, {"message": "Bad credentials"}
            match = re.match(r"^/repos/[^/]+/([^/]+)", path)
            allowed = minted.get("repositories")
            if match and allowed is not None and match[1] not in allowed:
                return 404, {"message": "Not Found"}
            return None

        def _check_jwt(self, auth: str) -> tuple[int, dict[str, str]] | None:
            if not auth.startswith("Bearer "):
                return 401, {"message": "A JSON web token could not be decoded"}
            if gh.app_public_key is None:
                return None
            import jwt

            try:
                claims = jwt.decode(auth.removeprefix("Bearer "), gh.app_public_key, algorithms=["RS256"])
            except jwt.PyJWTError as exc:
                return 401, {"message": f"'Expiration time' claim ('exp') or signature is invalid: {exc}"}
            if str(claims.get("iss")) != str(gh.app_id) or claims["exp"] - claims["iat"] > 600:
                return 401, {"message": "'Issuer' claim ('iss') must be the App's id; at most 10 minutes"}
            return None

        def do_GET(self) -> None:  # noqa: N802
            self._dispatch("GET")

        def do_POST(self) -> None:  # noqa: N802
            self._dispatch("POST")

        def do_PATCH(self) -> None:  # noqa: N802
            self._dispatch("PATCH")

        # -- control ---------------------------------------------------------------------------------
        def _control(self, method: str, path: str, body: Any) -> None:
            if path == "/_state":
                self._send(200, gh.state())
            elif path == "/_seed" and method == "POST":
                gh.seed(body)
                self._send(200, {"ok": True})
            elif path == "/_reset" and method == "POST":
                gh.reset()
                self._send(200, {"ok": True})
            elif path == "/_fail" and method == "POST":
                with gh.lock:
                    gh.failures.append(
                        {
                            "route_regex": body["route_regex"],
                            "status": body.get("status", 500),
                            "times": body.get("times", 1),
                        }
                    )
                self._send(200, {"ok": True})
            elif path == "/_deliver" and method == "POST":
                row = gh.deliver(
                    body["url"], body["event"], body["payload"], body.get("secret"), guid=body.get("guid")
                )
                self._send(200, row)
            else:
                self._send(404, {"message": f"no control route {method} {path}"})

        # -- repos -----------------------------------------------------------------------------------
        def h_get_repo(self, p: dict[str, str], q: dict[str, str], b: Any) -> tuple[int, Any, None]:
            return 200, gh.repo_json(f"{p['o']}/{p['r']}"), None

        def h_get_repo_installation(
            self, p: dict[str, str], q: dict[str, str], b: Any
        ) -> tuple[int, Any, None]:
            name = f"{p['o']}/{p['r']}"
            return 200, {"id": gh.repos[name]["installation_id"], "account": {"login": p["o"]}}, None

        def h_get_pull(self, p: dict[str, str], q: dict[str, str], b: Any) -> tuple[int, Any, None]:
            name, n = f"{p['o']}/{p['r']}", int(p["n"])
            if self.headers.get("Accept") != DIFF_MEDIA_TYPE:
                return 200, gh.pull_json(name, n), None
            pull = gh.repos[name]["pulls"][n]
            if pull.get("diff_refused"):  # GitHub's answer to a diff too large to render
                return (
                    int(pull["diff_refused"]),
                    {"message": "Sorry, the diff exceeded the maximum number of files (300)"},
                    None,
                )
            refs = gh.repos[name]["refs"]
            paths = (f["filename"] for f in pull.get("files", []))
            return (
                200,
                _Diff(pull_diff(paths, refs.get(pull["base_sha"], {}), refs.get(pull["head_sha"], {}))),
                None,
            )

        def h_get_pull_files(self, p: dict[str, str], q: dict[str, str], b: Any) -> tuple[int, Any, None]:
            name = f"{p['o']}/{p['r']}"
            pull = gh.repos[name]["pulls"][int(p["n"])]
            head = gh.repos[name]["refs"].get(pull["head_sha"], {})
            out = []
            for f in pull.get("files", []):
                fn = f["filename"]
                out.append(
                    {
                        "sha": hashlib.sha1(head.get(fn, "").encode()).hexdigest(),
                        "filename": fn,
                        "status": f.get("status", "modified"),
                        "additions": 1,
                        "deletions": 0,
                        "changes": 1,
                        "previous_filename": f.get("previous_filename"),
                    }
                )
            return 200, out, None

        def h_get_contents(self, p: dict[str, str], q: dict[str, str], b: Any) -> tuple[int, Any, None]:
            name = f"{p['o']}/{p['r']}"
            ref = q.get("ref") or gh.repos[name]["default_branch"]
            files = gh.files_at(name, ref)
            path = (p.get("path") or "").strip("/")
            if path in files:
                raw = files[path].encode()
                return 200, self._content_json(name, path, raw, ref), None
            prefix = path + "/" if path else ""
            entries: dict[str, str] = {}
            for fp in files:
                if fp.startswith(prefix):
                    rest = fp[len(prefix) :]
                    entries[rest.split("/", 1)[0]] = "dir" if "/" in rest else "file"
            if not entries:
                raise _NotFound(path)
            listing = []
            for entry, kind in sorted(entries.items()):
                full = prefix + entry
                if kind == "file":
                    item = self._content_json(name, full, files[full].encode(), ref)
                    item.pop("content")
                    item.pop("encoding")
                else:
                    item = {
                        "type": "dir",
                        "name": entry,
                        "path": full,
                        "sha": "0" * 40,
                        "size": 0,
                        "url": f"{gh.base_url}/repos/{name}/contents/{full}?ref={ref}",
                    }
                listing.append(item)
            return 200, listing, None

        def _content_json(self, name: str, path: str, raw: bytes, ref: str) -> dict[str, Any]:
            return {
                "type": "file",
                "encoding": "base64",
                "size": len(raw),
                "name": path.rsplit("/", 1)[-1],
                "path": path,
                "content": base64.b64encode(raw).decode(),
                "sha": hashlib.sha1(raw).hexdigest(),
                "url": f"{gh.base_url}/repos/{name}/contents/{path}?ref={ref}",
                "html_url": f"https://github.example/{name}/blob/{ref}/{path}",
                "download_url": None,
            }

        def h_get_tree(self, p: dict[str, str], q: dict[str, str], b: Any) -> tuple[int, Any, None]:
            name = f"{p['o']}/{p['r']}"
            files = gh.files_at(name, p["ref"])
            tree = [
                {
                    "path": fp,
                    "mode": "100644",
                    "type": "blob",
                    "sha": hashlib.sha1(t.encode()).hexdigest(),
                    "size": len(t.encode()),
                    "url": f"{gh.base_url}/repos/{name}/git/blobs/" + hashlib.sha1(t.encode()).hexdigest(),
                }
                for fp, t in sorted(files.items())
            ]
            return (
                200,
                {
                    "sha": p["ref"],
                    "url": f"{gh.base_url}/repos/{name}/git/trees/{p['ref']}",
                    "tree": tree,
                    "truncated": False,
                },
                None,
            )

        def h_get_blob(self, p: dict[str, str], q: dict[str, str], b: Any) -> tuple[int, Any, None]:
            name = f"{p['o']}/{p['r']}"
            for files in gh.repos[name]["refs"].values():
                for text in files.values():
                    raw = text.encode()
                    if hashlib.sha1(raw).hexdigest() == p["sha"]:
                        return (
                            200,
                            {
                                "sha": p["sha"],
                                "size": len(raw),
                                "encoding": "base64",
                                "content": base64.b64encode(raw).decode(),
                                "url": f"{gh.base_url}/repos/{name}/git/blobs/{p['sha']}",
                            },
                            None,
                        )
            raise _NotFound(p["sha"])

        def h_get_commit(self, p: dict[str, str], q: dict[str, str], b: Any) -> tuple[int, Any, None]:
            name = f"{p['o']}/{p['r']}"
            gh.files_at(name, p["ref"])
            sha = (
                p["ref"]
                if re.fullmatch(r"[0-9a-f]{40}", p["ref"])
                else hashlib.sha1(p["ref"].encode()).hexdigest()
            )
            return (
                200,
                {"sha": sha, "url": f"{gh.base_url}/repos/{name}/commits/{sha}", "commit": {"message": "x"}},
                None,
            )

        # -- issues and comments ---------------------------------------------------------------------
        def h_get_issue(self, p: dict[str, str], q: dict[str, str], b: Any) -> tuple[int, Any, None]:
            name, n = f"{p['o']}/{p['r']}", int(p["n"])
            pr = gh.pull_json(name, n) if n in gh.repos[name]["pulls"] else None
            out = {
                "id": n * 11,
                "number": n,
                "title": f"#{n}",
                "state": "open",
                "url": f"{gh.base_url}/repos/{name}/issues/{n}",
                "html_url": f"https://github.example/{name}/issues/{n}",
                "user": {"login": "alice", "id": 2, "type": "User"},
                "pull_request": {"url": pr["url"]} if pr else None,
            }
            return 200, out, None

        def h_list_comments(self, p: dict[str, str], q: dict[str, str], b: Any) -> tuple[int, Any, None]:
            name, n = f"{p['o']}/{p['r']}", int(p["n"])
            gh.counters["comment_lists"] += 1
            return 200, [gh.comment_json(c) for c in gh.comments_on(name, n)], None

        def h_create_comment(self, p: dict[str, str], q: dict[str, str], b: Any) -> tuple[int, Any, None]:
            name, n = f"{p['o']}/{p['r']}", int(p["n"])
            if name not in gh.repos:
                raise _NotFound(name)
            cid = next(gh._ids)
            now = _now_iso()
            c = {
                "id": cid,
                "repo": name,
                "issue": n,
                "body": str(b.get("body", "")),
                "user": gh.login_of(str(self.headers.get("Authorization") or "")),
                "created_at": now,
                "updated_at": now,
                "edits": 0,
            }
            gh.comments[cid] = c
            gh.counters["comments_created"] += 1
            gh.counters[f"comments_created:{name}#{n}"] += 1
            return 201, gh.comment_json(c), None

        def h_get_comment(self, p: dict[str, str], q: dict[str, str], b: Any) -> tuple[int, Any, None]:
            return 200, gh.comment_json(gh.comments[int(p["id"])]), None

        def h_edit_comment(self, p: dict[str, str], q: dict[str, str], b: Any) -> tuple[int, Any, None]:
            c = gh.comments[int(p["id"])]
            if c.get("user", "adr-review[bot]") != gh.login_of(str(self.headers.get("Authorization") or "")):
                return 403, {"message": "Resource not accessible by integration"}, None
            c["body"] = str(b.get("body", c["body"]))
            c["updated_at"] = _now_iso()
            c["edits"] += 1
            gh.counters["comments_edited"] += 1
            return 200, gh.comment_json(c), None

        def h_create_reaction(self, p: dict[str, str], q: dict[str, str], b: Any) -> tuple[int, Any, None]:
            r = {
                "id": next(gh._ids),
                "comment_id": int(p["id"]),
                "content": b.get("content"),
                "user": {"login": "adr-review[bot]", "id": 3, "type": "Bot"},
            }
            gh.reactions.append(r)
            gh.counters["reactions_created"] += 1
            return 201, r, None

        def h_get_permission(self, p: dict[str, str], q: dict[str, str], b: Any) -> tuple[int, Any, None]:
            name = f"{p['o']}/{p['r']}"
            perm = gh.repos[name]["permissions"].get(p["u"], "none")
            return (
                200,
                {"permission": perm, "role_name": perm, "user": {"login": p["u"], "id": 5, "type": "User"}},
                None,
            )

        # -- the App -------------------------------------------------------------------------------
        def h_create_token(self, p: dict[str, str], q: dict[str, str], b: Any) -> tuple[int, Any, None]:
            gh.token_requests.append(
                {"installation": int(p["id"]), "body": b, "delivery": self.headers.get("X-GitHub-Delivery")}
            )
            gh.counters["tokens_minted"] += 1
            token = f"ghs_fake{next(gh._ids)}"
            permissions = b.get("permissions") or {"metadata": "read", "contents": "read", "issues": "write"}
            gh.tokens[token] = {
                "installation": int(p["id"]),
                "repositories": b.get("repositories"),
                "permissions": permissions,
            }
            answer = {"token": token, "expires_at": _now_iso(gh.token_ttl_s), "permissions": permissions}
            if b.get("repositories") is not None:
                answer["repository_selection"] = "selected"
            return 201, answer, None

        def h_graphql(self, p: dict[str, str], q: dict[str, str], b: Any) -> tuple[int, Any, None]:
            if "viewer" not in str(b.get("query", "")):
                return 200, {"errors": [{"message": "the fake answers `viewer { login }` only"}]}, None
            login = gh.login_of(str(self.headers.get("Authorization") or ""))
            return 200, {"data": {"viewer": {"login": login}}}, None

        def h_get_app(self, p: dict[str, str], q: dict[str, str], b: Any) -> tuple[int, Any, None]:
            return 200, {"id": 1, "slug": "adr-review", "name": "adr-review"}, None

        def h_list_deliveries(
            self, p: dict[str, str], q: dict[str, str], b: Any
        ) -> tuple[int, Any, dict[str, str]]:
            """Newest first, `per_page` rows, the next page behind a `cursor` in the Link header."""
            gh.counters["delivery_lists"] += 1
            rows = [{k: v for k, v in d.items() if k != "request"} for d in reversed(gh.deliveries)]
            size, start = int(q.get("per_page", 30)), int(q.get("cursor", 0))
            headers = {}
            if start + size < len(rows):
                nxt = f"{gh.base_url}/app/hook/deliveries?per_page={size}&cursor={start + size}"
                headers["Link"] = f'<{nxt}>; rel="next"'
            return 200, rows[start : start + size], headers

        def h_redeliver(self, p: dict[str, str], q: dict[str, str], b: Any) -> tuple[int, Any, None]:
            did = int(p["id"])
            orig = next((d for d in gh.deliveries if d["id"] == did), None)
            if orig is None:
                raise _NotFound(f"delivery {did}")
            gh.counters["redeliveries_requested"] += 1
            req = orig.get("request")
            if req:  # send it again, outside the lock, like GitHub's async redelivery
                threading.Thread(
                    target=gh.deliver,
                    args=(req["url"], req["event"], req["payload"], req["secret"]),
                    kwargs={"guid": orig["guid"], "redelivery": True, "hook_id": req.get("hook_id", 1)},
                    daemon=True,
                ).start()
            return 202, {}, None

    return Handler


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--state", type=Path, help="seed document (JSON), see the module doc")
    args = parser.parse_args(argv)
    server = FakeGitHubServer(args.host, args.port)
    if args.state:
        server.seed(json.loads(args.state.read_text(encoding="utf-8")))
    return serve_until_interrupted(server)


if __name__ == "__main__":
    sys.exit(main())
