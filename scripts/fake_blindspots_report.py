"""Print an `adr-review blind-spots` report produced through the real Anthropic client against the local
fake Messages API server (scripted answers, no API key): shows the report layout and the per-node
token / cost accounting. Run from the repo root: `.venv/bin/python scripts/fake_blindspots_report.py`.
The findings are the fake's scripted answers, not model output."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adr_review.cli import main  # noqa: E402
from tests.fakes.blindspot_answers import da_answer, judge_echo_answer, pm_answer  # noqa: E402
from tests.fakes.messages_server import FakeMessagesServer, Reply, request_text  # noqa: E402

PROPOSAL = "examples/proposals/0008-adopt-kafka-for-order-events.md"


def run() -> int:
    with FakeMessagesServer() as fake:
        os.environ["ANTHROPIC_API_KEY"] = "fake-key"
        os.environ["ANTHROPIC_BASE_URL"] = fake.base_url
        os.environ["ADR_REVIEW_STORE_DIR"] = tempfile.mkdtemp(prefix="adr-review-")
        fake.set_default("blindspot-devils-advocate", Reply(answer=da_answer()))
        fake.set_default(
            "blindspot-premortem",
            Reply(answer=pm_answer(["technical", "operational", "business_regulatory"])),
        )
        fake.set_default(
            "blindspot-judge", Reply(fn=lambda r: Reply(answer=judge_echo_answer(request_text(r))))
        )
        return main(["blind-spots", "--file", PROPOSAL, "--adr-dir", "examples/adr", "--seed", "7"])


if __name__ == "__main__":
    sys.exit(run())
