"""Hatch build hook: put the generated `shellgate.v1` stubs into the shellgate-client wheel.

They live in the repository's protos/ folder, beside the client's own folder; an sdist
carries a copy under protos/ (see pyproject.toml), so a wheel builds from either.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class StubsHook(BuildHookInterface):  # type: ignore[type-arg]
    """Force-include the v1 stubs as shellgate/v1 (caches and .proto sources left out)."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        """Map every stub file into the wheel."""
        root = Path(self.root)
        stubs = ("protos", "shellgate", "v1")
        for candidate in (root.parent.joinpath(*stubs), root.joinpath(*stubs)):
            if candidate.is_dir():
                break
        else:
            raise FileNotFoundError("shellgate.v1 stubs not found (../protos or protos/)")
        for path in sorted(candidate.iterdir()):
            if path.is_file() and path.suffix in (".py", ".pyi", ".typed"):
                build_data["force_include"][str(path)] = f"shellgate/v1/{path.name}"
