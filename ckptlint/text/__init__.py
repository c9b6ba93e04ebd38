"""Source text: decoding, positions, diagnostics, edits, the fixer, noqa comments, notebooks."""
