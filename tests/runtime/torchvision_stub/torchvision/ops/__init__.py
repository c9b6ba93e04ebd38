from .misc import FrozenBatchNorm2d

__all__ = ["FrozenBatchNorm2d"]
