"""`adr-review action` end to end: recorded event payloads, PyGithub against `responses` (an in-memory
GitHub, tests/fakes/github_api.py), the fake LLM at the port, and the runner's file commands."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import responses

from adr_review.adapters.github import GitHubAdapter
from adr_review.config import RepoConfig
from adr_review.core.marker import parse_marker
from adr_review.core.results import Candidate, RetrievalResult, Usage
from adr_review.core.text import tokenize
from adr_review.entrypoints.action import run_action
from adr_review.entrypoints.action_env import INPUTS, OUTPUTS, input_env_name
from adr_review.entrypoints.workflow_commands import output_block
from adr_review.pipeline.ports import GitHubPort, InfrastructureError, LlmPort, SyncReport
from tests.fakes.blindspot_answers import da_answer, judge_echo_answer, pm_answer
from tests.fakes.github_api import FakeGitHub, Fault
from tests.fakes.llm import FakeLlm
from tests.fakes.messages_server import FakeMessagesServer, Reply

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "github"
EXAMPLES = ROOT / "examples"
REPO = "Codertocat/Hello-World"
HEAD = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"  # the recorded payloads' head and base
BASE = "f95f852bd8fca8fcc58a9a2d6c842781e32a215e"
PROPOSAL = "docs/adr/0008-adopt-kafka-for-order-events.md"
COMMAND_COMMENT_ID = 492700400  # the recorded issue_comment's id


class KeywordIndex:
    """The AdrIndex port by shared tokens: enough for recall to have candidates to cite."""

    def __init__(self, problems: tuple[str, ...] = ()) -> None:
        self.adrs: dict[str, Any] = {}
        self.syncs = 0
        self.problems = problems  # what a real sync reports and goes on without

    def sync(self, adrs: Any) -> SyncReport:
        self.syncs += 1
        new = {a.path: a for a in adrs}
        added = len(new.keys() - self.adrs.keys())
        self.adrs = new
        return SyncReport(added, 0, 0, len(new) - added, self.problems, 0.0, "keyword-fake")

    def search(
        self, query: str, *, top_n: int = 20, exclude_paths: Any = frozenset(), pool: Any = None
    ) -> Any:
        q = set(tokenize(query))
        scored = sorted(
            ((len(q & set(tokenize(a.text))), a) for p, a in self.adrs.items() if p not in exclude_paths),
            key=lambda s: (-s[0], s[1].path),
        )[:top_n]
        best = max((s for s, _ in scored), default=0) or 1
        candidates = tuple(
            Candidate(a, None, float(s), s / best, s / best, s > 0, "shared tokens")
            for s, a in scored
            if s > 0
        )
        return RetrievalResult(
            candidates, None if candidates else "no_candidates", {"embedding": "keyword-fake"}
        )


def scripted_llm() -> FakeLlm:
    llm = FakeLlm()
    llm.on(
        "recall-pre-gate",
        {
            "citations": [
                {
                    "adr_id": "ADR-0005",
                    "relevance": "high",
                    "relevance_reason": "Keeping two event buses was rejected in ADR-0005",
                }
            ]
        },
    )
    llm.on("blindspot-devils-advocate", da_answer(quote="Order volume has tripled"))
    llm.on("blindspot-premortem", pm_answer())
    llm.on("blindspot-judge", lambda req: judge_echo_answer(req.user))
    return llm


@dataclass
class Result:
    code: int
    stdout: str
    summary: str
    outputs: dict[str, str]


@dataclass
class Harness:
    tmp: Path
    gh: FakeGitHub
    llm: FakeLlm = field(default_factory=scripted_llm)
    sleeps: list[float] = field(default_factory=list)
    index_opens: list[Path] = field(default_factory=list)
    llm_keys: list[str | None] = field(default_factory=list)
    indexes: dict[Path, KeywordIndex] = field(default_factory=dict)
    index_error: Exception | None = None
    index_problems: tuple[str, ...] = ()
    real_index: bool = False  # the production index (the guard reads its background statistics)

    def run(
        self,
        event: str,
        fixture: str,
        *,
        edits: dict[str, Any] | None = None,
        inputs: dict[str, str] | None = None,
        dry_run: bool = False,
        fresh_runner: bool = False,
    ) -> Result:
        """One job. fresh_runner: a new machine without the restored cache folder."""
        payload = json.loads((FIXTURES / fixture).read_text())
        for dotted, value in (edits or {}).items():
            *parents, last = dotted.split(".")
            node = payload
            for key in parents:
                node = node[key]
            node[last] = value
        run_dir = self.tmp / f"run{len(list(self.tmp.glob('run*')))}"
        run_dir.mkdir()
        (run_dir / "event.json").write_text(json.dumps(payload))
        workspace = self.tmp / "workspace"
        if fresh_runner:
            shutil.rmtree(workspace, ignore_errors=True)
            self.indexes.clear()
        workspace.mkdir(exist_ok=True)
        env = {
            "GITHUB_EVENT_NAME": event,
            "GITHUB_EVENT_PATH": str(run_dir / "event.json"),
            "GITHUB_REPOSITORY": REPO,
            "GITHUB_API_URL": "https://api.github.com",
            "GITHUB_SERVER_URL": "https://github.com",
            "GITHUB_WORKSPACE": str(workspace),
            "GITHUB_STEP_SUMMARY": str(run_dir / "summary.md"),
            "GITHUB_OUTPUT": str(run_dir / "output.txt"),
            input_env_name("github-token"): "ghs_test",
            input_env_name("anthropic-api-key"): "sk-test",
        }
        env.update({input_env_name(k): v for k, v in (inputs or {}).items()})
        out = io.StringIO()
        code = run_action(
            env,
            dry_run=dry_run,
            github_factory=self._github,
            llm_factory=self._llm,
            index_factory=self._index,
            stdout=out,
        )
        summary = (run_dir / "summary.md").read_text() if (run_dir / "summary.md").exists() else ""
        outputs = (
            parse_outputs((run_dir / "output.txt").read_text()) if (run_dir / "output.txt").exists() else {}
        )
        return Result(code, out.getvalue(), summary, outputs)

    def _github(self, token: str | None, api_url: str) -> GitHubPort:
        assert token == "ghs_test" and api_url == "https://api.github.com"
        return GitHubAdapter(
            token,
            base_url=api_url,
            sleep=self.sleeps.append,
            clock=lambda: self.gh.now,
            seconds_between_writes=None,
        )

    def _llm(self, key: str | None, config: RepoConfig) -> LlmPort | None:
        self.llm_keys.append(key)
        return self.llm if key else None

    def _index(self, path: Path, config: RepoConfig) -> KeywordIndex:
        self.index_opens.append(path)
        if self.index_error is not None:
            raise self.index_error
        if self.real_index:
            from adr_review.entrypoints.action_env import default_index_factory

            return default_index_factory(path, config)  # type: ignore[return-value]
        return self.indexes.setdefault(path, KeywordIndex(self.index_problems))

    # -- what GitHub holds

    def adr_comments(self) -> list[dict[str, Any]]:
        return [c for c in self.gh.comments_on(2) if parse_marker(c["body"])]


def parse_outputs(text: str) -> dict[str, str]:
    outputs: dict[str, str] = {}
    lines = iter(text.split("\n"))
    for line in lines:
        m = re.fullmatch(r"([\w-]+)<<(\S+)", line)
        if m:
            value = []
            for inner in lines:
                if inner == m[2]:
                    break
                value.append(inner)
            outputs[m[1]] = "\n".join(value)
    return outputs


@pytest.fixture
def h(tmp_path: Path) -> Iterator[Harness]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        gh = FakeGitHub(REPO, "master").install(rsps)
        for path in sorted((EXAMPLES / "adr").glob("*.md")):
            gh.put_file("master", f"docs/adr/{path.name}", path.read_bytes())
        gh.trees[BASE] = dict(gh.trees["master"])
        gh.known_comment_ids.add(COMMAND_COMMENT_ID)
        yield Harness(tmp_path, gh)


def proposal_bytes() -> bytes:
    return (EXAMPLES / "proposals" / "0008-adopt-kafka-for-order-events.md").read_bytes()


def open_pr(h: Harness, changes: dict[str, bytes | None] | None = None, head: str = HEAD) -> None:
    h.gh.add_pull(2, head=head, base=BASE, changes=changes or {PROPOSAL: proposal_bytes()})


# ------------------------------------------------------------------------------------------------


def test_a_pr_adding_one_adr_gets_exactly_one_comment(h: Harness) -> None:
    open_pr(h)
    r = h.run("pull_request", "pull_request__opened.payload.json")
    assert r.code == 0, r.stdout
    comments = h.adr_comments()
    assert len(comments) == 1
    body = comments[0]["body"]
    path, key = parse_marker(body) or ("", "")
    assert path == PROPOSAL and key.startswith("rk")
    assert "ADR-0005" in body  # the verified citation
    assert "No cost ceiling" in body  # a critic finding, through the judge
    assert h.llm.count("recall-pre-gate") == 1 and h.llm.count("blindspot-judge") == 1
    assert r.outputs["comment-urls"] == comments[0]["html_url"]
    cited = json.loads(r.outputs["citations-json"])
    assert [c["adr_id"] for c in cited[0]["citations"]] == ["ADR-0005"]
    assert cited[0]["citations"][0]["path"] == "docs/adr/0005-nats-jetstream-event-bus.md"  # repo-relative
    assert int(r.outputs["findings-count"]) >= 3
    assert "ADR-0008" in r.summary and "created" in r.summary
    assert h.index_opens and h.indexes[h.index_opens[0]].adrs  # the base folder was indexed
    assert "0008-adopt-kafka-for-order-events.md" not in {
        Path(p).name for p in h.indexes[h.index_opens[0]].adrs
    }


def test_synchronize_with_a_changed_adr_edits_the_same_comment(h: Harness) -> None:
    open_pr(h)
    assert h.run("pull_request", "pull_request__opened.payload.json").code == 0
    first = dict(h.adr_comments()[0])
    first_key = parse_marker(first["body"])
    new_head = "1" * 40
    open_pr(h, {PROPOSAL: proposal_bytes().replace(b"tripled", b"quadrupled")}, head=new_head)
    r = h.run(
        "pull_request", "pull_request__synchronize.payload.json", edits={"pull_request.head.sha": new_head}
    )
    assert r.code == 0, r.stdout
    (second,) = h.adr_comments()
    assert second["id"] == first["id"]
    assert parse_marker(second["body"]) != first_key
    assert h.gh.count("POST", r"/issues/2/comments$") == 1
    assert h.gh.count("PATCH", r"/issues/comments/\d+$") == 1
    assert "edited" in r.summary


def test_an_identical_rerun_calls_no_llm_and_posts_nothing(h: Harness) -> None:
    open_pr(h)
    first = h.run("pull_request", "pull_request__opened.payload.json")
    calls = h.llm.count()
    assert calls > 0
    # A re-run on a fresh runner (no restored cache): the key in the comment's marker is enough.
    again = h.run("pull_request", "pull_request__opened.payload.json", fresh_runner=True)
    assert again.code == 0
    assert h.llm.count() == calls
    assert h.gh.count("POST", r"/comments$") == 1 and h.gh.count("PATCH", r".") == 0
    assert len(h.adr_comments()) == 1
    assert "up to date" in again.stdout
    assert again.outputs["comment-urls"] == first.outputs["comment-urls"]


def test_a_collaborator_command_reruns_and_gets_eyes(h: Harness) -> None:
    open_pr(h)
    h.run("pull_request", "pull_request__opened.payload.json")
    before = dict(h.adr_comments()[0])  # a copy: the fake edits in place
    calls = h.llm.count()
    r = h.run("issue_comment", "issue_comment__created.pr-command.json")
    assert r.code == 0, r.stdout
    assert h.gh.reactions == [(COMMAND_COMMENT_ID, "eyes")]
    assert h.llm.count() > calls  # forced: the LLM runs again
    (after,) = h.adr_comments()
    assert after["id"] == before["id"] and parse_marker(after["body"]) != parse_marker(before["body"])
    # Re-running the same command's workflow does not pay twice.
    calls = h.llm.count()
    h.run("issue_comment", "issue_comment__created.pr-command.json")
    assert h.llm.count() == calls


@pytest.mark.parametrize(("body", "prompts_run"), [("/adr-review recall", {"recall-pre-gate"})])
def test_a_partial_command_runs_only_its_stage(h: Harness, body: str, prompts_run: set[str]) -> None:
    open_pr(h)
    r = h.run("issue_comment", "issue_comment__created.pr-command.json", edits={"comment.body": body})
    assert r.code == 0, r.stdout
    assert set(h.llm.counts()) == prompts_run
    assert len(h.adr_comments()) == 1


def test_a_command_by_a_stranger_runs_nothing_and_gets_one_reply(h: Harness) -> None:
    open_pr(h)
    r = h.run("issue_comment", "issue_comment__created.pr-command.none.json")
    assert r.code == 0, r.stdout
    assert h.llm.count() == 0
    assert h.gh.reactions == [(492700400, "confused")]  # denied: 😕, and the one explanation below
    assert h.gh.count("GET", r"/pulls/2") == 0  # nothing was even looked at
    replies = h.gh.comments_on(2)
    assert len(replies) == 1 and "nothing was run" in replies[0]["body"]
    assert h.gh.count("GET", r"/collaborators/Codertocat/permission$") == 1


def test_help_replies_with_the_commands(h: Harness) -> None:
    open_pr(h)
    r = h.run(
        "issue_comment", "issue_comment__created.pr-command.json", edits={"comment.body": "/adr-review help"}
    )
    assert r.code == 0
    (reply,) = h.gh.comments_on(2)
    assert "/adr-review blind-spots" in reply["body"] and h.llm.count() == 0


def test_a_pr_touching_no_adr_does_nothing(h: Harness) -> None:
    open_pr(h, {"src/app.py": b"print('hi')\n", "docs/adr/README.md": b"# index\n"})
    r = h.run("pull_request", "pull_request__opened.payload.json")
    assert r.code == 0
    assert h.gh.comments == [] and h.llm.count() == 0 and h.index_opens == []
    lines = [line for line in r.stdout.splitlines() if line.strip()]
    assert len(lines) == 1 and "none of them an ADR" in lines[0]
    assert "none of them an ADR" in r.summary
    assert r.outputs == {"comment-urls": "", "citations-json": "[]", "findings-count": "0"}


def test_two_adrs_one_unparsable_get_one_good_and_one_error_comment(h: Harness) -> None:
    broken = "docs/adr/0010-broken.md"
    open_pr(h, {PROPOSAL: proposal_bytes(), broken: b"\x00\x01\x02 binary \xff\xfe"})
    r = h.run("pull_request", "pull_request__opened.payload.json")
    assert r.code == 0, r.stdout
    by_path = {(parse_marker(c["body"]) or ("", ""))[0]: c["body"] for c in h.adr_comments()}
    assert set(by_path) == {PROPOSAL, broken}
    assert "ADR-0005" in by_path[PROPOSAL]
    assert "ADR-0005" not in by_path[broken]
    assert f"::error file={broken}" in r.stdout
    assert h.llm.count("recall-pre-gate") == 1  # the broken one cost nothing


def test_an_index_that_cannot_be_opened_degrades_the_review_not_the_run(h: Harness) -> None:
    h.index_error = OSError("disk full")
    open_pr(h)
    r = h.run("pull_request", "pull_request__opened.payload.json")
    assert r.code == 0, r.stdout
    assert "::warning::docs/adr: the ADR index could not be built (OSError: disk full)" in r.stdout
    (comment,) = h.adr_comments()
    # the comment says what degraded; why is in the job's log (the warning above), not in public
    assert "the search of past ADRs failed" in comment["body"] and "disk full" not in comment["body"]
    assert h.llm.count("recall-pre-gate") == 0 and h.llm.count("blindspot-judge") == 1


def test_an_unavailable_store_or_index_fails_the_step_and_posts_no_comment(h: Harness) -> None:
    """An outage (InfrastructureError, e.g. the state store's lock timeout) is not a degraded review:
    the step fails with a clear message, and no comment is written from the incomplete run."""
    h.index_error = InfrastructureError("state store /cache/state.sqlite3: OperationalError: locked")
    open_pr(h)
    r = h.run("pull_request", "pull_request__opened.payload.json")
    assert r.code == 1, r.stdout
    [error] = [line for line in r.stdout.splitlines() if line.startswith("::error")]
    assert "state store or index unavailable" in error and "OperationalError: locked" in error
    assert "no comment was written" in error and "re-run the job" in error
    assert h.adr_comments() == []


def test_what_the_index_sync_went_on_without_is_a_warning_on_the_run(h: Harness) -> None:
    missing = (
        "this folder mixes en and ja ADRs: cross-language recall (dictionary) needs its extra "
        "(pip install 'adr-review[multilingual]'); continuing without it (offline-hash, BM25, titles)"
    )
    h.index_problems = (missing,)
    open_pr(h)
    r = h.run("pull_request", "pull_request__opened.payload.json")
    assert r.code == 0, r.stdout
    assert "::warning title=adr-review index docs/adr::this folder mixes en and ja ADRs" in r.stdout
    assert len(h.adr_comments()) == 1  # the review itself went on


def test_rate_limited_then_ok_is_retried(h: Harness) -> None:
    open_pr(h)
    h.gh.fail("GET", r"/pulls/2/files$", Fault(403, rate_limited=True, reset_in=20))
    r = h.run("pull_request", "pull_request__opened.payload.json")
    assert r.code == 0, r.stdout
    assert h.sleeps == [21.0]
    assert len(h.adr_comments()) == 1


def test_server_errors_forever_are_a_reported_failure(h: Harness) -> None:
    open_pr(h)
    h.gh.fail("GET", r"/pulls/2/files$", Fault(500), times=50)
    r = h.run("pull_request", "pull_request__opened.payload.json")
    assert r.code == 1
    assert "::error title=adr-review%3A GitHub API::GitHub list files of #2 failed (HTTP 500)" in r.stdout
    assert "adr-review failed" in r.summary
    assert h.gh.comments == [] and h.llm.count() == 0
    assert len(h.sleeps) == 4


def test_posting_fails_for_one_adr_the_other_is_still_posted(h: Harness) -> None:
    other = "docs/adr/0009-session-store-redis.md"
    open_pr(
        h,
        {
            PROPOSAL: proposal_bytes(),
            other: (EXAMPLES / "proposals" / "0009-session-store-redis.md").read_bytes(),
        },
    )
    h.gh.fail("POST", r"/issues/2/comments$", Fault(422, body={"message": "Validation Failed"}))
    r = h.run("pull_request", "pull_request__opened.payload.json")
    assert r.code == 1  # reported, not swallowed
    assert len(h.adr_comments()) == 1
    assert "failed" in r.summary and "created" in r.summary


def test_a_fork_pr_reports_to_the_job_summary_only(h: Harness) -> None:
    open_pr(h)
    r = h.run("pull_request", "pull_request__opened.fork.json")
    assert r.code == 0, r.stdout
    assert h.gh.comments == [] and h.llm.count() == 0
    assert h.llm_keys == []  # no model is even built: fork runs get no secrets
    assert "from a fork" in r.summary and "ADR-0008" in r.summary
    assert not [m for m, _ in h.gh.requests if m != "GET"]


def test_pull_request_target_on_a_fork_may_comment(h: Harness) -> None:
    open_pr(h)
    r = h.run("pull_request_target", "pull_request__opened.fork.json")
    assert r.code == 0 and len(h.adr_comments()) == 1


def test_dry_run_writes_nothing_to_github(h: Harness) -> None:
    open_pr(h)
    r = h.run("pull_request", "pull_request__opened.payload.json", inputs={"dry-run": "true"})
    assert r.code == 0
    assert [m for m, _ in h.gh.requests if m != "GET"] == []
    assert "<!-- adr-review:v1 path=docs/adr/0008" in r.stdout and "not-posted" in r.summary


def test_drafts_and_bots_are_skipped_without_api_calls(h: Harness) -> None:
    open_pr(h)
    bot = h.run("pull_request", "pull_request__opened.by-bot.json")
    assert bot.code == 0 and "bot" in bot.stdout and h.gh.requests == []
    draft = h.run("pull_request", "pull_request__opened.draft.json")
    assert draft.code == 0 and "draft" in draft.stdout and h.gh.comments == []


def test_drafts_are_reviewed_when_the_repo_config_says_so(h: Harness) -> None:
    h.gh.put_file("master", ".github/adr-review.yml", b"review_drafts: true\n")
    open_pr(h)
    assert h.run("pull_request", "pull_request__opened.draft.json").code == 0
    assert len(h.adr_comments()) == 1


def test_repo_config_comes_from_the_default_branch_and_inputs_override_it(h: Harness) -> None:
    h.gh.put_file("master", ".github/adr-review.yml", b"adr_paths: ['decisions/**']\n")
    open_pr(h)
    r = h.run("pull_request", "pull_request__opened.payload.json")
    assert "none of them an ADR" in r.stdout  # docs/adr is not an ADR folder for this repo
    h.gh.trees[HEAD][".github/adr-review.yml"] = b"adr_paths: ['docs/**']\n"  # the PR's copy is ignored
    assert "none of them an ADR" in h.run("pull_request", "pull_request__opened.payload.json").stdout
    r = h.run(
        "pull_request", "pull_request__opened.payload.json", inputs={"adr-paths": "docs/adr/**, adr/**"}
    )
    assert r.code == 0 and len(h.adr_comments()) == 1


def test_a_bad_repo_config_is_a_clear_error(h: Harness) -> None:
    h.gh.put_file("master", ".github/adr-review.yml", b"adr_path: ['docs/adr/**']\n")
    open_pr(h)
    r = h.run("pull_request", "pull_request__opened.payload.json")
    assert r.code == 1
    assert "::error file=.github/adr-review.yml,title=adr-review::" in r.stdout
    assert "adr_path: Extra inputs are not permitted" in r.stdout
    assert "not a valid adr-review config" in r.summary  # where the user looks: the job summary too
    # ... and on the PR, as the App says it (one plan executor): one comment, edited in place
    (notice,) = h.adr_comments()
    assert "path=.github/adr-review.yml" in notice["body"].splitlines()[0]
    assert "adr_path" in notice["body"] and "could not read its configuration" in notice["body"]
    assert h.llm.count() == 0  # never reviewed with the defaults instead
    assert h.run("pull_request", "pull_request__opened.payload.json").code == 1
    assert [c["id"] for c in h.adr_comments()] == [notice["id"]]


def test_model_inputs_reach_the_llm_requests(h: Harness) -> None:
    open_pr(h)
    h.run(
        "pull_request",
        "pull_request__opened.payload.json",
        inputs={"model": "m-all", "judge-model": "m-judge"},
    )
    assert {r.model for r in h.llm.requests("recall-pre-gate")} == {"m-all"}
    assert {r.model for r in h.llm.requests("blindspot-judge")} == {"m-judge"}


def test_without_an_api_key_recall_is_extractive(h: Harness) -> None:
    open_pr(h)
    r = h.run("pull_request", "pull_request__opened.payload.json", inputs={"anthropic-api-key": ""})
    assert r.code == 0 and h.llm.count() == 0
    (comment,) = h.adr_comments()
    assert "extractive" in comment["body"].lower()


def test_a_refused_api_key_fails_the_step_naming_the_input_and_the_comment_still_says_it(
    h: Harness, fake_anthropic: FakeMessagesServer
) -> None:
    """The real adapter against the fake Messages API answering 401 to every call."""
    from adr_review.adapters.llm import make_llm
    from adr_review.config import Settings

    for prompt in ("recall-pre-gate", "blindspot-devils-advocate", "blindspot-premortem", "blindspot-judge"):
        fake_anthropic.set_default(prompt, Reply(status=401))
    wrong = Settings(ANTHROPIC_API_KEY="sk-wrong", ANTHROPIC_BASE_URL=fake_anthropic.base_url)
    h.llm = make_llm(wrong, RepoConfig())  # type: ignore[assignment]
    open_pr(h)
    r = h.run("pull_request", "pull_request__opened.payload.json")
    assert r.code == 1 and fake_anthropic.count() >= 1
    errors = [line for line in r.stdout.splitlines() if line.startswith("::error")]
    assert len(errors) == 1, r.stdout
    assert "refused the credentials" in errors[0] and "HTTP 401" in errors[0]
    assert "`anthropic-api-key` input" in errors[0]
    (comment,) = h.adr_comments()  # the review is still published, and says why the model did not run
    assert "authentication_error" in comment["body"]
    assert "refused the credentials" in r.summary


def test_schedule_reindexes_the_default_branch_incrementally(h: Harness) -> None:
    r = h.run("schedule", "schedule.json")
    assert r.code == 0, r.stdout
    assert "indexed 7 ADR(s)" in r.stdout and "7 ADR(s) downloaded" in r.stdout
    assert h.gh.count("GET", r"/git/blobs/") == 7
    again = h.run("workflow_dispatch", "workflow_dispatch.json")
    assert "0 ADR(s) downloaded" in again.stdout  # blobs come from the cache folder
    assert h.gh.count("GET", r"/git/blobs/") == 7
    assert h.gh.comments == [] and h.llm.count() == 0


def test_not_in_actions_is_a_clear_error() -> None:
    out = io.StringIO()
    assert run_action({}, stdout=out) == 1
    assert out.getvalue().startswith("::error title=adr-review::not running in GitHub Actions")


# ------------------------------------------------------------------------------------------------
# The runner's file commands


def test_the_model_cache_goes_into_the_cached_folder() -> None:
    from adr_review.entrypoints.action_env import export_model_cache

    env: dict[str, str] = {}
    export_model_cache(env, Path("/ws/.adr-review"))
    assert env == {
        "ADR_REVIEW_MODEL_CACHE": "/ws/.adr-review/models",
        "HF_HOME": "/ws/.adr-review/models/hf_home",
        "SENTENCE_TRANSFORMERS_HOME": "/ws/.adr-review/models/sentence_transformers_home",
    }
    env = {"ADR_REVIEW_MODEL_CACHE": "/models", "HF_HOME": "/mine"}
    export_model_cache(env, Path("/ws/.adr-review"))
    assert (
        env["HF_HOME"] == "/mine"
        and env["SENTENCE_TRANSFORMERS_HOME"] == "/models/sentence_transformers_home"
    )


def test_output_block_delimiter_never_occurs_in_the_value() -> None:
    block = output_block("citations-json", "line 1\nghadelimiter_x\nline 3")
    name, delim = block.split("\n", 1)[0].split("<<")
    assert name == "citations-json"
    assert block.endswith(f"\n{delim}\n") and block.count(delim) == 2
    assert parse_outputs(block) == {"citations-json": "line 1\nghadelimiter_x\nline 3"}


# ------------------------------------------------------------------------------------------------
# action.yml, Dockerfile and the workflows agree with the code


def load_yaml(path: Path) -> Any:
    import yaml

    return yaml.safe_load(path.read_text())


def test_action_yml_inputs_and_outputs_match_the_entrypoint() -> None:
    action = load_yaml(ROOT / "action.yml")
    assert set(action["inputs"]) == set(INPUTS)
    assert set(action["outputs"]) == set(OUTPUTS)
    for name in action["inputs"]:
        assert re.fullmatch(r"[a-z]+(-[a-z]+)*", name), f"{name} is not kebab-case"
        assert input_env_name(name) == "INPUT_" + name.upper()
    assert action["runs"]["using"] == "docker" and action["runs"]["image"].startswith("docker://ghcr.io/")
    assert action["runs"]["args"][0] == "action"
    assert action["inputs"]["github-token"]["default"] == "${{ github.token }}"


SAMPLE_INPUTS = {
    "github-token": "ghs_x",
    "anthropic-api-key": "sk-x",
    "adr-paths": "decisions/**",
    "language": "ja",
    "config-path": "cfg/adr.yml",
    "dry-run": "true",
    "cache-dir": "/tmp/elsewhere",
    "model": "m-all",
    "recall-model": "m-recall",
    "critic-model": "m-critic",
    "judge-model": "m-judge",
    "max-adrs": "3",
    "spend-per-run-usd": "0.5",
    "spend-per-month-usd": "20",
    "llm-provider": "bedrock",
    "llm-region": "eu-west-1",
    "vertex-project-id": "proj-x",
    "guard": "true",
}


def test_every_action_yml_input_is_read_by_the_entrypoint() -> None:
    """Each declared input, passed the runner's way (INPUT_<NAME>), changes what the entrypoint reads,
    and the entrypoint reads no input that action.yml does not declare."""
    import inspect

    from adr_review.entrypoints.action_env import LIMIT_INPUTS, MODEL_INPUTS, ActionInputs

    declared = set(load_yaml(ROOT / "action.yml")["inputs"])
    assert set(SAMPLE_INPUTS) == declared
    baseline = ActionInputs.from_env({})
    for name, value in SAMPLE_INPUTS.items():
        read = ActionInputs.from_env({input_env_name(name): value})
        assert read != baseline, f"input {name} has no effect"
        if "-" in name:  # the runner keeps hyphens: INPUT_GITHUB-TOKEN, never INPUT_GITHUB_TOKEN
            assert ActionInputs.from_env({f"INPUT_{name.replace('-', '_').upper()}": value}) == baseline
    source = inspect.getsource(ActionInputs.from_env)
    read_by_name = set(re.findall(r'get\("([a-z-]+)"\)', source))
    # the per-step model inputs and the caps are read in loops
    assert read_by_name | set(MODEL_INPUTS) | set(LIMIT_INPUTS) == declared


# The Dockerfile and the lock it installs from: tests/test_packaging.py; the workflows' pins, the
# review job's gate and the release: tests/test_workflows.py.


WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


@pytest.mark.parametrize("path", WORKFLOWS, ids=[p.name for p in WORKFLOWS])
def test_workflows_are_valid(path: Path) -> None:
    wf = load_yaml(path)
    on = wf.get("on", wf.get(True))  # YAML 1.1 reads a bare `on:` as True
    assert on, f"{path.name}: no triggers"
    assert wf["jobs"], f"{path.name}: no jobs"
    assert "permissions" in wf, f"{path.name}: set least-privilege permissions explicitly"
    for job in wf["jobs"].values():
        assert job.get("runs-on") and job.get("steps")
        for step in job["steps"]:
            assert ("uses" in step) != ("run" in step), step


def test_the_example_workflows_are_the_documented_ones() -> None:
    names = {p.name for p in WORKFLOWS}
    assert {"adr-review.yml", "adr-reindex.yml", "ci.yml"} <= names
    review = load_yaml(ROOT / ".github" / "workflows" / "adr-review.yml")
    on = review.get("on", review.get(True))
    assert set(on) == {"pull_request", "issue_comment"}
    assert set(on["pull_request"]["types"]) == {"opened", "synchronize", "reopened", "ready_for_review"}
    assert review["permissions"] == {"contents": "read", "pull-requests": "write", "issues": "write"}
    concurrency = review["jobs"]["review"]["concurrency"]  # on the gated job (tests/test_workflows.py)
    assert concurrency["cancel-in-progress"] is True
    assert "github.event.pull_request.number" in concurrency["group"]
    assert "github.event.issue.number" in concurrency["group"]
    reindex = load_yaml(ROOT / ".github" / "workflows" / "adr-reindex.yml")
    on = reindex.get("on", reindex.get(True))
    assert set(on) == {"schedule", "workflow_dispatch"}
    assert reindex["permissions"] == {"contents": "read", "pull-requests": "read", "issues": "read"}
    steps = [s.get("uses", "") for s in next(iter(reindex["jobs"].values()))["steps"]]
    assert any(s.startswith("actions/cache@") for s in steps)
    docs = (ROOT / "docs" / "action.md").read_text()
    for wf_path in (".github/workflows/adr-review.yml", ".github/workflows/adr-reindex.yml"):
        assert wf_path in docs


def test_the_cli_command_runs_the_action_with_the_production_factories(
    h: Harness, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`adr-review action --dry-run` as the container runs it: real PyGithub, no API key (extractive),
    the production index (or, where it cannot be opened, a degraded recall that says so)."""
    from adr_review.cli import main

    open_pr(h)
    event = h.tmp / "event.json"
    shutil.copy(FIXTURES / "pull_request__opened.payload.json", event)
    for key in [k for k in os.environ if k.startswith(("GITHUB_", "INPUT_", "ANTHROPIC_"))]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("GITHUB_EVENT_NAME", "pull_request")
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(event))
    monkeypatch.setenv("GITHUB_REPOSITORY", REPO)
    monkeypatch.setenv("GITHUB_WORKSPACE", str(h.tmp))
    monkeypatch.setenv("INPUT_GITHUB-TOKEN", "ghs_cli")
    for var in ("HF_HOME", "SENTENCE_TRANSFORMERS_HOME", "ADR_REVIEW_MODEL_CACHE"):
        monkeypatch.setenv(var, str(h.tmp / var))  # restored afterwards; a real run sets them itself
    assert main(["action", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "dry run" in out and f"<!-- adr-review:v1 path={PROPOSAL}" in out
    assert "+7 ~0 -0 =0 (offline-hash" in out  # the Chroma index, persisted in the workspace cache folder
    assert "ADR-0005" in out  # extractive recall found the event-bus decision
    assert [m for m, _ in h.gh.requests if m != "GET"] == []
    # The next job restores the folder (here: it is still there): incremental, nothing downloaded.
    assert main(["action", "--dry-run"]) == 0
    again = capsys.readouterr().out
    assert "+0 ~0 -0 =7 (offline-hash" in again and "0 ADR(s) downloaded" in again
    assert (h.tmp / ".adr-review" / "index").is_dir() and (h.tmp / ".adr-review" / "blobs").is_dir()


def test_the_action_runs_the_shared_pr_use_case(h: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Action and the App run one flow: adr_review.pipeline.plans.pr.plan, then run_target per target (the App's
    side of this is tests/server/test_app_runs.py::test_the_app_runs_the_shared_pr_use_case)."""
    from tests.fakes.spies import record_pr_calls

    seen = record_pr_calls(monkeypatch)
    open_pr(h)
    assert h.run("pull_request", "pull_request__opened.payload.json").code == 0
    assert seen == ["plan", "run_target"] and len(h.adr_comments()) == 1


# --- pay once: content-addressed keys and stages (issue: re-runs on unchanged inputs cost nothing) -------

THREE = {
    PROPOSAL: proposal_bytes(),
    "docs/adr/0009-session-store-redis.md": (
        EXAMPLES / "proposals" / "0009-session-store-redis.md"
    ).read_bytes(),
    "docs/adr/0010-order-event-retention.md": proposal_bytes().replace(
        b"Adopt Kafka for order events", b"Keep order events for 30 days"
    ),
}


def push(h: Harness, head: str, changes: dict[str, bytes | None]) -> Result:
    open_pr(h, changes, head=head)
    return h.run(
        "pull_request", "pull_request__synchronize.payload.json", edits={"pull_request.head.sha": head}
    )


def test_a_push_that_changes_no_adr_pays_nothing_and_leaves_the_comments_alone(h: Harness) -> None:
    open_pr(h, dict(THREE))
    first = h.run("pull_request", "pull_request__opened.payload.json")
    assert first.code == 0, first.stdout
    paid = h.llm.count()
    assert paid == 3 * 4 and len(h.adr_comments()) == 3
    bodies = [c["body"] for c in h.adr_comments()]
    again = push(h, "2" * 40, dict(THREE))  # a new head: code changed, no ADR did
    assert again.code == 0, again.stdout
    assert h.llm.count() == paid  # 0 model calls
    assert h.gh.count("PATCH", r"/issues/comments/\d+$") == 0  # no edit noise
    assert [c["body"] for c in h.adr_comments()] == bodies
    assert again.stdout.count("up to date") == 3


def test_a_push_that_edits_one_of_three_adrs_pays_for_that_one(h: Harness) -> None:
    open_pr(h, dict(THREE))
    h.run("pull_request", "pull_request__opened.payload.json")
    before = h.llm.counts()
    edited = dict(THREE)
    edited["docs/adr/0009-session-store-redis.md"] = edited["docs/adr/0009-session-store-redis.md"].replace(
        "## 決定\n".encode(), "## 決定\n\nセッションの保持期間は 30 日とする。\n".encode()
    )  # in the decision, which recall reads as well as the critics
    r = push(h, "3" * 40, edited)
    assert r.code == 0, r.stdout
    after = h.llm.counts()
    assert {p: after[p] - before.get(p, 0) for p in after} == {
        "recall-pre-gate": 1,
        "blindspot-devils-advocate": 1,
        "blindspot-premortem": 1,
        "blindspot-judge": 1,
    }
    assert h.gh.count("PATCH", r"/issues/comments/\d+$") == 1 and len(h.adr_comments()) == 3


def test_a_changed_past_adr_reruns_only_the_stages_that_read_it(h: Harness) -> None:
    open_pr(h)
    h.run("pull_request", "pull_request__opened.payload.json")
    before = h.llm.counts()
    # ADR-0005 (a candidate the recall prompt showed) changes on the base branch; the proposal does not.
    new_base = "4" * 40
    h.gh.trees[new_base] = dict(h.gh.trees[BASE])
    path = "docs/adr/0005-nats-jetstream-event-bus.md"
    h.gh.trees[new_base][path] = h.gh.trees[BASE][path].replace(
        b"We will run NATS JetStream (three-node cluster", b"We will run NATS JetStream (five-node cluster"
    )  # its decision: the summary recall's prompt shows
    h.gh.add_pull(2, head="5" * 40, base=new_base, changes={PROPOSAL: proposal_bytes()})
    r = h.run(
        "pull_request",
        "pull_request__synchronize.payload.json",
        edits={"pull_request.head.sha": "5" * 40, "pull_request.base.sha": new_base},
    )
    assert r.code == 0, r.stdout
    after = h.llm.counts()
    delta = {p: after[p] - before.get(p, 0) for p in after}
    assert delta["recall-pre-gate"] == 1  # its prompt showed the changed ADR
    # The critics read the proposal and the citations: unchanged citations, no new critic call.
    assert delta["blindspot-devils-advocate"] == 0 and delta["blindspot-premortem"] == 0


def test_a_command_still_forces_fresh_answers(h: Harness) -> None:
    open_pr(h)
    h.run("pull_request", "pull_request__opened.payload.json")
    calls = h.llm.count()
    r = h.run("issue_comment", "issue_comment__created.pr-command.json")
    assert r.code == 0, r.stdout
    assert h.llm.count() == 2 * calls


def test_the_monthly_spend_cap_stops_model_calls_and_the_comment_says_so(h: Harness) -> None:
    open_pr(h)
    h.llm.on("recall-pre-gate", {"citations": []}, usage=Usage(calls=1, cost_usd=0.6))
    first = h.run("pull_request", "pull_request__opened.payload.json", inputs={"spend-per-month-usd": "0.5"})
    assert first.code == 0, first.stdout
    paid = h.llm.count()
    assert paid >= 1  # the first call is allowed; it spends the month past its cap
    open_pr(h, {PROPOSAL: proposal_bytes().replace(b"tripled", b"doubled")}, head="6" * 40)
    again = h.run(
        "pull_request",
        "pull_request__synchronize.payload.json",
        edits={"pull_request.head.sha": "6" * 40},
        inputs={"spend-per-month-usd": "0.5"},
    )
    assert again.code == 0, again.stdout
    assert h.llm.count() == paid  # no model call at all
    assert "monthly spend cap reached" in again.stdout
    (comment,) = h.adr_comments()
    assert "spend cap" in comment["body"]


def test_the_monthly_cap_sees_what_another_prs_job_spent_whose_cache_was_never_saved(h: Harness) -> None:
    """PR jobs restore the cache but never save it: the month's spend is read from the ledgers of the
    repository's own review comments, so a second PR on a fresh runner is stopped all the same."""
    open_pr(h)
    h.llm.on("recall-pre-gate", {"citations": []}, usage=Usage(calls=1, cost_usd=0.6))
    first = h.run("pull_request", "pull_request__opened.payload.json", inputs={"spend-per-month-usd": "0.5"})
    assert first.code == 0, first.stdout
    paid = h.llm.count()
    assert paid >= 1
    h.gh.add_pull(
        3, head="7" * 40, base=BASE, changes={PROPOSAL: proposal_bytes().replace(b"tripled", b"x4")}
    )
    second = h.run(
        "pull_request",
        "pull_request__opened.payload.json",
        edits={"number": 3, "pull_request.number": 3, "pull_request.head.sha": "7" * 40},
        inputs={"spend-per-month-usd": "0.5"},
        fresh_runner=True,  # nothing of the first job's cache
    )
    assert second.code == 0, second.stdout
    assert h.llm.count() == paid  # not one model call
    assert "monthly spend cap reached" in second.stdout
    (comment,) = [c for c in h.gh.comments_on(3) if "path=docs/adr/" in c["body"].splitlines()[0]]
    assert "spend cap" in comment["body"]
    # and without the cap the same fresh runner reviews it with the model
    third = h.run(
        "pull_request",
        "pull_request__opened.payload.json",
        edits={"number": 3, "pull_request.number": 3, "pull_request.head.sha": "7" * 40},
        inputs={"spend-per-month-usd": "5"},
        fresh_runner=True,
    )
    assert third.code == 0 and h.llm.count() > paid


def test_too_many_adrs_are_listed_with_the_command_that_reviews_them(h: Harness) -> None:
    open_pr(h, dict(THREE))
    r = h.run("pull_request", "pull_request__opened.payload.json", inputs={"max-adrs": "2"})
    assert r.code == 0, r.stdout
    bodies = [c["body"] for c in h.gh.comments_on(2)]
    notice = [b for b in bodies if ".adr-review/not-reviewed" in b.splitlines()[0]]
    assert len(notice) == 1 and "/adr-review docs/adr/0010-order-event-retention.md" in notice[0]
    assert len([b for b in bodies if "path=docs/adr/" in b.splitlines()[0]]) == 2


def test_an_invalid_cap_input_is_a_clear_error(h: Harness) -> None:
    open_pr(h)
    r = h.run("pull_request", "pull_request__opened.payload.json", inputs={"max-adrs": "many"})
    assert r.code == 1 and "max_adrs_per_run" in r.stdout and h.llm.count() == 0


# ------------------------------------------------------------------------------------------------
# Reviewers' answers (issue 17): ticks read on the next run and by the scheduled run, dismiss commands


def test_a_dismiss_command_is_acknowledged_and_the_scheduled_run_reads_the_answers(h: Harness) -> None:
    from adr_review.adapters.state_sqlite import SqliteStateStore
    from adr_review.core.feedback_boxes import read_ticks
    from tests.fakes.boxes import click_box

    open_pr(h)
    h.run("pull_request", "pull_request__opened.payload.json")
    (comment,) = h.adr_comments()
    ids = list(read_ticks(comment["body"]))
    assert len(ids) >= 2
    comment["body"] = click_box(comment["body"], ids[0])
    body = f"/adr-review dismiss {ids[1]} we accept this risk"
    r = h.run("issue_comment", "issue_comment__created.pr-command.json", edits={"comment.body": body})
    assert r.code == 0, r.stdout
    assert f"dismissed finding {ids[1]}" in r.stdout
    assert h.gh.reactions == [(COMMAND_COMMENT_ID, "+1")] and h.llm.count("blindspot-judge") == 1
    # The command comment stays on the PR: the scheduled run reads it (and the tick) into its store.
    h.gh._new_comment(2, body, login="Codertocat", user_type="User", association="OWNER")
    r = h.run("schedule", "schedule.json")
    assert r.code == 0, r.stdout
    assert "1 review comment(s), 1 dismissal(s)" in r.stdout
    assert "## 📊 adr-review feedback report" in r.summary and "(1 of " in r.summary  # the job summary
    with SqliteStateStore(h.tmp / "workspace" / ".adr-review" / "checkpoints.sqlite3") as store:
        _, findings = store.outcomes(None, 0, 2e9)
    assert [f.finding_id for f in findings if f.adopted] == ids[:1]
    assert [(f.finding_id, f.dismissed_by) for f in findings if f.dismissed] == [(ids[1], "Codertocat")]


def test_a_scheduled_run_without_pull_request_access_still_reindexes_and_says_why(h: Harness) -> None:
    h.gh.fail("GET", r"/pulls$", Fault(403), times=10)
    r = h.run("schedule", "schedule.json")
    assert r.code == 0, r.stdout
    assert "indexed 7 ADR(s)" in r.stdout and "pull-requests: read" in r.stdout


def test_done_when_the_scheduled_jobs_summary_reports_the_answers_it_just_read(h: Harness) -> None:
    """The scheduled run's cache is the default branch's, which holds none of the PR jobs' records: its
    report is made of what it has just read from the comments, so the window ends after the reading."""
    from adr_review.core.feedback_boxes import read_ticks
    from tests.fakes.boxes import click_box

    open_pr(h)
    h.run("pull_request", "pull_request__opened.payload.json")
    (comment,) = h.adr_comments()
    ids = list(read_ticks(comment["body"]))
    comment["body"] = click_box(click_box(comment["body"], ids[0]), ids[1])
    r = h.run("schedule", "schedule.json", fresh_runner=True)
    assert r.code == 0, r.stdout
    assert "1 review comment(s)" in r.stdout
    assert f"(2 of {len(ids)})" in r.summary, r.summary


def test_a_revision_that_rewords_a_finding_keeps_its_id_in_the_comment_and_the_job_summary(
    h: Harness,
) -> None:
    """The job summary shows the findings under the ids their comment shows (what `dismiss` takes)."""
    from adr_review.core.feedback_boxes import read_ticks

    open_pr(h)
    h.run("pull_request", "pull_request__opened.payload.json")
    first = list(read_ticks(h.adr_comments()[0]["body"]))
    h.llm.on(  # the same three findings in other words, under other topic keys
        "blindspot-devils-advocate",
        {
            **da_answer(quote="Order volume has quadrupled"),
            "counter_arguments": [
                dict(c, title=f"{c['title']} at all", dedupe_group=f"other-{i}")
                for i, c in enumerate(da_answer(quote="Order volume has quadrupled")["counter_arguments"])
            ],
        },
    )
    new_head = "1" * 40
    open_pr(h, {PROPOSAL: proposal_bytes().replace(b"tripled", b"quadrupled")}, head=new_head)
    r = h.run(
        "pull_request", "pull_request__synchronize.payload.json", edits={"pull_request.head.sha": new_head}
    )
    assert r.code == 0, r.stdout
    second = list(read_ticks(h.adr_comments()[0]["body"]))
    assert sorted(second) == sorted(first)
    assert sorted(read_ticks(r.summary)) == sorted(first)
