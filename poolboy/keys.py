"""Work keys: ``<kind>/<namespace>/<name>``, the unit the work queue serialises and coalesces.

Kinds are short, stable tokens; each has its own Celery queue (the kind in plural) so that a burst of one kind
cannot starve another.
"""

from __future__ import annotations

from typing import NamedTuple

from poolboy.kinds import RESOURCE_CLAIM, RESOURCE_HANDLE, RESOURCE_POOL, RESOURCE_POOL_SCALING, RESOURCE_PROVIDER

CLAIM = "claim"
HANDLE = "handle"
POOL = "pool"
PROVIDER = "provider"
SCALING = "scaling"

#: kind token -> Kubernetes kind
KINDS: dict[str, str] = {
    CLAIM: RESOURCE_CLAIM,
    HANDLE: RESOURCE_HANDLE,
    POOL: RESOURCE_POOL,
    PROVIDER: RESOURCE_PROVIDER,
    SCALING: RESOURCE_POOL_SCALING,
}
#: Kubernetes kind -> kind token
TOKENS: dict[str, str] = {v: k for k, v in KINDS.items()}
#: Kubernetes kind -> plural resource name
PLURALS: dict[str, str] = {kind: kind.lower() + "s" for kind in KINDS.values()}


class Key(NamedTuple):
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"

    @property
    def queue(self) -> str:
        """The Celery queue that runs this kind's reconciles."""
        return queue_for(self.kind)


def make(kind: str, namespace: str, name: str) -> str:
    if kind not in KINDS:
        raise ValueError(f"unknown kind token {kind!r}; expected one of {sorted(KINDS)}")
    return f"{kind}/{namespace}/{name}"


def parse(key: str) -> Key:
    kind, namespace, name = key.split("/", 2)
    if kind not in KINDS or not namespace or not name:
        raise ValueError(f"malformed work key {key!r}; expected <kind>/<namespace>/<name>")
    return Key(kind, namespace, name)


def for_object(obj: dict) -> str:
    """The work key of a Poolboy object as returned by the API."""
    metadata = obj["metadata"]
    return make(TOKENS[obj["kind"]], metadata["namespace"], metadata["name"])


def queue_for(kind: str) -> str:
    return kind + "s"
