"""Ports of ``poolboy dev``'s components: one per component and purpose, checked before anything starts.

Several processes of one machine must never be handed the same port (the watcher and a worker both serving
metrics on ``$POOLBOY_METRICS_PORT`` made the second one die with ``Address already in use``), and a port some
other program holds is a one-line message for the newcomer, not a child's traceback.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import procutil

LOOPBACK = "127.0.0.1"
#: a base port that asks for a free port per component instead of consecutive ones
ANY = -1


class PortTaken(RuntimeError):
    """A port ``poolboy dev`` was asked to use is already in use; the message is one line naming it and the option."""


@dataclass(frozen=True)
class PortRequest:
    """One port a component needs: ``what`` names it for people, ``option`` is how to choose another."""

    port: int
    what: str
    option: str


def is_free(port: int, host: str = LOOPBACK) -> bool:
    """Whether ``host:port`` can be bound now, as the components bind it: with SO_REUSEADDR (Tornado, http.server
    and devcluster all set it), so the TIME_WAIT connections a just-stopped ``poolboy dev`` leaves behind do not
    count, while a listener does."""
    return procutil.bindable(host, port)


def free(host: str = LOOPBACK) -> int:
    """A port nothing listens on now, for a component whose port nobody needs to know ahead (see
    :func:`procutil.free_port`: never one an outgoing connection may take before the component binds it)."""
    return procutil.free_port(host)


def check(requests: Iterable[PortRequest], host: str = LOOPBACK) -> None:
    """Raise :class:`PortTaken` for the first requested port that is in use (or requested twice)."""
    seen: dict[int, PortRequest] = {}
    for request in requests:
        if request.port in seen:
            raise PortTaken(f"port {request.port} is wanted by both {seen[request.port].what} and {request.what}; "
                            f"choose another with {request.option}")
        seen[request.port] = request
        if not is_free(request.port, host):
            raise PortTaken(f"port {request.port} ({request.what}) is already in use on {host}; "
                            f"choose another with {request.option}")


def consecutive(base: int, names: Iterable[str]) -> dict[str, int]:
    """``base``, ``base + 1``, … for ``names`` in order: each component its own port, predictable from the base."""
    return {name: base + offset for offset, name in enumerate(names)}
