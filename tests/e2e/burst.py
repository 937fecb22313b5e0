"""Burst scenarios on the running stack: a ConfigMap provider and pool, many claims, and the invariants that must hold
however the work was spread, interrupted or repeated (docs/behaviour.md#design-rules 3 and 5, #binding, #pools).

:class:`Watchdog` checks the binding invariants continuously from watches (every event, not only at the end);
:func:`final_violations` checks everything once the system has settled.
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kubernetes import client, config, watch

from stack.local import LocalStack

D = "poolboy.gpte.redhat.com"
NS = "poolboy"


def custom_api(stack: LocalStack) -> client.CustomObjectsApi:
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(stack.kubeconfig), client_configuration=configuration)
    return client.CustomObjectsApi(client.ApiClient(configuration))


@dataclass
class Burst:
    """A provider of ConfigMaps in ``namespace``, a pool of ``pool_size`` handles of it, and claims against it."""

    api: client.CustomObjectsApi
    namespace: str
    name: str
    pool_size: int

    def create(self, plural: str, body: dict, namespace: str = NS) -> None:
        """Create, retrying the API faults a chaos run injects (an injected 409 never created the object)."""
        for attempt in range(20):
            try:
                self.api.create_namespaced_custom_object(D, "v1", namespace, plural, body)
                return
            except client.ApiException as error:
                if error.status not in (409, 429, 500, 503) or attempt == 19:
                    raise
                if error.status == 409 and "AlreadyExists" in str(error.body):
                    return
                time.sleep(0.05 * (attempt + 1))

    def setup(self) -> None:
        client.CoreV1Api(self.api.api_client).create_namespace({"metadata": {"name": self.namespace}})
        self.create("resourceproviders", {
            "apiVersion": f"{D}/v1", "kind": "ResourceProvider", "metadata": {"name": self.name, "namespace": NS},
            "spec": {
                "template": {"enable": True, "definition": {
                    "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": self.namespace},
                    "data": {"value": "{{ value }}"}}},
                "parameters": [{"name": "value", "default": {"value": "x"}}],
                "override": {"metadata": {"name": self.name + "-{{ guid }}"}},
                "healthCheck": "true", "readinessCheck": "true",
            },
        })
        self.create("resourcepools", {
            "apiVersion": f"{D}/v1", "kind": "ResourcePool", "metadata": {"name": self.name, "namespace": NS},
            "spec": {"minAvailable": self.pool_size,
                     "provider": {"name": self.name, "parameterValues": {"value": "x"}}},
        })

    def claim(self, index: int) -> None:
        self.create("resourceclaims", {
            "apiVersion": f"{D}/v1", "kind": "ResourceClaim",
            "metadata": {"name": f"c{index:03d}", "namespace": self.namespace},
            "spec": {"provider": {"name": self.name, "parameterValues": {"value": "x"}}},
        }, self.namespace)

    def handles(self) -> list[dict]:
        """This burst's handles: those of its provider (another test's may share the operator namespace)."""
        found = self.api.list_namespaced_custom_object(D, "v1", NS, "resourcehandles")["items"]
        return [h for h in found if self.name in provider_names(h)]

    def claims(self) -> list[dict]:
        return self.api.list_namespaced_custom_object(D, "v1", self.namespace, "resourceclaims")["items"]

    def config_maps(self) -> list[Any]:
        """The provider's ConfigMaps (named after it: not the cluster's own, such as kube-root-ca.crt)."""
        found = client.CoreV1Api(self.api.api_client).list_namespaced_config_map(self.namespace).items
        return [cm for cm in found if cm.metadata.name.startswith(f"{self.name}-")]

    def unbound_pool(self) -> list[dict]:
        """The pool's unbound handles that are not being deleted."""
        return [h for h in self.handles() if not h["spec"].get("resourceClaim")
                and h["metadata"].get("labels", {}).get(f"{D}/resource-pool-name") == self.name
                and not h["metadata"].get("deletionTimestamp")]

    def unbound_pool_handles(self) -> int:
        return len(self.unbound_pool())

    def bound_count(self) -> int:
        return sum(1 for c in self.claims() if (c.get("status") or {}).get("resourceHandle"))

    def bind_seconds(self, created_before: float | None = None) -> list[float]:
        """Seconds from each bound claim's creation to its ``Bound=True`` condition (whole seconds, as the API
        stores timestamps), for claims created before the epoch time ``created_before`` (all when None)."""
        result = []
        for claim in self.claims():
            created = _epoch(claim["metadata"].get("creationTimestamp"))
            bound = next((_epoch(c.get("lastTransitionTime")) for c in (claim.get("status") or {}).get(
                "conditions") or [] if c.get("type") == "Bound" and c.get("status") == "True"), None)
            if created is None or bound is None or (created_before is not None and created >= created_before):
                continue
            result.append(bound - created)
        return sorted(result)

    def all_bound(self, count: int) -> bool:
        claims = self.claims()
        return len(claims) == count and all((c.get("status") or {}).get("resourceHandle") for c in claims)


