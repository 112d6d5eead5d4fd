"""The workflows and the action metadata, parsed: third-party actions pinned by commit SHA, the review
job's gate decided before its concurrency group (evaluated on sample events with a small evaluator
of GitHub's expression syntax; the `authorize` job's shell step run with bash and curl against the fake
GitHub server's permission API), the release workflow's order of checks, and the version in step
across pyproject.toml, action.yml and the build-from-source copy. None of it runs on GitHub here:
these are the checks that can be made without it."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import textwrap
import tomllib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from tests.fakes.github_server import FakeGitHubServer

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
ACTIONS = [ROOT / "action.yml", *sorted((ROOT / ".github" / "actions").glob("*/action.yml"))]
PINNED = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+(/[A-Za-z0-9_./-]+)?@[0-9a-f]{40}$")


def load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def uses_lines(path: Path) -> list[tuple[str, str]]:
    """(value, comment) of every `uses:` in a file, read from the text to see the comments."""
    found = []
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^\s*(?:-\s+)?uses:\s*(\S+)\s*(?:#\s*(.*))?$", line)
        if m:
            found.append((m.group(1), m.group(2) or ""))
    return found


@pytest.mark.parametrize("path", WORKFLOWS + ACTIONS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_third_party_action_is_pinned_by_sha_with_its_version(path: Path) -> None:
    for value, comment in uses_lines(path):
        if value.startswith("./") or value.startswith("docker://"):
            continue  # this repository's own action; an image
        assert PINNED.match(value), f"{path.name}: {value} is not pinned to a commit SHA"
        assert re.fullmatch(r"v\d+(\.\d+){0,2}", comment), f"{path.name}: {value} needs '# vX.Y.Z'"


def test_the_uses_parser_sees_every_step() -> None:
    """The pin check reads text; it must find as many `uses:` as the YAML has (not vacuous)."""
    for path in WORKFLOWS:
        steps = [s for job in load(path)["jobs"].values() for s in job["steps"] if "uses" in s]
        assert [v for v, _ in uses_lines(path)] == [s["uses"] for s in steps], path.name


def test_one_sha_per_action_across_the_workflows() -> None:
    seen: dict[str, set[str]] = {}
    for path in WORKFLOWS:
        for value, comment in uses_lines(path):
            if "@" in value and not value.startswith("./"):
                name, sha = value.split("@")
                seen.setdefault(name.split("/")[0] + "/" + name.split("/")[1], set()).add(f"{sha} {comment}")
    assert all(len(v) == 1 for v in seen.values()), seen


# --- the review workflow's gate ---------------------------------------------------------------------

_TOKEN = re.compile(
    r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<op>==|!=|&&|\|\||!|\(|\)|,)|(?P<num>\d+)|(?P<name>[A-Za-z_][\w.-]*))"
)


def evaluate(expression: str, context: dict[str, Any]) -> Any:
    """GitHub's expression syntax, the part the workflows use: property paths (missing -> null),
    'strings', ==, !=, !, &&, || (value-returning, like GitHub's), parentheses, startsWith, contains
    and fromJSON. Comparisons of strings ignore case, as GitHub's do."""
    import json

    tokens: list[tuple[str, str]] = []
    pos = 0
    text = expression.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ValueError(f"cannot read {text[pos:]!r}")
        pos = m.end()
        kind = m.lastgroup or ""
        tokens.append((kind, m.group(kind)))
    at = 0

    def peek() -> str | None:
        return tokens[at][1] if at < len(tokens) else None

    def take() -> tuple[str, str]:
        nonlocal at
        at += 1
        return tokens[at - 1]

    def lookup(path: str) -> Any:
        value: Any = context
        for part in path.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        return value

    def eq(a: Any, b: Any) -> bool:
        if isinstance(a, str) and isinstance(b, str):
            return a.lower() == b.lower()
        return bool(a == b)

    functions: dict[str, Any] = {
        "startsWith": lambda s, p: isinstance(s, str) and s.lower().startswith(str(p).lower()),
        "contains": lambda hay, x: (
            any(eq(i, x) for i in hay) if isinstance(hay, list) else str(x).lower() in str(hay).lower()
        ),
        "fromJSON": lambda s: json.loads(s),
        # The job-status functions, for a run nobody cancelled and whose needed jobs did not fail.
        "cancelled": lambda: False,
        "always": lambda: True,
        "success": lambda: True,
    }

    def primary() -> Any:
        kind, value = take()
        if value == "(":
            result = disjunction()
            assert take()[1] == ")"
            return result
        if value == "!":
            return not primary()
        if kind == "str":
            return value[1:-1].replace("''", "'")
        if kind == "num":
            return int(value)
        if peek() == "(":
            take()
            args = []
            while peek() != ")":
                args.append(disjunction())
                if peek() == ",":
                    take()
            take()
            return functions[value](*args)
        return (
            {"true": True, "false": False, "null": None}.get(value, lookup(value))
            if "." not in value
            else lookup(value)
        )

    def comparison() -> Any:
        left = primary()
        while peek() in ("==", "!="):
            op = take()[1]
            right = primary()
            left = eq(left, right) if op == "==" else not eq(left, right)
        return left

    def conjunction() -> Any:
        left = comparison()
        while peek() == "&&":
            take()
            right = comparison()
            left = right if left else left
        return left

    def disjunction() -> Any:
        left = conjunction()
        while peek() == "||":
            take()
            right = conjunction()
            left = left if left else right
        return left

    result = disjunction()
    assert at == len(tokens), f"unread: {tokens[at:]}"
    return result


def test_the_evaluator_reads_expressions_like_github() -> None:
    ctx = {"a": {"b": "Hello"}, "n": None}
    assert evaluate("a.b == 'hello'", ctx) is True
    assert evaluate("startsWith(a.b, 'he') && !n", ctx) is True
    assert evaluate("contains(fromJSON('[\"X\", \"Y\"]'), 'y')", ctx) is True
    assert evaluate("n.missing || 'fallback'", ctx) == "fallback"
    assert evaluate("(a.b != 'Hello') || (1 == 2)", ctx) is False
    assert evaluate("a.b && !cancelled()", ctx) is True


REVIEW = load(ROOT / ".github" / "workflows" / "adr-review.yml")
JOB = REVIEW["jobs"]["review"]
AUTHORIZE = REVIEW["jobs"]["authorize"]
_EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def event(name: str, **payload: Any) -> dict[str, Any]:
    return {"github": {"event_name": name, "event": payload}}


def comment(
    body: str, association: str, sender: str = "User", on_pr: bool = True, login: str = "someone"
) -> dict[str, Any]:
    issue: dict[str, Any] = {"number": 7, **({"pull_request": {"url": "u"}} if on_pr else {})}
    return event(
        "issue_comment",
        issue=issue,
        comment={"body": body, "author_association": association, "user": {"login": login}},
        sender={"type": sender, "login": login},
    )


def render(value: str, ctx: dict[str, Any]) -> str:
    """A `${{ ... }}` template as the runner fills it in (null -> empty)."""
    return _EXPRESSION.sub(lambda m: str(evaluate(m.group(1), ctx) or ""), value)


def run_job(job: dict[str, Any], ctx: dict[str, Any], tmp: Path) -> dict[str, str]:
    """Run a job of `run:` steps as a Linux runner does (`bash -e`, each step's env rendered from the
    context, GITHUB_OUTPUT read back) and return the job's outputs."""
    steps: dict[str, Any] = {}
    for i, step in enumerate(job["steps"]):
        assert set(step) <= {"name", "id", "env", "run"}, "a container-free job: shell steps only"
        output = tmp / f"output-{i}"
        output.write_text("")
        env = {k: render(str(v), ctx) for k, v in (step.get("env") or {}).items()}
        env.update(PATH=os.environ["PATH"], HOME=str(tmp), GITHUB_OUTPUT=str(output))
        script = tmp / f"step-{i}.sh"
        script.write_text(step["run"])
        done = subprocess.run(
            ["bash", "-e", str(script)], env=env, capture_output=True, text=True, timeout=60, check=True
        )
        lines = output.read_text().splitlines()
        outputs = dict(line.split("=", 1) for line in lines if "=" in line)
        steps[step.get("id", f"step{i}")] = {"outputs": outputs, "log": done.stdout}
    return {k: render(str(v), {**ctx, "steps": steps}) for k, v in (job.get("outputs") or {}).items()}


def jobs_run(ctx: dict[str, Any], gh: FakeGitHubServer, tmp: Path) -> list[str]:
    """The review workflow on one event: the jobs that start, in order, with `authorize` run for real
    against the fake permission API when its `if:` passes (its outputs feed the review job's `if:`)."""
    ctx = {**ctx, "github": {**ctx["github"], "repository": "o/r", "api_url": gh.base_url, "token": "ghs_x"}}
    started = []
    needs: dict[str, Any] = {"authorize": {"outputs": {}, "result": "skipped"}}
    if evaluate(AUTHORIZE["if"], ctx):
        started.append("authorize")
        needs["authorize"] = {"outputs": run_job(AUTHORIZE, ctx, tmp), "result": "success"}
    if evaluate(JOB["if"], {**ctx, "needs": needs}):
        started.append("review")
    return started


@pytest.fixture
def gh() -> Iterator[FakeGitHubServer]:
    with FakeGitHubServer() as fake:
        fake.seed(
            {"repos": {"o/r": {"permissions": {"writer": "write", "admin": "admin", "reader": "read"}}}}
        )
        yield fake


def _permission_asked(gh: FakeGitHubServer) -> list[str]:
    return [p for _, p in gh.requests if p.endswith("/permission")]


@pytest.mark.parametrize(
    ("ctx", "runs"),
    [
        (event("pull_request", pull_request={"number": 7}, sender={"type": "User"}), ["review"]),
        (event("pull_request", pull_request={"number": 7}, sender={"type": "Bot"}), []),
        (comment("/adr-review", "OWNER"), ["review"]),
        (comment("/adr-review recall", "MEMBER"), ["review"]),
        (comment("/adr-review", "COLLABORATOR"), ["review"]),
        # GitHub shows a private org member as CONTRIBUTOR or NONE: the permission API decides.
        (comment("/adr-review", "CONTRIBUTOR", login="writer"), ["authorize", "review"]),
        (comment("/adr-review", "NONE", login="admin"), ["authorize", "review"]),
        (comment("/adr-review", "FIRST_TIME_CONTRIBUTOR", login="writer"), ["authorize", "review"]),
        (comment("/adr-review", "CONTRIBUTOR", login="reader"), ["authorize"]),  # read access only
        (comment("/adr-review", "CONTRIBUTOR", login="stranger"), ["authorize"]),
        (comment("/adr-review", "NONE", login="stranger"), ["authorize"]),
        (comment("looks good /adr-review", "OWNER"), []),  # not a command
        (comment("looks good /adr-review", "CONTRIBUTOR", login="writer"), []),
        (comment("/adr-review", "OWNER", sender="Bot"), []),
        (comment("/adr-review", "CONTRIBUTOR", sender="Bot", login="writer"), []),
        (comment("/adr-review", "OWNER", on_pr=False), []),  # a plain issue
        (comment("/adr-review", "CONTRIBUTOR", on_pr=False, login="writer"), []),
    ],
    ids=lambda v: "+".join(v) if isinstance(v, list) else "",
)
def test_the_jobs_that_start_for_each_event(
    ctx: dict[str, Any], runs: list[str], gh: FakeGitHubServer, tmp_path: Path
) -> None:
    assert jobs_run(ctx, gh, tmp_path) == runs
    # The permission API is asked exactly when the association does not already say enough.
    assert len(_permission_asked(gh)) == ("authorize" in runs)


@pytest.mark.parametrize("permission", ["admin", "maintain", "write", "triage", "read", "none"])
def test_the_authorize_job_admits_what_the_entrypoint_admits(
    permission: str, gh: FakeGitHubServer, tmp_path: Path
) -> None:
    """The workflow's shell check and the entrypoint's rule (app/adr_review/core/commands.py) agree on every
    permission the API can report, so no command passes one and is refused by the other."""
    from adr_review.core.commands import is_authorized

    gh.seed({"repos": {"o/r": {"permissions": {"pat": permission}}}})
    started = jobs_run(comment("/adr-review", "CONTRIBUTOR", login="pat"), gh, tmp_path)
    assert ("review" in started) is is_authorized("CONTRIBUTOR", permission)
    assert _permission_asked(gh) == ["/repos/o/r/collaborators/pat/permission"]


@pytest.mark.parametrize("status", [403, 404, 500])
def test_a_permission_api_failure_runs_nothing_and_says_so(
    status: int, gh: FakeGitHubServer, tmp_path: Path
) -> None:
    gh.failures.append({"route_regex": "/permission$", "status": status, "times": 1})
    ctx = comment("/adr-review", "CONTRIBUTOR", login="writer")
    assert jobs_run(ctx, gh, tmp_path) == ["authorize"]
    assert "allowed=false" in (tmp_path / "output-0").read_text()


def test_the_authorize_job_is_container_free_and_outside_the_concurrency_group() -> None:
    """A stranger's command reaches only `authorize`: no image, no service container, no action (only
    shell steps), no concurrency group. The review job needs it and holds the group."""
    assert not {"container", "services", "concurrency"} & set(AUTHORIZE)
    assert all("uses" not in step for step in AUTHORIZE["steps"])
    assert AUTHORIZE["permissions"] == {"contents": "read"}
    assert JOB["needs"] == "authorize"
    step = AUTHORIZE["steps"][0]
    assert "${{" not in step["run"]  # event data reaches the shell through env only
    assert step["env"]["LOGIN"] == "${{ github.event.comment.user.login }}"


def test_the_documented_workflow_gates_commands_as_this_one_does() -> None:
    """docs/action.md's copy of the workflow has the same authorize job and the same review gate."""
    docs = (ROOT / "docs" / "action.md").read_text(encoding="utf-8")
    block = re.search(r"```yaml\n(\s*name: adr-review\n.*?)```", docs, re.DOTALL)
    assert block
    documented = yaml.safe_load(textwrap.dedent(block.group(1)))["jobs"]
    assert documented["authorize"] == AUTHORIZE
    assert documented["review"]["if"] == JOB["if"]
    assert documented["review"]["needs"] == JOB["needs"]
    assert documented["review"]["concurrency"] == JOB["concurrency"]


def test_the_concurrency_group_applies_only_after_the_gate() -> None:
    """A workflow-level group is claimed before any job's `if:`; a job-level one after it. So the
    group lives on the gated review job, and nothing else in the workflow can cancel a review."""
    assert "concurrency" not in REVIEW
    assert set(REVIEW["jobs"]) == {"authorize", "review"}
    group = JOB["concurrency"]
    assert group["cancel-in-progress"] is True
    assert "github.event.pull_request.number || github.event.issue.number" in group["group"]
    assert list(JOB).index("if") < list(JOB).index("concurrency")  # read in that order, too


def _cache_steps() -> tuple[dict[str, Any], dict[str, Any]]:
    (restore,) = [s for s in JOB["steps"] if s.get("uses", "").startswith("actions/cache/restore@")]
    (save,) = [s for s in JOB["steps"] if s.get("uses", "").startswith("actions/cache/save@")]
    return restore, save


def _pr(head_repo: str) -> dict[str, Any]:
    ctx = event("pull_request", pull_request={"number": 7, "head": {"repo": {"full_name": head_repo}}})
    ctx["github"].update(repository="acme/shop", run_id="99")
    return ctx


@pytest.mark.parametrize(
    ("ctx", "saved"),
    [
        (_pr("acme/shop"), True),  # a same-repository PR keeps what it paid for
        (_pr("fork/shop"), False),  # a fork's run saves nothing
        (
            {
                "github": {
                    **comment("/adr-review", "OWNER")["github"],
                    "repository": "acme/shop",
                    "run_id": "99",
                }
            },
            True,
        ),
    ],
)
def test_a_prs_stage_results_are_saved_for_its_next_run_and_restored_first(
    ctx: dict[str, Any], saved: bool
) -> None:
    """PR jobs used to restore only: the stage results (and the spend) a run paid for were lost at its
    end unless the scheduled job happened to save a cache. The save writes what the restore asks for
    first, under the PR's own key; the index from the scheduled job is the fallback."""
    restore, save = _cache_steps()
    assert bool(evaluate(save["if"], ctx)) is saved
    key = render(save["with"]["key"], ctx)
    assert key == render(restore["with"]["key"], ctx) == "adr-review-pr-7-99"
    prefixes = [render(line.strip(), ctx) for line in restore["with"]["restore-keys"].splitlines()]
    assert prefixes == ["adr-review-pr-7-", "adr-review-index-"] and key.startswith(prefixes[0])
    assert save["with"]["path"] == restore["with"]["path"] == ".adr-review"
    steps = [s.get("id") or s.get("name") for s in JOB["steps"]]
    assert steps.index(restore["name"]) < steps.index("review") < steps.index(save["name"])


def test_the_review_workflow_stays_safe_for_forks() -> None:
    """`pull_request` (a fork gets a read-only token and no secrets), never pull_request_target here;
    the checkout keeps no credentials; least-privilege permissions."""
    on = REVIEW.get("on", REVIEW.get(True))
    assert set(on) == {"pull_request", "issue_comment"}
    assert REVIEW["permissions"] == {"contents": "read", "pull-requests": "write", "issues": "write"}
    for path in WORKFLOWS:
        text = path.read_text(encoding="utf-8")
        assert "pull_request_target" not in load(path).get("on", load(path).get(True)), path.name
        for job in load(path)["jobs"].values():
            for step in job["steps"]:
                if step.get("uses", "").startswith("actions/checkout@"):
                    assert step.get("with", {}).get("persist-credentials") is False, path.name
        assert "${{ github.event.comment.body" not in text.split("if:")[0]  # no body in a shell line


# --- the release --------------------------------------------------------------------------------------

RELEASE = load(ROOT / ".github" / "workflows" / "release.yml")


def test_the_release_runs_on_version_tags_and_checks_before_it_publishes() -> None:
    on = RELEASE.get("on", RELEASE.get(True))
    assert on == {"push": {"tags": ["v[0-9]+.[0-9]+.[0-9]+"]}}
    assert RELEASE["permissions"] == {"contents": "read"}
    (job,) = RELEASE["jobs"].values()
    assert job["permissions"] == {"contents": "write", "packages": "write"}
    runs = [s.get("run", "") for s in job["steps"]]
    order = [
        next(i for i, r in enumerate(runs) if needle in r)
        for needle in (
            "scripts/release_notes.py",
            "python -m build",
            "--version",
            "docker build --target test",
            'docker push "$IMAGE:$TAG"',
            'docker push "$IMAGE:$MAJOR"',
            "refs/tags/$MAJOR",
            "gh release create",
        )
    ]
    assert order == sorted(order)
    assert "ghcr.io/$OWNER_LC/adr-review" in runs[order[0]]


def test_release_notes_come_from_the_changelog_section() -> None:
    notes = _script("release_notes")
    text = "# Changelog\n\n## [Unreleased]\n\n## [1.2.0] - 2026-01-02\n### Added\n- x\n\n## [1.1.0] - 2025-12-01\n- y\n\n[1.2.0]: https://e\n"
    assert notes.section(text, "1.2.0") == ("2026-01-02", "### Added\n- x")
    assert notes.section(text, "1.1.0") == ("2025-12-01", "- y")
    assert notes.section(text, "9.9.9") == (None, "")
    found, _ = notes.problems("v9.9.9", "Someone")
    assert any("pyproject.toml says" in p for p in found) and any("no `## [9.9.9]" in p for p in found)
    assert notes.problems("1.0", None)[0] == ["tag '1.0' is not vX.Y.Z"]


def test_dependabot_watches_pip_docker_and_actions() -> None:
    config = load(ROOT / ".github" / "dependabot.yml")
    assert config["version"] == 2
    assert {u["package-ecosystem"] for u in config["updates"]} == {"pip", "docker", "github-actions"}


# --- action.yml ---------------------------------------------------------------------------------------


def test_action_yml_is_marketplace_ready_and_runs_the_released_image() -> None:
    action = load(ROOT / "action.yml")
    assert action["name"] and action["description"] and action["author"]
    assert set(action["branding"]) == {"icon", "color"}
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert re.fullmatch(
        r"docker://ghcr\.io/[a-z0-9-]+/adr-review:v" + re.escape(version), action["runs"]["image"]
    )


def test_the_build_from_source_action_is_action_yml_with_the_dockerfile() -> None:
    sync = _script("sync_action")
    action_text = (ROOT / "action.yml").read_text(encoding="utf-8")
    source_path = ROOT / ".github" / "actions" / "source" / "action.yml"
    assert source_path.read_text(encoding="utf-8") == sync.source_action(action_text), (
        "run python scripts/sync_action.py"
    )
    source, action = load(source_path), load(ROOT / "action.yml")
    assert (source_path.parent / source["runs"]["image"]).resolve() == ROOT / "Dockerfile"
    assert {k: v for k, v in source.items() if k not in ("name", "runs")} == {
        k: v for k, v in action.items() if k not in ("name", "runs")
    }
    assert source["runs"]["args"] == action["runs"]["args"]
    for path in (".github/workflows/adr-review.yml", ".github/workflows/adr-reindex.yml"):
        assert "./.github/actions/source" in [v for v, _ in uses_lines(ROOT / path)]
