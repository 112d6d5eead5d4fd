"""What reviewers do with the findings, and the report over it."""
