"""The API of a process that found no cluster configuration: a reconcile that needs the API fails on its first
request, saying why, and one that does not (the engine's instrumented test reconcilers) runs."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, NoReturn

log = logging.getLogger(__name__)


class NoClusterError(RuntimeError):
    """A request was made where no Kubernetes cluster is configured."""


class NoCluster:
    """Stands in for the :class:`~poolboy.kube.interfaces.Client`, the :class:`~poolboy.kube.interfaces.RESTMapper`
    and the :class:`~poolboy.kube.interfaces.EventRecorder` of a process without a cluster: every request raises
    :class:`NoClusterError`; an Event is dropped, as an Event never fails its reconcile."""

    def __init__(self, why: str) -> None:
        self.why = why

    def emit(self, obj: dict, reason: str, message: str, *, type: str = "Normal", action: str | None = None) -> None:
        log.debug("no cluster: Event %s about %s %s dropped", reason, obj.get("kind"),
                  (obj.get("metadata") or {}).get("name"))

    def __getattr__(self, name: str) -> Callable[..., NoReturn]:
        if name.startswith("_"):  # copy, pickle and friends probe for these: not requests
            raise AttributeError(name)

        def refuse(*_args: Any, **_kwargs: Any) -> NoReturn:
            raise NoClusterError(f"{name}: no Kubernetes cluster is configured ({self.why})")

        return refuse
