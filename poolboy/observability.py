"""Neutral hooks, so the domain never imports a metrics library or Redis.

:mod:`poolboy.kube` reports every API request here (the engine or the watcher registers a Prometheus callback with
:func:`on_api_request`) and every successful write (:func:`on_write`: the engine records its own writes so the
watcher can drop their events). With no callback registered, reporting costs one empty loop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger(__name__)

ApiRequestCallback = Callable[[str, int], None]

_api_request_callbacks: list[ApiRequestCallback] = []


def on_api_request(callback: ApiRequestCallback) -> ApiRequestCallback:
    """Register ``callback(method, code)``, called after every Kubernetes API request (code 0 = network error).

    Returns the callback so it can be used as a decorator.
    """
    if callback not in _api_request_callbacks:
        _api_request_callbacks.append(callback)
    return callback


def remove_api_request_callback(callback: ApiRequestCallback) -> None:
    if callback in _api_request_callbacks:
        _api_request_callbacks.remove(callback)


def observe_api_request(method: str, code: int) -> None:
    """Report one API request; a failing callback is logged, never raised into the caller's request path."""
    for callback in tuple(_api_request_callbacks):
        try:
            callback(method, code)
        except Exception:
            log.exception("api request metrics callback failed")


# --- writes ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Write:
    """One successful write as :mod:`poolboy.kube` saw it: which object, and the version it produced.

    ``precondition`` is the resourceVersion the write required (from the body, the ``resource_version`` argument
    or a JSON-patch ``test`` of ``/metadata/resourceVersion``), None for an unconditional write. Only a conditional
    write proves that the object's state after it is exactly "what the writer read, plus its change" — the engine
    relies on that to drop the watch event of its own write (see :mod:`workers.own_writes`).
    """

    verb: str  # create | replace | patch
    uid: str
    resource_version: str
    precondition: str | None = None

    @property
    def conditional(self) -> bool:
        return self.precondition is not None


WriteCallback = Callable[[Write], None]

_write_callbacks: list[WriteCallback] = []


def on_write(callback: WriteCallback) -> WriteCallback:
    """Register ``callback(write)``, called after every successful create/replace/patch (never delete).

    Returns the callback so it can be used as a decorator.
    """
    if callback not in _write_callbacks:
        _write_callbacks.append(callback)
    return callback


def remove_write_callback(callback: WriteCallback) -> None:
    if callback in _write_callbacks:
        _write_callbacks.remove(callback)


def observe_write(verb: str, obj: object, precondition: str | None = None) -> None:
    """Report the object a write returned; a failing callback is logged, never raised into the write's caller."""
    if not _write_callbacks or not isinstance(obj, dict):
        return
    metadata = obj.get("metadata") or {}
    uid, version = metadata.get("uid"), metadata.get("resourceVersion")
    if not uid or not version:
        return
    write = Write(verb, str(uid), str(version), precondition)
    for callback in tuple(_write_callbacks):
        try:
            callback(write)
        except Exception:
            log.exception("write callback failed")
