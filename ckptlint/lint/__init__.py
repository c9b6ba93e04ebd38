"""Linting files: the gate, the one-file linter and fix loop, run orchestration, the result cache."""
