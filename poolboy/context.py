"""What one reconcile runs with: the API client, the settings, and the single ``now`` of this run."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from poolboy.settings import Settings

if TYPE_CHECKING:  # the wrapper imports the kubernetes client; the domain only needs its type
    from poolboy.domain.candidates import HandleIndex
    from poolboy.kube.interfaces import Client, Reader


def utcnow() -> datetime:
    """Now in UTC, truncated to whole seconds (docs/behaviour.md#conventions: one now per reconcile, whole seconds)."""
    return datetime.now(UTC).replace(microsecond=0)


@dataclass
class Context:
    """Passed to every domain reconciler as ``reconcile(ctx, namespace, name) -> Result``.

    ``now`` is taken once when the context is made, so every value computed in one reconcile agrees
    (e.g. ``end - start == default`` exactly).
    """

    #: the API as a reader and a writer: :class:`poolboy.kube.KubeClient`, or the engine's cached client
    kube: Client
    settings: Settings
    now: datetime = field(default_factory=utcnow)
    #: unbound handles by binding scope, kept by the engine (None: binding lists candidates from the API)
    index: HandleIndex | None = None
    #: reads that go to the API server, never to a cache (controller-runtime's APIReader), for the few questions a
    #: cache that lags may answer wrongly; None: :attr:`kube` reads from the API already
    api: Reader | None = None

    @property
    def api_reader(self) -> Reader:
        return self.api if self.api is not None else self.kube

    def label(self, suffix: str) -> str:
        return self.settings.label(suffix)