def provider_names(handle: dict) -> set[str]:
    """The providers a handle's resources come from (its own ``spec.provider`` and each resource's)."""
    spec = handle.get("spec") or {}
    names = {(spec.get("provider") or {}).get("name")}
    names.update((r.get("provider") or {}).get("name") for r in spec.get("resources") or [])
    return {name for name in names if name}


def binding_violations(claims: list[dict], handles: list[dict]) -> list[str]:
    """No handle bound to two claims; no claim with two (live) handles."""
    problems = []
    by_handle = Counter(c["status"]["resourceHandle"]["name"] for c in claims
                        if (c.get("status") or {}).get("resourceHandle"))
    problems += [f"handle {name} bound to {n} claims" for name, n in by_handle.items() if n > 1]
    live = [h for h in handles if h["spec"].get("resourceClaim") and not h["metadata"].get("deletionTimestamp")]
    by_claim = Counter((h["spec"]["resourceClaim"]["namespace"], h["spec"]["resourceClaim"]["name"]) for h in live)
    problems += [f"claim {ns}/{name} has {n} handles" for (ns, name), n in by_claim.items() if n > 1]
    return problems


def final_violations(burst: Burst) -> list[str]:
    """Once settled: the binding invariants, each claim's handle pointing back at it, every live handle with its
    resource, and no managed resource without a live handle."""
    claims, handles = burst.claims(), burst.handles()
    problems = binding_violations(claims, handles)
    by_name = {h["metadata"]["name"]: h for h in handles}
    for c in claims:
        ref = (c.get("status") or {}).get("resourceHandle")
        handle = by_name.get(ref["name"]) if ref else None
        if ref and (handle is None or handle["spec"].get("resourceClaim", {}).get("name") != c["metadata"]["name"]):
            problems.append(f"claim {c['metadata']['name']} points at handle {ref['name']} which does not point back")
    resource_names = {cm.metadata.name for cm in burst.config_maps()}
    live = [h for h in handles if not h["metadata"].get("deletionTimestamp")]
    referenced = set()
    for h in live:
        names = [r.get("reference", {}).get("name") for r in (h.get("status") or {}).get("resources", [])]
        referenced.update(n for n in names if n)
        if not names or not all(n in resource_names for n in names):
            problems.append(f"handle {h['metadata']['name']} without its resources")
    problems += [f"resource {name} without a live handle" for name in sorted(resource_names - referenced)]
    return problems


@dataclass
class Watchdog:
    """Watches the burst's claims and handles and checks the binding invariants on every event."""

    burst: Burst
    violations: list[str] = field(default_factory=list)
    events: int = 0
    _claims: dict[str, dict] = field(default_factory=dict)
    _handles: dict[str, dict] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> Watchdog:
        for target, namespace, plural in ((self._claims, self.burst.namespace, "resourceclaims"),
                                          (self._handles, NS, "resourcehandles")):
            thread = threading.Thread(target=self._watch, args=(target, namespace, plural), daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> list[str]:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=15)
        return self.violations

    def _watch(self, target: dict[str, dict], namespace: str, plural: str) -> None:
        while not self._stop.is_set():
            stream = watch.Watch()
            try:
                for event in stream.stream(self.burst.api.list_namespaced_custom_object, D, "v1", namespace, plural,
                                           timeout_seconds=5):
                    self._on_event(target, event["type"], event["object"])
                    if self._stop.is_set():
                        break
            except Exception:  # a fault injected into the watch, or the stream ending: watch again
                self._stop.wait(0.2)
            finally:
                stream.stop()

    def _on_event(self, target: dict[str, dict], kind: str, obj: dict) -> None:
        name = obj["metadata"]["name"]
        if kind == "DELETED":
            self._check_cleanup(obj)
        with self._lock:
            self.events += 1
            if kind == "DELETED":
                target.pop(name, None)
            else:
                target[name] = obj
            found = binding_violations(list(self._claims.values()), list(self._handles.values()))
            self.violations += [v for v in found if v not in self.violations]

    def _check_cleanup(self, obj: dict) -> None:
        """An object is gone, so its finalizer was removed: its cleanup must be done already
        (docs/behaviour.md#design-rules, rule 5). What cannot be read is a violation too: unknown is not gone."""
        name = obj["metadata"]["name"]
        core = client.CoreV1Api(self.burst.api.api_client)
        if obj["kind"] == "ResourceHandle":
            for ref in [r.get("reference") or {} for r in (obj.get("status") or {}).get("resources", [])]:
                if ref.get("name"):
                    self._check_gone(f"handle {name} gone while its resource {ref['name']}",
                                     lambda r=ref: core.read_namespaced_config_map(r["name"], r["namespace"]))
        elif ref := (obj.get("status") or {}).get("resourceHandle"):
            self._check_gone(f"claim {name} gone while its handle {ref['name']}",
                             lambda: self.burst.api.get_namespaced_custom_object(D, "v1", NS, "resourcehandles",
                                                                                 ref["name"]))

    def _check_gone(self, what: str, read: Any) -> None:
        live = self._live(read)
        if isinstance(live, str):
            self.violations.append(f"{what} could not be read to tell whether it is gone: {live}")
        elif live:
            self.violations.append(f"{what} still exists and is not being deleted")

    @staticmethod
    def _live(read: Any, patience: float = 30.0) -> bool | str:
        """True when the object exists and is not being deleted, False when it is gone or being deleted; the last
        error when it could not be read within ``patience`` seconds (API faults are retried)."""
        deadline = time.monotonic() + patience
        while True:
            try:
                found = read()
            except Exception as error:  # an API fault, or the API server away (a chaos run restarts it): retried
                if isinstance(error, client.ApiException) and error.status == 404:
                    return False
                if time.monotonic() > deadline:
                    return f"{type(error).__name__}: {' '.join(str(error).split())}"[:300]
                time.sleep(0.1)
                continue
            metadata = found["metadata"] if isinstance(found, dict) else found.metadata.to_dict()
            return not metadata.get("deletion_timestamp") and not metadata.get("deletionTimestamp")


