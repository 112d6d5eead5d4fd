from adr_review.cli import entry

entry()
