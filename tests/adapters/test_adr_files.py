"""Folder loading: which files count as ADRs, per-file errors, unique ids."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import adr_review.core.adr as adr_package
from adr_review.adapters.adr_files import (
    _parser_version,
    is_adr_candidate,
    load_adr_folder,
    load_adr_folder_cached,
    read_adr_file,
    scan_adr_folder,
)
from adr_review.core.adr import AdrParseError, canonical_id_key

REPO = Path(__file__).resolve().parents[2]
# Slices of the real corpora (SOURCE.md there); the whole ones: benchmarks/test_shared_corpora.py
CORPORA = REPO / "tests" / "fixtures" / "corpora"


def _write(root: Path, rel: str, data: bytes | str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data.encode() if isinstance(data, str) else data)


@pytest.mark.parametrize(
    ("rel", "expected"),
    [
        ("0001-use-postgres.md", True),
        ("sub/0002-x.markdown", True),
        ("README.md", False),
        ("docs/readme.md", False),
        ("index.md", False),
        ("template.md", False),
        ("adr-template.md", False),
        ("0000-template.md", False),
        ("templates.md", True),  # only the word "template" itself marks a template
        (".drafts/0003-x.md", False),
        ("sub/.hidden.md", False),
    ],
)
def test_is_adr_candidate(rel: str, expected: bool) -> None:
    assert is_adr_candidate(rel) is expected


def test_load_folder_reports_bad_files_and_keeps_going(tmp_path: Path) -> None:
    _write(
        tmp_path,
        "0001-use-postgres.md",
        "# Use Postgres\n\n## Status\n\nAccepted\n\n## Decision\n\nPostgres.\n",
    )
    _write(tmp_path, "0002-empty.md", b"")
    _write(tmp_path, "0003-latin1.md", "# Caf\u00e9\n".encode("latin-1"))
    _write(tmp_path, "0004-binary.md", b"\x00\x01\x02PNG")
    _write(tmp_path, "nested/0005-events.markdown", "# Events\n\n## Decision\n\nKafka.\n")
    _write(tmp_path, "README.md", "# ADRs\n")
    _write(tmp_path, "0000-template.md", "# Title\n")
    _write(tmp_path, ".git/0006-hidden.md", "# Hidden\n")
    _write(tmp_path, "notes.txt", "not markdown")

    adrs, errors = load_adr_folder(tmp_path)

    assert [a.path for a in adrs] == ["0001-use-postgres.md", "nested/0005-events.markdown"]
    assert [a.adr_id for a in adrs] == ["ADR-0001", "ADR-0005"]
    assert sorted((e.path, e.reason.split(" (")[0]) for e in errors) == [
        ("0002-empty.md", "empty file"),
        ("0003-latin1.md", "not UTF-8"),
        ("0004-binary.md", "binary file"),
    ]


def test_duplicate_ids_keep_the_first_and_show_later_ones_by_their_file_name(tmp_path: Path) -> None:
    _write(tmp_path, "095-mesh-opentelemetry-backend.md", "# OTel backend\n\n## Decision\n\nA.\n")
    _write(tmp_path, "095-mesh-scoped-zone-ingress.md", "# Zone ingress\n\n## Decision\n\nB.\n")
    _write(tmp_path, "0095-third.md", "# Third\n\n## Decision\n\nC.\n")
    _write(tmp_path, "096-other.md", "# Other\n\n## Decision\n\nD.\n")
    _write(tmp_path, "sub/095-mesh-scoped-zone-ingress.md", "# Again\n\n## Decision\n\nE.\n")
    _write(tmp_path, "0097-xy/index.md", "# Folder ADR\n\n## Decision\n\nF.\n")
    _write(tmp_path, "0097-y.md", "# Flat\n\n## Decision\n\nG.\n")

    adrs, errors = load_adr_folder(tmp_path)

    assert not errors
    ids = {a.path: a.adr_id for a in adrs}
    # Sorted by path: "0095-third.md" < "095-mesh-o..." < "095-mesh-s..." < "sub/..."
    assert ids == {
        "0095-third.md": "ADR-0095",
        "095-mesh-opentelemetry-backend.md": "095-mesh-opentelemetry-backend",
        "095-mesh-scoped-zone-ingress.md": "095-mesh-scoped-zone-ingress",
        "096-other.md": "ADR-0096",
        "sub/095-mesh-scoped-zone-ingress.md": "sub/095-mesh-scoped-zone-ingress",  # its stem was taken
        "0097-xy/index.md": "ADR-0097",
        "0097-y.md": "0097-y",
    }
    keys = [canonical_id_key(a.adr_id) for a in adrs]
    assert len(set(keys)) == len(keys)
    for adr in adrs:
        if adr.adr_id.startswith("ADR-"):
            assert not adr.notes
            continue
        # Never an invented id: what is shown is the file's name or path, which the user can find.
        assert adr.path.startswith(adr.adr_id)
        assert adr.extra["original_id"] in ("ADR-0095", "ADR-0097")
        (note,) = adr.notes
        assert note.startswith(adr.extra["original_id"] + " is also the id of ") and adr.adr_id in note
    assert next(a for a in adrs if a.path == "0097-y.md").notes == (
        "ADR-0097 is also the id of 0097-xy/index.md: this file is listed as 0097-y",
    )


def test_kuma_reused_numbers_get_unique_ids() -> None:
    adrs, errors = load_adr_folder(CORPORA / "kumahq__kuma")
    assert not errors
    assert len(adrs) == 6
    keys = [canonical_id_key(a.adr_id) for a in adrs]
    assert len(set(keys)) == len(keys)
    by_path = {a.path: a.adr_id for a in adrs}
    assert by_path["095-mesh-opentelemetry-backend.md"] == "ADR-0095"
    assert by_path["095-mesh-scoped-zone-ingress-egress.md"] == "095-mesh-scoped-zone-ingress-egress"
    assert by_path["100-otel-env-bootstrap-runtime.md"] == "ADR-0100"
    assert by_path["100-zone-egress-endpoint-storage.md"] == "100-zone-egress-endpoint-storage"


def test_every_corpus_folder_loads_without_errors() -> None:
    corpora = CORPORA
    total = 0
    for folder in sorted(p for p in corpora.iterdir() if p.is_dir()):
        adrs, errors = load_adr_folder(folder)
        assert not errors, errors
        assert len({canonical_id_key(a.adr_id) for a in adrs}) == len(adrs)
        total += len(adrs)
    assert total == 42
    # Nested folders keep their relative path (the qrels use "tendermint-core/adr-007-....md").
    cometbft, _ = load_adr_folder(corpora / "cometbft__cometbft")
    assert "tendermint-core/adr-007-trust-metric-usage.md" in {a.path for a in cometbft}


def test_parse_cache_version_changes_when_any_module_of_the_parser_package_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cache key covers every module of app/adr_review/core/adr/, not only its __init__: a copy of the package
    stands in for it, and changing or adding any one module must change the version."""
    before = _parser_version()
    copy = tmp_path / "adr"
    shutil.copytree(
        Path(str(adr_package.__file__)).parent, copy, ignore=shutil.ignore_patterns("__pycache__")
    )
    monkeypatch.setattr(adr_package, "__file__", str(copy / "__init__.py"))
    assert _parser_version() == before  # the same bytes give the same version
    modules = sorted(copy.glob("*.py"))
    assert len(modules) > 1
    for module in modules:
        original = module.read_bytes()
        module.write_bytes(original + b"\n# changed\n")
        assert _parser_version() != before, module.name
        module.write_bytes(original)
    assert _parser_version() == before
    (copy / "new_rules.py").write_text("RULES = ()\n", encoding="utf-8")
    assert _parser_version() != before


