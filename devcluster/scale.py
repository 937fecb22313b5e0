"""The ``scale`` subresource of custom resources: an ``autoscaling/v1`` ``Scale`` view of any CRD version that
declares ``subresources.scale``, as apiextensions-apiserver serves it, so that ``kubectl scale`` and autoscalers
drive custom resources here as they would on a real cluster.

The view maps three JSON paths of the object (dot notation, e.g. ``.spec.replicas``):

* ``spec.replicas`` ← ``specReplicasPath``. GET is a 500 when the object lacks it; a PUT or PATCH sets it. A
  PATCH is applied to the current view, in which a missing value reads as the smallest int32 so that a patch
  which does not set it is refused (400 "cannot be empty") instead of writing that sentinel.
* ``status.replicas`` ← ``statusReplicasPath`` (0 when absent); ``status.selector`` ← ``labelSelectorPath``
  (omitted when absent or empty). Writes through ``/scale`` never change them.
* ``metadata``: the object's name, namespace, uid, resourceVersion and creationTimestamp. A ``resourceVersion`` in
  the written Scale is a precondition (409 when stale); without one the write is unconditional.

Every write of such an object (main resource, status or scale) is also checked like the real server's
``ValidateScaleSpec``/``ValidateScaleStatus``: the replicas values must be int64 in 0..2^31-1 and the selector a
string, reported as 422 causes on the JSON paths themselves (``.spec.replicas``).
"""

from __future__ import annotations

import copy
from typing import Any

from devcluster import errors
from devcluster.schema import Cause

Obj = dict[str, Any]
INT32_MAX = 2 ** 31 - 1
#: apiextensions-apiserver's ``invalidSpecReplicas``: the value a PATCH sees when the spec path is absent
UNSET = -(2 ** 31)
DISCOVERY_VERBS = ["get", "patch", "update"]


class ScaleError(ValueError):
    """A value at a scale path has the wrong type (``unstructured.NestedInt64``/``NestedString`` wording)."""


def _fields(path: str) -> list[str]:
    return path.removeprefix(".").split(".")


def _go_type(value: Any) -> str:
    """Go's ``%T`` of a JSON value decoded into ``interface{}``."""
    if value is None:
        return "<nil>"
    for python_type, name in ((bool, "bool"), (int, "int64"), (float, "float64"), (str, "string"),
                              (dict, "map[string]interface {}"), (list, "[]interface {}")):
        if isinstance(value, python_type):
            return name
    return type(value).__name__


def _nested(obj: Obj, path: str) -> tuple[Any, bool]:
    """The value at ``path`` and whether it is present (a ``null`` on the way means absent)."""
    fields = _fields(path)
    node: Any = obj
    for index, field in enumerate(fields):
        if node is None:
            return None, False
        if not isinstance(node, dict):
            raise ScaleError(f".{'.'.join(fields[:index + 1])} accessor error: {node} is of the type "
                             f"{_go_type(node)}, expected map[string]interface{{}}")
        if field not in node:
            return None, False
        node = node[field]
    return node, True


def _typed(obj: Obj, path: str, expected: type, go_name: str) -> tuple[Any, bool]:
    value, found = _nested(obj, path)
    if found and not (isinstance(value, expected) and not isinstance(value, bool)):
        raise ScaleError(f"{'.' + '.'.join(_fields(path))} accessor error: {value} is of the type "
                         f"{_go_type(value)}, expected {go_name}")
    return value, found


def _replicas(obj: Obj, path: str) -> tuple[int, bool]:
    value, found = _typed(obj, path, int, "int64")
    return (value if found else 0), found


def _selector(obj: Obj, path: str | None) -> str:
    if not path:
        return ""
    value, found = _typed(obj, path, str, "string")
    return value if found else ""


def view(paths: dict[str, Any], obj: Obj, when_unset: int | None = None) -> Obj:
    """The ``Scale`` of ``obj``. A missing spec value is a 500, unless ``when_unset`` stands for it (PATCH)."""
    try:
        spec_replicas, found = _replicas(obj, paths["specReplicasPath"])
        status_replicas, _ = _replicas(obj, paths["statusReplicasPath"])
        selector = _selector(obj, paths.get("labelSelectorPath"))
    except ScaleError as error:
        raise errors.ApiError(500, "", str(error)) from None
    if not found:
        if when_unset is None:
            raise errors.internal_error(f'the spec replicas field "{paths["specReplicasPath"]}" does not exist')
        spec_replicas = when_unset
    metadata = obj["metadata"]
    scale_meta = {key: metadata[key] for key in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                  if key in metadata}
    status: Obj = {"replicas": status_replicas}
    if selector:
        status["selector"] = selector
    return {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": scale_meta,
            "spec": {"replicas": spec_replicas} if spec_replicas else {}, "status": status}


