"""Reads with the user's own identity, as kubectl makes them: the kubeconfig and context kubectl would use, and a
refusal (403), a missing object (404) or an unreachable resource turned into an :class:`Unreadable` that the trace
shows, never into a failure. Only the claim itself must be readable (:class:`ClaimUnreadable`).

:func:`observe` follows the claim to its handle, its pool, its providers and every managed resource; where the handle
cannot be read, the claim's status names the providers and the resources instead (docs/behaviour.md#claim-status).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import client, config
from kubernetes.client.rest import ApiException
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import ResourceNotFoundError

from poolboy import API_VERSION, DEFAULT_DOMAIN
from poolboy.kinds import BY_NAME, RESOURCE_CLAIM, RESOURCE_HANDLE, RESOURCE_POOL, RESOURCE_PROVIDER
from poolboy.utils.text import shorten
from poolboy_kubectl.observed import (
    FORBIDDEN,
    NOT_FOUND,
    ManagedResource,
    Object,
    Observed,
    Read,
    Unreadable,
    status,
)

#: seconds one request may take before the object is reported unreadable (kubectl's --request-timeout is unset)
REQUEST_TIMEOUT = 15.0
#: the longest a failure other than an API answer is said (a connection error names every retry)
ERROR_LENGTH = 200
#: the operator's namespace where nothing the claim records names it (the chart's default)
OPERATOR_NAMESPACE = os.environ.get("POOLBOY_NAMESPACE", "poolboy")
#: where discovery (which kinds the API server serves, for managed resources of any kind) is kept between runs
DISCOVERY_CACHE = Path.home() / ".kube" / "cache" / "poolboy-discovery"


class ClaimUnreadable(Exception):
    """The claim itself cannot be read: there is nothing to trace."""


@dataclass(frozen=True)
class Connection:
    """An API client for the kubeconfig's context, and the namespace kubectl would use in it."""

    api_client: client.ApiClient
    namespace: str


def connect(kubeconfig: str | None = None, context: str | None = None) -> Connection:
    """The API client kubectl would use: ``--kubeconfig``, else ``KUBECONFIG`` (a list of files is merged), else
    ``~/.kube/config``; ``--context``, else the current context. Raises ``config.ConfigException`` when none fits."""
    contexts, current = config.list_kube_config_contexts(config_file=kubeconfig)
    chosen = next((c for c in contexts if c.get("name") == context), None) if context else current
    if chosen is None:
        raise config.ConfigException(f"context {context!r} is not in the kubeconfig")
    configuration = client.Configuration()
    config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=configuration,
                            persist_config=False)
    namespace = (chosen.get("context") or {}).get("namespace") or "default"
    return Connection(client.ApiClient(configuration), namespace)


def refusal(error: Exception) -> str:
    """A failed read in a few words, as the trace shows it."""
    if isinstance(error, ApiException):
        if error.status == 403:
            return FORBIDDEN
        if error.status == 404:
            return NOT_FOUND
        if error.status == 401:
            return "unauthorized"
        return f"{error.status} {error.reason or ''}".strip()
    if isinstance(error, ResourceNotFoundError):
        return "the API server does not serve this kind"
    return shorten(f"{type(error).__name__}: {error}", ERROR_LENGTH)


class Reader:
    """Gets Poolboy's objects and managed resources, each as an object or as an :class:`Unreadable`."""

    def __init__(self, api_client: client.ApiClient, domain: str = DEFAULT_DOMAIN) -> None:
        self.api_client = api_client
        self.domain = domain
        self.custom = client.CustomObjectsApi(api_client)
        self._dynamic: DynamicClient | None = None

    def poolboy(self, kind: str, namespace: str, name: str) -> Read:
        """One of Poolboy's own objects (``kind`` is its Kubernetes kind, e.g. ``ResourceHandle``)."""
        return self._read(kind, namespace, name, lambda: self.custom.get_namespaced_custom_object(
            self.domain, API_VERSION, namespace, BY_NAME[kind].plural, name, _request_timeout=REQUEST_TIMEOUT))

    def resource(self, reference: Object) -> Read:
        """A managed resource by its ``reference`` (``apiVersion``, ``kind``, ``namespace``, ``name``), through
        discovery, since a provider may make any kind."""
        kind, namespace, name = str(reference.get("kind")), reference.get("namespace"), str(reference.get("name"))

        def get() -> Any:
            api = self.dynamic().resources.get(api_version=reference.get("apiVersion"), kind=kind)
            found = api.get(name=name, namespace=namespace if api.namespaced else None,
                            _request_timeout=REQUEST_TIMEOUT)
            return found.to_dict()

        return self._read(kind, namespace, name, get)

    def dynamic(self) -> DynamicClient:
        """The discovery-backed client, its cache beside kubectl's (``~/.kube/cache``), one file per API server."""
        if self._dynamic is None:
            host = self.api_client.configuration.host
            cache = DISCOVERY_CACHE / f"{hashlib.sha256(host.encode()).hexdigest()[:16]}.json"
            with contextlib.suppress(OSError):  # without a writable cache, discovery is asked each time
                cache.parent.mkdir(parents=True, exist_ok=True)
            self._dynamic = DynamicClient(self.api_client, cache_file=str(cache))
        return self._dynamic

    @staticmethod
    def _read(kind: str, namespace: str | None, name: str, get: Callable[[], Any]) -> Read:
        try:
            found = get()
        except Exception as error:  # every failure is shown in the trace; none ends it
            return Unreadable(kind, namespace, name, refusal(error))
        return dict(found)


