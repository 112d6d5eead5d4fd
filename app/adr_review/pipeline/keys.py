"""The names things are stored under: run keys, the index slot of an ADR folder, the link base.

One rule each, shared by the Action and the App (they used to compute these separately and drifted).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Iterable

from adr_review.config import RepoConfig
from adr_review.core.serde import SERDE_VERSION

RUN_KEY_VERSION = 2


def config_hash(config: RepoConfig) -> str:
    """Of the settings an ADR's review reads: `guard:` is not one of them (turning the guard on, or
    the section's arrival, re-reviews nothing)."""
    text = json.dumps(config.model_dump(mode="json", exclude={"guard"}), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def guard_key(
    *,
    repo: str,
    pr: int,
    diff: str,
    folder_digest: str,
    config: RepoConfig,
    prompt_hash: str,
    online: bool,
    title: str,
    body: str,
    nonce: str | None,
) -> str:
    """The key of one PR's guard run: a hash of what it reads (the diff, the ADR folders at the base,
    the title and body, the settings), not of the commit, so a push that changes none of them finds
    the guard comment's marker carrying it and writes nothing."""
    material = {
        "v": RUN_KEY_VERSION,
        "repo": repo,
        "pr": pr,
        "diff": hashlib.sha256(diff.encode()).hexdigest(),
        "folder": folder_digest,
        "text": hashlib.sha256(f"{title}\0{body}".encode()).hexdigest(),
        "config": hashlib.sha256(
            json.dumps(
                config.model_dump(mode="json", include={"guard", "adr_paths", "language", "retrieval"}),
                sort_keys=True,
            ).encode()
        ).hexdigest(),
        "prompts": prompt_hash,
        "online": online,
        "nonce": nonce,
    }
    digest = hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()
    return f"gk{RUN_KEY_VERSION}-{digest[:32]}"


def run_key_for(
    *,
    repo: str,
    pr: int | None,
    adr_path: str,
    content: bytes,
    config: RepoConfig,
    prompt_hash: str,
    online: bool,
    stages: Collection[str],
    nonce: str | None,
    folder_digest: str = "",
) -> str:
    """The key of one ADR's review: a hash of what it reads, not of the commit. The head and base SHAs
    are not inputs, so a push that changes neither this ADR nor its folder of past ADRs (nor the config,
    prompts or model availability) has the same key, and the comment whose marker carries it is left
    alone. `online` (a model is available) is part of it, so adding an API key later recomputes."""
    material = {
        "v": RUN_KEY_VERSION,
        "serde": SERDE_VERSION,
        "repo": repo,
        "pr": pr,
        "path": adr_path,
        "folder": folder_digest,
        "content": hashlib.sha256(content).hexdigest(),
        "config": config_hash(config),
        "prompts": prompt_hash,
        "online": online,
        "stages": sorted(stages),
        "nonce": nonce,
    }
    digest = hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()
    return f"rk{RUN_KEY_VERSION}-{digest[:32]}"


def folder_digest(files: Iterable[tuple[str, str]]) -> str:
    """The past ADRs a review can read, as (path, git blob id) pairs: equal digests, equal folders."""
    text = "\n".join(f"{p}\0{b}" for p, b in sorted(files))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def index_slot(repo: str, adr_dir: str) -> str:
    """The storage name of one (repository, ADR folder) index. A hash, not a slug: slugs collided
    (`acme/platform` + `docs/adr` and `acme/platform_docs` + `adr` shared one folder)."""
    digest = hashlib.sha256(f"{repo}\0{adr_dir.strip('/')}".encode()).hexdigest()
    return f"ix-{digest[:24]}"


def link_base(web_url: str, repo: str, base_sha: str) -> str:
    """Where the comment links past ADRs: the files as they are at the PR's base commit."""
    return f"{web_url.rstrip('/')}/{repo}/blob/{base_sha}"


def seed_for(run_key: str) -> int:
    """The perspective draw's seed when none is given: reproducible from the run key."""
    return int(hashlib.sha256(run_key.encode()).hexdigest()[:8], 16)
