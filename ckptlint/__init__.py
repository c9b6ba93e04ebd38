"""ckptlint: a linter and runtime test helper for PyTorch activation checkpointing.

The linter (``ckptlint`` on the command line, :mod:`ckptlint.lint` in code) never imports
torch. The runtime helper (:mod:`ckptlint.runtime`) needs the ``runtime`` extra.
"""

__version__ = "0.1.0"
