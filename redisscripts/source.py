"""A script's source by name: its file, after the libraries it uses.

Redis scripts cannot ``require``, so a script names the libraries it uses on its first line, ``-- uses: workqueue/queue,
engine/own_writes``, and its source is those files' text before its own: each library once, after the libraries it
uses itself, in the order named. A name is a file's path under this package without ``.lua``; its first part names
the package whose Python calls it (``workqueue/add`` is :mod:`workqueue.queue`'s ADD).
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).parent
#: the first line of a script that uses libraries
_USES = re.compile(r"--\s*uses:(.*)")
_NAME = re.compile(r"[a-z_]+(/[a-z_]+)*")


def path(name: str) -> Path:
    if not _NAME.fullmatch(name):
        raise ValueError(f"not a script name: {name!r}")
    return ROOT / f"{name}.lua"


@cache
def text(name: str) -> str:
    """The file alone."""
    return path(name).read_text()


def uses(name: str) -> tuple[str, ...]:
    """The libraries the file names on its first line."""
    match = _USES.match(text(name).partition("\n")[0])
    return tuple(part.strip() for part in match[1].split(",") if part.strip()) if match else ()


def libraries(name: str) -> tuple[str, ...]:
    """Every library the script needs, each once, every one after those it uses."""
    ordered: list[str] = []

    def visit(library: str, chain: tuple[str, ...]) -> None:
        if library in chain:
            raise ValueError(f"libraries use each other: {' -> '.join((*chain, library))}")
        for used in uses(library):
            visit(used, (*chain, library))
        if library not in ordered and library != name:
            ordered.append(library)

    visit(name, ())
    return tuple(ordered)


@cache
def source(name: str) -> str:
    """What Redis runs for ``name``: its libraries' text, then its own."""
    return "\n".join(text(part) for part in (*libraries(name), name))


def names() -> list[str]:
    """Every file's name, libraries included."""
    return sorted(str(file.relative_to(ROOT).with_suffix("")) for file in ROOT.rglob("*.lua"))
