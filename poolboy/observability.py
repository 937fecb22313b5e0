"""Neutral hooks, so the domain never imports a metrics library or Redis.

:mod:`poolboy.kube` reports every API request here (the engine or the watcher registers a Prometheus callback with
:func:`on_api_request`) and every successful write (:func:`on_write`: the engine records its own writes so the
watcher can drop their events) and what became of every Kubernetes Event (:func:`on_event`). With no callback
registered, reporting costs one empty loop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Generic, TypeVar

log = logging.getLogger(__name__)

C = TypeVar("C", bound=Callable[..., None])


class Hook(Generic[C]):
    """A list of callbacks fired with the same arguments; a failing callback is logged, never raised into the
    reporting caller (an API request or a write must not fail because a metric or a record could not be taken)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._callbacks: list[C] = []

    def register(self, callback: C) -> C:
        """Add ``callback`` once; returns it so it can be used as a decorator."""
        if callback not in self._callbacks:
            self._callbacks.append(callback)
        return callback

    def remove(self, callback: C) -> None:
        if callback in self._callbacks:
            self._callbacks.remove(callback)

    def __bool__(self) -> bool:
        return bool(self._callbacks)

    def fire(self, *args: Any) -> None:
        for callback in tuple(self._callbacks):
            try:
                callback(*args)
            except Exception:
                log.exception("%s callback failed", self.name)


@lru_cache(maxsize=4096)
def labelled(metric: Any, *values: str) -> Any:
    """``metric.labels(*values)``, looked up once per metric and label values.

    Why: the watcher counts every watch event and every key it hands on, and a worker every run and every API
    request; prometheus-client's ``labels()`` validates and joins the values under a lock at each call (4 % of the
    watcher's CPU in a W1-1500 profile), while the child it returns stays the same for the life of the process."""
    return metric.labels(*values)


ApiRequestCallback = Callable[[str, int], None]

#: ``callback(method, code)`` after every Kubernetes API request (code 0 = network error)
api_requests: Hook[ApiRequestCallback] = Hook("api request")
on_api_request = api_requests.register
remove_api_request_callback = api_requests.remove
observe_api_request = api_requests.fire


# --- Kubernetes Events ------------------------------------------------------------------------------------------

EventCallback = Callable[[str, str], None]

#: ``callback(outcome, detail)`` from :mod:`poolboy.kube.event_recorder`: ``sent`` (``create`` | ``patch``, per
#: request), ``aggregated`` (``coalesced``: an occurrence folded into a send already owed) or ``dropped`` (``spam`` |
#: ``queue_full`` | ``error``)
event_outcomes: Hook[EventCallback] = Hook("event")
on_event = event_outcomes.register
remove_event_callback = event_outcomes.remove
observe_event = event_outcomes.fire


ApiCallCallback = Callable[[str, str, bool], None]

#: ``callback(method, path, watch)`` before every Kubernetes API request (what an API audit records)
api_calls: Hook[ApiCallCallback] = Hook("api call")
on_api_call = api_calls.register
remove_api_call_callback = api_calls.remove
observe_api_call = api_calls.fire


# --- pool handle states ------------------------------------------------------------------------------------------

TransitionCallback = Callable[[str, str], None]

#: ``callback(pool, state)`` when a pool handle enters a state of :mod:`poolboy.domain.handle_state` (``Running``,
#: ``Standby``, ``Resuming``, ``Cleaning``) or leaves the pool's life: ``Replaced`` (it did not resume in time),
#: ``Reused`` (cleaned and unbound again), ``CleaningFailed`` (deleted instead)
handle_transitions: Hook[TransitionCallback] = Hook("handle transition")
on_handle_transition = handle_transitions.register
remove_handle_transition_callback = handle_transitions.remove
observe_handle_transition = handle_transitions.fire


# --- writes ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Write:
    """One successful write as :mod:`poolboy.kube` saw it: which object, and the version it produced.

    ``precondition`` is the resourceVersion the write required (from the body, the ``resource_version`` argument
    or a JSON-patch ``test`` of ``/metadata/resourceVersion``), None for an unconditional write. Only a conditional
    write proves that the object's state after it is exactly "what the writer read, plus its change" — the engine
    relies on that to drop the watch event of its own write (see :mod:`engine.own_writes`).
    """

    verb: str  # create | replace | patch
    uid: str
    resource_version: str
    precondition: str | None = None

    @property
    def conditional(self) -> bool:
        return self.precondition is not None

    @property
    def ident(self) -> str:
        return write_id(self.uid, self.resource_version)


def write_id(uid: str, resource_version: str) -> str:
    """``"<uid>/<resourceVersion>"``: one version of one object. The API server gives every change a new
    resourceVersion, so the id of what a write returned names exactly the state it produced, and a watch event or a
    read of the same id is of that state: how the engine knows the event of its own write (:mod:`engine.own_writes`)."""
    return f"{uid}/{resource_version}"


def version_id(obj: Mapping[str, Any]) -> str | None:
    """:func:`write_id` of the object version ``obj`` is; None without a uid and a resourceVersion."""
    metadata = obj.get("metadata") or {}
    uid, version = metadata.get("uid"), metadata.get("resourceVersion")
    return write_id(str(uid), str(version)) if uid and version else None


WriteCallback = Callable[[Write], None]

#: ``callback(write)`` after every successful create/replace/patch (never delete)
writes: Hook[WriteCallback] = Hook("write")
on_write = writes.register
remove_write_callback = writes.remove


def observe_write(verb: str, obj: object, precondition: str | None = None) -> None:
    """Report the object a write returned (nothing to do when no callback is registered)."""
    if not writes or not isinstance(obj, dict):
        return
    metadata = obj.get("metadata") or {}
    uid, version = metadata.get("uid"), metadata.get("resourceVersion")
    if uid and version:
        writes.fire(Write(verb, str(uid), str(version), precondition))
