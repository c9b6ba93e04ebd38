"""Inert placeholders: any name imports, and using one raises."""

from __future__ import annotations

from typing import Any


class Placeholder:
    """Stands for a torchvision class or function the tests never use."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError("torchvision stub: not available in the tests")


def module_getattr(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    return type(name, (Placeholder,), {})
