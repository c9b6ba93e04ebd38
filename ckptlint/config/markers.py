"""Environment markers of declared requirements, judged for the environments torch runs in.

A requirement under a marker (``torch==2.3; sys_platform == "linux"``) applies in some
environments only. ckptlint judges the code for every environment torch 2.9-2.13 installs in, so
a marker is evaluated (``packaging.markers.Marker.evaluate``) once per environment of
:data:`ENVIRONMENTS`: true in all of them, the requirement applies everywhere; false in all, it
applies nowhere ckptlint judges (and is reported as skipped); otherwise it applies in the
environments where it holds, and the declared range is the union over environments of what
each allows (:class:`~ckptlint.config.requirement_files.RequirementList`).
"""

from __future__ import annotations

from itertools import product

from packaging.markers import InvalidMarker, Marker, UndefinedComparison, UndefinedEnvironmentName

__all__ = ["ENVIRONMENTS", "EVERYWHERE", "holds_in"]

#: Python versions torch 2.13.0 declares (its metadata: ``Requires-Python: >=3.10``, classifiers
#: 3.10 to 3.15) and the platforms it ships wheels for (Linux x86_64/aarch64, macOS arm64,
#: Windows AMD64), as ``packaging`` marker environments.
_PYTHONS = ("3.10", "3.11", "3.12", "3.13", "3.14", "3.15")
_PLATFORMS = (
    {"sys_platform": "linux", "platform_system": "Linux", "os_name": "posix", "platform_machine": "x86_64"},
    {"sys_platform": "linux", "platform_system": "Linux", "os_name": "posix", "platform_machine": "aarch64"},
    {"sys_platform": "darwin", "platform_system": "Darwin", "os_name": "posix", "platform_machine": "arm64"},
    {"sys_platform": "win32", "platform_system": "Windows", "os_name": "nt", "platform_machine": "AMD64"},
)
ENVIRONMENTS: tuple[dict[str, str], ...] = tuple(
    {
        **platform,
        "python_version": python,
        "python_full_version": f"{python}.0",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "implementation_version": f"{python}.0",
        "platform_release": "",
        "platform_version": "",
        "extra": "",
    }
    for python, platform in product(_PYTHONS, _PLATFORMS)
)

#: Every environment's index: a requirement without marker.
EVERYWHERE = frozenset(range(len(ENVIRONMENTS)))


def holds_in(marker: Marker | str | None, extra: str = "") -> frozenset[int]:
    """The indexes of the :data:`ENVIRONMENTS` where ``marker`` holds (every one for ``None``);
    ``extra``: the extra the requirement is installed with (``extra == "train"`` markers).

    Raises:
        ValueError: a marker ``packaging`` cannot parse or compare (the caller reports it).
    """
    if marker is None:
        return EVERYWHERE
    try:
        parsed = marker if isinstance(marker, Marker) else Marker(marker)
        return frozenset(
            index for index, environment in enumerate(ENVIRONMENTS) if parsed.evaluate({**environment, "extra": extra})
        )
    except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName) as exc:
        raise ValueError(f"cannot evaluate the marker `{marker}`: {exc}") from None