def wait_settled(burst: Burst, timeout: float = 60.0, log_dir: Path | None = None,
                 redis_url: str | None = None, context: str = "") -> None:
    """Wait until :func:`final_violations` finds nothing (new handles get their resources a moment after they
    appear); fail with what is still wrong and, given the stack's ``log_dir``, every log line that names an object
    still wrong (a convergence that did not happen is diagnosed from what the components did about it) and, given
    its ``redis_url``, every Redis key that names one: the work queue's marks and lease, own writes, the delaying queue.
    ``context`` (what the test did, e.g. its disruptions in order) leads the failure message."""
    from tests.waiting import wait_for

    last: list[list[str]] = [[]]

    def clean() -> bool:
        last[0] = final_violations(burst)
        return not last[0]

    try:
        wait_for(clean, timeout=timeout, interval=1.0, message="every claim, handle and resource consistent")
    except AssertionError as error:
        names = named_objects(last[0])
        raise AssertionError(f"{context}{error}: {last[0][:20]}{log_lines_naming(log_dir, names)}"
                             f"{_redis_keys_naming(redis_url, names)}") from None


#: a violation names its objects as ``claim <name>``, ``handle <name>`` or ``resource <name>``
_NAMED = re.compile(r"\b(?:claim|handle|resource) (\S+)")


def named_objects(violations: list[str]) -> set[str]:
    return {match for violation in violations[:20] for match in _NAMED.findall(violation)}


def log_lines_naming(log_dir: Path | None, names: set[str], limit: int = 200) -> str:
    if log_dir is None or not names:
        return ""
    found = [f"{path.name}: {line}" for path in sorted(log_dir.glob("*.log"))
             for line in path.read_text(errors="replace").splitlines() if any(name in line for name in names)]
    return f"\nlog lines naming {sorted(names)} ({len(found)}, the last {limit}):\n" + "\n".join(found[-limit:])


def _redis_keys_naming(redis_url: str | None, names: set[str], limit: int = 100) -> str:
    """Each Redis key whose name contains one of ``names`` (type, TTL in ms, a short value), and the members of the
    sorted sets (the work queue's leases, the delaying queue) and sets that name one, with their scores."""
    if not redis_url or not names:
        return ""
    import redis

    client = redis.Redis.from_url(redis_url, decode_responses=True, socket_timeout=5)
    lines: list[str] = []
    try:
        for key in client.scan_iter(count=1000):
            kind = client.type(key)
            if any(name in key for name in names):
                lines.append(f"{key} {kind} pttl={client.pttl(key)} {_short_value(client, key, kind)}")
            elif kind == "zset":
                lines += [f"{key} member {member} score={score}" for member, score in client.zscan_iter(key)
                          if any(name in member for name in names)]
    except redis.RedisError as error:
        lines.append(f"(Redis read failed: {error})")
    finally:
        client.close()
    return f"\nRedis keys naming {sorted(names)} ({len(lines)}, the first {limit}):\n" + "\n".join(lines[:limit])


def _short_value(client: Any, key: str, kind: str) -> str:
    read = {"string": client.get, "set": client.smembers, "zset": lambda k: client.zrange(k, 0, -1, withscores=True),
            "hash": client.hkeys, "list": lambda k: client.lrange(k, 0, 20)}.get(kind)
    return str(read(key))[:300] if read else ""


def _epoch(timestamp: str | None) -> float | None:
    if not timestamp:
        return None
    return datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()

