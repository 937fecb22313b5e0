"""Values templates see: Ansible-style truthiness, Kubernetes objects with upstream's shortcuts, and the
``timestamp`` global (docs/behaviour.md#templates, #template-filters-and-globals)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from jinja2.runtime import Undefined

from poolboy.utils import timeutil

_TRUE_STRINGS = frozenset({"1", "on", "t", "true", "y", "yes"})


def str2bool(value: Any) -> bool:
    """Ansible-style truthiness: strings are true only for yes/y/true/t/on/1 (any case); others use ``bool``."""
    if isinstance(value, str):
        return value.strip().lower() in _TRUE_STRINGS
    if isinstance(value, Undefined):
        return False
    return bool(value)


class K8sObject(dict):
    """A Kubernetes object as a template variable (docs/behaviour.md#templates): the JSON document plus upstream's
    shortcuts.

    Shortcut attributes (``name``, ``namespace``, ``uid``, ``labels``, ``annotations``, ``metadata``, ``spec``,
    ``status``, ``creation_timestamp``, ``api_version``) read from the document; missing maps are empty, so
    ``'x' in resource_claim.annotations`` works for objects without annotations. The sandbox keeps it read-only.
    """

    __slots__ = ()

    @property
    def metadata(self) -> dict:
        value = self.get("metadata")
        return value if isinstance(value, dict) else {}

    @property
    def name(self) -> str | None:
        return self.metadata.get("name")

    @property
    def namespace(self) -> str | None:
        return self.metadata.get("namespace")

    @property
    def uid(self) -> str | None:
        return self.metadata.get("uid")

    @property
    def labels(self) -> dict:
        return self.metadata.get("labels") or {}

    @property
    def annotations(self) -> dict:
        return self.metadata.get("annotations") or {}

    @property
    def creation_timestamp(self) -> str | None:
        return self.metadata.get("creationTimestamp")

    @property
    def api_version(self) -> str | None:
        return self.get("apiVersion")

    @property
    def spec(self) -> dict:
        value = self.get("spec")
        return value if isinstance(value, dict) else {}

    @property
    def status(self) -> dict:
        value = self.get("status")
        return value if isinstance(value, dict) else {}


def wrap_object(obj: Mapping | None) -> K8sObject | None:
    """Wrap a Kubernetes object (dict) for use as a template variable; ``None`` stays ``None``."""
    if obj is None or isinstance(obj, K8sObject):
        return obj
    return K8sObject(obj)


class Timestamp:
    """The ``timestamp`` global (docs/behaviour.md#template-filters-and-globals): now by default, callable to parse,
    ``.add()`` to shift."""

    def __init__(self, value: datetime | str | None = None) -> None:
        self.datetime = timeutil.utcnow() if value is None else timeutil.parse_timestamp(value)

    def __call__(self, value: Any = None) -> Timestamp:
        if isinstance(value, Timestamp):
            return Timestamp(value.datetime)
        return Timestamp(value)

    def add(self, interval: str | timedelta | int | float) -> Timestamp:
        """Shift by an interval string ("3h"), a ``timedelta``, or a number of seconds (correct behaviour)."""
        return Timestamp(self.datetime + timeutil.parse_interval(interval))

    @property
    def utcnow(self) -> Timestamp:
        return Timestamp()

    def _other(self, other: Any) -> datetime:
        if isinstance(other, Timestamp):
            return other.datetime
        return timeutil.parse_timestamp(other)

    def __eq__(self, other: object) -> bool:
        try:
            return self.datetime == self._other(other)
        except ValueError:
            return False

    def __hash__(self) -> int:
        return hash(self.datetime)

    def __lt__(self, other: Any) -> bool:
        return self.datetime < self._other(other)

    def __le__(self, other: Any) -> bool:
        return self.datetime <= self._other(other)

    def __gt__(self, other: Any) -> bool:
        return self.datetime > self._other(other)

    def __ge__(self, other: Any) -> bool:
        return self.datetime >= self._other(other)

    def __str__(self) -> str:
        return timeutil.format_timestamp(self.datetime)

    def __repr__(self) -> str:
        return f"Timestamp({self})"

