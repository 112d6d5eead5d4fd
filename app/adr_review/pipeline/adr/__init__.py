"""The review of one ADR: recall of past ADRs, the blind-spot DAG, and the run that ties them together."""
