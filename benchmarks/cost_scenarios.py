"""Model calls and cost per GitHub event, measured end to end: `adr-review action` in this process with the
real PyGithub client against the fake GitHub server and the real anthropic client against the fake
Messages server (both on 127.0.0.1; token counts are the fake's synthetic ones, ~4 characters a token).

    .venv/bin/python benchmarks/cost_scenarios.py

Scenarios (one runner cache folder throughout, as actions/cache keeps it):
  1 PR opened with 3 ADRs   2 the same event again   3 a push that changes no ADR
  4 a push that edits 1 of the 3   5 `/adr-review` (forced)   6 a past ADR changes on the base
Bars (issue 13): 0 calls for 3; calls for 1 ADR only in 4. Prints PASS/FAIL per bar.
"""

from __future__ import annotations

import io
import json
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from adr_review.entrypoints.action import run_action  # noqa: E402
from tests.fakes.blindspot_answers import da_answer, judge_echo_answer, pm_answer  # noqa: E402
from tests.fakes.github_server import FakeGitHubServer  # noqa: E402
from tests.fakes.messages_server import FakeMessagesServer, Reply, request_text  # noqa: E402

REPO, PR, BASE = "acme/shop", 7, "b" * 40
EXAMPLES = ROOT / "examples"
ADRS = {f"docs/adr/{p.name}": p.read_text(encoding="utf-8") for p in sorted((EXAMPLES / "adr").glob("*.md"))}
KAFKA = (EXAMPLES / "proposals" / "0008-adopt-kafka-for-order-events.md").read_text(encoding="utf-8")
REDIS = (EXAMPLES / "proposals" / "0009-session-store-redis.md").read_text(encoding="utf-8")
THREE = {
    "docs/adr/0008-adopt-kafka-for-order-events.md": KAFKA,
    "docs/adr/0009-session-store-redis.md": REDIS,
    "docs/adr/0010-order-event-retention.md": KAFKA.replace(
        "Adopt Kafka for order events", "Keep order events 30 days"
    ),
}
FIXTURES = ROOT / "tests" / "fixtures" / "github"


def event_file(tmp: Path, name: str, head: str, base: str = BASE, comment: int = 0) -> Path:
    if name == "pull_request":
        data: dict[str, Any] = json.loads((FIXTURES / "pull_request__synchronize.payload.json").read_text())
        data["number"] = PR
        data["pull_request"].update(number=PR, draft=False)
        data["pull_request"]["head"]["sha"] = head
        data["pull_request"]["base"].update(sha=base, ref="main")
        data["pull_request"]["head"]["repo"]["full_name"] = REPO
    else:
        data = json.loads((FIXTURES / "issue_comment__created.pr-command.json").read_text())
        data["issue"]["number"] = PR
        data["comment"].update(id=comment, body="/adr-review", author_association="OWNER")
    data["repository"].update(full_name=REPO, default_branch="main")
    data["sender"] = {"login": "alice", "type": "User"}
    path = tmp / f"event-{name}-{head[:6]}-{comment}.json"
    path.write_text(json.dumps(data))
    return path


