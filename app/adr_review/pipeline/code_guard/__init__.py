"""The ADR guard: the accepted decisions a code change touches."""
