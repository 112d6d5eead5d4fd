"""The FeedbackLog part of the StateStore, on every engine (SQLite file, :memory:, a real PostgreSQL):
ledgers, ticks and dismissals are idempotent upserts, and `outcomes` reads them back by window."""

from __future__ import annotations

from adr_review.core.feedback import Ledger, Revision, Shown
from adr_review.pipeline.state_ports import StateStore
from tests.adapters import test_state_store as contract
from tests.adapters.test_state_store import Clock

# The contract's fixtures: a store of each engine, and its clock.
store_factory, store, clock = contract.store_factory, contract.store, contract.clock

REPO, PR, PATH = "acme/shop", 7, "docs/adr/0008-kafka.md"
A, B, C = "aaaa0001", "bbbb0002", "cccc0003"


def _ledger(*revs: tuple[str, tuple[str, ...], float]) -> Ledger:
    out = Ledger()
    for digest, ids, cost in revs:
        shown = tuple(
            Shown(i, "high", "privacy" if i == A else "premortem/technical", f"title {i}") for i in ids
        )
        out = out.add(Revision(digest, shown, cost, (digest[:12],)))
    return out


def test_a_ledger_recorded_twice_is_one_adr_and_its_findings(store: StateStore, clock: Clock) -> None:
    ledger = _ledger(("1" * 16, (A, B), 0.25))
    store.record_ledger(REPO, PR, PATH, ledger)
    clock.t += 60
    store.record_ledger(REPO, PR, PATH, ledger)
    adrs, findings = store.outcomes(REPO, 0, 2e9)
    assert [(a.path, a.revisions, a.revised, a.cost_usd, a.first_at) for a in adrs] == [
        (PATH, 1, False, 0.25, 1_000_000.0)
    ]
    assert adrs[0].last_at == 1_000_060.0
    assert [(f.finding_id, f.perspective, f.adopted, f.dismissed) for f in findings] == [
        (A, "privacy", False, False),
        (B, "premortem/technical", False, False),
    ]


def test_a_revision_after_findings_were_shown_is_kept_even_if_a_later_ledger_forgets_it(
    store: StateStore,
) -> None:
    store.record_ledger(REPO, PR, PATH, _ledger(("1" * 16, (A, B), 0.25), ("2" * 16, (C,), 0.10)))
    store.record_ledger(REPO, PR, PATH, _ledger(("3" * 16, (), 0.0)))  # the comment was written anew
    (adr,), findings = store.outcomes(REPO, 0, 2e9)
    assert (adr.revisions, adr.revised, round(adr.cost_usd, 2)) == (2, True, 0.35)
    assert {f.finding_id for f in findings} == {A, B, C}


def test_ticks_change_only_known_findings_and_report_what_changed(store: StateStore) -> None:
    store.record_ledger(REPO, PR, PATH, _ledger(("1" * 16, (A, B), 0.0)))
    assert store.record_ticks(REPO, PR, PATH, {A: True, B: False, "ffff0000": True}, "alice") == [A]
    assert store.record_ticks(REPO, PR, PATH, {A: True}, None) == []  # same state: nothing changes
    _, findings = store.outcomes(REPO, 0, 2e9)
    assert [(f.finding_id, f.adopted, f.adopted_by) for f in findings] == [
        (A, True, "alice"),
        (B, False, None),
    ]
    assert store.record_ticks(REPO, PR, PATH, {A: False}, None) == [A]  # unticked, read from the comment
    _, findings = store.outcomes(REPO, 0, 2e9)
    assert (findings[0].adopted, findings[0].adopted_by) == (False, "alice")


def test_a_dismissal_names_the_finding_by_id_within_its_pr(store: StateStore) -> None:
    store.record_ledger(REPO, PR, PATH, _ledger(("1" * 16, (A, B), 0.0)))
    assert store.record_dismissal(REPO, PR, B, "bob", "we accept this risk, see ADR-0003") == PATH
    assert store.record_dismissal(REPO, PR + 1, B, "bob", "other PR") is None
    assert store.record_dismissal(REPO, PR, "ffff0000", "bob", "no such finding") is None
    _, findings = store.outcomes(REPO, 0, 2e9)
    dismissed = [(f.finding_id, f.dismissed_by, f.reason) for f in findings if f.dismissed]
    assert dismissed == [(B, "bob", "we accept this risk, see ADR-0003")]


def test_a_finding_ticked_and_dismissed_keeps_both(store: StateStore) -> None:
    store.record_ledger(REPO, PR, PATH, _ledger(("1" * 16, (A, B), 0.0)))
    assert store.record_ticks(REPO, PR, PATH, {A: True}, "alice") == [A]
    assert store.record_dismissal(REPO, PR, A, "bob", "noise") == PATH
    store.record_ledger(REPO, PR, PATH, _ledger(("1" * 16, (A, B), 0.0)))  # the comment re-read
    _, findings = store.outcomes(REPO, 0, 2e9)
    assert [(f.finding_id, f.adopted, f.adopted_by, f.dismissed, f.dismissed_by) for f in findings] == [
        (A, True, "alice", True, "bob"),
        (B, False, None, False, None),
    ]


def test_outcomes_read_one_repo_or_all_within_a_window(store: StateStore, clock: Clock) -> None:
    store.record_ledger(REPO, PR, PATH, _ledger(("1" * 16, (A,), 0.0)))
    clock.t += 86_400
    store.record_ledger("acme/other", 1, PATH, _ledger(("1" * 16, (B,), 0.0)))
    assert [a.repo for a in store.outcomes(None, 0, 2e9)[0]] == ["acme/other", REPO]
    assert [a.repo for a in store.outcomes(REPO, 0, 2e9)[0]] == [REPO]
    later, findings = store.outcomes(None, 1_000_000.0 + 3600, 2e9)
    assert [a.repo for a in later] == ["acme/other"] and [f.finding_id for f in findings] == [B]
