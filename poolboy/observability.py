"""A neutral hook for metrics, so the domain never imports a metrics library.

:mod:`poolboy.kube` reports every API request here; the engine (or the watcher) registers a Prometheus callback
with :func:`on_api_request`. With no callback registered, reporting costs one empty loop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

log = logging.getLogger(__name__)

ApiRequestCallback = Callable[[str, int], None]

_api_request_callbacks: list[ApiRequestCallback] = []


def on_api_request(callback: ApiRequestCallback) -> ApiRequestCallback:
    """Register ``callback(method, code)``, called after every Kubernetes API request (code 0 = network error).

    Returns the callback so it can be used as a decorator.
    """
    if callback not in _api_request_callbacks:
        _api_request_callbacks.append(callback)
    return callback


def remove_api_request_callback(callback: ApiRequestCallback) -> None:
    if callback in _api_request_callbacks:
        _api_request_callbacks.remove(callback)


def observe_api_request(method: str, code: int) -> None:
    """Report one API request; a failing callback is logged, never raised into the caller's request path."""
    for callback in tuple(_api_request_callbacks):
        try:
            callback(method, code)
        except Exception:
            log.exception("api request metrics callback failed")