def _cannot_decode(detail: str) -> errors.ApiError:
    return errors.bad_request(f'Scale in version "v1" cannot be handled as a Scale: {detail}')


def requested(paths: dict[str, Any], body: Any, name: str, namespace: str) -> tuple[int, str | None]:
    """``(spec.replicas, resourceVersion precondition)`` of a written Scale, refusing what the server refuses."""
    if not isinstance(body, dict):
        raise _cannot_decode("json: cannot unmarshal the body into Go value of type v1.Scale")
    if body.get("kind") not in (None, "", "Scale"):
        raise errors.bad_request(f"no kind \"{body['kind']}\" is registered for the scale subresource")
    metadata = body.get("metadata") or {}
    if metadata.get("name") and metadata["name"] != name:
        raise errors.bad_request(f"the name of the object ({metadata['name']}) does not match the name on the URL "
                                 f"({name})")
    if namespace and metadata.get("namespace") and metadata["namespace"] != namespace:
        raise errors.bad_request("the namespace of the provided object does not match the namespace sent on the "
                                 "request")
    replicas = (body.get("spec") or {}).get("replicas", 0)
    if replicas is None:
        replicas = 0
    if isinstance(replicas, bool) or not isinstance(replicas, int) or not UNSET <= replicas <= INT32_MAX:
        raise _cannot_decode(f"json: cannot unmarshal {replicas!r} into Go struct field ScaleSpec.spec.replicas "
                             "of type int32")
    if replicas == UNSET:
        raise errors.bad_request(f'the spec replicas field "{paths["specReplicasPath"]}" cannot be empty')
    return replicas, str(metadata["resourceVersion"]) if metadata.get("resourceVersion") else None


def scaled(paths: dict[str, Any], current: Obj, replicas: int, resource_version: str | None) -> Obj:
    """``current`` with the spec path set to ``replicas`` (and the precondition, if any), ready to be written."""
    new = copy.deepcopy(current)
    node = new
    *parents, last = _fields(paths["specReplicasPath"])
    for field in parents:
        child = node.get(field)
        if not isinstance(child, dict):
            child = node[field] = {}
        node = child
    node[last] = replicas
    if resource_version:
        new["metadata"]["resourceVersion"] = resource_version
    return new


def _range_causes(obj: Obj, path: str) -> list[Cause]:
    try:
        value, _ = _replicas(obj, path)
    except ScaleError as error:
        return [_invalid(path, 0, str(error))]
    if value < 0:
        return [_invalid(path, value, "should be a non-negative integer")]
    if value > INT32_MAX:
        return [_invalid(path, value, f"should be less than or equal to {INT32_MAX}")]
    return []


def _invalid(field: str, value: Any, detail: str) -> Cause:
    shown = f'"{value}"' if isinstance(value, str) else value
    return {"reason": "FieldValueInvalid", "field": field, "message": f"{field}: Invalid value: {shown}: {detail}"}


def causes(paths: dict[str, Any], obj: Obj) -> list[Cause]:
    """What the server's scale validation refuses in ``obj``: replicas out of range, a selector not a string."""
    found = _range_causes(obj, paths["specReplicasPath"]) + _range_causes(obj, paths["statusReplicasPath"])
    selector_path = paths.get("labelSelectorPath")
    if selector_path:
        try:
            _selector(obj, selector_path)
        except ScaleError as error:
            found.append(_invalid(selector_path, "", str(error)))
    return found


def _path_causes(paths: dict[str, Any], key: str, field: str, prefixes: tuple[str, ...], where: str) -> list[Cause]:
    value = paths.get(key)
    if not value:
        return [{"reason": "FieldValueRequired", "field": field, "message": f"{field}: Required value"}]
    if not isinstance(value, str) or not value.startswith("."):
        return [_invalid(field, value, "must be a simple json path starting with .")]
    if not value.startswith(prefixes):
        return [_invalid(field, value, f"should be a json path under {where}")]
    return []


def crd_causes(subresources: Any, path: str) -> list[Cause]:
    """CRD validation of ``subresources.scale``: the replicas paths are required, under .spec / .status."""
    paths = (subresources or {}).get("scale") if isinstance(subresources, dict) else None
    if paths is None:
        return []
    if not isinstance(paths, dict):
        paths = {}
    field = f"{path}.scale"
    found = _path_causes(paths, "specReplicasPath", f"{field}.specReplicasPath", (".spec.",), ".spec")
    found += _path_causes(paths, "statusReplicasPath", f"{field}.statusReplicasPath", (".status.",), ".status")
    if paths.get("labelSelectorPath"):
        found += _path_causes(paths, "labelSelectorPath", f"{field}.labelSelectorPath", (".spec.", ".status."),
                              "either .spec or .status")
    return found
