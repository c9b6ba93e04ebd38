"""Definitions that a tool calls by naming convention, without any code naming them.

pytest collects top-level functions named ``test*`` and classes named ``Test*`` from files named
``test_*.py`` or ``*_test.py`` (pytest 8 defaults of ``python_files``, ``python_functions``,
``python_classes``: https://docs.pytest.org/en/stable/explanation/goodpractices.html#conventions-for-python-test-discovery).
Such a definition is used although nothing names it
(:func:`~ckptlint.checkpoint.definition_use.definition_named`).
"""

from __future__ import annotations

__all__ = ["ENTRY_POINT_DECORATORS", "PYTEST_CLASS_PREFIX", "PYTEST_FILE_PREFIX", "PYTEST_FILE_SUFFIX", "PYTEST_FUNCTION_PREFIX", "UNITTEST_BASE"]

PYTEST_FILE_PREFIX = "test_"
PYTEST_FILE_SUFFIX = "_test.py"
PYTEST_FUNCTION_PREFIX = "test"
PYTEST_CLASS_PREFIX = "Test"

#: pytest also collects ``unittest.TestCase`` subclasses of test files, whatever their name.
UNITTEST_BASE = "TestCase"

#: Decorators (their last name: ``@app.command()``, ``@click.group``, ``@hydra.main(...)``,
#: ``@app.route("/")``, ``@pytest.fixture``, ``@celery.task``) that hand the definition to a
#: framework which calls it by a command line, a request, a fixture name or a queue, not by a
#: name written in the project: click 8 / typer 0.12 (``command``, ``group``, ``callback``),
#: Hydra 1.3 (``main``), Flask 3 (``route``), pytest 8 (``fixture``, ``hookimpl``), Celery 5 (``task``).
ENTRY_POINT_DECORATORS = frozenset({"command", "group", "callback", "main", "route", "fixture", "hookimpl", "task"})
