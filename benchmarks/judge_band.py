"""Where the Judge-exclusion check band should end: subject overlap of off- and on-subject pairs, held out.

    .venv/bin/python benchmarks/judge_band.py --corpora ../shared/corpora             # the figures
    .venv/bin/python benchmarks/judge_band.py --corpora ../shared/corpora --own       # + own-ADR pairs, labels
    .venv/bin/python benchmarks/judge_band.py --corpora ../shared/corpora --top 40    # + highest other-ADR pairs

A Judge exclusion in a covering section is rejected with no call when its subject overlap
(app/adr_review/core/finding_checks.py subject_overlap) is below UNSURE_SUBJECT_OVERLAP and sent to the
check call from there up. Whether an upper bound could accept a claim with no call (it shipped at 0.35
before this benchmark; now none does) is what this measures, with the product's own parser, quote check
and overlap, on the overlap of:

- findings: every critic finding of the golden critic recordings (prompts/blindspot-{devils-advocate,
  premortem,adjacent-domain}/golden, language variants too, read by the product's answer models) and of
  the Judge cases' critic answers (as the Judge request renders them), each once;
- off-subject, other ADR: each finding against every sentence a Judge could quote from a covering
  section of every OTHER ADR of the corpora (a sentence counts when check_quote verifies it and
  covering_section places it, as check_exclusion would), with the finding's own ADR title as the topic
  (as if the passage stood in that ADR). Off-subject by construction (the highest are printed by --top
  to be read);
- own ADR: each finding against the covering sentences of its own ADR; every pair at or above 0.35 (the
  old accept level) is labelled by hand in LABELS (`covers` or `off`);
- on-subject: the golden Judge answers' exclusions that reach the overlap, the cover-check cases
  labelled `yes` (hand-written), hand-written pairs (ON_SUBJECT: a finding written by hand against a real
  ADR's covering sentence, not model output) and the own-ADR pairs labelled `covers`.

The upper bound is chosen leave-one-collection-out (by the passage's collection; the golden library's
seeds are one): on the other collections, the lowest bound of GRID at or above which at most QUANTILE
of the other-ADR pairs score and (the second rule) none of the own-ADR pairs labelled `off`; then the
held-out collection's pairs are counted against it. The cost is the check calls the golden Judge
answers would make under the old band and the shipped one (capped at MAX_CHECKS per ADR).
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "app"))

from adr_review.adapters.adr_files import load_adr_folder  # noqa: E402
from adr_review.core.adr import Adr  # noqa: E402
from adr_review.core.citations import check_quote  # noqa: E402
from adr_review.core.extractive import sentence_spans  # noqa: E402
from adr_review.core.finding_checks import (  # noqa: E402
    COVERING_SECTIONS,
    UNSURE_SUBJECT_OVERLAP,
    check_exclusion,
    covering_section,
    finding_subject,
    subject_overlap,
    subject_terms,
    terms_overlap,
)
from adr_review.core.passages import is_markdown_path, passages_of, reader_passages  # noqa: E402
from adr_review.core.results import Finding  # noqa: E402
from adr_review.evals.golden.cases import load_cases, load_library_adr, load_recording  # noqa: E402
from adr_review.evals.golden.judge_overlap import as_finding, judge_cases  # noqa: E402
from adr_review.pipeline.adr.blindspot_answers import (  # noqa: E402
    AdjacentDomainAnswer,
    DevilsAdvocateAnswer,
    PremortemAnswer,
)
from adr_review.pipeline.adr.blindspot_cover import MAX_CHECKS  # noqa: E402
from adr_review.prompts import PROMPTS_DIR, PromptFiles  # noqa: E402

HERE = Path(__file__).resolve().parent
LABELS = HERE / "judge_band_labels.json"
ON_SUBJECT = HERE / "judge_band_on_subject.json"
CRITICS: dict[str, type[DevilsAdvocateAnswer | PremortemAnswer | AdjacentDomainAnswer]] = {
    "blindspot-devils-advocate": DevilsAdvocateAnswer,
    "blindspot-premortem": PremortemAnswer,
    "blindspot-adjacent-domain": AdjacentDomainAnswer,
}
SEEDS = "seeds"  # the golden library's own ADRs (prompts/_golden/adrs/seeds): a collection of their own
QUANTILE = 0.001
_BLANK = Finding((), "", "medium", "monitor", "", "", "", "", "")


@dataclass(frozen=True)
class Subject:
    """A finding as the check sees it: its ADR (collection, file), the ADR title and its terms."""

    collection: str
    adr: str
    topic: str
    finding: Finding
    terms: frozenset[str]


@dataclass(frozen=True)
class Quote:
    """A sentence a Judge could quote from a covering section of an ADR."""

    collection: str
    adr: str
    text: str
    terms: frozenset[str]


@dataclass(frozen=True)
class Pair:
    collection: str  # the passage's collection (the fold)
    finding_adr: str
    title: str
    passage: str
    overlap: float
    label: str = ""  # own ADR / checked: "covers" | "off"; on-subject: where it comes from


def _collection(library_path: str) -> tuple[str, str]:
    """(collection, file name) of a golden library path: corpora/<collection>/.../<file> or seeds/<file>."""
    parts = library_path.split("/")
    return (parts[1] if parts[0] == "corpora" else SEEDS), parts[-1]


def _add(out: list[tuple[Subject, Adr]], seen: set[tuple[str, ...]], path: str, adr: Adr, f: Finding) -> None:
    collection, file = _collection(path)
    key = (file, f.title, f.quote, f.gap)
    if key not in seen:
        seen.add(key)
        out.append((Subject(collection, file, adr.title, f, subject_terms(finding_subject(f))), adr))


def golden_findings(prompts_dir: Path = PROMPTS_DIR) -> list[tuple[Subject, Adr]]:
    """Every critic finding of the golden critic recordings and of the Judge cases' critic answers (as
    the Judge request renders them), once (ADR, title, quote, gap), with its ADR."""
    files = PromptFiles(prompts_dir)
    out: list[tuple[Subject, Adr]] = []
    seen: set[tuple[str, ...]] = set()
    for name, model in CRITICS.items():
        prompt = files.prompt(name)
        folder = prompt.folder / "golden"
        cases, _errors = load_cases(folder)
        for case in cases:
            recording = load_recording(folder, case.id)
            if recording is None or not isinstance(recording.data, dict):
                continue
            path = str(case.input["adr"])
            adr = load_library_adr(prompt, path)
            for f in model.model_validate(recording.data).findings():
                _add(out, seen, path, adr, f)
    for jc in judge_cases(prompts_dir):
        for item in jc.items.values():
            _add(out, seen, jc.library_path, jc.adr, as_finding(item))
    return out


def covering_quotes(adr: Adr, collection: str) -> Iterator[Quote]:
    """The sentences of the ADR's covering sections that check_exclusion would place in one."""
    markdown = is_markdown_path(adr.path)
    passages = passages_of(adr)
    seen: set[str] = set()
    for name in COVERING_SECTIONS:
        for block in reader_passages(adr.sections.get(name) or "", markdown=markdown):
            for start, end in sentence_spans(block.text):
                check = check_quote(block.text[start:end], passages)
                if not check.ok or check.quote in seen:
                    continue
                if covering_section(check.quote, adr) is None:
                    continue
                seen.add(check.quote)
                yield Quote(collection, adr.path.rsplit("/", 1)[-1], check.quote, subject_terms(check.quote))


