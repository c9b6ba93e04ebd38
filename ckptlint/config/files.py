"""Finding and reading configuration files.

ckptlint reads ``[tool.ckptlint]`` from ``pyproject.toml``, or the whole of
``.ckptlint.toml`` / ``ckptlint.toml`` (checked first, as ruff does with ``ruff.toml``). The
closest file above each linted file applies to it. Configuration is data only: TOML is
parsed with tomllib (tomli before Python 3.11), nothing is executed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

from ckptlint.config.declarations import DeclaredVersions, InvalidTargetVersion, parse_target_version
from ckptlint.config.project_root import ProjectRoots
from ckptlint.config.settings import (
    DEFAULT_EXCLUDES,
    OUTPUT_FORMATS,
    RuleSelection,
    SelectionLayer,
    Settings,
    UnknownRuleSelector,
    default_enabled,
    normalise_selectors,
)
from ckptlint.facts.versions import TargetVersion
from ckptlint.text.reading import is_file_here

__all__ = ["CliOverrides", "ConfigError", "SettingsResolver", "find_config", "load_config"]

CONFIG_NAMES = (".ckptlint.toml", "ckptlint.toml", "pyproject.toml")

_LIST_KEYS = {
    "select",
    "extend-select",
    "ignore",
    "exclude",
    "extend-exclude",
    "extend-safe-fixes",
    "extend-unsafe-fixes",
}
_BOOL_KEYS = {"unsafe-fixes", "respect-gitignore", "force-exclude", "notebooks"}
_STR_KEYS = {"cache-dir", "output-format"}
_TABLE_KEYS = {"per-file-ignores", "extend-per-file-ignores"}
_VERSION_KEYS = {"target-versions"}
KNOWN_KEYS = frozenset(_LIST_KEYS | _BOOL_KEYS | _STR_KEYS | _TABLE_KEYS | _VERSION_KEYS)


class ConfigError(Exception):
    """A configuration file that cannot be used: invalid TOML, an unknown key, a value of
    the wrong type or an unknown rule code. The message names the file and the key."""


@dataclass(frozen=True)
class CliOverrides:
    """Settings given on the command line; they win over every configuration file."""

    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] | None = None
    extend_exclude: tuple[str, ...] = ()
    unsafe_fixes: bool | None = None
    respect_gitignore: bool | None = None
    force_exclude: bool | None = None
    cache_dir: str | None = None
    target_versions: tuple[TargetVersion, ...] = ()


@dataclass
class RawConfig:
    """The validated ``[tool.ckptlint]`` table of one file."""

    path: Path
    values: dict[str, Any] = field(default_factory=dict)


def find_config(start: Path) -> Path | None:
    """The closest configuration file in ``start`` or its parents, or ``None``."""
    directory = start if start.is_dir() else start.parent
    for folder in (directory, *directory.parents):
        found = _config_in(folder)
        if found is not None:
            return found
    return None


def _config_in(folder: Path) -> Path | None:
    for name in CONFIG_NAMES:
        candidate = folder / name
        if not is_file_here(candidate):
            continue
        if name != "pyproject.toml":
            return candidate
        if _has_tool_table(candidate):
            return candidate
    return None


def _has_tool_table(path: Path) -> bool:
    try:
        data = _read_toml(path)
    except ConfigError:
        return True  # surface the error when the file is loaded
    return isinstance(data.get("tool"), dict) and "ckptlint" in data["tool"]


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except UnicodeDecodeError as exc:  # TOML is UTF-8 (tomllib decodes the bytes whole)
        raise ConfigError(f"{path}: invalid TOML: not UTF-8 (byte {exc.start})") from None
    except RecursionError:  # tomllib parses nested arrays and inline tables recursively
        raise ConfigError(f"{path}: invalid TOML: nested too deeply") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None


def load_config(path: Path) -> RawConfig:
    """Read and validate one configuration file. Raises :class:`ConfigError`."""
    data = _read_toml(path)
    if path.name == "pyproject.toml":
        table = data.get("tool", {}).get("ckptlint", {})
        prefix = "tool.ckptlint."
    else:
        table = data
        prefix = ""
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: `{prefix.rstrip('.')}` must be a table")
    values: dict[str, Any] = {}
    for key, value in table.items():
        where = f"{path}: `{prefix}{key}`"
        if key not in KNOWN_KEYS:
            raise ConfigError(f"{path}: unknown key `{prefix}{key}` (known keys: {', '.join(sorted(KNOWN_KEYS))})")
        if key in _LIST_KEYS:
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"{where} must be a list of strings")
        elif key in _BOOL_KEYS:
            if not isinstance(value, bool):
                raise ConfigError(f"{where} must be true or false")
        elif key in _STR_KEYS:
            if not isinstance(value, str):
                raise ConfigError(f"{where} must be a string")
        elif key in _TABLE_KEYS:
            if not isinstance(value, dict) or not all(
                isinstance(v, list) and all(isinstance(c, str) for c in v) for v in value.values()
            ):
                raise ConfigError(f"{where} must be a table of lists of rule codes")
        elif key in _VERSION_KEYS:
            if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
                raise ConfigError(f'{where} must be a table of version strings (`{{ transformers = "5.5" }}`)')
            try:
                table = f"[{prefix.rstrip('.')}] {key}" if prefix else key
                value = tuple(parse_target_version(lib, spec, f"{path} {table}") for lib, spec in value.items())
            except InvalidTargetVersion as exc:
                raise ConfigError(f"{path}: {exc}") from None
        values[key] = value
    try:
        for key in ("select", "extend-select", "ignore", "extend-safe-fixes", "extend-unsafe-fixes"):
            if key in values:
                values[key] = normalise_selectors(values[key], f"{path}: `{prefix}{key}`")
        for key in ("per-file-ignores", "extend-per-file-ignores"):
            if key in values:
                values[key] = {
                    pattern: normalise_selectors(codes, f"{path}: `{prefix}{key}` ({pattern!r})")
                    for pattern, codes in values[key].items()
                }
    except UnknownRuleSelector as exc:
        raise ConfigError(str(exc)) from None
    if "output-format" in values:
        if values["output-format"] not in OUTPUT_FORMATS:
            raise ConfigError(f"{path}: `{prefix}output-format` must be one of {', '.join(sorted(OUTPUT_FORMATS))}")
    return RawConfig(path, values)


def build_settings(raw: RawConfig | None, cli: CliOverrides, cwd: Path) -> Settings:
    """Combine a configuration file (or none) with command-line overrides."""
    values: Mapping[str, Any] = raw.values if raw else {}
    root = raw.path.parent if raw else cwd
    layers = [
        SelectionLayer(
            select=tuple(values["select"]) if "select" in values else None,
            extend_select=tuple(values.get("extend-select", ())),
            ignore=tuple(values.get("ignore", ())),
        ),
        SelectionLayer(select=cli.select, extend_select=cli.extend_select, ignore=cli.ignore),
    ]
    per_file = dict(values.get("per-file-ignores", {}))
    for pattern, codes in values.get("extend-per-file-ignores", {}).items():
        per_file[pattern] = tuple(per_file.get(pattern, ())) + tuple(codes)
    settings = Settings(
        root=root,
        config_path=raw.path if raw else None,
        enabled=RuleSelection(tuple(layers)).enabled(default_enabled()),
        per_file_ignores=tuple((p, tuple(c)) for p, c in sorted(per_file.items())),
        exclude=tuple(values.get("exclude", DEFAULT_EXCLUDES)),
        extend_exclude=tuple(values.get("extend-exclude", ())),
        unsafe_fixes=values.get("unsafe-fixes"),
        extend_safe_fixes=tuple(values.get("extend-safe-fixes", ())),
        extend_unsafe_fixes=tuple(values.get("extend-unsafe-fixes", ())),
        respect_gitignore=values.get("respect-gitignore", True),
        force_exclude=values.get("force-exclude", False),
        cache_dir=values.get("cache-dir", ".ckptlint_cache"),
        output_format=values.get("output-format"),
        notebooks=values.get("notebooks", True),
        target_versions=_overridden(values.get("target-versions", ()), cli.target_versions),
    )
    overrides: dict[str, Any] = {}
    if cli.exclude is not None:
        overrides["exclude"] = cli.exclude
    if cli.extend_exclude:
        overrides["extend_exclude"] = settings.extend_exclude + cli.extend_exclude
    if cli.unsafe_fixes is not None:
        overrides["unsafe_fixes"] = cli.unsafe_fixes
    if cli.respect_gitignore is not None:
        overrides["respect_gitignore"] = cli.respect_gitignore
    if cli.force_exclude is not None:
        overrides["force_exclude"] = cli.force_exclude or settings.force_exclude
    if cli.cache_dir is not None:
        overrides["cache_dir"] = cli.cache_dir
    return replace(settings, **overrides) if overrides else settings


def _overridden(*layers: tuple[TargetVersion, ...]) -> tuple[TargetVersion, ...]:
    """Target versions, a later layer's library replacing an earlier one's, sorted by library."""
    merged: dict[str, TargetVersion] = {}
    for layer in layers:
        merged.update((target.library, target) for target in layer)
    return tuple(sorted(merged.values(), key=lambda target: target.library))


class SettingsResolver:
    """The settings for any path: hierarchical lookup of the closest configuration file,
    cached per folder. With ``isolated`` no file is read (neither configuration nor
    declared library versions); with ``config`` that one file applies everywhere. The
    versions the project declares (:class:`~ckptlint.config.declarations.DeclaredVersions`)
    join the settings of each file, under the overrides."""

    def __init__(self, cli: CliOverrides, *, cwd: Path, isolated: bool = False, config: Path | None = None) -> None:
        self.cli = cli
        self.cwd = cwd
        self.isolated = isolated
        self.config = config
        self._by_config: dict[Path | None, Settings] = {}
        self._config_of_dir: dict[Path, Path | None] = {}
        self.declared = DeclaredVersions()
        self._with_versions: dict[tuple[Settings, tuple[TargetVersion, ...]], Settings] = {}
        self._project_roots = ProjectRoots()
        self._rooted: dict[Path, Settings] = {}  # the settings of no configuration, by project root

    def for_path(self, path: Path) -> Settings:
        """Settings for ``path`` (a file or folder). Raises :class:`ConfigError`."""
        if self.isolated:
            return self._settings(None)
        if self.config is not None:
            settings = self._settings(self.config)
        else:
            directory = path if path.is_dir() else path.parent
            settings = self._settings(self._config_for_dir(Path(os.path.abspath(directory))))
            if settings.config_path is None:
                settings = self._cache_at_project_root(settings, Path(os.path.abspath(directory)))
        declared = self.declared.for_path(path)
        if not declared:
            return settings
        key = (settings, declared)
        found = self._with_versions.get(key)
        if found is None:
            versions = _overridden(declared, settings.target_versions)
            found = self._with_versions[key] = replace(settings, target_versions=versions)
        return found

    def _cache_at_project_root(self, settings: Settings, directory: Path) -> Settings:
        """``settings`` (of no configuration file) with a relative cache folder placed at the
        project root of ``directory`` (:mod:`ckptlint.config.project_root`), as ruff does;
        unchanged outside a project, or with an absolute ``--cache-dir``/``CKPTLINT_CACHE_DIR``."""
        if os.path.isabs(settings.cache_dir):
            return settings
        root = self._project_roots.for_folder(directory)
        if root is None:
            return settings
        found = self._rooted.get(root)
        if found is None:
            found = self._rooted[root] = replace(settings, cache_dir=os.path.join(root, settings.cache_dir))
        return found

    def _config_for_dir(self, directory: Path) -> Path | None:
        """The closest configuration file in ``directory`` (absolute) or above, remembered
        for each folder on the way up (a loop, not recursion: a folder of any depth)."""
        climbed: list[Path] = []
        found: Path | None = None
        folder = directory
        while True:
            if folder in self._config_of_dir:
                found = self._config_of_dir[folder]
                break
            climbed.append(folder)
            found = _config_in(folder)
            if found is not None or folder.parent == folder:
                break
            folder = folder.parent
        for folder in climbed:
            self._config_of_dir[folder] = found
        return found

    def _settings(self, config: Path | None) -> Settings:
        if config not in self._by_config:
            raw = load_config(config) if config is not None else None
            self._by_config[config] = build_settings(raw, self.cli, self.cwd)
        return self._by_config[config]
