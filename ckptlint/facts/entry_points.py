"""Definitions that a tool calls by naming convention, without any code naming them.

pytest collects top-level functions named ``test*`` and classes named ``Test*`` from files named
``test_*.py`` or ``*_test.py`` (pytest 8 defaults of ``python_files``, ``python_functions``,
``python_classes``: https://docs.pytest.org/en/stable/explanation/goodpractices.html#conventions-for-python-test-discovery).
Such a definition is used although nothing names it
(:func:`~ckptlint.checkpoint.definition_use.definition_named`).
"""

from __future__ import annotations

__all__ = ["PYTEST_CLASS_PREFIX", "PYTEST_FILE_PREFIX", "PYTEST_FILE_SUFFIX", "PYTEST_FUNCTION_PREFIX"]

PYTEST_FILE_PREFIX = "test_"
PYTEST_FILE_SUFFIX = "_test.py"
PYTEST_FUNCTION_PREFIX = "test"
PYTEST_CLASS_PREFIX = "Test"
