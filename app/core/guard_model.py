"""The guard's evidence model: written by benchmarks/calibrate_guard.py --write; do not edit.

Placeholder until calibrated: the review's model (app/core/evidence_model.py) with a high floor.
"""

from dataclasses import replace

from app.core.evidence_model import DEFAULT_EVIDENCE

GUARD_EVIDENCE = replace(DEFAULT_EVIDENCE, floor=0.5, med=0.5, high=0.5)
