"""What ``kubectl poolboy`` prints: a trace as an aligned tree table (kubectl's style: upper-case headers, columns
separated by three spaces) or as JSON for machines, and an explanation as a few lines of words.

Only formatting happens here; what each cell says is decided in :mod:`.trace` and :mod:`.why`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator

from poolboy_kubectl.observed import Unreadable
from poolboy_kubectl.trace import Node
from poolboy_kubectl.why import Explanation

HEADERS = ("NAME", "NAMESPACE", "READY", "HEALTHY", "STATUS", "CONDITIONS")
#: STATUS is cut to this many characters unless ``-o wide`` asks for all of it
STATUS_WIDTH = 80
#: marks READY and HEALTHY taken from the claim's status because the object itself could not be read
MIRRORED = "*"
GAP = "   "


def table(root: Node, unreadable: list[Unreadable], wide: bool = False) -> str:
    """The tree, one object a line, then a line for each object that could not be read."""
    rows = [HEADERS] + [_row(node, label, wide) for node, label in _walk(root)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADERS) - 1)]
    lines = [GAP.join([*(cell.ljust(width) for cell, width in zip(row, widths, strict=False)), row[-1]]).rstrip()
             for row in rows]
    if unreadable:
        lines.append("")
        lines += [f"{item}" for item in unreadable]
        if any(node.shown_from for node, _ in _walk(root)):
            lines.append(f"{MIRRORED} READY and HEALTHY of an object that cannot be read are from the claim's status")
    return "\n".join(lines) + "\n"


def as_json(root: Node, unreadable: list[Unreadable]) -> str:
    """The tree as JSON: ``{"trace": {...node, "children": [...]}, "unreadable": [...]}``."""
    return json.dumps({"trace": dataclasses.asdict(root), "unreadable": [dataclasses.asdict(u) for u in unreadable]},
                      indent=2) + "\n"


def explanation(explained: Explanation) -> str:
    """The verdict on its own line, then each reason, indented."""
    return "\n".join([explained.verdict, *(f"  {reason}" for reason in explained.reasons)]) + "\n"


def explanation_json(explained: Explanation) -> str:
    return json.dumps(dataclasses.asdict(explained), indent=2) + "\n"


def _walk(node: Node, indent: str = "", connector: str = "") -> Iterator[tuple[Node, str]]:
    """Each node with its NAME cell: ``kind/name`` below its parent's, joined by tree lines."""
    yield node, f"{indent}{connector}{node.kind}/{node.name}"
    below = indent + ("" if not connector else "│  " if connector.startswith("├") else "   ")
    for index, child in enumerate(node.children):
        yield from _walk(child, below, "└─ " if index == len(node.children) - 1 else "├─ ")


def _row(node: Node, label: str, wide: bool) -> tuple[str, ...]:
    mark = MIRRORED if node.shown_from else ""
    return (label, node.namespace or "-", _flag(node.ready, mark), _flag(node.healthy, mark),
            _cut(node.status or "-", wide), _conditions(node) or "-")


def _flag(value: bool | None, mark: str) -> str:
    return "-" if value is None else f"{value}{mark}"


def _cut(text: str, wide: bool) -> str:
    text = " ".join(text.split())
    return text if wide or len(text) <= STATUS_WIDTH else text[:STATUS_WIDTH - 1] + "…"


def _conditions(node: Node) -> str:
    return ", ".join(f"{c.get('type')}={c.get('status')} {c.get('reason') or ''}".rstrip() for c in node.conditions)