def test_read_adr_file_errors_carry_the_relative_path(tmp_path: Path) -> None:
    with pytest.raises(AdrParseError) as err:
        read_adr_file(tmp_path / "missing.md", "docs/adr/missing.md")
    assert err.value.path == "docs/adr/missing.md"
    assert err.value.reason.startswith("cannot read file")

    big = tmp_path / "big.md"
    big.write_bytes(b"# Big\n" + b"x" * 5000)
    with pytest.raises(AdrParseError, match="file too large"):
        read_adr_file(big, "big.md", max_bytes=1000)


def test_missing_folder_is_an_error_not_a_crash(tmp_path: Path) -> None:
    adrs, errors = load_adr_folder(tmp_path / "nope")
    assert adrs == []
    assert len(errors) == 1 and "does not exist" in errors[0].reason


def test_examples_folder_loads_and_links_resolve() -> None:
    adrs, errors = load_adr_folder(REPO / "examples" / "adr")
    assert not errors
    assert 6 <= len(adrs) <= 7
    assert {a.language for a in adrs} == {"en", "ja"}
    paths = {a.path for a in adrs}
    ids = {canonical_id_key(a.adr_id) for a in adrs}
    # Every link in the examples points at an example ADR (by file or by id).
    for adr in adrs:
        for link in adr.links:
            assert link.target in paths or canonical_id_key(link.target) in ids, (adr.path, link)
    kinds = {link.kind for a in adrs for link in a.links}
    assert kinds == {"supersedes", "superseded_by", "related"}
    superseded = [a for a in adrs if a.status == "superseded"]
    assert superseded and all(any(lk.kind == "superseded_by" for lk in a.links) for a in superseded)
    for adr in adrs:
        assert {"context", "decision", "consequences"} <= set(adr.sections), adr.path


