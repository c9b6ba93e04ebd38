"""What ``with <manager> as <target>`` binds for context managers of the standard library.

``contextlib.nullcontext(enter_result=None)``: ``__enter__`` returns ``enter_result``, the
first argument (CPython ``Lib/contextlib.py``, class ``nullcontext``, 3.7 to 3.13), so
``with nullcontext(layer) as m:`` binds ``m`` to ``layer``.
"""

from __future__ import annotations

__all__ = ["ENTER_RETURNS_ARGUMENT"]

#: Qualified names of context managers whose ``__enter__`` returns their first argument
#: (keyword name in the value).
ENTER_RETURNS_ARGUMENT: dict[str, str] = {"contextlib.nullcontext": "enter_result"}
