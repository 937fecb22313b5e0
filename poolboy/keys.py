"""Work keys: ``<kind>/<namespace>/<name>``, the unit the work queue serialises and coalesces.

Kinds are short, stable tokens (:data:`poolboy.kinds.DECLARED`); each has its own Celery queue (the kind in plural)
so that a burst of one kind cannot starve another.
"""

from __future__ import annotations

from typing import NamedTuple

from poolboy import kinds

CLAIM = kinds.CLAIM.token
HANDLE = kinds.HANDLE.token
POOL = kinds.POOL.token
PROVIDER = kinds.PROVIDER.token
SCALING = kinds.SCALING.token

#: kind token -> Kubernetes kind
KINDS: dict[str, str] = {kind.token: kind.name for kind in kinds.DECLARED}
#: Kubernetes kind -> kind token
TOKENS: dict[str, str] = {kind.name: kind.token for kind in kinds.DECLARED}
#: Kubernetes kind -> plural resource name
PLURALS: dict[str, str] = {kind.name: kind.plural for kind in kinds.DECLARED}


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
    """The Celery queue of the kind token ``kind``."""
    return kinds.BY_TOKEN[kind].queue
