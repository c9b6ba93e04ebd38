"""Classify warnings raised by torch.utils.checkpoint by stable message keys.

The keys are fragments that have not changed across torch releases (2.1 to 2.14); the
surrounding text (for example the version in which omitting ``use_reentrant`` "will raise")
has changed several times, so matching the full message would be brittle.
"""

from __future__ import annotations

__all__ = ["WARNING_KEYS", "classify_warning"]

#: key -> message fragment (source: torch/utils/checkpoint.py, 2.9.1 lines 83-87, 141-148,
#: 471-481, 559-569; same fragments in 2.13)
WARNING_KEYS: dict[str, str] = {
    "use_reentrant_omitted": "use_reentrant parameter should be passed explicitly",
    "no_input_requires_grad": "None of the inputs have requires_grad=True",
    "multiple_device_types": "at least two types of devices",
}


def classify_warning(message: str) -> str | None:
    """Return the key in :data:`WARNING_KEYS` whose fragment occurs in ``message``, or None."""
    for key, fragment in WARNING_KEYS.items():
        if fragment in message:
            return key
    return None
