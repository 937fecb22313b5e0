"""Where each kind is served: discovery documents cached per apiVersion, re-read on a miss (a CRD may just have
appeared), at most once per :data:`MISS_RECHECK_S` per apiVersion.

The limit matters on every cluster without some API a run asks for: a claim namespace annotated with an OpenShift
requester makes every handle run look up ``user.openshift.io/v1``, which plain Kubernetes does not serve, and without
it each such run paid one discovery request for the same answer (controller-runtime's dynamic RESTMapper rate-limits
its re-discovery the same way).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote

from poolboy.kube.errors import ApiMissing, NotFound
from poolboy.kube.transport import Transport


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


#: how long a discovery answer stands for a kind it does not list (or an apiVersion not served at all): a CRD created
#: meanwhile is seen at most this much later
MISS_RECHECK_S = 5.0


def describe(api_version: str) -> str:
    group, _, version = api_version.rpartition("/")
    return f"group {group!r} version {version!r}" if group else f"core API version {version!r}"


class Discovery:
    def __init__(self, transport: Transport, clock: Callable[[], float] = time.monotonic) -> None:
        self._transport = transport
        self._clock = clock
        #: apiVersion -> (kind -> info), or None when the apiVersion is not served; with when it was read
        self._discovery: dict[str, tuple[dict[str, ResourceInfo] | None, float]] = {}
        self._discovery_lock = threading.Lock()

    def resource_info(self, api_version: str, kind: str) -> ResourceInfo:
        """Where ``kind`` of ``api_version`` is served. A miss re-discovers (a CRD may just have appeared) unless that
        apiVersion was read less than :data:`MISS_RECHECK_S` ago."""
        resources, read_at = self._discovery.get(api_version, (None, None))
        if resources is not None and kind in resources:
            return resources[kind]
        if read_at is None or self._clock() - read_at >= MISS_RECHECK_S:
            resources = self._discover(api_version)
        if resources is None:
            raise ApiMissing(404, "NotFound", f"{describe(api_version)} is not served by the API server")
        if kind not in resources:
            raise ApiMissing(404, "NotFound", f"kind {kind} is not served by {describe(api_version)}")
        return resources[kind]

    def _discover(self, api_version: str) -> dict[str, ResourceInfo] | None:
        base = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
        read_at = self._clock()
        resources: dict[str, ResourceInfo] | None = None
        try:
            document = self._transport.request("GET", base)
        except NotFound:
            document = None
        if document is not None:
            resources = {}
            for item in document.get("resources", []):
                if "/" in item.get("name", ""):
                    continue  # subresources such as status or scale
                resources[item["kind"]] = ResourceInfo(
                    api_version=api_version, kind=item["kind"], plural=item["name"],
                    namespaced=bool(item.get("namespaced")), verbs=tuple(item.get("verbs") or ()),
                )
        with self._discovery_lock:
            self._discovery[api_version] = (resources, read_at)
        return resources

    def forget_discovery(self, api_version: str | None = None) -> None:
        """Drop cached discovery (all of it, or one apiVersion), e.g. after deleting or creating a CRD."""
        with self._discovery_lock:
            if api_version is None:
                self._discovery.clear()
            else:
                self._discovery.pop(api_version, None)
