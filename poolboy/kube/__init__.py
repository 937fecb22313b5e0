"""The Kubernetes client, one concern per module (like Kopf's ``_cogs/clients/``):

* :mod:`~poolboy.kube.errors` — typed API errors and retry-on-conflict;
* :mod:`~poolboy.kube.transport` — one request: configuration, auth, urllib3, orjson, observability hooks;
* :mod:`~poolboy.kube.discovery` — where each kind is served;
* :mod:`~poolboy.kube.interfaces` — :class:`Reader`, :class:`Writer` and :class:`Client` (both): what a reconciler
  may call, implemented by :class:`KubeClient` and by the engine's cached client; :class:`EventRecorder` and
  :class:`RESTMapper`, the Events and the discovery a reconciler is handed beside them;
* :mod:`~poolboy.kube.client` — :class:`KubeClient`: reads, writes (with their preconditions), watch; its
  ``events`` and ``discovery``;
* :mod:`~poolboy.kube.no_cluster` — what stands in for all of them in a process without a cluster;
* :mod:`~poolboy.kube.watch` — watch streams;
* :mod:`~poolboy.kube.events` and :mod:`~poolboy.kube.event_recorder` — Events, aggregated and sent off the caller's
  path.

The shared read cache (its model, its Redis store, the watcher's writer, the cached reader) is the top-level
``cache`` package: an adapter on Redis, used by the watcher and the workers, implementing the interfaces above.

This module is the public surface: ``from poolboy.kube import KubeClient, NotFound``.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

#: public name -> the module that defines it; imported on first use (PEP 562), so that importing one light module
#: of this package (``errors``, ``interfaces``) does not load the official client (~25 MB per process, e.g. beat)
_EXPORTS = {
    "KubeClient": "client", "ResourceInfo": "discovery", "load_configuration": "transport",
    "Client": "interfaces", "EventRecorder": "interfaces", "IndexMatch": "interfaces", "Reader": "interfaces",
    "RESTMapper": "interfaces", "Writer": "interfaces",
    **{name: "errors" for name in ("AlreadyExists", "ApiError", "ApiMissing", "BadRequest", "Conflict", "Forbidden",
                                   "Gone", "Invalid", "NetworkError", "NotFound", "ServerError", "Throttled",
                                   "conflict_policy")},
}

if TYPE_CHECKING:
    from poolboy.kube.client import KubeClient
    from poolboy.kube.discovery import ResourceInfo
    from poolboy.kube.errors import (
        AlreadyExists,
        ApiError,
        ApiMissing,
        BadRequest,
        Conflict,
        Forbidden,
        Gone,
        Invalid,
        NetworkError,
        NotFound,
        ServerError,
        Throttled,
        conflict_policy,
    )
    from poolboy.kube.interfaces import Client, EventRecorder, IndexMatch, Reader, RESTMapper, Writer
    from poolboy.kube.transport import load_configuration


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "AlreadyExists",
    "ApiError",
    "ApiMissing",
    "BadRequest",
    "Client",
    "Conflict",
    "EventRecorder",
    "Forbidden",
    "Gone",
    "IndexMatch",
    "Invalid",
    "KubeClient",
    "NetworkError",
    "NotFound",
    "RESTMapper",
    "Reader",
    "ResourceInfo",
    "ServerError",
    "Throttled",
    "Writer",
    "conflict_policy",
    "load_configuration",
]
