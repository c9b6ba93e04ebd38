"""The command line: argument parsing (``app``) and one module per command."""

from ckptlint.cli.app import main

__all__ = ["main"]
