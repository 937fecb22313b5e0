"""The Kubernetes client, one concern per module (like Kopf's ``_cogs/clients/``):

* :mod:`~poolboy.kube.errors` — typed API errors and retry-on-conflict;
* :mod:`~poolboy.kube.transport` — one request: configuration, auth, urllib3, orjson, observability hooks;
* :mod:`~poolboy.kube.discovery` — where each kind is served;
* :mod:`~poolboy.kube.client` — :class:`KubeClient`: reads, writes (with their preconditions), watch, events;
* :mod:`~poolboy.kube.watch` — watch streams;
* :mod:`~poolboy.kube.events` and :mod:`~poolboy.kube.event_recorder` — Events, aggregated and sent off the caller's
  path;
* :mod:`~poolboy.kube.cache_model` — what the shared read cache stores and how it answers a list (the engine's
  ``workers.cache`` keeps it in Redis; reconcilers read it through the same interface as :class:`KubeClient`).

This module is the public surface: ``from poolboy.kube import KubeClient, NotFound``.
"""

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
    retry_on_conflict,
)
from poolboy.kube.transport import load_configuration

__all__ = [
    "AlreadyExists",
    "ApiError",
    "ApiMissing",
    "BadRequest",
    "Conflict",
    "Forbidden",
    "Gone",
    "Invalid",
    "KubeClient",
    "NetworkError",
    "NotFound",
    "ResourceInfo",
    "ServerError",
    "Throttled",
    "load_configuration",
    "retry_on_conflict",
]