def corpus_quotes(corpora: Path) -> list[Quote]:
    out: list[Quote] = []
    for folder in sorted(p for p in corpora.iterdir() if (p / "qrels.jsonl").is_file()):
        adrs, _errors = load_adr_folder(folder)
        for adr in adrs:
            out.extend(covering_quotes(adr, folder.name))
    return out


def _key(subject: Subject, passage: str) -> str:
    return f"{subject.adr} | {subject.finding.title} | {passage}"


def load_labels(path: Path = LABELS) -> dict[str, str]:
    if not path.is_file():
        return {}
    return {row["key"]: row["label"] for row in json.loads(path.read_text(encoding="utf-8"))}


def pairs(
    subjects: Sequence[tuple[Subject, Adr]], quotes: Sequence[Quote], labels: dict[str, str]
) -> tuple[list[Pair], list[Pair]]:
    """(other-ADR pairs, own-ADR pairs): every finding against every covering sentence."""
    other: list[Pair] = []
    own: list[Pair] = []
    own_quotes = {(s.collection, s.adr): list(covering_quotes(adr, s.collection)) for s, adr in subjects}
    for s, _adr in subjects:
        background = subject_terms(s.topic)
        for q in quotes:
            if (q.collection, q.adr) == (s.collection, s.adr):
                continue
            overlap = terms_overlap(q.terms, s.terms, background)
            other.append(Pair(q.collection, s.adr, s.finding.title, q.text, overlap))
        for q in own_quotes[(s.collection, s.adr)]:
            overlap = terms_overlap(q.terms, s.terms, background)
            label = labels.get(_key(s, q.text), "")
            own.append(Pair(s.collection, s.adr, s.finding.title, q.text, overlap, label))
    return other, own


