"""The order in which waiting claims are served under a queue policy (:mod:`.queue_policy`), pure.

Each waiting claim gets a sort key, and the claims are served in key order:

1. **Priority** (with ``priority``): the effective level ``class + floor(waited / agingInterval)`` — higher first. A
   claim's level rises by one per interval it waits, so a claim of any class eventually outranks every newer one:
   nothing starves.
2. **Fair share** (``order: FairShare``): among claims of one level, ``(bound + k + 1) / weight`` — lower first —,
   where ``bound`` is how many of the scope's handles the claim's namespace holds, ``k`` how many of the
   namespace's waiting claims are served before this one, and ``weight`` the namespace's weight. This is the share
   the namespace would hold once the claim is served, so the next handle always goes to the namespace that holds
   the fewest per weight, and N namespaces that keep claims waiting get about 1/N each.
3. **Age**: older first (the whole order under FIFO; inside a namespace always).

With ``maxPerNamespace`` a namespace's claims beyond ``cap − bound`` (in the namespace's own order) are over the cap:
they have no position and are served only when one of the namespace's handles goes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from poolboy.domain.binding.queue_policy import Order, QueuePolicy


@dataclass(frozen=True)
class Waiter:
    """A claim in the queue: who, since when (epoch seconds), and the priority class its label asks for."""

    namespace: str
    name: str
    created: float
    priority: str | None = None


@dataclass(frozen=True)
class Standing:
    """A waiting claim's place under the policy."""

    waiter: Waiter
    #: 1 is served next; None while the namespace is at its cap
    position: int | None
    #: the effective priority, None without priority classes
    level: int | None
    #: the namespace's waiting claims served before this one
    ahead_in_namespace: int
    #: the scope's handles the namespace holds
    bound: int

    @property
    def capped(self) -> bool:
        return self.position is None


def order(waiters: Iterable[Waiter], bound: Mapping[str, int], weights: Mapping[str, float], policy: QueuePolicy,
          now: float) -> list[Standing]:
    """Every waiter's standing: those that may be served in the order they are, then those over the cap."""
    def level(waiter: Waiter) -> int:
        return policy.priority.level(waiter.priority, now - waiter.created) if policy.priority else 0

    by_namespace: dict[str, list[Waiter]] = {}
    for waiter in waiters:
        by_namespace.setdefault(waiter.namespace, []).append(waiter)
    keyed: list[tuple[tuple, Waiter, int, int]] = []
    capped: list[tuple[Waiter, int, int]] = []
    for namespace, members in by_namespace.items():
        members.sort(key=lambda w: (-level(w), w.created, w.name))
        held = bound.get(namespace, 0)
        weight = weights.get(namespace, 1.0)
        for k, waiter in enumerate(members):
            if policy.max_per_namespace is not None and held + k >= policy.max_per_namespace:
                capped.append((waiter, k, held))
                continue
            share = (held + k + 1) / weight if policy.order is Order.FAIR_SHARE else 0.0
            keyed.append(((-level(waiter), share, waiter.created, namespace, waiter.name), waiter, k, held))
    keyed.sort(key=lambda item: item[0])
    levels = policy.priority is not None
    standings = [Standing(waiter, position, level(waiter) if levels else None, k, held)
                 for position, (_, waiter, k, held) in enumerate(keyed, start=1)]
    capped.sort(key=lambda item: (item[0].created, item[0].namespace, item[0].name))
    standings += [Standing(waiter, None, level(waiter) if levels else None, k, held) for waiter, k, held in capped]
    return standings


def standing_of(standings: Iterable[Standing], namespace: str, name: str) -> Standing | None:
    return next((s for s in standings if s.waiter.namespace == namespace and s.waiter.name == name), None)


def heads(standings: Iterable[Standing], free: int) -> list[Waiter]:
    """The claims that may take one of ``free`` unbound handles now: the first ``free`` positions."""
    return [s.waiter for s in standings if s.position is not None and s.position <= free]

