"""The records of a region: the frames (functions and ``forward`` methods) a checkpoint site
recomputes, the layers called, and the region itself."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass



__all__ = ["MAX_DEPTH"]



#: Levels of calls followed below the checkpointed callable (its own body is level 0).
MAX_DEPTH = 3