def _corpus_adr(corpora: Path, collection: str, file: str) -> Adr:
    adrs, _errors = load_adr_folder(corpora / collection)
    found = [a for a in adrs if a.path.rsplit("/", 1)[-1] == file]
    if len(found) != 1:
        raise SystemExit(f"{collection}/{file}: {len(found)} ADRs of that name")
    return found[0]


def _on_pair(source: str, collection: str, adr: Adr, quote: str, finding: Finding) -> Pair | None:
    """The pair if check_exclusion gets as far as the overlap (verbatim, in a covering section)."""
    verdict = check_exclusion(quote, finding, adr)
    if verdict.rejected in ("not_verbatim", "not_covering_section"):
        print(f"  skipped ({verdict.rejected}): {source} {adr.path} | {finding.title}")
        return None
    overlap = subject_overlap(verdict.quote.quote, finding, adr.title)
    file = adr.path.rsplit("/", 1)[-1]
    return Pair(collection, file, finding.title, verdict.quote.quote, overlap, source)


def on_subject_pairs(corpora: Path, own: Sequence[Pair], prompts_dir: Path = PROMPTS_DIR) -> list[Pair]:
    """The golden Judge exclusions, the cover-check cases labelled yes, the hand-written ON_SUBJECT
    pairs and the own-ADR pairs labelled `covers`, each once."""
    out: list[Pair] = []
    for jc in judge_cases(prompts_dir):
        collection, _file = _collection(jc.library_path)
        for x in jc.answer.get("excluded", []):
            item = jc.items.get(x["id"])
            if item is not None:
                pair = _on_pair("golden Judge answer", collection, jc.adr, x["quote"], as_finding(item))
                out.append(pair) if pair else None
    prompt = PromptFiles(prompts_dir).prompt("blindspot-cover-check")
    cases, _errors = load_cases(prompt.folder / "golden")
    for case in cases:
        if case.expect.get("covers") != "yes":
            continue
        adr = load_library_adr(prompt, case.input["adr"])
        f = case.input["finding"]
        finding = replace(_BLANK, title=f["title"], quote=f["quote"], gap=f["gap"])
        collection = _collection(case.input["adr"])[0]
        pair = _on_pair("cover-check case (hand-written)", collection, adr, case.input["passage"], finding)
        out.append(pair) if pair else None
    for row in json.loads(ON_SUBJECT.read_text(encoding="utf-8")):
        adr = _corpus_adr(corpora, row["collection"], row["adr"])
        finding = replace(_BLANK, title=row["title"], quote=row["quote"], gap=row["gap"])
        if not check_quote(row["quote"], passages_of(adr)).ok:
            raise SystemExit(f"{row['adr']}: the finding's quote is not verbatim: {row['quote']}")
        pair = _on_pair("hand-written", row["collection"], adr, row["passage"], finding)
        if pair is None:
            raise SystemExit(f"{row['adr']}: the passage is not in a covering section: {row['passage']}")
        out.append(pair)
    seen = {(p.finding_adr, p.title, p.passage) for p in out}
    out += [
        replace(p, label="own ADR, hand-labelled")
        for p in own
        if p.label == "covers" and (p.finding_adr, p.title, p.passage) not in seen
    ]
    return out


