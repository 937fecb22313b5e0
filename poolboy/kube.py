"""A thin, fast Kubernetes client: dicts in, dicts out, typed errors.

Built on the official ``kubernetes`` client's :class:`ApiClient` for configuration, authentication (token refresh,
client certificates) and the urllib3 connection pool, but never its model deserialisation: responses are parsed
with ``orjson`` straight from the raw body. That keeps reconcilers working on the same JSON documents the API server
sends (and that templates and JSON-patch diffs expect), and is several times faster than building model objects.

Any kind is resolved through discovery (cached per apiVersion, re-discovered on a miss so CRDs created at runtime
are found). Every request has a timeout. Errors are mapped to a small hierarchy of :class:`ApiError` subclasses
whose ``transient`` flag tells the engine whether a retry with backoff can help.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar
from urllib.parse import quote

import orjson
import tenacity
import urllib3
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from poolboy.observability import observe_api_request, observe_write
from poolboy.settings import Settings

log = logging.getLogger(__name__)

T = TypeVar("T")

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"


# --- errors ------------------------------------------------------------------------------------------------------


class ApiError(Exception):
    """A failed API request. ``transient`` is True when retrying later can succeed (429, 5xx, 409, network)."""

    transient: bool = False

    def __init__(self, status: int, reason: str = "", message: str = "", body: dict | None = None,
                 retry_after: float | None = None) -> None:
        self.status = status
        self.reason = reason
        self.message = message or reason
        self.body = body
        self.retry_after = retry_after
        super().__init__(f"{status} {reason}: {self.message}" if status else f"{reason}: {self.message}")


class BadRequest(ApiError):
    pass


class Forbidden(ApiError):
    pass


class NotFound(ApiError):
    pass


class AlreadyExists(ApiError):
    """409 on create: the name is taken. With deterministic names this means "adopt", not "retry"."""


class Conflict(ApiError):
    """409 on a write with a stale resourceVersion: re-read, recompute, write again."""

    transient = True


class Gone(ApiError):
    """410: the resourceVersion of a watch or a list continuation is too old; re-list."""


class Invalid(ApiError):
    """422: the object failed validation, or a JSON-patch ``test`` op did not match."""


class Throttled(ApiError):
    transient = True


class ServerError(ApiError):
    transient = True


class NetworkError(ApiError):
    """No HTTP answer at all: connection refused or reset, timeout, TLS failure (status 0)."""

    transient = True


class ApiMissing(ApiError):
    """The group/version or the kind is not served: permanent until someone installs the API."""


_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequest, 403: Forbidden, 404: NotFound, 410: Gone, 422: Invalid, 429: Throttled,
}


def _error_for(status: int, body: dict | None, fallback_reason: str = "",
               retry_after_header: str | None = None) -> ApiError:
    """Map an HTTP status and a ``Status`` body to the matching :class:`ApiError` subclass."""
    body = body if isinstance(body, dict) else None
    reason = (body or {}).get("reason") or fallback_reason or ""
    message = (body or {}).get("message") or reason
    retry_after = _retry_after(retry_after_header, body)
    cls: type[ApiError]
    if status == 409:
        cls = AlreadyExists if reason == "AlreadyExists" else Conflict
    elif status >= 500:
        cls = ServerError
    elif status == 0:
        cls = NetworkError
    else:
        cls = _BY_STATUS.get(status, ApiError)
    return cls(status, reason, message, body, retry_after)


def _retry_after(header: str | None, body: dict | None) -> float | None:
    if header:
        try:
            return float(header)
        except ValueError:
            pass
    seconds = ((body or {}).get("details") or {}).get("retryAfterSeconds")
    return float(seconds) if seconds else None


# --- resources ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ResourceInfo:
    """What discovery says about one kind: where it lives in the URL space and whether it is namespaced."""

    api_version: str
    kind: str
    plural: str
    namespaced: bool
    verbs: tuple[str, ...] = ()

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]

    @property
    def base_path(self) -> str:
        return f"/apis/{self.api_version}" if self.group else f"/api/{self.api_version}"

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str | None = None) -> str:
        parts = [self.base_path]
        if self.namespaced and namespace:
            parts.append(f"namespaces/{quote(namespace, safe='')}")
        parts.append(self.plural)
        if name is not None:
            parts.append(quote(name, safe=""))
            if subresource:
                parts.append(subresource)
        return "/".join(parts)


def retry_on_conflict(fn: Callable[[], T], attempts: int = 5) -> T:
    """Run ``fn`` again (it must re-read what it writes) while it raises :class:`Conflict`; client-go's pattern.

    The short jittered wait spreads competing writers apart; after ``attempts`` the last Conflict propagates so
    the engine can requeue.
    """
    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_exception_type(Conflict),
        stop=tenacity.stop_after_attempt(attempts),
        wait=tenacity.wait_random(0.005, 0.05),
        reraise=True,
    )
    return retrying(fn)


# --- the client --------------------------------------------------------------------------------------------------


def load_configuration(kubeconfig: str | None = None) -> k8s_client.Configuration:
    """In-cluster service account first, then a kubeconfig (explicit argument, ``KUBECONFIG``, ``~/.kube/config``).

    An explicit ``kubeconfig`` argument wins over the in-cluster config: it is how tests and ``poolboy dev`` point
    a process at a devcluster.
    """
    configuration = k8s_client.Configuration()
    if not kubeconfig:
        try:
            k8s_config.load_incluster_config(client_configuration=configuration)
            return configuration
        except k8s_config.ConfigException:
            pass
    path = kubeconfig or os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")
    k8s_config.load_kube_config(config_file=path.split(os.pathsep)[0], client_configuration=configuration)
    return configuration


def _dumps(body: Any, fallback: Callable[[Any], Any]) -> bytes:
    """JSON bytes of a request body. orjson encodes dicts, lists, tuples, scalars and datetimes natively (RFC 3339,
    as ``isoformat``); anything else goes through ``fallback`` (the client's ``sanitize_for_serialization``).
    A body nested deeper than orjson's 255 levels (the API server accepts such objects, e.g. a user's deeply
    nested claim template) goes through the standard library instead, so writing it back never fails.
    """
    try:
        return orjson.dumps(body, default=fallback, option=orjson.OPT_NON_STR_KEYS)
    except orjson.JSONEncodeError as error:
        if "Recursion limit" not in str(error):
            raise
        return json.dumps(body, default=fallback, separators=(",", ":"), ensure_ascii=False).encode()


def _query_string(query: list[tuple[str, Any]]) -> str:
    """``?k=v&...`` encoded as the client's ``parameters_to_url_query`` does (bools lowercase, values quoted)."""
    parts = []
    for key, value in query:
        text = str(value).lower() if isinstance(value, bool) else str(value)
        parts.append(f"{key}={quote(text)}")
    return "?" + "&".join(parts)


