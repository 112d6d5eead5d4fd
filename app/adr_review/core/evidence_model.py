"""The shipped evidence model: written by benchmarks/calibrate_evidence.py --write; do not edit.

Fitted on 321 qrels queries of 7 corpora (cardano-scaling__hydra, cometbft__cometbft, cosmos__cosmos-sdk, kompiro__karasu, kumahq__kuma, ministryofjustice__cloud-platform, nats-io__nats-architecture-and-design), features fused, rank, bm25_z, dense_z, title, coverage, rare_idf, rare_count, pool; floor chosen for a hit rate >= 0.81 (English) / 0.86 (Japanese), high for a precision >= 0.8. Held-out (leave-one-corpus-out) figures: docs/benchmarks.md.
"""

from adr_review.core.evidence import EvidenceModel

DEFAULT_EVIDENCE = EvidenceModel(
    intercept=-1.291755,
    weights={
        "fused": 0.036167,
        "rank": -0.510954,
        "bm25_z": 0.331555,
        "dense_z": 0.532476,
        "title": 0.469846,
        "coverage": 0.112739,
        "rare_idf": 0.241628,
        "rare_count": 0.196672,
        "pool": 0.066057,
    },
    center={
        "fused": 0.682803,
        "rank": 0.955046,
        "bm25_z": 2.056654,
        "dense_z": 1.77582,
        "title": 0.502272,
        "coverage": 0.231605,
        "rare_idf": 2.235283,
        "rare_count": 0.879334,
        "pool": 4.279125,
    },
    scale={
        "fused": 0.192744,
        "rank": 0.568891,
        "bm25_z": 1.678202,
        "dense_z": 1.36931,
        "title": 0.318552,
        "coverage": 0.116611,
        "rare_idf": 1.293168,
        "rare_count": 0.871403,
        "pool": 0.964653,
    },
    floor=0.105,
    high=0.505,
    med=0.18,
)
