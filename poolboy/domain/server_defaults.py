"""What the API server stores for a managed resource's definition, so that an update sends only ops that change it.

The server adds defaults (``imagePullPolicy``, ``spec.ports[].protocol``, a Secret's ``type``), normalises values
(``cpu: 0.5`` is stored as ``500m``), folds write-only fields into others (``stringData`` into ``data``) and
allocates some (``clusterIP``). A diff from the live object to the definition sees all of that as changes, and a
provider whose ``updateFilters`` let them through would patch a converged resource on every reconcile. Two questions
put to the server itself, each answered once and remembered per process, tell them apart:

* the definition as it would be stored (a dry-run create, once per definition and namespace, whatever the names and
  annotations of each handle's copy): removing a field the server fills in anyway, or setting one to the value it
  stores as the live value already, changes nothing;
* what is left, applied as a dry-run patch (once per live version and ops): when the result is the live object, the
  ops change nothing either.
"""

from __future__ import annotations

import copy
import hashlib
import logging
from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import orjson

from poolboy import kube
from poolboy.utils import jsonpatch

if TYPE_CHECKING:
    from poolboy.context import Context

log = logging.getLogger(__name__)

#: answers kept per process, the oldest forgotten first: a few hundred handles' worth
KEPT = 512
DRY_RUN_PREFIX = "poolboy-dry-run-"
#: metadata the server changes on every write, or sets on its own: not a difference between two stored objects
_VOLATILE_METADATA = ("resourceVersion", "managedFields", "generation")


class _Answers:
    """A bounded memo of the server's answers, by key."""

    def __init__(self) -> None:
        self._answers: OrderedDict[str, Any] = OrderedDict()

    def get(self, key: str) -> tuple[bool, Any]:
        if key not in self._answers:
            return False, None
        self._answers.move_to_end(key)
        return True, self._answers[key]

    def put(self, key: str, answer: Any) -> None:
        self._answers[key] = answer
        while len(self._answers) > KEPT:
            self._answers.popitem(last=False)


_STORED_VIEWS = _Answers()
_NO_OP_PATCHES = _Answers()


def _digest(value: Any) -> str:
    return hashlib.sha256(orjson.dumps(value, option=orjson.OPT_SORT_KEYS)).hexdigest()


def effective_ops(ctx: Context, desired: Mapping[str, Any], live: Mapping[str, Any],
                  ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``ops`` (filtered, from ``live`` to ``desired``) without those that change nothing the server stores;
    empty when none does. Ops on metadata only (Poolboy's annotations after a bind, labels) are sent as they are:
    the server defaults none of it, so they cost no question."""
    if all(op["path"].startswith("/metadata/") for op in ops):
        return ops
    ops = without_stored_noise(ops, live, stored_view(ctx, desired))
    if ops and not changes_anything(ctx, live, ops):
        return []
    return ops


def stored_view(ctx: Context, desired: Mapping[str, Any]) -> dict[str, Any] | None:
    """``desired`` as the API server would store it (a dry-run create under a generated name), or None when the
    server refuses the dry run (the real write then says why). Asked once per definition and namespace: names,
    labels and annotations (each handle's own) change none of the defaults, and only the rest is compared."""
    key = _digest({**desired, "metadata": {"namespace": (desired.get("metadata") or {}).get("namespace")}})
    known, remembered = _STORED_VIEWS.get(key)
    if known:
        return dict(remembered) if remembered is not None else None
    body = copy.deepcopy(dict(desired))
    metadata = body.setdefault("metadata", {})
    metadata.pop("name", None)
    metadata["generateName"] = DRY_RUN_PREFIX
    view: dict[str, Any] | None
    try:
        view = ctx.kube.create(body, dry_run=True, strict=True)
    except kube.ApiError as error:
        log.debug("dry-run create of %s refused (%s)", desired.get("kind"), error)
        view = None
    _STORED_VIEWS.put(key, view)
    return view


def without_stored_noise(ops: list[dict[str, Any]], live: Mapping[str, Any],
                         stored: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """``ops`` minus removals of fields the server fills in anyway (a default, an allocated value) and settings of
    a value the server stores as the live value already. Metadata ops are kept: the dry run's name is its own."""
    if stored is None:
        return ops
    return [op for op in ops if not _stored_anyway(op, live, stored)]


def _stored_anyway(op: dict[str, Any], live: Mapping[str, Any], stored: Mapping[str, Any]) -> bool:
    path = op["path"]
    stored_value = jsonpatch.resolve_pointer(stored, path, None)
    if path.startswith("/metadata/") or stored_value is None:
        return False
    return op["op"] == "remove" or jsonpatch.json_equal(stored_value, jsonpatch.resolve_pointer(live, path, None))


def changes_anything(ctx: Context, live: Mapping[str, Any], ops: list[dict[str, Any]]) -> bool:
    """Whether ``ops`` applied to ``live`` change what the server stores (a dry-run patch; True when the server
    refuses it, so that the real write reports why)."""
    metadata = live.get("metadata") or {}
    key = f"{metadata.get('uid')}/{metadata.get('resourceVersion')}/{_digest(ops)}"
    known, changes = _NO_OP_PATCHES.get(key)
    if known:
        return bool(changes)
    try:
        result = ctx.kube.patch_json(live["apiVersion"], live["kind"], metadata["name"], metadata.get("namespace"),
                                     ops, strict=True, dry_run=True)
        changes = _comparable(result) != _comparable(live)
    except kube.ApiError as error:
        log.debug("dry-run patch of %s/%s refused (%s)", live.get("kind"), metadata.get("name"), error)
        changes = True
    _NO_OP_PATCHES.put(key, changes)
    return bool(changes)


def _comparable(obj: Mapping[str, Any]) -> dict[str, Any]:
    result = dict(obj)
    result["metadata"] = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _VOLATILE_METADATA}
    return result
