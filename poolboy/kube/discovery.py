"""Where each kind is served: discovery documents cached per apiVersion, re-read on a miss (a CRD may just have
appeared)."""

from __future__ import annotations

import threading
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


def describe(api_version: str) -> str:
    group, _, version = api_version.rpartition("/")
    return f"group {group!r} version {version!r}" if group else f"core API version {version!r}"


class Discovery:
    def __init__(self, transport: Transport) -> None:
        self._transport = transport
        self._discovery: dict[str, dict[str, ResourceInfo]] = {}
        self._discovery_lock = threading.Lock()

    def resource_info(self, api_version: str, kind: str) -> ResourceInfo:
        """Where ``kind`` of ``api_version`` is served. Re-discovers once on a miss (a CRD may just have appeared)."""
        cached = self._discovery.get(api_version)
        if cached is not None and kind in cached:
            return cached[kind]
        resources = self._discover(api_version)
        if kind not in resources:
            raise ApiMissing(404, "NotFound", f"kind {kind} is not served by {describe(api_version)}")
        return resources[kind]

    def _discover(self, api_version: str) -> dict[str, ResourceInfo]:
        base = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
        try:
            document = self._transport.request("GET", base)
        except NotFound as error:
            raise ApiMissing(404, "NotFound", f"{describe(api_version)} is not served by the API server") from error
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
