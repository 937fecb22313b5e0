"""Every kind Poolboy reconciles, declared once (:data:`DECLARED`), as controller-runtime's builder declares a
controller: what reconciles it, where it is watched, how it is swept. The watcher's routes, the engine's reconcilers
and sweeps, the Celery queues and tasks and beat's schedule are all derived from these declarations, so adding a kind
is its reconciler module, one :class:`Kind` here and its CRD.

The Kubernetes kind names are also constants (:data:`RESOURCE_CLAIM`, ...): code refers to them, never to a string.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Kind:
    """One kind Poolboy reconciles."""

    #: the kind's token in work keys (``claim/<namespace>/<name>``), task names and metrics labels
    token: str
    #: the Kubernetes kind of the operator's API group
    name: str
    #: the module whose ``reconcile(ctx, namespace, name) -> Result`` runs its keys (imported on first use)
    reconciler: str
    #: watched and listed in every namespace (claims); the others live in the operator namespace only
    all_namespaces: bool = False
    #: the :class:`~poolboy.settings.Settings` field with the interval of its periodic manage sweep; None: only the
    #: resync lists it (its events and the keys other runs wake drive it)
    sweep_interval: str | None = None
    #: a sweep passes over objects unchanged since their last successful run that owe none (:mod:`engine.sweeps`'
    #: clean marks): their events, the keys other runs wake and their own ``requeue_at`` drive them, and the
    #: sync period is the net under a lost event of something they depend on
    skip_converged: bool = True

    @property
    def plural(self) -> str:
        """The resource name in the API's paths (``resourceclaims``)."""
        return self.name.lower() + "s"

    @property
    def queue(self) -> str:
        """The Celery queue its reconciles are published to: one per kind, so a burst of one cannot starve another."""
        return self.token + "s"


RESOURCE_CLAIM = "ResourceClaim"
RESOURCE_HANDLE = "ResourceHandle"
RESOURCE_POOL = "ResourcePool"
RESOURCE_PROVIDER = "ResourceProvider"
RESOURCE_POOL_SCALING = "ResourcePoolScaling"

CLAIM = Kind("claim", RESOURCE_CLAIM, "poolboy.reconcilers.claim", all_namespaces=True,
             sweep_interval="manage_claims_interval")
HANDLE = Kind("handle", RESOURCE_HANDLE, "poolboy.reconcilers.handle", sweep_interval="manage_handles_interval")
POOL = Kind("pool", RESOURCE_POOL, "poolboy.reconcilers.pool", sweep_interval="manage_pools_interval")
#: a provider's and a scaling's runs are cheap and rare: every resync runs them all
PROVIDER = Kind("provider", RESOURCE_PROVIDER, "poolboy.reconcilers.provider", skip_converged=False)
SCALING = Kind("scaling", RESOURCE_POOL_SCALING, "poolboy.reconcilers.scaling", skip_converged=False)

#: every kind, in the order a worker consuming several queues serves them: claims, whose binds users wait for, before
#: the work a bind causes (the bound handle, the pool's refill)
DECLARED: tuple[Kind, ...] = (CLAIM, HANDLE, POOL, PROVIDER, SCALING)
#: token -> declaration
BY_TOKEN: dict[str, Kind] = {kind.token: kind for kind in DECLARED}
#: Kubernetes kind -> declaration
BY_NAME: dict[str, Kind] = {kind.name: kind for kind in DECLARED}