GRID = (*(round(0.35 + 0.05 * i, 2) for i in range(14)), math.inf)  # 0.35 .. 1.00, then "never"


def choose_bound(other: Sequence[Pair], own_off: Sequence[Pair], quantile: float, use_own: bool) -> float:
    """The lowest bound of GRID at or above which at most `quantile` of the other-ADR pairs score and
    (use_own) none of the hand-labelled own-ADR off-subject pairs: above it the code accepts."""
    values = sorted(p.overlap for p in other)
    worst_own = max((p.overlap for p in own_off), default=0.0) if use_own else -1.0
    for t in GRID:
        above = len(values) - bisect.bisect_left(values, t)
        if above <= quantile * len(values) and worst_own < t:
            return t
    return math.inf


def _fmt(t: float) -> str:
    return "never" if t == math.inf else f"{t:.2f}"


def leave_one_out(
    other: Sequence[Pair], own_off: Sequence[Pair], on: Sequence[Pair], quantile: float, use_own: bool
) -> list[str]:
    """Per held-out collection: the bound chosen on the others, and what it does to the held-out pairs."""
    lines = []
    total: Counter[str] = Counter()
    for c in sorted({p.collection for p in (*other, *own_off, *on)}):
        train = [p for p in other if p.collection != c], [p for p in own_off if p.collection != c]
        t = choose_bound(*train, quantile, use_own)
        o, w, n = ([p.overlap for p in ps if p.collection == c] for ps in (other, own_off, on))
        row = Counter(
            off=len(o), off_above=sum(v >= t for v in o), own=len(w), own_above=sum(v >= t for v in w),
            on=len(n), on_above=sum(v >= t for v in n), on_band=sum(UNSURE_SUBJECT_OVERLAP <= v < t for v in n),
        )  # fmt: skip
        total.update(row)
        lines.append(
            f"  held out {c:40s} bound {_fmt(t):5s}  other-ADR off accepted {row['off_above']}/{row['off']}"
            f"  own-ADR off accepted {row['own_above']}/{row['own']}"
            f"  on-subject accepted {row['on_above']}, to the check {row['on_band']}, of {row['on']}"
        )
    lines.append(
        f"  pooled held-out: other-ADR off accepted {total['off_above']}/{total['off']}, own-ADR off accepted"
        f" {total['own_above']}/{total['own']}, on-subject accepted {total['on_above']} / to the check"
        f" {total['on_band']} / rejected {total['on'] - total['on_above'] - total['on_band']} of {total['on']}"
    )
    return lines


OLD_BAND = (0.2, 0.35)  # the band before this benchmark: rejected below, the check, accepted from 0.35 up


def golden_calls(prompts_dir: Path = PROMPTS_DIR) -> list[str]:
    """Check calls per golden Judge case under the old band and the shipped one (capped per ADR)."""
    lines = []
    old_total = new_total = 0
    cases = judge_cases(prompts_dir)
    for jc in cases:
        old = new = 0
        for x in jc.answer.get("excluded", []):
            item = jc.items.get(x["id"])
            if item is None:
                continue
            finding = as_finding(item)
            verdict = check_exclusion(x["quote"], finding, jc.adr)
            if verdict.rejected is not None:
                continue
            v = subject_overlap(verdict.quote.quote, finding, jc.adr.title)
            old += OLD_BAND[0] <= v < OLD_BAND[1]
            new += 1  # the shipped rule: every claim the code does not reject goes to the check
        old, new = min(old, MAX_CHECKS), min(new, MAX_CHECKS)
        old_total += old
        new_total += new
        lines.append(f"  {jc.case:55s} calls: old band {old}, shipped band {new}")
    lines.append(
        f"  {len(cases)} cases: {old_total} calls with the old band, {new_total} with the shipped one"
        f" ({(new_total - old_total) / max(len(cases), 1):.2f} more per review)"
    )
    return lines


