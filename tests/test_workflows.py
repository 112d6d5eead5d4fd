"""The workflows and the action metadata, parsed: third-party actions pinned by commit SHA, the review
job's gate decided before its concurrency group (evaluated on sample events with a small evaluator
of GitHub's expression syntax), the release workflow's order of checks, and the version in step
across pyproject.toml, action.yml and the build-from-source copy. None of it runs on GitHub here:
these are the checks that can be made without it."""

from __future__ import annotations

import importlib.util
import re
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

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


REVIEW = load(ROOT / ".github" / "workflows" / "adr-review.yml")
JOB = REVIEW["jobs"]["review"]


def event(name: str, **payload: Any) -> dict[str, Any]:
    return {"github": {"event_name": name, "event": payload}}


def comment(body: str, association: str, sender: str = "User", on_pr: bool = True) -> dict[str, Any]:
    issue: dict[str, Any] = {"number": 7, **({"pull_request": {"url": "u"}} if on_pr else {})}
    return event(
        "issue_comment",
        issue=issue,
        comment={"body": body, "author_association": association},
        sender={"type": sender},
    )


@pytest.mark.parametrize(
    ("ctx", "runs"),
    [
        (event("pull_request", pull_request={"number": 7}, sender={"type": "User"}), True),
        (event("pull_request", pull_request={"number": 7}, sender={"type": "Bot"}), False),
        (comment("/adr-review", "OWNER"), True),
        (comment("/adr-review recall", "MEMBER"), True),
        (comment("/adr-review", "COLLABORATOR"), True),
        (comment("/adr-review", "NONE"), False),  # a stranger
        (comment("/adr-review", "CONTRIBUTOR"), False),
        (comment("/adr-review", "FIRST_TIME_CONTRIBUTOR"), False),
        (comment("looks good /adr-review", "OWNER"), False),  # not a command
        (comment("/adr-review", "OWNER", sender="Bot"), False),
        (comment("/adr-review", "OWNER", on_pr=False), False),  # a plain issue
    ],
    ids=lambda v: v if isinstance(v, bool) else "",
)
def test_the_review_job_runs_only_for_accepted_events(ctx: dict[str, Any], runs: bool) -> None:
    assert bool(evaluate(JOB["if"], ctx)) is runs


def test_the_concurrency_group_applies_only_after_the_gate() -> None:
    """A workflow-level group is claimed before any job's `if:`; a job-level one after it. So the
    group lives on the gated job, and nothing else in the workflow can cancel a review."""
    assert "concurrency" not in REVIEW
    assert set(REVIEW["jobs"]) == {"review"}
    group = JOB["concurrency"]
    assert group["cancel-in-progress"] is True
    assert "github.event.pull_request.number || github.event.issue.number" in group["group"]
    assert list(JOB).index("if") < list(JOB).index("concurrency")  # read in that order, too


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