def main() -> int:
    tmp = Path(tempfile.mkdtemp(prefix="adr-review-cost-"))
    with FakeGitHubServer() as gh, FakeMessagesServer() as llm:
        llm.set_default("blindspot-devils-advocate", Reply(answer=da_answer()))
        llm.set_default("blindspot-premortem", Reply(answer=pm_answer()))
        llm.set_default(
            "blindspot-judge", Reply(fn=lambda r: Reply(answer=judge_echo_answer(request_text(r))))
        )
        os.environ["ANTHROPIC_BASE_URL"] = llm.base_url
        gh.seed({"repos": {REPO: {"refs": {"main": ADRS, BASE: ADRS}, "permissions": {"alice": "admin"}}}})

        def pull(head: str, files: dict[str, str], base: str = BASE) -> None:
            base_files = gh.repos[REPO]["refs"][base]
            gh.seed({"repos": {REPO: {"refs": {head: {**base_files, **files}}, "pulls": {str(PR): {
                "head_sha": head, "base_sha": base, "base_ref": "main", "head_ref": "f", "user": "alice",
                "files": [{"filename": p, "status": "added"} for p in files]}}}}})  # fmt: skip

        def run(name: str, head: str, base: str = BASE, comment: int = 0) -> dict[str, Any]:
            before_calls, before, started = llm.count(), len(llm.calls()), time.time()
            edits_before = gh.counters.get("comments_edited", 0)
            env = {
                "GITHUB_EVENT_NAME": "issue_comment" if comment else "pull_request",
                "GITHUB_EVENT_PATH": str(event_file(tmp, name, head, base, comment)),
                "GITHUB_REPOSITORY": REPO,
                "GITHUB_API_URL": gh.base_url,
                "GITHUB_SERVER_URL": "https://github.com",
                "GITHUB_WORKSPACE": str(tmp / "workspace"),
                "INPUT_GITHUB-TOKEN": "ghs_fake",
                "INPUT_ANTHROPIC-API-KEY": "sk-fake",
            }
            code = run_action(env, stdout=io.StringIO())
            calls = llm.calls()[before:]
            paid = _paid(tmp / "workspace" / ".adr-review" / "checkpoints.sqlite3", started)
            return {
                "exit": code,
                "calls": llm.count() - before_calls,
                "by_prompt": _counts(calls),
                "cache_read": paid["cache_read"],
                "cost": paid["cost"],
                "edits": gh.counters.get("comments_edited", 0) - edits_before,
                "created": gh.counters.get("comments_created", 0),
            }

        rows = []
        pull("1" * 40, THREE)
        rows.append(("1 PR opened, 3 ADRs", run("pull_request", "1" * 40)))
        rows.append(("2 same event again", run("pull_request", "1" * 40)))
        pull("2" * 40, THREE)
        rows.append(("3 push, no ADR changed", run("pull_request", "2" * 40)))
        edited = dict(THREE)
        edited["docs/adr/0009-session-store-redis.md"] = REDIS.replace(
            "## 決定\n", "## 決定\n\n保持期間は 30 日。\n"
        )
        pull("3" * 40, edited)
        rows.append(("4 push, 1 of 3 ADRs edited", run("pull_request", "3" * 40)))
        rows.append(("5 /adr-review (forced)", run("issue_comment", "3" * 40, comment=900001)))
        new_base = "c" * 40
        changed = dict(ADRS)
        changed["docs/adr/0005-nats-jetstream-event-bus.md"] = ADRS["docs/adr/0005-nats-jetstream-event-bus.md"].replace(
            "three-node cluster", "five-node cluster")  # fmt: skip
        gh.seed({"repos": {REPO: {"refs": {new_base: changed}}}})
        pull("4" * 40, edited, base=new_base)
        rows.append(("6 a past ADR changed on the base", run("pull_request", "4" * 40, base=new_base)))

    print(
        f"{'scenario':34} {'exit':>4} {'calls':>5} {'cost USD':>9} {'edits':>5} {'cache read':>10}  by prompt"
    )
    for name, r in rows:
        print(
            f"{name:34} {r['exit']:>4} {r['calls']:>5} {r['cost']:>9.4f} {r['edits']:>5} {r['cache_read']:>10}"
            f"  {r['by_prompt']}"
        )
    ok3 = rows[2][1]["calls"] == 0 and rows[2][1]["edits"] == 0
    ok4 = rows[3][1]["calls"] == 4 and all(n == 1 for n in rows[3][1]["by_prompt"].values())
    print(f"bar: push changing no ADR makes 0 calls and 0 edits: {'PASS' if ok3 else 'FAIL'}")
    print(
        f"bar: push editing 1 of 3 ADRs pays for that one (4 calls, 1 per prompt): {'PASS' if ok4 else 'FAIL'}"
    )
    return 0 if ok3 and ok4 else 1


def _paid(db: Path, since: float) -> dict[str, float]:
    """What the executed attempts of this scenario cost, from the Action's own state store."""
    with sqlite3.connect(db) as conn:
        row = conn.execute(
            "SELECT COALESCE(SUM(cache_read_tokens), 0), COALESCE(SUM(cost_usd), 0) FROM attempts "
            "WHERE outcome = 'executed' AND created_at >= ?",
            (since,),
        ).fetchone()
    return {"cache_read": int(row[0]), "cost": float(row[1])}


def _counts(calls: list[Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in calls:
        out[c.prompt] = out.get(c.prompt, 0) + 1
    return dict(sorted(out.items()))


if __name__ == "__main__":
    sys.exit(main())
