"""Decoding of Kubernetes protobuf request bodies for the kinds kubectl's typed generators send
(``kubectl create namespace|configmap|secret|serviceaccount``). client-go sends those as
``application/vnd.kubernetes.protobuf`` and does not fall back to JSON, so the server must read them.
Responses are always JSON (clients accept it). Only the fields these kinds use are mapped.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

MAGIC = b"k8s\x00"
Fields = dict[int, list[Any]]


class ProtobufError(ValueError):
    pass


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ProtobufError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _fields(data: bytes) -> Fields:
    """Wire-level parse: field number → values (ints for varints, bytes for length-delimited)."""
    fields: Fields = {}
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            length, pos = _varint(data, pos)
            value, pos = data[pos:pos + length], pos + length
        elif wire == 1:
            value, pos = data[pos:pos + 8], pos + 8
        elif wire == 5:
            value, pos = data[pos:pos + 4], pos + 4
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
        fields.setdefault(number, []).append(value)
    return fields


def _str(fields: Fields, number: int) -> str | None:
    values = fields.get(number)
    return values[-1].decode() if values else None


def _strings(fields: Fields, number: int) -> list[str]:
    return [v.decode() for v in fields.get(number, [])]


def _map(fields: Fields, number: int, binary: bool = False) -> dict[str, str] | None:
    if number not in fields:
        return None
    result = {}
    for entry in fields[number]:
        parts = _fields(entry)
        key = _str(parts, 1) or ""
        raw = parts.get(2, [b""])[-1]
        result[key] = base64.b64encode(raw).decode() if binary else raw.decode()
    return result


def _bool(fields: Fields, number: int) -> bool | None:
    values = fields.get(number)
    return bool(values[-1]) if values else None


def _prune(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if v not in (None, [], {})}


def _owner_reference(data: bytes) -> dict[str, Any]:
    f = _fields(data)
    return _prune({"kind": _str(f, 1), "name": _str(f, 3), "uid": _str(f, 4), "apiVersion": _str(f, 5),
                   "controller": _bool(f, 6), "blockOwnerDeletion": _bool(f, 7)})


def _object_meta(data: bytes) -> dict[str, Any]:
    f = _fields(data)
    return _prune({
        "name": _str(f, 1), "generateName": _str(f, 2), "namespace": _str(f, 3), "uid": _str(f, 5),
        "resourceVersion": _str(f, 6), "labels": _map(f, 11), "annotations": _map(f, 12),
        "ownerReferences": [_owner_reference(r) for r in f.get(13, [])], "finalizers": _strings(f, 14),
    })


def _meta(f: Fields) -> dict[str, Any]:
    return _object_meta(f[1][-1]) if 1 in f else {}


def _configmap(f: Fields) -> dict[str, Any]:
    return _prune({"metadata": _meta(f), "data": _map(f, 2), "binaryData": _map(f, 3, binary=True),
                   "immutable": _bool(f, 4)})


def _secret(f: Fields) -> dict[str, Any]:
    return _prune({"metadata": _meta(f), "data": _map(f, 2, binary=True), "type": _str(f, 3),
                   "stringData": _map(f, 4), "immutable": _bool(f, 5)})


def _namespace(f: Fields) -> dict[str, Any]:
    spec = _fields(f[2][-1]) if 2 in f else {}
    return _prune({"metadata": _meta(f), "spec": _prune({"finalizers": _strings(spec, 1)})})


def _service_account(f: Fields) -> dict[str, Any]:
    return _prune({
        "metadata": _meta(f),
        "secrets": [_prune({"name": _str(_fields(s), 3), "namespace": _str(_fields(s), 2)}) for s in f.get(2, [])],
        "imagePullSecrets": [{"name": _str(_fields(s), 1)} for s in f.get(3, [])],
        "automountServiceAccountToken": _bool(f, 4),
    })


DECODERS: dict[str, Callable[[Fields], dict[str, Any]]] = {
    "ConfigMap": _configmap, "Secret": _secret, "Namespace": _namespace, "ServiceAccount": _service_account,
}


def decode(body: bytes) -> dict[str, Any]:
    """A protobuf-encoded object (``k8s\\0`` + runtime.Unknown envelope) as its JSON-shaped dict."""
    if not body.startswith(MAGIC):
        raise ProtobufError("missing k8s protobuf envelope")
    envelope = _fields(body[len(MAGIC):])
    type_meta = _fields(envelope[1][-1]) if 1 in envelope else {}
    api_version, kind = _str(type_meta, 1) or "", _str(type_meta, 2) or ""
    decoder = DECODERS.get(kind)
    if decoder is None:
        raise ProtobufError(f"protobuf bodies are supported for {', '.join(DECODERS)} only, not {kind!r}")
    obj = decoder(_fields(envelope.get(2, [b""])[-1]))
    return {"apiVersion": api_version, "kind": kind, **obj}