def test_example_proposals_parse_with_risks_and_relations() -> None:
    examples, _ = load_adr_folder(REPO / "examples" / "adr")
    paths = {a.path for a in examples}
    proposals, errors = load_adr_folder(REPO / "examples" / "proposals")
    assert not errors
    assert {p.path: p.language for p in proposals} == {
        "0008-adopt-kafka-for-order-events.md": "en",
        "0009-session-store-redis.md": "ja",
    }
    for p in proposals:
        assert p.status == "proposed", p.path
        assert {"context", "decision", "alternatives", "consequences", "risks"} <= set(p.sections), p.path
        assert 60 <= p.text.count("\n") <= 150, p.path
        # "../adr/0005-....md" links leave the proposals folder: they resolve to the example's file name.
        assert sum(lk.target in paths for lk in p.links) >= 2, p.links


# --- folder rules (issue 15) ----------------------------------------------------------------------


def test_symlinks_that_leave_the_folder_are_not_followed_and_are_named(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    _write(outside, "secret.md", "# Secret\n\n## Decision\n\nThe deploy key is hunter2.\n")
    _write(outside, "more/0009-other.md", "# Other repo's ADR\n")
    folder = tmp_path / "adr"
    _write(folder, "0001-use-postgres.md", "# Use Postgres\n\n## Decision\n\nPostgres.\n")
    (folder / "0002-leak.md").symlink_to(outside / "secret.md")
    (folder / "shared").symlink_to(outside / "more", target_is_directory=True)
    (folder / "0003-alias.md").symlink_to(folder / "0001-use-postgres.md")  # inside: followed

    adrs, errors = load_adr_folder(folder)

    assert [a.path for a in adrs] == ["0001-use-postgres.md", "0003-alias.md"]
    assert not any("hunter2" in a.text for a in adrs)
    assert [(e.path, e.reason) for e in errors] == [
        ("0002-leak.md", "symlink to a file outside the ADR folder: not followed"),
        ("shared", "symlink to a folder outside the ADR folder: not followed"),
    ]
    cached, cached_errors = load_adr_folder_cached(folder, tmp_path / "cache.json")
    assert [a.path for a in cached] == [a.path for a in adrs]
    assert [e.path for e in cached_errors] == ["0002-leak.md", "shared"]


def test_non_adr_files_are_not_indexed_and_the_folder_per_adr_layout_is_read(tmp_path: Path) -> None:
    _write(tmp_path, "LICENSE.md", "# MIT License\n\nPermission is hereby granted...\n")
    _write(tmp_path, "CHANGELOG.md", "# Changelog\n")
    _write(tmp_path, "adr-template-bare.md", "# {short title}\n")
    _write(tmp_path, "index.md", "# Decisions\n\n- [Use Kafka](0007-use-kafka/index.md)\n")
    _write(
        tmp_path, "0007-use-kafka/index.md", "# Use Kafka\n\n## Status\n\nAccepted\n\n## Decision\n\nKafka.\n"
    )
    _write(tmp_path, "0007-use-kafka/appendix.md", "# Benchmarks\n")
    _write(tmp_path, "0008-use-redis.md", "# Use Redis\n\n## Decision\n\nRedis.\n")

    adrs, errors = load_adr_folder(tmp_path)

    assert not errors
    assert [(a.path, a.adr_id, a.title) for a in adrs] == [
        ("0007-use-kafka/index.md", "ADR-0007", "Use Kafka"),
        ("0008-use-redis.md", "ADR-0008", "Use Redis"),
    ]


def test_the_remote_folder_follows_the_same_rules_and_reports_id_clashes() -> None:
    from adr_review.adapters.remote_folder import BlobCache, load_remote_folder
    from tests.fakes.github_port import MemoryGitHub

    gh = MemoryGitHub(
        files={
            "main": {
                "docs/adr/0003-first.md": b"# 3. First\n\n## Decision\n\nA.\n",
                "docs/adr/0004-copied.md": b"# 3. Copied title\n\n## Decision\n\nB.\n",
                "docs/adr/0005-five/index.md": b"# Five\n\n## Decision\n\nC.\n",
                "docs/adr/0005-five/notes.md": b"# Notes\n",
                "docs/adr/LICENSE.md": b"# License\n",
                "docs/adr/0006-empty.md": b"",
            }
        }
    )
    adrs, notices = load_remote_folder(gh, "acme/shop", "main", "docs/adr", BlobCache())
    assert [(a.path, a.adr_id) for a in adrs] == [
        ("0003-first.md", "ADR-0003"),
        ("0004-copied.md", "ADR-0004"),  # no longer "ADR-0003-b": the file number wins
        ("0005-five/index.md", "ADR-0005"),
    ]
    assert notices == [
        "docs/adr/0004-copied.md: the title says ADR-0003 but the file name says ADR-0004: ADR-0004 is used",
        "not indexed: docs/adr/0006-empty.md: empty file",
    ]


@pytest.mark.parametrize("spelling", ["absolute", "relative", "trailing slash", "dot segment"])
def test_the_relative_paths_do_not_depend_on_how_the_folder_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spelling: str
) -> None:
    folder = tmp_path / "docs" / "adr"
    (folder / "2024" / "q1").mkdir(parents=True)
    for rel in ("0001-use-kafka.md", "2024/0002-use-nats.md", "2024/q1/0003-use-redis.md"):
        (folder / rel).write_text(f"# {rel}\n\nStatus: accepted\n")
    (tmp_path / "outside.md").write_text("# 9. Secret\n")
    (folder / "2024" / "0004-link.md").symlink_to(tmp_path / "outside.md")
    (folder / "2024" / "0005-inner-link.md").symlink_to(folder / "0001-use-kafka.md")
    monkeypatch.chdir(tmp_path)
    root = {
        "absolute": folder,
        "relative": Path("docs/adr"),
        "trailing slash": Path("docs/adr/"),
        "dot segment": Path("./docs/../docs/adr"),
    }[spelling]
    files, errors = scan_adr_folder(root)
    assert [rel for _p, rel in files] == [
        "0001-use-kafka.md",
        "2024/0002-use-nats.md",
        "2024/0005-inner-link.md",  # a link that stays inside is read
        "2024/q1/0003-use-redis.md",
    ]
    assert all(p.is_file() for p, _rel in files)
    assert [e.path for e in errors] == ["2024/0004-link.md"]