def _dist(values: Sequence[float]) -> str:
    cuts = (0.2, 0.35, 0.5, 0.75, 1.0)
    top = f"max {max(values):.3f}" if values else "max -"
    return f"n={len(values):7d} {top} " + " ".join(f">={t:.2f}:{sum(v >= t for v in values)}" for t in cuts)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", type=Path, default=ROOT.parent / "shared" / "corpora")
    ap.add_argument("--quantile", type=float, default=QUANTILE)
    ap.add_argument("--own", action="store_true", help="print the own-ADR pairs at or above 0.35 with labels")
    ap.add_argument("--top", type=int, default=0, help="print the N highest other-ADR pairs")
    args = ap.parse_args(argv)
    subjects = golden_findings()
    quotes = corpus_quotes(args.corpora)
    other, own = pairs(subjects, quotes, load_labels())
    on = on_subject_pairs(args.corpora, own)
    own_off = [p for p in own if p.label == "off"]
    unlabelled = sum(1 for p in own if not p.label and p.overlap >= OLD_BAND[1])
    print(
        f"findings {len(subjects)} (of {len({(s.collection, s.adr) for s, _ in subjects})} ADRs),"
        f" covering sentences {len(quotes)} in {len({(q.collection, q.adr) for q in quotes})} ADRs"
    )
    print(
        f"pairs: other-ADR {len(other)}, own-ADR {len(own)} (labelled off {len(own_off)},"
        f" covers {sum(p.label == 'covers' for p in own)}, unlabelled at >= 0.35: {unlabelled}),"
        f" on-subject {len(on)}"
    )
    print("overlap by collection (the passage's):")
    for c in sorted({p.collection for p in (*other, *own, *on)}):
        print(f"  {c}")
        print(f"    off, other ADR  {_dist([p.overlap for p in other if p.collection == c])}")
        print(f"    off, own ADR    {_dist([p.overlap for p in own_off if p.collection == c])}")
        print(f"    on-subject      {_dist([p.overlap for p in on if p.collection == c])}")
    print("on-subject pairs:")
    for p in sorted(on, key=lambda p: p.overlap):
        print(f"  {p.overlap:.3f} [{p.label}] {p.finding_adr} | {p.title} | {p.passage[:90]}")
    for use_own, name in ((False, "other-ADR pairs only"), (True, "other-ADR pairs and own-ADR labels")):
        print(f"leave-one-collection-out, bound chosen on {name} (quantile {args.quantile}):")
        print("\n".join(leave_one_out(other, own_off, on, args.quantile, use_own)))
        print(
            f"  on all collections: {_fmt(choose_bound(other, own_off, args.quantile, use_own))} (in-sample)"
        )
    print(
        f"shipped band: [{UNSURE_SUBJECT_OVERLAP:.2f}, never accepted with no call); check calls on the golden Judge cases:"
    )
    print("\n".join(golden_calls()))
    if args.top:
        for p in sorted(other, key=lambda p: -p.overlap)[: args.top]:
            print(f"  {p.overlap:.3f} [{p.collection}] {p.finding_adr} | {p.title} | {p.passage}")
    if args.own:
        for p in sorted(own, key=lambda p: -p.overlap):
            if p.overlap >= OLD_BAND[1]:
                print(f"  {p.overlap:.3f} {p.label or '?':6s} {p.finding_adr} | {p.title} | {p.passage}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