def _timeout(timeout: Any) -> urllib3.Timeout | None:
    """The REST layer's timeout rule: a number is the total, a pair is (connect, read)."""
    if not timeout:
        return None
    if isinstance(timeout, int | float):
        return urllib3.Timeout(total=timeout)
    if isinstance(timeout, tuple) and len(timeout) == 2:
        return urllib3.Timeout(connect=timeout[0], read=timeout[1])
    return None


class KubeClient:
    """Dicts in, dicts out. Safe to share between threads (urllib3's pool is thread-safe, discovery is locked)."""

    def __init__(self, api_client: k8s_client.ApiClient, settings: Settings | None = None) -> None:
        self.api_client = api_client
        self.settings = settings or Settings.from_env()
        self.timeout = self.settings.api_timeout
        self._discovery: dict[str, dict[str, ResourceInfo]] = {}
        self._discovery_lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Settings | None = None, kubeconfig: str | None = None) -> KubeClient:
        configuration = load_configuration(kubeconfig)
        # Watches hold a connection each; a larger pool avoids urllib3 discarding connections under load.
        configuration.connection_pool_maxsize = max(configuration.connection_pool_maxsize or 0, 64)
        return cls(k8s_client.ApiClient(configuration), settings)

    def close(self) -> None:
        self.api_client.close()

    # --- transport -------------------------------------------------------------------------------------------

    def _send(self, method: str, path: str, *, query: list[tuple[str, Any]] | None = None, body: Any = None,
              content_type: str = JSON, timeout: Any = None) -> Any:
        """One request; returns the unread :class:`RESTResponse` (2xx) or raises the matching :class:`ApiError`."""
        headers = self._headers(method, path, content_type if body is not None else None)
        url = self.api_client.configuration.host + path + (_query_string(query) if query else "")
        try:
            response = self._transport(method, url, headers, body, timeout or self.timeout)
        except k8s_client.ApiException as error:  # the REST layer's own failures (e.g. TLS) have status 0
            observe_api_request(method, error.status or 0)
            raise _error_for(error.status or 0, None, str(error.reason)) from error
        except urllib3.exceptions.SSLError as error:  # as the REST layer reports it (status 0, "SSLError\n...")
            observe_api_request(method, 0)
            raise _error_for(0, None, f"{type(error).__name__}\n{error}") from error
        except (urllib3.exceptions.HTTPError, OSError) as error:
            observe_api_request(method, 0)
            raise NetworkError(0, type(error).__name__, str(error)) from error
        observe_api_request(method, response.status)
        if not 200 <= response.status <= 299:
            raw = self._read(response)
            raise _error_for(response.status, _loads_or_none(raw), response.reason or "",
                             response.headers.get("Retry-After"))
        return response

    def _headers(self, method: str, path: str, content_type: str | None) -> dict[str, str]:
        """What ``ApiClient.param_serialize`` would send: Accept, Content-Type, the client's default headers
        (User-Agent), its cookie and the BearerToken auth header (evaluated per request, so token refresh hooks run).
        """
        api_client = self.api_client
        headers = {"Accept": JSON}
        if content_type is not None:
            headers["Content-Type"] = content_type
        headers.update(api_client.default_headers)
        if api_client.cookie:
            headers["Cookie"] = api_client.cookie
        api_client.update_params_for_auth(headers, None, ["BearerToken"], path, method, None)
        return headers

    def _transport(self, method: str, url: str, headers: dict[str, str], body: Any, timeout: Any) -> Any:
        """One request on the client's urllib3 pool (its TLS, proxy and retry settings), body as orjson bytes.

        Skips the REST layer's per-call work (``sanitize_for_serialization`` of the whole body, stdlib ``json``,
        header sanitising) that the profile showed at about a quarter of a worker's CPU. Reads keep going through
        the REST layer when client-go style read retries are configured, so their semantics stay the client's.
        """
        rest = self.api_client.rest_client
        if method in ("GET", "HEAD") and getattr(self.api_client.configuration, "client_go_retries", False):
            return rest.request(method, url, headers=headers, _request_timeout=timeout)
        data = None if body is None else _dumps(body, self.api_client.sanitize_for_serialization)
        raw = rest.pool_manager.request(method, url, body=data, headers=headers, timeout=_timeout(timeout),
                                        preload_content=False)
        return k8s_client.rest.RESTResponse(raw)

    def _read(self, response: Any) -> bytes:
        try:
            return response.read() or b""
        except (urllib3.exceptions.HTTPError, OSError) as error:
            raise NetworkError(0, type(error).__name__, str(error)) from error

    def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self._send(method, path, **kwargs)
        raw = self._read(response)
        return orjson.loads(raw) if raw else None

    # --- discovery -------------------------------------------------------------------------------------------

    def resource_info(self, api_version: str, kind: str) -> ResourceInfo:
        """Where ``kind`` of ``api_version`` is served. Re-discovers once on a miss (a CRD may just have appeared)."""
        cached = self._discovery.get(api_version)
        if cached is not None and kind in cached:
            return cached[kind]
        resources = self._discover(api_version)
        if kind not in resources:
            raise ApiMissing(404, "NotFound", f"kind {kind} is not served by {_describe(api_version)}")
        return resources[kind]

    def _discover(self, api_version: str) -> dict[str, ResourceInfo]:
        base = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
        try:
            document = self._request("GET", base)
        except NotFound as error:
            raise ApiMissing(404, "NotFound", f"{_describe(api_version)} is not served by the API server") from error
        resources: dict[str, ResourceInfo] = {}
        for item in (document or {}).get("resources", []):
            if "/" in item.get("name", ""):
                continue  # subresources such as status or scale
            resources[item["kind"]] = ResourceInfo(
                api_version=api_version, kind=item["kind"], plural=item["name"],
                namespaced=bool(item.get("namespaced")), verbs=tuple(item.get("verbs") or ()),
            )
        with self._discovery_lock:
            self._discovery[api_version] = resources
        return resources

    def forget_discovery(self, api_version: str | None = None) -> None:
        """Drop cached discovery (all of it, or one apiVersion), e.g. after deleting a CRD."""
        with self._discovery_lock:
            if api_version is None:
                self._discovery.clear()
            else:
                self._discovery.pop(api_version, None)

    # --- reads -----------------------------------------------------------------------------------------------

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict:
        info = self.resource_info(api_version, kind)
        return self._request("GET", info.path(namespace, name))

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
             field_selector: str | None = None) -> list[dict]:
        return self.list_with_version(api_version, kind, namespace, label_selector=label_selector,
                                      field_selector=field_selector)[0]

    def list_with_version(self, api_version: str, kind: str, namespace: str | None = None, *,
                          label_selector: str | None = None, field_selector: str | None = None,
                          limit: int = 500) -> tuple[list[dict], str]:
        """All items and the list's resourceVersion: the point a following watch resumes from."""
        items: list[dict] = []
        version = ""
        for page, page_version in self._pages(api_version, kind, namespace, label_selector, field_selector, limit):
            items.extend(page)
            version = version or page_version
        return items, version

    def _pages(self, api_version: str, kind: str, namespace: str | None, label_selector: str | None,
               field_selector: str | None, limit: int) -> Iterator[tuple[list[dict], str]]:
        info = self.resource_info(api_version, kind)
        path = info.path(namespace)
        token: str | None = None
        while True:
            query: list[tuple[str, Any]] = []
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

    def create(self, body: dict) -> dict:
        info, namespace, _ = self._info_for(body)
        result = self._request("POST", info.path(namespace), body=body)
        observe_write("create", result)
        return result

    def replace(self, body: dict) -> dict:
        """PUT the whole object; ``metadata.resourceVersion`` in ``body`` makes it a compare-and-swap."""
        info, namespace, name = self._info_for(body)
        result = self._request("PUT", info.path(namespace, name), body=body)
        observe_write("replace", result, _body_version(body))
        return result

    def replace_status(self, body: dict) -> dict:
        info, namespace, name = self._info_for(body)
        result = self._request("PUT", info.path(namespace, name, "status"), body=body)
        observe_write("replace", result, _body_version(body))
        return result

    def patch_merge(self, api_version: str, kind: str, name: str, namespace: str | None, patch: dict, *,
                    resource_version: str | None = None, status: bool = False) -> dict:
        """JSON merge patch (RFC 7386); with ``resource_version`` it is conditional (409 Conflict when stale)."""
        if resource_version is not None:
            patch = {**patch, "metadata": {**(patch.get("metadata") or {}), "resourceVersion": resource_version}}
        info = self.resource_info(api_version, kind)
        result = self._request("PATCH", info.path(namespace, name, "status" if status else None), body=patch,
                               content_type=MERGE_PATCH)
        observe_write("patch", result, resource_version)
        return result

    def patch_json(self, api_version: str, kind: str, name: str, namespace: str | None, ops: list[dict], *,
                   status: bool = False) -> dict:
        """JSON patch (RFC 6902); a failing ``test`` op is a 422 :class:`Invalid`."""
        info = self.resource_info(api_version, kind)
        result = self._request("PATCH", info.path(namespace, name, "status" if status else None), body=list(ops),
                               content_type=JSON_PATCH)
        observe_write("patch", result, _tested_version(ops))
        return result

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None, *,
               propagation: str | None = None, uid: str | None = None) -> dict | None:
        """Delete; returns the object when it lingers (finalizers), None when the server answers with a Status."""
        info = self.resource_info(api_version, kind)
        options: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if propagation:
            options["propagationPolicy"] = propagation
        if uid:
            options["preconditions"] = {"uid": uid}
        result = self._request("DELETE", info.path(namespace, name), body=options)
        if isinstance(result, dict) and result.get("kind") != "Status":
            return result
        return None

    def delete_if_exists(self, api_version: str, kind: str, name: str, namespace: str | None = None, *,
                         propagation: str | None = None, uid: str | None = None) -> bool:
        try:
            self.delete(api_version, kind, name, namespace, propagation=propagation, uid=uid)
        except NotFound:
            return False
        return True

    # --- watch -----------------------------------------------------------------------------------------------

    def watch(self, api_version: str, kind: str, namespace: str | None = None, *, resource_version: str | None = None,
              label_selector: str | None = None, timeout_seconds: int = 300,
              allow_bookmarks: bool = True, on_stream: Callable[[Any], None] | None = None) -> Iterator[dict]:
        """Yield raw watch events ``{"type", "object"}`` until the server ends the stream.

        ``on_stream`` receives the open urllib3 response, so another thread can interrupt a quiet stream with
        ``response.shutdown()`` (how an informer stops at once when its watcher loses leadership).

        The server closes the stream after ``timeout_seconds``; the socket read timeout is a little longer so a
        silent, dead connection is noticed too. 410 (as HTTP status or as an ERROR event) raises :class:`Gone`.
        """
        info = self.resource_info(api_version, kind)
        query: list[tuple[str, Any]] = [("watch", "true"), ("timeoutSeconds", int(timeout_seconds))]
        if resource_version:
            query.append(("resourceVersion", resource_version))
        if allow_bookmarks:
            query.append(("allowWatchBookmarks", "true"))
        if label_selector:
            query.append(("labelSelector", label_selector))
        timeout = (self.timeout, timeout_seconds + self.timeout)
        response = self._send("GET", info.path(namespace), query=query, timeout=timeout)
        raw = response.response
        if on_stream is not None:
            on_stream(raw)
        try:
            for line in _lines(raw):
                event = orjson.loads(line)
                if event.get("type") == "ERROR":
                    status = event.get("object") or {}
                    raise _error_for(int(status.get("code") or 500), status)
                yield event
        except (urllib3.exceptions.HTTPError, OSError) as error:
            raise NetworkError(0, type(error).__name__, str(error)) from error
        finally:
            # Close rather than just release: a stream abandoned mid-way still has unread bytes, and a pooled
            # connection with leftovers would corrupt the next request made on it.
            raw.close()
            raw.release_conn()

    # --- events ----------------------------------------------------------------------------------------------

    def emit_event(self, obj: dict, reason: str, message: str, *, type: str = "Normal", action: str | None = None,
                   component: str = "poolboy") -> None:
        """Record a core/v1 Event about ``obj``. Never raises: an Event is worth less than the reconcile."""
        try:
            self.create(self._event_body(obj, reason, message, type, action, component))
        except Exception as error:
            log.warning("could not emit event %s for %s/%s: %s", reason, obj.get("kind"),
                        (obj.get("metadata") or {}).get("name"), error)

    def _event_body(self, obj: dict, reason: str, message: str, type: str, action: str | None,
                    component: str) -> dict:
        metadata = obj.get("metadata") or {}
        namespace = metadata.get("namespace") or self.settings.operator_namespace
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        involved = {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "name": metadata.get("name"),
                    "namespace": metadata.get("namespace"), "uid": metadata.get("uid"),
                    "resourceVersion": metadata.get("resourceVersion")}
        return {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{metadata.get('name', 'object')}.{uuid.uuid4().hex[:16]}", "namespace": namespace},
            "involvedObject": {k: v for k, v in involved.items() if v},
            "reason": reason, "message": message[:1024], "type": type,
            "action": action or reason,
            "source": {"component": component},
            "reportingComponent": component, "reportingInstance": os.environ.get("HOSTNAME", component),
            "firstTimestamp": now, "lastTimestamp": now, "count": 1,
        }


def _lines(response: Any) -> Iterator[bytes]:
    """Newline-delimited JSON from a chunked stream, reassembling lines split across chunks."""
    buffer = b""
    for chunk in response.stream(None, decode_content=True):
        buffer += chunk
        while True:
            index = buffer.find(b"\n")
            if index < 0:
                break
            line, buffer = buffer[:index].strip(), buffer[index + 1:]
            if line:
                yield line
    if buffer.strip():
        yield buffer.strip()


def _body_version(body: dict) -> str | None:
    """The resourceVersion a PUT body requires (None: an unconditional replace)."""
    version = (body.get("metadata") or {}).get("resourceVersion")
    return str(version) if version else None


def _tested_version(ops: list[dict]) -> str | None:
    """The resourceVersion a JSON patch requires through a ``test`` op (None: no such op)."""
    for op in ops:
        if op.get("op") == "test" and op.get("path") == "/metadata/resourceVersion" and op.get("value"):
            return str(op["value"])
    return None


def _loads_or_none(raw: bytes) -> dict | None:
    try:
        value = orjson.loads(raw) if raw else None
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _describe(api_version: str) -> str:
    group, _, version = api_version.rpartition("/")
    return f"group {group!r} version {version!r}" if group else f"core API version {version!r}"
