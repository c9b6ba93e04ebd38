"""Calls that only write diagnostic output (logging, printing, warnings).

A counter that its class reads only to decide or format such output changes no computed
value when a recomputation bumps it again (CKP202, :func:`~ckptlint.checkpoint.analyses.ast_write_exemptions.diagnostic_counter`).
Sources: CPython 3.11 ``logging`` (``Logger.debug`` … ``Logger.log``, the same module-level
functions), ``warnings.warn``, ``print``.
"""

from __future__ import annotations

__all__ = ["LOGGER_METHODS", "LOGGER_NAME_PART", "LOG_FUNCTIONS"]

#: Qualified names of functions that only write diagnostic output.
LOG_FUNCTIONS = frozenset(
    {
        "print",
        "builtins.print",
        "warnings.warn",
        *(f"logging.{m}" for m in ("debug", "info", "warning", "warn", "error", "critical", "exception", "log")),
    }
)

#: Methods of a ``logging.Logger`` (or a look-alike: loguru, accelerate's ``get_logger``).
LOGGER_METHODS = frozenset({"debug", "info", "warning", "warn", "warning_once", "error", "critical", "exception", "log"})

#: A receiver whose last name holds this (case-insensitive) is taken for a logger
#: (``logger``, ``LOGGER``, ``_log``, ``self.logger``).
LOGGER_NAME_PART = "log"
