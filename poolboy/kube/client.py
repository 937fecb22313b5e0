"""A thin, fast Kubernetes client: dicts in, dicts out, typed errors.

Built on the official ``kubernetes`` client's :class:`ApiClient` for configuration, authentication (token refresh,
client certificates) and the urllib3 connection pool, but never its model deserialisation: responses are parsed
with ``orjson`` straight from the raw body. That keeps reconcilers working on the same JSON documents the API server
sends (and that templates and JSON-patch diffs expect), and is several times faster than building model objects.

Any kind is resolved through discovery (:mod:`poolboy.kube.discovery`). Every request has a timeout. Every write is
reported to :mod:`poolboy.observability` with the precondition it carried (the engine's write-through and own-write
records rely on it). Events leave through :attr:`KubeClient.events` (:mod:`poolboy.kube.event_recorder`), off the
caller's path.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterator
from typing import Any, cast

from kubernetes import client as k8s_client

from poolboy.kube import event_recorder
from poolboy.kube.discovery import Discovery, ResourceInfo
from poolboy.kube.errors import BadRequest, NotFound
from poolboy.kube.interfaces import IndexMatch
from poolboy.kube.transport import JSON_PATCH, MERGE_PATCH, Transport, load_configuration
from poolboy.kube.watch import watch_events
from poolboy.observability import observe_write
from poolboy.settings import Settings
from poolboy.utils import cancellation

#: how long :meth:`KubeClient.close` waits for queued Events
CLOSE_FLUSH_SECONDS = 5.0


class KubeClient:
    """Dicts in, dicts out. Safe to share between threads (urllib3's pool is thread-safe, discovery is locked)."""

    def __init__(self, api_client: k8s_client.ApiClient, settings: Settings | None = None) -> None:
        self.api_client = api_client
        self.settings = settings or Settings.from_env()
        self.timeout = self.settings.api_timeout
        self.transport = Transport(api_client, self.timeout)
        #: where each kind is served: the :class:`~poolboy.kube.interfaces.RESTMapper` of this client
        self.discovery = Discovery(self.transport)
        #: Events about objects, sent by this client off the caller's path
        self.events = event_recorder.ApiEventRecorder(self, self.settings.operator_namespace)

    @classmethod
    def from_settings(cls, settings: Settings | None = None, kubeconfig: str | None = None) -> KubeClient:
        settings = settings or Settings.from_env()
        configuration = load_configuration(kubeconfig, settings.service_account_dir)
        # Watches hold a connection each; a larger pool avoids urllib3 discarding connections under load.
        configuration.connection_pool_maxsize = max(configuration.connection_pool_maxsize or 0, 64)
        return cls(k8s_client.ApiClient(configuration), settings)

    def close(self) -> None:
        event_recorder.flush(CLOSE_FLUSH_SECONDS)  # a clean stop does not lose the Events it just emitted
        self.api_client.close()

    def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        cancellation.checkpoint()  # a run past its time limit, or asked to stop, ends before its next request
        return self.transport.request(method, path, **kwargs)

    # --- discovery -------------------------------------------------------------------------------------------

    def resource_info(self, api_version: str, kind: str) -> ResourceInfo:
        """Where ``kind`` of ``api_version`` is served (see :class:`Discovery`)."""
        return self.discovery.resource_info(api_version, kind)

    def forget_discovery(self, api_version: str | None = None) -> None:
        self.discovery.forget_discovery(api_version)

    # --- reads -----------------------------------------------------------------------------------------------

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict:
        info = self.resource_info(api_version, kind)
        return cast(dict, self._request("GET", info.path(namespace, name)))

    def get_or_none(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict | None:
        try:
            return self.get(api_version, kind, name, namespace)
        except NotFound:
            return None

    def list_pages(self, api_version: str, kind: str, namespace: str | None = None, *,
                   label_selector: str | None = None, field_selector: str | None = None,
                   limit: int = 500) -> Iterator[list[dict]]:
        """Yield the items page by page (``limit``/``continue``); items get ``apiVersion`` and ``kind`` filled in."""
        for items, _ in self._pages(api_version, kind, namespace, label_selector, field_selector, limit):
            yield items

    def list(self, api_version: str, kind: str, namespace: str | None = None, *, label_selector: str | None = None,
             field_selector: str | None = None, index: IndexMatch | None = None) -> builtins.list[dict]:
        """The objects; with ``index``, those it matches (the API server keeps no index of ours: the selectors
        narrow the list, the index's own function decides)."""
        items = self.list_with_version(api_version, kind, namespace, label_selector=label_selector,
                                       field_selector=field_selector)[0]
        return items if index is None else [obj for obj in items if index.matches(obj)]

    def list_with_version(self, api_version: str, kind: str, namespace: str | None = None, *,
                          label_selector: str | None = None, field_selector: str | None = None,
                          limit: int = 500) -> tuple[builtins.list[dict], str]:
        """All items and the list's resourceVersion: the point a following watch resumes from."""
        items: builtins.list[dict] = []
        version = ""
        for page, page_version in self._pages(api_version, kind, namespace, label_selector, field_selector, limit):
            items.extend(page)
            version = version or page_version
        return items, version

    def _pages(self, api_version: str, kind: str, namespace: str | None, label_selector: str | None,
               field_selector: str | None, limit: int) -> Iterator[tuple[builtins.list[dict], str]]:
        info = self.resource_info(api_version, kind)
        path = info.path(namespace)
        token: str | None = None
        while True:
            query: builtins.list[tuple[str, Any]] = []
            if label_selector:
                query.append(("labelSelector", label_selector))
            if field_selector:
                query.append(("fieldSelector", field_selector))
            if limit:
                query.append(("limit", limit))
            if token:
                query.append(("continue", token))
            document = self._request("GET", path, query=query) or {}
            items = document.get("items") or []
            for item in items:
                item.setdefault("apiVersion", api_version)
                item.setdefault("kind", kind)
            metadata = document.get("metadata") or {}
            yield items, metadata.get("resourceVersion", "")
            token = metadata.get("continue")
            if not token:
                return

    # --- writes ----------------------------------------------------------------------------------------------

    def _info_for(self, body: dict) -> tuple[ResourceInfo, str | None, str | None]:
        info = self.resource_info(body["apiVersion"], body["kind"])
        metadata = body.get("metadata") or {}
        namespace = metadata.get("namespace")
        if info.namespaced and not namespace:
            raise BadRequest(400, "BadRequest", f"{body['kind']} is namespaced: metadata.namespace is required")
        return info, namespace, metadata.get("name")

    def create(self, body: dict, *, dry_run: bool = False, strict: bool = False) -> dict:
        info, namespace, _ = self._info_for(body)
        result = self._request("POST", info.path(namespace), body=body,
                               query=write_options(strict=strict, dry_run=dry_run))
        if not dry_run:
            observe_write("create", result)
        return cast(dict, result)

    def replace(self, body: dict) -> dict:
        """PUT the whole object; ``metadata.resourceVersion`` in ``body`` makes it a compare-and-swap."""
        info, namespace, name = self._info_for(body)
        result = self._request("PUT", info.path(namespace, name), body=body)
        observe_write("replace", result, body_version(body))
        return cast(dict, result)

    def replace_status(self, body: dict) -> dict:
        info, namespace, name = self._info_for(body)
        result = self._request("PUT", info.path(namespace, name, "status"), body=body)
        observe_write("replace", result, body_version(body))
        return cast(dict, result)

    def patch_merge(self, api_version: str, kind: str, name: str, namespace: str | None, patch: dict, *,
                    resource_version: str | None = None, status: bool = False) -> dict:
        """JSON merge patch (RFC 7386); with ``resource_version`` it is conditional (409 Conflict when stale)."""
        if resource_version is not None:
            patch = {**patch, "metadata": {**(patch.get("metadata") or {}), "resourceVersion": resource_version}}
        info = self.resource_info(api_version, kind)
        result = self._request("PATCH", info.path(namespace, name, "status" if status else None), body=patch,
                               content_type=MERGE_PATCH)
        observe_write("patch", result, resource_version)
        return cast(dict, result)

    def patch_json(self, api_version: str, kind: str, name: str, namespace: str | None, ops: builtins.list[dict], *,
                   status: bool = False, strict: bool = False, dry_run: bool = False) -> dict:
        """JSON patch (RFC 6902); a failing ``test`` op is a 422 :class:`Invalid`."""
        info = self.resource_info(api_version, kind)
        result = self._request("PATCH", info.path(namespace, name, "status" if status else None), body=list(ops),
                               content_type=JSON_PATCH, query=write_options(strict=strict, dry_run=dry_run))
        if dry_run:
            return cast(dict, result)
        observe_write("patch", result, tested_version(ops))
        return cast(dict, result)

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None, *,
               propagation: str | None = None, uid: str | None = None,
               resource_version: str | None = None) -> dict | None:
        """Delete; returns the object when it lingers (finalizers), None when the server answers with a Status.

        ``uid`` and ``resource_version`` are preconditions (409 Conflict when the object is another one, or changed
        since it was read): a delete decided from a possibly stale read must carry ``resource_version``."""
        info = self.resource_info(api_version, kind)
        options: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if propagation:
            options["propagationPolicy"] = propagation
        preconditions = {k: v for k, v in (("uid", uid), ("resourceVersion", resource_version)) if v}
        if preconditions:
            options["preconditions"] = preconditions
        result = self._request("DELETE", info.path(namespace, name), body=options)
        if isinstance(result, dict) and result.get("kind") != "Status":
            return result
        return None

    def delete_if_exists(self, api_version: str, kind: str, name: str, namespace: str | None = None, *,
                         propagation: str | None = None, uid: str | None = None,
                         resource_version: str | None = None) -> bool:
        try:
            self.delete(api_version, kind, name, namespace, propagation=propagation, uid=uid,
                        resource_version=resource_version)
        except NotFound:
            return False
        return True

    # --- watch -----------------------------------------------------------------------------------------------

    def watch(self, api_version: str, kind: str, namespace: str | None = None, *, resource_version: str | None = None,
              label_selector: str | None = None, timeout_seconds: int = 300,
              allow_bookmarks: bool = True, on_stream: Callable[[Any], None] | None = None) -> Iterator[dict]:
        """Raw watch events ``{"type", "object"}`` until the server ends the stream (see :func:`watch_events`)."""
        return watch_events(self.transport, self.resource_info(api_version, kind).path(namespace),
                            resource_version=resource_version, label_selector=label_selector,
                            timeout_seconds=timeout_seconds, allow_bookmarks=allow_bookmarks, on_stream=on_stream)


def body_version(body: dict) -> str | None:
    """The resourceVersion a PUT body requires (None: an unconditional replace)."""
    version = (body.get("metadata") or {}).get("resourceVersion")
    return str(version) if version else None


def tested_version(ops: list[dict]) -> str | None:
    """The resourceVersion a JSON patch requires through a ``test`` op (None: no such op)."""
    for op in ops:
        if op.get("op") == "test" and op.get("path") == "/metadata/resourceVersion" and op.get("value"):
            return str(op["value"])
    return None


def write_options(*, strict: bool, dry_run: bool) -> list[tuple[str, str]] | None:
    """The query of a write: ``fieldValidation=Strict`` (unknown and duplicate fields refused, as kubectl asks) and
    ``dryRun=All`` (answered, not stored)."""
    query = [("fieldValidation", "Strict")] if strict else []
    if dry_run:
        query.append(("dryRun", "All"))
    return query or None
