"""The Lua scripts the project declares (:class:`redisscripts.Script`), found by walking the packages that call them:
what the unit tests hold against the script files and the integration tests have Redis compile."""

from __future__ import annotations

import importlib
import pkgutil

from redisscripts import Script

#: the packages whose Python may declare scripts
CALLERS = ("workqueue", "cache", "engine", "workers", "watcher")


def declared_scripts() -> dict[str, Script]:
    """Every declared script by name; a name declared twice fails."""
    found: dict[str, list[Script]] = {}
    for top in CALLERS:
        package = importlib.import_module(top)
        for info in pkgutil.walk_packages(package.__path__, top + "."):
            for value in vars(importlib.import_module(info.name)).values():
                if isinstance(value, Script) and all(value is not seen for seen in found.get(value.name, [])):
                    found.setdefault(value.name, []).append(value)
    twice = {name: scripts for name, scripts in found.items() if len(scripts) > 1}
    assert not twice, f"scripts declared more than once: {twice}"
    return {name: scripts[0] for name, scripts in found.items()}
