"""One HTTP request to the API server: the official client's configuration, authentication and urllib3 pool,
orjson bodies, typed errors, and the observability hooks (every request and call is reported)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urljoin

import orjson
import urllib3
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from poolboy.kube.errors import NetworkError, error_for
from poolboy.observability import api_calls, observe_api_call, observe_api_request

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"


def load_configuration(kubeconfig: str | None, service_account_dir: str) -> k8s_client.Configuration:
    """In-cluster service account first, then a kubeconfig (explicit argument, ``KUBECONFIG``, ``~/.kube/config``).

    The in-cluster identity is the token file and CA in ``service_account_dir`` with the API server at
    ``KUBERNETES_SERVICE_HOST``/``_PORT``; the client re-reads the token file every minute, so a token the kubelet
    (or ``poolboy dev --service-accounts``) rotates is picked up. An explicit ``kubeconfig`` argument wins over the
    in-cluster config: it is how tests and ``poolboy dev`` point a process at a devcluster.
    """
    configuration = k8s_client.Configuration()
    if not kubeconfig:
        loader = k8s_config.incluster_config.InClusterConfigLoader(
            token_filename=os.path.join(service_account_dir, "token"),
            cert_filename=os.path.join(service_account_dir, "ca.crt"))
        try:
            loader.load_and_set(configuration)
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


def loads_or_none(raw: bytes) -> dict | None:
    try:
        value = orjson.loads(raw) if raw else None
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


class Transport:
    """Requests on one :class:`ApiClient` (thread-safe: urllib3's pool is). ``timeout`` applies to every request."""

    #: how long the authentication headers are reused before the client's refresh hooks run again
    AUTH_TTL_S = 10.0

    def __init__(self, api_client: k8s_client.ApiClient, timeout: float) -> None:
        self.api_client = api_client
        self.timeout = timeout
        self._auth: tuple[float, dict[str, str]] = (0.0, {})
        self._pool: tuple[Any, Any] | None = None  # (pool manager, its pool for the API server)
        self._base_path = ""  # the path of the configured host (a server behind a path prefix)

    def send(self, method: str, path: str, *, query: list[tuple[str, Any]] | None = None, body: Any = None,
              content_type: str = JSON, timeout: Any = None) -> Any:
        """One request; returns the unread :class:`RESTResponse` (2xx) or raises the matching :class:`ApiError`."""
        if api_calls:
            observe_api_call(method, path, any(name == "watch" for name, _ in query or ()))
        headers = self.headers(method, path, content_type if body is not None else None)
        target = path + (_query_string(query) if query else "")
        try:
            response = self._pool_request(method, target, headers, body, timeout or self.timeout)
        except k8s_client.ApiException as error:  # the REST layer's own failures (e.g. TLS) have status 0
            observe_api_request(method, error.status or 0)
            raise error_for(error.status or 0, None, str(error.reason)) from error
        except urllib3.exceptions.SSLError as error:  # as the REST layer reports it (status 0, "SSLError\n...")
            observe_api_request(method, 0)
            raise error_for(0, None, f"{type(error).__name__}\n{error}") from error
        except (urllib3.exceptions.HTTPError, OSError) as error:
            observe_api_request(method, 0)
            raise NetworkError(0, type(error).__name__, str(error)) from error
        observe_api_request(method, response.status)
        if not 200 <= response.status <= 299:
            raw = self.read(response)
            raise error_for(response.status, loads_or_none(raw), response.reason or "",
                             response.headers.get("Retry-After"))
        return response

    def headers(self, method: str, path: str, content_type: str | None) -> dict[str, str]:
        """What ``ApiClient.param_serialize`` would send: Accept, Content-Type, the client's default headers
        (User-Agent), its cookie and the BearerToken auth header."""
        api_client = self.api_client
        headers = {"Accept": JSON}
        if content_type is not None:
            headers["Content-Type"] = content_type
        headers.update(api_client.default_headers)
        if api_client.cookie:
            headers["Cookie"] = api_client.cookie
        headers.update(self._auth_headers(method, path))
        return headers

    def _auth_headers(self, method: str, path: str) -> dict[str, str]:
        """The BearerToken header, evaluated at most every :attr:`AUTH_TTL_S` seconds.

        Evaluating it runs the kubeconfig loader's refresh hook, which re-applies the whole configuration: a
        quarter of a request's CPU when done per request. Every token source refreshes long before it expires
        (in-cluster tokens are re-read every minute, exec and OIDC tokens live minutes or more), so a token at
        most this many seconds old is as good; a 401 is rare and retried like any other failure.
        """
        expires, cached = self._auth
        now = time.monotonic()
        if now < expires:
            return cached
        auth: dict[str, str] = {}
        self.api_client.update_params_for_auth(auth, None, ["BearerToken"], path, method, None)
        self._auth = (now + self.AUTH_TTL_S, auth)
        return auth

    def _pool_request(self, method: str, target: str, headers: dict[str, str], body: Any, timeout: Any) -> Any:
        """One request on the client's urllib3 pool (its TLS, proxy and retry settings), body as orjson bytes.

        Skips the REST layer's per-call work (``sanitize_for_serialization`` of the whole body, stdlib ``json``,
        header sanitising) that the profile showed at about a quarter of a worker's CPU, and the pool manager's
        per-request URL parsing and pool lookup (:meth:`_connection_pool`). Reads keep going through the REST layer
        when client-go style read retries are configured, so their semantics stay the client's.
        """
        api_client = self.api_client
        rest = api_client.rest_client
        url = api_client.configuration.host + target
        if method in ("GET", "HEAD") and getattr(api_client.configuration, "client_go_retries", False):
            return rest.request(method, url, headers=headers, _request_timeout=timeout)
        data = None if body is None else _dumps(body, api_client.sanitize_for_serialization)
        pool = self._connection_pool(rest.pool_manager)
        if pool is not None:
            raw = pool.urlopen(method, self._base_path + target, body=data, headers=headers,
                               timeout=_timeout(timeout), preload_content=False, assert_same_host=False,
                               redirect=False)
            location = raw.get_redirect_location()
            if not location:
                return k8s_client.rest.RESTResponse(raw)
            raw.drain_conn()  # an API server that redirects: the pool manager follows it, as it always did
            raw.release_conn()
            url = urljoin(url, location)
        raw = rest.pool_manager.request(method, url, body=data, headers=headers, timeout=_timeout(timeout),
                                        preload_content=False)
        return k8s_client.rest.RESTResponse(raw)

    def _connection_pool(self, manager: Any) -> Any:
        """The API server's connection pool, looked up once (the pool manager parses the URL and builds the pool's
        key on every request: a few percent of a worker's CPU), or None behind a proxy, where the manager must
        shape each request itself."""
        pool = self._pool
        if pool is not None and pool[0] is manager and pool[1].pool is not None:  # same manager, pool not closed
            return pool[1]
        if isinstance(manager, urllib3.ProxyManager):
            return None
        host = self.api_client.configuration.host
        self._base_path = (urllib3.util.parse_url(host).path or "").rstrip("/")
        self._pool = (manager, manager.connection_from_url(host))
        return self._pool[1]

    def read(self, response: Any) -> bytes:
        try:
            return response.read() or b""
        except (urllib3.exceptions.HTTPError, OSError) as error:
            raise NetworkError(0, type(error).__name__, str(error)) from error

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self.send(method, path, **kwargs)
        raw = self.read(response)
        return orjson.loads(raw) if raw else None
