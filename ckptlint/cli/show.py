"""``--show-settings`` (``--show-files`` and ``--show-sites`` print from the check command)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from ckptlint.cli.common import EXIT_OK

if TYPE_CHECKING:
    from ckptlint.config.files import SettingsResolver

__all__ = ["show_settings"]


def show_settings(path: Path, resolver: SettingsResolver) -> int:
    """``--show-settings``: the settings that apply to ``path``, one ``key = value`` line each
    (lists one item a line), as ruff prints them."""
    from dataclasses import fields

    settings = resolver.for_path(path)
    lines = [f'Resolved settings for: "{path}"']
    lines.append(f'Settings path: "{settings.config_path}"' if settings.config_path else "Settings path: none")
    lines.append("")
    for item in fields(settings):
        value = getattr(settings, item.name)
        if isinstance(value, frozenset):
            value = sorted(value)
        if isinstance(value, (list, tuple)):
            lines.append(f"{item.name} = [")
            lines += [f"\t{_setting_value(v)}," for v in value]
            lines.append("]")
        else:
            lines.append(f"{item.name} = {_setting_value(value)}")
    click.echo("\n".join(lines))
    return EXIT_OK


def _setting_value(value: object) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple):
        return f"{_setting_value(value[0])} = [{', '.join(_setting_value(v) for v in value[1])}]"
    return f'"{value}"'
