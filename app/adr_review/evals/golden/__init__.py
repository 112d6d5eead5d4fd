"""The golden-eval gate on prompt changes (docs/golden-eval.md), one seam per module.

cases      case and recording files, the request key, the shared ADR library the cases read
scoring    what an answer earns, the Suite protocol, thresholds
suite_*    how one kind of prompt is fed from a case and scored, through the production stage
suites     which suite scores which prompt
runner     replay / live / record / re-key one prompt's cases
report     the text, Markdown and JSON reports
selection  `--changed-since`: the prompts whose folder, shared files or imported code changed
"""
