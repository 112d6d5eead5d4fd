"""The fake Anthropic Messages API as its own process, answering every review prompt plausibly.

    python -m tests.server.fake_llm_proc [--port 0] [--delay 0.5]   -> prints "PORT <n>"; GET /_calls counts

Critics get the schema-valid answers of tests/fakes/blindspot_answers.py, the Judge echoes the critic
findings it was shown, recall cites the first candidates (the server's own default).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import replace

from tests.fakes.blindspot_answers import ad_answer, da_answer, judge_echo_answer, pm_answer
from tests.fakes.http_server import serve_until_interrupted
from tests.fakes.messages_server import FakeMessagesServer, Reply, recall_responder, request_text


def build(host: str = "127.0.0.1", port: int = 0, delay: float = 0.0) -> FakeMessagesServer:
    """delay: seconds every call takes (a model's latency, for the benchmarks)."""
    server = FakeMessagesServer(host, port)
    server.set_default("blindspot-devils-advocate", Reply(tool_input=da_answer(), delay=delay))
    server.set_default("blindspot-premortem", Reply(tool_input=pm_answer(), delay=delay))
    server.set_default("blindspot-adjacent-domain", Reply(tool_input=ad_answer(), delay=delay))
    server.set_default(
        "blindspot-judge", lambda req: Reply(tool_input=judge_echo_answer(request_text(req)), delay=delay)
    )
    if delay:
        server.set_default("recall-pre-gate", lambda req: replace(recall_responder(req), delay=delay))
    return server


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds every call takes")
    args = parser.parse_args(argv)
    return serve_until_interrupted(build(args.host, args.port, args.delay))


if __name__ == "__main__":
    sys.exit(main())
