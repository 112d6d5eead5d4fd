"""Offline evaluations: retrieval on corpora, prompts on golden cases."""
