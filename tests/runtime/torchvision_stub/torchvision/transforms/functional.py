import enum

from .._placeholder import module_getattr as __getattr__  # noqa: F401


class InterpolationMode(enum.Enum):
    """As torchvision.transforms.functional.InterpolationMode."""

    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"