def observe(reader: Reader, namespace: str, name: str, operator_namespace: str = OPERATOR_NAMESPACE) -> Observed:
    """The claim ``namespace/name`` and everything it leads to that the reader could (or could not) read."""
    claim = reader.poolboy(RESOURCE_CLAIM, namespace, name)
    if isinstance(claim, Unreadable):
        raise ClaimUnreadable(str(claim))
    claim_status = status(claim)
    handle_ref = claim_status.get("resourceHandle") or {}
    handle = None
    if handle_ref.get("name"):
        handle = reader.poolboy(RESOURCE_HANDLE, handle_ref.get("namespace") or operator_namespace, handle_ref["name"])
    known_handle = handle if isinstance(handle, dict) else None
    pool_namespace, pool_name = pool_of(claim, known_handle, reader.domain, operator_namespace)
    pool = reader.poolboy(RESOURCE_POOL, pool_namespace, pool_name) if pool_name else None
    providers = [reader.poolboy(RESOURCE_PROVIDER, provider_namespace, provider)
                 for provider_namespace, provider in providers_of(claim, known_handle, operator_namespace)]
    # an unbound claim's resources are not made yet: only its handle's are traced
    resources = [ManagedResource(entry, reader.resource(entry["reference"]) if entry.get("reference") else None)
                 for entry in (resource_entries(claim, known_handle) if handle is not None else [])]
    return Observed(claim, handle, pool, providers, resources)


def pool_of(claim: Object, handle: Object | None, domain: str, operator_namespace: str) -> tuple[str, str | None]:
    """The pool that made the claim's handle, else the pool the claim waits for or names, else none."""
    if handle is not None:
        ref = (handle.get("spec") or {}).get("resourcePool") or {}
        return ref.get("namespace") or operator_namespace, ref.get("name")
    waiting_for = str((status(claim).get("queue") or {}).get("waitingFor") or "")
    if waiting_for.startswith(RESOURCE_POOL + " "):
        return operator_namespace, waiting_for.split(" ", 1)[1]
    named = ((claim.get("metadata") or {}).get("annotations") or {}).get(f"{domain}/resource-pool-name")
    return operator_namespace, named


def providers_of(claim: Object, handle: Object | None, operator_namespace: str) -> list[tuple[str, str]]:
    """``(namespace, name)`` of each provider involved, in order, once each: the handle's when it could be read (it
    is what the resources are made from), else what the claim records and asks for."""
    sources = [handle.get("spec") or {}] if handle is not None else [status(claim), claim.get("spec") or {}]
    refs: list[Object] = []
    for source in sources:
        refs.append(source.get("provider") or {})
        refs += [(r or {}).get("provider") or {} for r in source.get("resources") or []]
    found: list[tuple[str, str]] = []
    for ref in refs:
        pair = (ref.get("namespace") or operator_namespace, ref.get("name"))
        if pair[1] and pair not in found:
            found.append((pair[0], str(pair[1])))
    return found


def resource_entries(claim: Object, handle: Object | None) -> list[Object]:
    """What Poolboy records of each managed resource: the handle's ``status.resources[i]`` (current) over the claim's
    (which adds the mirrored ``state`` and the claim's own ``validationError``)."""
    mirrored = [r for r in status(claim).get("resources") or [] if isinstance(r, dict)]
    recorded = [r for r in status(handle).get("resources") or [] if isinstance(r, dict)] if handle else []
    return [{**(mirrored[i] if i < len(mirrored) else {}), **(recorded[i] if i < len(recorded) else {})}
            for i in range(max(len(mirrored), len(recorded)))]
