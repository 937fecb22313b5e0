"""HTTP front: one aiohttp catch-all handler that parses Kubernetes API paths, counts requests, applies injected
faults and dispatches to the verbs in :mod:`devcluster.cluster`, discovery, watches and the admin API."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

import orjson
import yaml
from aiohttp import web

from devcluster import errors, openapi, protobuf, scale, versions
from devcluster.cluster import Cluster, present
from devcluster.counters import Counters
from devcluster.errors import ApiError, NotServed, not_served
from devcluster.faults import Faults
from devcluster.gc import Collector
from devcluster.meta import dumps
from devcluster.patch import PatchError, PatchFormatError, json_patch, merge_patch, strategic_merge_patch
from devcluster.registry import ResourceType
from devcluster.selectors import combine, field_selector, label_selector
from devcluster.tables import table, wants_table
from devcluster.watch import WatchStream

VERSION = {"major": "1", "minor": "32", "gitVersion": "v1.32.0-devcluster", "gitCommit": "devcluster",
           "gitTreeState": "clean", "buildDate": "2025-01-01T00:00:00Z", "goVersion": "go1.23.0",
           "compiler": "gc", "platform": "linux/amd64"}
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"
LIST_META = "meta.k8s.io/v1"
log = logging.getLogger(__name__)


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=dumps(body), status=status, content_type="application/json", headers=headers)


def error_response(error: ApiError) -> web.Response:
    return json_response(error.status(), error.code, error.headers)


@dataclass
class Target:
    rtype: ResourceType
    namespace: str | None
    name: str
    subresource: str
    legacy_watch: bool


class Server:
    def __init__(self, cluster: Cluster, bookmark_interval: float = 1.0) -> None:
        self.cluster = cluster
        self.collector = Collector(cluster)
        self.counters = Counters()
        self.faults = Faults()
        self.bookmark_interval = bookmark_interval
        self.port = 0

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        return app

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """Serve one request; log it at DEBUG (a watch when its stream starts), a 5xx or a crash always."""
        if log.isEnabledFor(logging.DEBUG):
            log.debug("%s %s", request.method, request.path_qs)
        try:
            response = await self._handle(request)
        except NotServed as error:
            if not request.path.startswith("/_devcluster/"):
                self.counters.add_unserved(request.path)
            return error_response(error)
        except ApiError as error:
            response = error_response(error)
        except Exception as error:  # a bug here must reach devcluster.log, and the client a Status, not a hang-up
            log.exception("%s %s failed", request.method, request.path_qs)
            response = error_response(errors.internal_error(f"devcluster: {error!r}"))
        if response.status >= 500 and not self.faults.active:
            log.error("%s %s -> %d", request.method, request.path_qs, response.status)
        return response

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        if path.startswith("/_devcluster/"):
            return await self.admin(request, path)
        parts = [p for p in path.split("/") if p]
        if not parts or parts[0] not in ("api", "apis"):
            return self.misc(path)
        target = self.parse(parts)
        if isinstance(target, dict):
            return json_response(target)
        verb = self.verb(request, target)
        namespace = target.namespace or ""
        self.counters.add(verb, target.rtype.label, namespace, target.name)
        if self.faults.active and self.faults.applies(verb, target.rtype.plural, target.rtype.group,
                                                      target.rtype.kind):
            if self.faults.latency_ms:
                await asyncio.sleep(self.faults.latency_ms / 1000)
            fault = self.faults.pick_error()
            if fault is not None:
                if not self.faults.serves_first(verb):
                    return error_response(fault)
                response = await self.dispatch(request, verb, target)  # commit then fail: stored, yet an error
                return error_response(fault) if 200 <= response.status < 300 else response
        return await self.dispatch(request, verb, target)

    # --- paths -----------------------------------------------------------------------------------------------

    def parse(self, parts: list[str]) -> Target | dict[str, Any]:
        registry = self.cluster.registry
        if parts[0] == "api":
            if len(parts) == 1:
                return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
                    {"clientCIDR": "0.0.0.0/0", "serverAddress": f"127.0.0.1:{self.port}"}]}
            group, version, rest = "", parts[1], parts[2:]
        else:
            if len(parts) == 1:
                return registry.api_group_list()
            if len(parts) == 2:
                found = registry.api_group(parts[1])
                if found is None:
                    raise not_served()
                return found
            group, version, rest = parts[1], parts[2], parts[3:]
        if not rest:
            resources = registry.resource_list(group, version)
            if resources is None:
                raise not_served()
            return resources
        legacy_watch = rest[0] == "watch"
        if legacy_watch:
            rest = rest[1:]
        namespace = None
        if len(rest) >= 3 and rest[0] == "namespaces":
            candidate = registry.get(group, version, rest[2])
            if candidate is not None and candidate.namespaced:
                namespace, rest = rest[1], rest[2:]
        if not rest or len(rest) > 3:
            raise not_served()
        rtype = registry.get(group, version, rest[0])
        if rtype is None:
            raise not_served()
        name = rest[1] if len(rest) > 1 else ""
        subresource = rest[2] if len(rest) > 2 else ""
        if (namespace is not None and not rtype.namespaced) or (rtype.namespaced and namespace is None and name):
            raise not_served()
        if subresource and subresource not in rtype.subresources:
            if rtype.builtin:
                raise not_served()
            raise errors.unknown_subresource(rtype.plural, rtype.group, name)
        return Target(rtype, namespace, name, subresource, legacy_watch)

    def verb(self, request: web.Request, target: Target) -> str:
        method = request.method
        if target.subresource and method not in ("GET", "PUT", "PATCH"):
            raise errors.method_not_allowed()
        if method == "GET":
            if target.legacy_watch or request.query.get("watch", "").lower() in ("1", "true"):
                return "watch"
            return "get" if target.name else "list"
        if method == "POST" and not target.name:
            return "create"
        if method == "PUT" and target.name:
            return "update"
        if method == "PATCH" and target.name:
            return "patch"
        if method == "DELETE":
            return "delete" if target.name else "deletecollection"
        raise errors.method_not_allowed()

    def misc(self, path: str) -> web.StreamResponse:
        if path in ("/healthz", "/readyz", "/livez") or path.startswith(("/healthz/", "/readyz/", "/livez/")):
            return web.Response(text="ok")
        if path in ("/version", "/version/"):
            return json_response(VERSION)
        if path == "/openapi/v3":
            return json_response(openapi.index(self.cluster.registry))
        if path.startswith("/openapi/v3/"):
            rest = path[len("/openapi/v3/"):].split("/")
            if rest[0] == "api" and len(rest) == 2:
                doc = openapi.document(self.cluster.registry, "", rest[1])
            elif rest[0] == "apis" and len(rest) == 3:
                doc = openapi.document(self.cluster.registry, rest[1], rest[2])
            else:
                doc = None
            if doc is not None:
                return json_response(doc)
        raise not_served()

    # --- verbs -----------------------------------------------------------------------------------------------

    async def dispatch(self, request: web.Request, verb: str, target: Target) -> web.StreamResponse:
        cluster, rtype, query = self.cluster, target.rtype, request.query
        namespace = target.namespace or ""
        dry_run = "All" in query.getall("dryRun", [])
        if target.subresource == "scale":
            return await self.scale(request, verb, target, dry_run)
        if verb == "watch":
            predicate = self.predicate(query, target)
            stream = WatchStream(cluster, rtype, target.namespace, predicate, query, self.bookmark_interval,
                                 wants_table(request.headers.get("Accept", "")))
            return await stream.serve(request)
        as_table = wants_table(request.headers.get("Accept", ""))
        include = query.get("includeObject", "Metadata")
        if verb == "get":
            obj = present(rtype, cluster.get(rtype, namespace, target.name))
            if as_table:
                return json_response(table(rtype, [obj], {"resourceVersion": obj["metadata"]["resourceVersion"]},
                                           include))
            return json_response(obj)
        if verb == "list":
            limit = self.int_param(query.get("limit"), "limit")
            result = cluster.list(rtype, target.namespace, self.predicate(query, target), limit,
                                  query.get("continue", ""))
            if as_table:
                return json_response(table(rtype, result["items"], result["metadata"], include))
            return json_response(result)
        if verb == "create":
            self.check_namespace_exists(rtype, target.namespace)
            obj = cluster.create(rtype, namespace, await self.body(request), dry_run)
            return json_response(present(rtype, obj), 201)
        if verb == "update":
            obj = cluster.update(rtype, namespace, target.name, await self.body(request), target.subresource,
                                 dry_run, require_rv=True)
            return json_response(present(rtype, obj))
        if verb == "patch":
            return await self.patch(request, target, dry_run)
        options = await self.delete_options(request)
        if verb == "delete":
            obj = cluster.delete(rtype, namespace, target.name, options, dry_run)
            if rtype.returns_object_on_delete or (obj["metadata"].get("deletionTimestamp") and obj[
                    "metadata"].get("finalizers")):
                return json_response(present(rtype, obj))
            return json_response(errors.success(target.name, rtype.group, rtype.plural, obj["metadata"]["uid"]))
        deleted = cluster.delete_collection(rtype, target.namespace, self.predicate(query, target), options,
                                            dry_run)
        if not rtype.returns_object_on_delete:
            return json_response({**errors.success("", rtype.group, rtype.plural), "details": {}})
        return json_response({"kind": f"{rtype.kind}List", "apiVersion": rtype.api_version,
                              "metadata": {"resourceVersion": versions.text(cluster.store.rv)},
                              "items": [present(rtype, o) for o in deleted]})

    def check_namespace_exists(self, rtype: ResourceType, namespace: str | None) -> None:
        if rtype.namespaced and namespace is not None and self.cluster.store.get(
                ("", "namespaces"), "", namespace) is None:
            raise errors.not_found("namespaces", "", namespace)

    @staticmethod
    def int_param(value: str | None, name: str) -> int:
        if not value:
            return 0
        try:
            return max(0, int(value))
        except ValueError:
            raise errors.bad_request(f"invalid {name}: {value}") from None

    @staticmethod
    def predicate(query: Any, target: Target) -> Any:
        by_name = (lambda obj: obj["metadata"]["name"] == target.name) if target.name else None
        return combine(label_selector(query.get("labelSelector")),
                       field_selector(query.get("fieldSelector"), target.rtype.supports_field), by_name)

    @staticmethod
    async def body(request: web.Request) -> Any:
        raw = await request.read()
        if not raw:
            raise errors.bad_request("the body of the request is empty")
        if request.content_type == "application/vnd.kubernetes.protobuf":
            try:
                return protobuf.decode(raw)
            except protobuf.ProtobufError as error:
                raise errors.unsupported_media_type(request.content_type, [
                    "application/json", "application/yaml", f"(protobuf: {error})"]) from None
        if "protobuf" in request.content_type or "cbor" in request.content_type:
            raise errors.unsupported_media_type(request.content_type, ["application/json", "application/yaml"])
        try:
            if request.content_type in ("application/yaml", APPLY):
                return yaml.load(raw, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
            return orjson.loads(raw)
        except (orjson.JSONDecodeError, yaml.YAMLError) as error:
            raise errors.bad_request(f"the body of the request could not be decoded: {error}") from None

    async def delete_options(self, request: web.Request) -> dict[str, Any]:
        options: dict[str, Any] = {}
        if request.can_read_body:
            raw = await request.read()
            if raw.strip():
                try:
                    options = orjson.loads(raw) or {}
                except orjson.JSONDecodeError:
                    raise errors.bad_request("invalid DeleteOptions body") from None
        query = request.query
        if query.get("propagationPolicy"):
            options["propagationPolicy"] = query["propagationPolicy"]
        if query.get("orphanDependents"):
            options["orphanDependents"] = query["orphanDependents"].lower() == "true"
        return options

    @staticmethod
    def patch_type(request: web.Request, rtype: ResourceType) -> str:
        accepted = [JSON_PATCH, MERGE, APPLY] + ([STRATEGIC] if rtype.builtin else [])
        if request.content_type not in accepted:
            raise errors.unsupported_media_type(request.content_type, accepted)
        return request.content_type

    @staticmethod
    def patched(content_type: str, base: dict[str, Any], patch: Any) -> dict[str, Any]:
        """``base`` with ``patch`` applied by its content type; refusals worded as kube-apiserver's."""
        try:
            if content_type == JSON_PATCH:
                new = json_patch(base, patch)
            elif content_type == STRATEGIC:
                new = strategic_merge_patch(base, patch)
            else:
                if not isinstance(patch, dict):
                    raise PatchFormatError("merge patch must be a JSON object")
                new = merge_patch(base, patch)
        except PatchFormatError as error:
            raise errors.bad_request(str(error)) from None
        except PatchError as error:
            log.info("json patch does not apply: %s", error)
            raise errors.patch_not_applicable() from None
        if not isinstance(new, dict):
            raise errors.bad_request("the patched object is not a JSON object")
        return orjson.loads(dumps(new))

    async def patch(self, request: web.Request, target: Target, dry_run: bool) -> web.StreamResponse:
        cluster, rtype = self.cluster, target.rtype
        namespace = target.namespace or ""
        content_type = self.patch_type(request, rtype)
        patch = await self.body(request)
        current = cluster.store.get(rtype.store_key, namespace, target.name)
        if content_type == APPLY:
            self.check_field_manager(request)
            if current is None and not target.subresource:
                body = dict(patch or {})
                body.setdefault("metadata", {}).setdefault("name", target.name)
                self.check_namespace_exists(rtype, target.namespace)
                return json_response(present(rtype, cluster.create(rtype, namespace, body, dry_run)), 201)
        if current is None:
            raise errors.not_found(rtype.plural, rtype.group, target.name)
        new = self.patched(content_type, present(rtype, current), patch)
        obj = cluster.update(rtype, namespace, target.name, new, target.subresource, dry_run, old=current)
        return json_response(present(rtype, obj))

    @staticmethod
    def check_field_manager(request: web.Request) -> None:
        if not request.query.get("fieldManager"):
            raise errors.bad_request("PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: "
                                     "is required for apply patch")

    async def scale(self, request: web.Request, verb: str, target: Target, dry_run: bool) -> web.StreamResponse:
        """``/scale``: an autoscaling/v1 Scale view of a custom resource (see :mod:`devcluster.scale`)."""
        cluster, rtype = self.cluster, target.rtype
        paths = rtype.scale or {}
        namespace = target.namespace or ""
        if verb == "get":
            view = scale.view(paths, cluster.get(rtype, namespace, target.name))
            if wants_table(request.headers.get("Accept", "")):  # the CRD's printer columns, run on the Scale
                return json_response(table(rtype, [view], {"resourceVersion": view["metadata"]["resourceVersion"]},
                                           request.query.get("includeObject", "Metadata")))
            return json_response(view)
        if verb == "update":
            body = await self.body(request)
            current = cluster.get(rtype, namespace, target.name)
        elif verb == "patch":
            content_type = self.patch_type(request, rtype)
            patch = await self.body(request)
            if content_type == APPLY:
                self.check_field_manager(request)
            current = cluster.get(rtype, namespace, target.name)
            body = self.patched(content_type, scale.view(paths, current, when_unset=scale.UNSET), patch)
        else:
            raise errors.method_not_allowed()
        replicas, resource_version = scale.requested(paths, body, target.name, namespace)
        new = scale.scaled(paths, present(rtype, current), replicas, resource_version)
        stored = cluster.update(rtype, namespace, target.name, new, "scale", dry_run, old=current)
        return json_response(scale.view(paths, stored))

    # --- admin API -------------------------------------------------------------------------------------------

    async def admin(self, request: web.Request, path: str) -> web.StreamResponse:
        method = request.method
        if path == "/_devcluster/faults":
            if method == "PUT":
                raw = await request.read()
                self.faults = Faults.from_json(orjson.loads(raw) if raw.strip() else {})
            elif method == "DELETE":
                self.faults = Faults()
            return json_response(self.faults.to_json())
        if path == "/_devcluster/counters" and method == "GET":
            return json_response(self.counters.to_json())
        if path == "/_devcluster/counters/reset" and method == "POST":
            self.counters.reset()
            return json_response(self.counters.to_json())
        if path == "/_devcluster/history":
            if method == "PUT":
                raw = await request.read()
                size = int(orjson.loads(raw)["size"])
                self.cluster.store.set_history(size)
            store = self.cluster.store
            return json_response({"size": store.history.maxlen, "length": len(store.history),
                                  "oldest_resource_version": store.floor, "resource_version": store.rv})
        if path == "/_devcluster/state" and method == "GET":
            store = self.cluster.store
            return json_response({"resource_version": store.rv, "objects": sum(
                store.count(key, None) for key in store.objects), "watchers": sum(
                len(w) for w in store.watchers.values())})
        raise not_served()
