"""`--rekey-hand-written`: move hand-written answers to the key of what the prompt renders now, marked.

The key covers the request and the gate (cases.py `recording_key`). For each recording of a prompt:
- it carries the current key: nothing to do;
- it was keyed before the gate was, to exactly this request (`legacy_answer`: the bare request hash, no
  re-key note): it is keyed with the gate and stays what it was (this is what the merger runs after
  merging a branch whose recordings the older tool keyed);
- a new hand-written answer (key `unkeyed`, never keyed, never answered): keyed for the first time, and
  answered: a person wrote it for this request;
- any other hand-written answer: moved to the new key with a RekeyNote (where it came from), and its
  `answered_key` left where it was, so replay scores it but reports it unverified and the prompt fails
  until a model answers the new request (`--live --record`) or a person writes a new answer for it.
  Deleting the note changes nothing;
- a model's (or a server's) answer to another request is refused: it must be re-recorded live.
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

from adr_review.evals.golden.cases import (
    SOURCE_HAND_WRITTEN,
    UNKEYED,
    RecordedUsage,
    RekeyNote,
    estimate_tokens,
    gate_of,
    golden_dir,
    legacy_answer,
    load_cases,
    load_recording,
    recording_key,
    request_chars,
    save_recording,
)
from adr_review.evals.golden.runner import prompt_thresholds, recorded_request
from adr_review.evals.golden.scoring import Suite
from adr_review.prompts import load_prompt


class PriceFn:
    """USD for a call, from the adapter's price table (repo config `llm.prices`)."""

    def __init__(self) -> None:
        from adr_review.config import LlmSettings

        self.settings = LlmSettings()

    def __call__(self, model: str, input_tokens: int, output_tokens: int) -> float:
        price = self.settings.price_for(model)
        if price is None:
            return 0.0
        return (input_tokens * price.input + output_tokens * price.output) / 1_000_000


def rekey_hand_written(
    name: str, suite: Suite | None, prompts_dir: Path, price: PriceFn | None = None
) -> list[str]:
    """Re-key the hand-written recordings of one prompt to what it renders now. Returns messages.

    Only answers labelled hand-written are touched: a model's recorded answer to an old prompt is not
    an answer to the new one, so those must be re-recorded live.
    """
    prompt = load_prompt(name, prompts_dir)
    if suite is None:
        return [f"{name}: no eval suite"]
    folder = golden_dir(prompt)
    cases, errors = load_cases(folder)
    messages = list(errors)
    gate = gate_of(prompt, prompt_thresholds(suite, prompt))
    for case in cases:
        try:
            request = suite.request(case, prompt)
            recording = load_recording(folder, case.id)
        except Exception as exc:
            messages.append(f"{name}/{case.id}: {type(exc).__name__}: {exc}")
            continue
        if recording is None:
            messages.append(
                f"{name}/{case.id}: no recording to re-key (write {case.id}.recording.json first)"
            )
            continue
        key = recording_key(request, gate)
        if recording.key == key:
            continue
        if legacy_answer(recording, request):
            save_recording(
                folder, recording.model_copy(update={"key": key, "answered_key": key, "gate": gate})
            )
            messages.append(f"{name}/{case.id}: keyed with its gate (it answers exactly this request)")
            continue
        if recording.source != SOURCE_HAND_WRITTEN:
            messages.append(
                f"{name}/{case.id}: recorded from {recording.source!r}, not hand-written: re-record it with --live --record"
            )
            continue
        new = recording.key == UNKEYED and recording.answered_key is None and recording.rekeyed is None
        output = recording.text or json.dumps(recording.data, ensure_ascii=False)
        in_tokens, out_tokens = estimate_tokens(request_chars(request)), estimate_tokens(len(output))
        # The first re-key's origin is kept: re-keying twice does not make the answer any newer.
        note = (
            None
            if new
            else recording.rekeyed
            or RekeyNote(
                from_key=recording.key,
                from_prompt_files_hash=recording.request.prompt_files_hash,
                date=date.today().isoformat(),
            )
        )
        updated = recording.model_copy(
            update={
                "rekeyed": note,
                "key": key,
                "answered_key": key if new else recording.answered_key,
                "gate": gate,
                "model": request.model,
                "date": date.today().isoformat(),
                "request": recorded_request(request, prompt),
                "usage": RecordedUsage(
                    input_tokens=in_tokens,
                    output_tokens=out_tokens,
                    cost_usd=round(price(request.model, in_tokens, out_tokens), 6) if price else 0.0,
                    estimated=True,
                ),
            }
        )
        save_recording(folder, updated)
        messages.append(
            f"{name}/{case.id}: keyed a new hand-written answer"
            if new
            else f"{name}/{case.id}: re-keyed hand-written answer (marked unverified: nobody has answered "
            "the new request; see docs/golden-eval.md)"
        )
    return messages
