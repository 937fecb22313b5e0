"""The bad-input corpus: one YAML file per case under ``tests/corpus/cases/``, loaded into :class:`Case` objects.

A case file holds the objects to apply, in order, and what the user must see. Placeholders keep cases independent
when they all run at once in one stack: ``$NS`` is the case's own user namespace and ``$ID`` a prefix unique to the
case (for names in the shared operator namespace). Generators build inputs that are too large to write out:
``{$repeat: [text, times]}`` (a string), ``{$nest: [depth, leaf]}`` (``{"a": {"a": … leaf}}``) and
``{$items: [count, value]}`` (a list), ``{$keys: count}`` (a mapping of that many keys).

``expect`` is either ``{rejected: <fragment of the API's message>}`` — the API server refuses the object marked
``offending: true`` (its schema is the first line of defence) — or a condition on an object that does exist::

    expect:
      object: {kind: ResourceClaim, name: bad}     # namespace: $NS for claims, the operator namespace otherwise
                                                 # (or {kind, selector: <labels>} for an object Poolboy made)
      condition: {type: Synced, status: "False", reason: ValidationFailed, message: "is not of type"}

A Warning Event with the condition's reason on that object is expected too, except in a case marked
``warnings: none``: input at a limit that must still work, whose condition (say ``Ready``) comes with no Warning
Event at all. A broken provider says so on itself (``Valid=False``, ``InvalidSpec``) and on the claim or pool that
uses it (``ProviderInvalid``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

CASES_DIR = Path(__file__).parent / "cases"
OPERATOR_NAMESPACE = "poolboy"
NAMESPACED_IN_USER = frozenset({"ResourceClaim", "ConfigMap"})


@dataclass(frozen=True)
class Case:
    id: str
    description: str
    namespace: str
    objects: list[dict[str, Any]]
    offending: dict[str, Any]  # the object whose rejection or condition is expected
    expect: dict[str, Any]

    @property
    def rejected(self) -> str | None:
        return self.expect.get("rejected")

    @property
    def quiet(self) -> bool:
        """Input within the limits: the condition comes with no Warning Event."""
        return self.expect.get("warnings") == "none"

    @property
    def condition(self) -> dict[str, str]:
        return {key: str(value) for key, value in (self.expect.get("condition") or {}).items()}


def _expand(value: Any) -> Any:
    """Replace generator mappings (``$repeat``, ``$nest``, ``$items``) by the values they describe."""
    if isinstance(value, dict):
        if len(value) == 1 and next(iter(value)).startswith("$"):
            (name, args), = value.items()
            if name == "$repeat":
                return str(args[0]) * int(args[1])
            if name == "$nest":
                nested = _expand(args[1])
                for _ in range(int(args[0])):
                    nested = {"a": nested}
                return nested
            if name == "$items":
                return [_expand(args[1]) for _ in range(int(args[0]))]
            if name == "$keys":
                return {f"k{index}": index for index in range(int(args))}
            raise ValueError(f"unknown generator {name}")
        return {key: _expand(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_expand(item) for item in value]
    return value


def _namespace_of(obj: dict[str, Any], namespace: str) -> str:
    return namespace if obj.get("kind") in NAMESPACED_IN_USER else OPERATOR_NAMESPACE


def load(path: Path) -> Case:
    case_id = "c" + re.sub(r"[^a-z0-9]", "", path.stem.split("-", 1)[0])
    namespace = f"corpus-{path.stem}"[:63].rstrip("-")
    text = path.read_text().replace("$NS", namespace).replace("$ID", case_id)
    raw = yaml.safe_load(text)
    objects = []
    offending: dict[str, Any] | None = None
    for item in raw["objects"]:
        obj = _expand(item)
        marked = obj.pop("offending", False)
        obj.setdefault("apiVersion", "poolboy.gpte.redhat.com/v1")
        obj.setdefault("metadata", {}).setdefault("namespace", _namespace_of(obj, namespace))
        objects.append(obj)
        if marked:
            offending = obj
    expect = raw["expect"]
    if offending is None:
        wanted = expect["object"]
        if "selector" in wanted:  # an object Poolboy creates (a pool's handle): found by its labels
            offending = {"apiVersion": "poolboy.gpte.redhat.com/v1", "kind": wanted["kind"],
                         "metadata": {"namespace": _namespace_of(wanted, namespace)}, "selector": wanted["selector"]}
        else:
            offending = next(o for o in objects if o["kind"] == wanted["kind"]
                             and o["metadata"]["name"] == wanted["name"])
    return Case(id=path.stem, description=raw.get("description", ""), namespace=namespace, objects=objects,
                offending=offending, expect=expect)


def load_all() -> list[Case]:
    return [load(path) for path in sorted(CASES_DIR.glob("*.yaml"))]
