"""What a plan hands on: the Plan of one event and its Targets (one ADR each), JSON-serialisable so the
App can checkpoint a plan and queue its targets as review runs; the Action uses them in memory."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from adr_review.config import RepoConfig
from adr_review.core.triggers import ALL_STAGES
from adr_review.pipeline.adr.review import ReviewTarget


@dataclass(frozen=True)
class Target:
    """One ADR of one PR to review: everything a review run needs, JSON-serialisable for the App."""

    repo: str
    pr: int
    head_sha: str
    base_sha: str
    adr_path: str
    content_sha256: str
    run_key: str
    config: RepoConfig
    nonce: str | None = None
    stages: frozenset[str] = ALL_STAGES
    folder_digest: str = ""  # the past ADRs at the base, part of the key (app/adr_review/pipeline/keys.py)
    no_model: str | None = None  # planned without a model although one is configured (the spend cap)
    content: bytes | None = field(default=None, compare=False, repr=False)  # not serialised

    def key_now(self, content: bytes, prompt_hash: str, *, online: bool) -> str:
        """The key these inputs have under the prompts and model availability in force now."""
        return self.review_target(content).key(
            self.config, prompt_hash, online=online, folder_digest=self.folder_digest
        )

    def review_target(self, content: bytes) -> ReviewTarget:
        return ReviewTarget(
            self.repo,
            self.pr,
            self.head_sha,
            self.base_sha,
            self.adr_path,
            content,
            force_nonce=self.nonce,
            stages=self.stages,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "repo": self.repo,
            "pr": self.pr,
            "head_sha": self.head_sha,
            "base_sha": self.base_sha,
            "adr_path": self.adr_path,
            "content_sha256": self.content_sha256,
            "run_key": self.run_key,
            "config": self.config.model_dump(mode="json"),
            "nonce": self.nonce,
            "stages": sorted(self.stages),
            "folder_digest": self.folder_digest,
            "no_model": self.no_model,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Target:
        return cls(
            repo=str(d["repo"]),
            pr=int(d["pr"]),
            head_sha=str(d["head_sha"]),
            base_sha=str(d["base_sha"]),
            adr_path=str(d["adr_path"]),
            content_sha256=str(d["content_sha256"]),
            run_key=str(d["run_key"]),
            config=RepoConfig.model_validate(d.get("config") or {}),
            nonce=d.get("nonce"),
            stages=frozenset(d.get("stages") or ALL_STAGES),
            folder_digest=str(d.get("folder_digest") or ""),
            no_model=d.get("no_model"),
        )


@dataclass(frozen=True)
class GuardTarget:
    """The ADR guard of one PR head (app/adr_review/pipeline/code_guard/guard_run.py): its diff is read, and its key
    computed, when it runs, so a plan stays small enough to checkpoint whatever the diff's size."""

    head_sha: str
    base_sha: str
    title: str = ""
    body: str = ""
    prompt_hash: str = ""
    online: bool = False  # the guard check may call a model (a key, not read-only, the caps not reached)
    nonce: str | None = None  # `/adr-review check`: a fresh run, the same comment

    def to_json(self) -> dict[str, Any]:
        return {
            "head_sha": self.head_sha,
            "base_sha": self.base_sha,
            "title": self.title,
            "body": self.body,
            "prompt_hash": self.prompt_hash,
            "online": self.online,
            "nonce": self.nonce,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> GuardTarget:
        return cls(
            head_sha=str(d["head_sha"]),
            base_sha=str(d["base_sha"]),
            title=str(d.get("title") or ""),
            body=str(d.get("body") or ""),
            prompt_hash=str(d.get("prompt_hash") or ""),
            online=bool(d.get("online")),
            nonce=d.get("nonce"),
        )


PlanKind = Literal[
    "ignore",
    "deny",
    "help",
    "reindex",
    "review",
    "guard",
    "superseded",
    "config_error",
    "dismiss",
    "feedback",
]


@dataclass(frozen=True)
class FeedbackAction:
    """A reviewer's answer to the findings (issue 17): a `dismiss` command, or Adopted boxes an edit
    of our comment changed (`ticks`). `comment_id`: the command, or our edited comment."""

    actor: str
    comment_id: int
    finding_id: str | None = None
    reason: str = ""
    ticks: tuple[tuple[str, bool], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "actor": self.actor,
            "comment_id": self.comment_id,
            "finding_id": self.finding_id,
            "reason": self.reason,
            "ticks": [[fid, on] for fid, on in self.ticks],
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> FeedbackAction:
        return cls(
            actor=str(d["actor"]),
            comment_id=int(d["comment_id"]),
            finding_id=d.get("finding_id"),
            reason=str(d.get("reason") or ""),
            ticks=tuple((str(fid), bool(on)) for fid, on in d.get("ticks") or ()),
        )


@dataclass(frozen=True)
class Plan:
    kind: PlanKind
    summary: str
    read_only: bool = False  # fork PR on `pull_request`: no token to write with, no secrets
    react_comment_id: int | None = None  # put 👀 on this command comment
    reply: str | None = None  # post this reply (help, denial)
    config_error: str | None = None
    config: RepoConfig | None = None
    number: int | None = None
    head_sha: str = ""
    targets: tuple[Target, ...] = ()
    missing: tuple[str, ...] = ()  # changed ADRs that are not in the head commit (deleted)
    capped: tuple[str, ...] = ()  # changed ADRs left out by limits.max_adrs_per_run
    spend_note: str | None = None  # the month's spend cap: this run makes no model call
    feedback: FeedbackAction | None = None  # kind dismiss / feedback
    ref: str = ""  # kind reindex: the default branch whose ADRs are indexed
    guard: GuardTarget | None = None  # the ADR guard on the PR's code (kind guard, or beside a review)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "summary": self.summary,
            "read_only": self.read_only,
            "react_comment_id": self.react_comment_id,
            "reply": self.reply,
            "config_error": self.config_error,
            "config": self.config.model_dump(mode="json") if self.config is not None else None,
            "number": self.number,
            "head_sha": self.head_sha,
            "targets": [t.to_json() for t in self.targets],
            "missing": list(self.missing),
            "capped": list(self.capped),
            "spend_note": self.spend_note,
            "feedback": self.feedback.to_json() if self.feedback is not None else None,
            "ref": self.ref,
            "guard": self.guard.to_json() if self.guard is not None else None,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Plan:
        config = d.get("config")
        return cls(
            kind=d["kind"],
            summary=str(d["summary"]),
            read_only=bool(d.get("read_only")),
            react_comment_id=d.get("react_comment_id"),
            reply=d.get("reply"),
            config_error=d.get("config_error"),
            config=RepoConfig.model_validate(config) if config is not None else None,
            number=d.get("number"),
            head_sha=str(d.get("head_sha") or ""),
            targets=tuple(Target.from_json(t) for t in d.get("targets") or ()),
            missing=tuple(d.get("missing") or ()),
            capped=tuple(d.get("capped") or ()),
            spend_note=d.get("spend_note"),
            feedback=FeedbackAction.from_json(d["feedback"]) if d.get("feedback") else None,
            ref=str(d.get("ref") or ""),
            guard=GuardTarget.from_json(d["guard"]) if d.get("guard") else None,
        )
