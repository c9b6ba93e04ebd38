from .._placeholder import module_getattr as __getattr__  # noqa: F401
from . import functional  # noqa: F401
