"""The `/adr-review` comment commands: parsing, who may run them, and the texts the replies use. Pure.

`/adr-review dismiss <finding id> [reason]` (issue 17) marks a shown finding as not useful; the reason
is kept with it (the report counts dismissals and they can be exported as negative golden cases). The
same id form reaches a guard answer (issue 28: the id on its Adopted line), counted apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from adr_review.core.adr_paths import is_markdown

ALLOWED_ASSOCIATIONS = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})
# Repository permissions (GET .../collaborators/{user}/permission) that count as a collaborator: an
# org member whose membership is private shows up as CONTRIBUTOR or NONE in `author_association`.
ALLOWED_PERMISSIONS = frozenset({"admin", "maintain", "write"})
ALL_STAGES = frozenset({"recall", "blindspots"})
COMMAND = "/adr-review"

CommandKind = Literal["all", "recall", "blind-spots", "check", "help", "dismiss", "unknown"]

_COMMAND_STAGES: dict[str, frozenset[str]] = {
    "all": ALL_STAGES,
    "recall": frozenset({"recall"}),
    "blind-spots": frozenset({"blindspots"}),
}
_SUBCOMMAND_ALIASES = {
    "": "all",
    "all": "all",
    "run": "all",
    "recall": "recall",
    "blind-spots": "blind-spots",
    "blindspots": "blind-spots",
    "blind_spots": "blind-spots",
    "check": "check",
    "help": "help",
    "dismiss": "dismiss",
}
_FINDING_ID = re.compile(r"[0-9a-f]{8}")
_REASON_CAP = 1000
_COMMAND_LINE = re.compile(r"^/adr-review(?:[ \t]+(?P<rest>.*))?$", re.IGNORECASE)
_MAX_COMMAND_PATHS = 20


@dataclass(frozen=True)
class Command:
    kind: CommandKind
    raw: str  # the command line as written
    paths: tuple[str, ...] = ()  # `/adr-review [recall|blind-spots] PATH...`: only these changed ADRs
    finding_id: str | None = None  # `dismiss`: the finding's id (None: missing or not an id)
    reason: str = ""  # `dismiss`: the rest of the line and the lines below it

    @property
    def stages(self) -> frozenset[str]:
        return _COMMAND_STAGES.get(self.kind, frozenset())


def parse_command(body: str) -> Command | None:
    """The `/adr-review ...` command on the first non-blank line of a comment, else None.

    Only the first line counts, so a quoted (`> /adr-review`) or mentioned command in prose never
    triggers a run; `/adr-reviewer` is not the command.
    """
    lines = body.splitlines()
    for i, line in enumerate(lines):
        stripped = line.strip()
        if not stripped:
            continue
        m = _COMMAND_LINE.match(stripped)
        if not m:
            return None
        words = (m.group("rest") or "").split()
        sub = words[0].casefold() if words and not _looks_like_path(words[0]) else ""
        kind = _SUBCOMMAND_ALIASES.get(sub, "unknown")
        if kind == "dismiss":
            return _dismiss(stripped, words, lines[i + 1 :])
        # ADR paths anywhere on the line narrow the run; other words after the command are ignored.
        paths = tuple(w.strip("`") for w in words if _looks_like_path(w))[:_MAX_COMMAND_PATHS]
        return Command(kind=kind, raw=stripped[:200], paths=paths)  # type: ignore[arg-type]
    return None


def _dismiss(raw: str, words: list[str], below: list[str]) -> Command:
    fid = words[1].strip("`").casefold() if len(words) > 1 else ""
    rest = " ".join(words[2:])
    reason = "\n".join([rest, *below]).strip()[:_REASON_CAP]
    return Command(
        kind="dismiss",
        raw=raw[:200],
        finding_id=fid if _FINDING_ID.fullmatch(fid) else None,
        reason=reason,
    )


def _looks_like_path(word: str) -> bool:
    return is_markdown(word.strip("`"))


def is_authorized(author_association: str, permission: str | None = None) -> bool:
    """OWNER, MEMBER and COLLABORATOR may run commands; a write/maintain/admin permission also counts."""
    if author_association.upper() in ALLOWED_ASSOCIATIONS:
        return True
    return (permission or "").casefold() in ALLOWED_PERMISSIONS


HELP_TEXT = """\
**adr-review** commands (comment on the pull request):

| Command | What it does |
| --- | --- |
| `/adr-review` | Review the changed ADRs again: recall of related ADRs and the blind-spot critics |
| `/adr-review recall` | Re-run only the recall of related past ADRs |
| `/adr-review blind-spots` | Re-run only the blind-spot critics |
| `/adr-review PATH...` | Review only these changed ADRs (also after `recall` or `blind-spots`) |
| `/adr-review check` | Run the ADR guard: the accepted decisions this PR's code changes touch |
| `/adr-review dismiss ID [reason]` | Mark a finding or a guard answer (its id is on its **Adopted** line) as not useful, with why |
| `/adr-review help` | Show this help |

Only repository owners, members and collaborators can run commands. Results update the existing \
adr-review comment of each ADR; no new comment is added."""

DENIED_TEXT = (
    "Sorry @{login}, only repository owners, members and collaborators can run `/adr-review` commands, "
    "so nothing was run. A maintainer can comment `/adr-review` to start a review."
)

DISMISS_USAGE = (
    "Usage: `/adr-review dismiss ID [reason]`, where ID is the 8-character id on the **Adopted** line "
    "of a finding or of a guard answer, e.g. `/adr-review dismiss 3fa2c1d0 we accept this risk, see ADR-0003`."
)

UNKNOWN_TEXT = "Unknown command `{raw}`: nothing was run.\n\n" + HELP_TEXT
