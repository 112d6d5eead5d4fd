"""Each prompt's output_schema.json, generated from its pydantic answer model.

    python -m adr_review.evals.schemas           exit 1 and list the files that differ from their model
    python -m adr_review.evals.schemas --write   regenerate them

The files stay committed (the prompt hash and the golden-eval keys read them); a schema that changes
what it says makes the golden recordings of that prompt stale: re-record or re-key them
(docs/golden-eval.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from adr_review.pipeline.adr.blindspot import CRITIC_PROMPTS, JUDGE_PROMPT
from adr_review.pipeline.adr.blindspot_answers import (
    AdjacentDomainAnswer,
    CoverCheckAnswer,
    DevilsAdvocateAnswer,
    JudgeAnswer,
    PremortemAnswer,
)
from adr_review.pipeline.adr.blindspot_cover import COVER_CHECK_PROMPT
from adr_review.pipeline.adr.recall import PROMPT_NAME as RECALL_PROMPT
from adr_review.pipeline.adr.recall_answer import RecallAnswer
from adr_review.pipeline.answer_schema import output_schema
from adr_review.pipeline.code_guard.guard_answer import GuardCheckAnswer
from adr_review.pipeline.code_guard.guard_check import PROMPT_NAME as GUARD_CHECK_PROMPT
from adr_review.prompts import PROMPTS_DIR

SCHEMA_FILE = "output_schema.json"
ANSWER_MODELS: Mapping[str, type[BaseModel]] = {
    RECALL_PROMPT: RecallAnswer,
    CRITIC_PROMPTS["devils_advocate"]: DevilsAdvocateAnswer,
    CRITIC_PROMPTS["premortem"]: PremortemAnswer,
    CRITIC_PROMPTS["adjacent_domain"]: AdjacentDomainAnswer,
    JUDGE_PROMPT: JudgeAnswer,
    GUARD_CHECK_PROMPT: GuardCheckAnswer,
    COVER_CHECK_PROMPT: CoverCheckAnswer,
}


def schema_text(schema: Mapping[str, Any]) -> str:
    """The file's bytes: stable, readable, diffable."""
    return json.dumps(schema, ensure_ascii=False, indent=2) + "\n"


def generated(prompts_dir: Path = PROMPTS_DIR) -> dict[Path, str]:
    """Every answer model's schema file and the text it should have."""
    return {
        prompts_dir / name / SCHEMA_FILE: schema_text(output_schema(m)) for name, m in ANSWER_MODELS.items()
    }


def stale(prompts_dir: Path = PROMPTS_DIR) -> list[Path]:
    """The schema files whose text differs from their model's."""
    out = []
    for path, text in generated(prompts_dir).items():
        try:
            current = path.read_text(encoding="utf-8")
        except OSError:
            current = None
        if current != text:
            out.append(path)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m adr_review.evals.schemas", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--write", action="store_true", help="regenerate the files that differ")
    parser.add_argument("--prompts-dir", type=Path, default=PROMPTS_DIR, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    differ = stale(args.prompts_dir)
    if args.write:
        texts = generated(args.prompts_dir)
        for path in differ:
            path.write_text(texts[path], encoding="utf-8")
            print(f"wrote {path}")
        return 0
    for path in differ:
        print(
            f"{path}: differs from its answer model (python -m adr_review.evals.schemas --write)",
            file=sys.stderr,
        )
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
