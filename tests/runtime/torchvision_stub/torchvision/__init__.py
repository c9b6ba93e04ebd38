"""Test-only torchvision stand-in (see ../README.md): enough for ``import timm``."""

__version__ = "0.0.0+stub"
