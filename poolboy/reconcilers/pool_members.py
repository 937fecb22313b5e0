"""A pool's unbound handles: reading them (whole, or as index summaries) and deleting some of them safely.

Shared by the pool's steps that remove handles (unhealthy ones, outdated ones in a rollout) so that every removal
keeps the same two guarantees: a handle bound meanwhile is never deleted (the delete carries the resourceVersion
that was read unbound, so a bind in between makes it a 409 and the handle is skipped), and a handle a scaling made
is recorded in the pool's status first, so the scaling's count drops and it makes a replacement (see
:mod:`poolboy.domain.pool_handles`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from poolboy import keys, kube
from poolboy.context import Context
from poolboy.domain import binding, pool_handles, pool_revision, reuse
from poolboy.domain.binding import candidates, scopes
from poolboy.kinds import RESOURCE_HANDLE

log = logging.getLogger(__name__)

#: the key of a summary entry's time to ready (not a field of a handle)
TIME_TO_READY = "_timeToReady"


def unbound_handles(ctx: Context, pool_name: str, reader: kube.Reader | None = None) -> list[dict[str, Any]]:
    """The pool's unbound handles (:func:`poolboy.domain.binding.list_unbound`), whole, by name, from ``reader``
    (:attr:`Context.kube` unless given).

    Ignored handles (``D/ignore``) are left out: no claim can bind them, so they are not available and the pool
    replaces them; and the pool neither lists, deletes (unhealthy, outdated, pool deleted) nor otherwise touches
    them.
    """
    handles = binding.list_unbound(ctx, scopes.pool_scope(pool_name), reader=reader)
    return sorted(handles, key=lambda h: h["metadata"]["name"])


def available_handles(ctx: Context, pool_name: str) -> list[dict[str, Any]]:
    """The pool's unbound handles as far as counting, status and standby need them (name, creation time, revision,
    ``status.healthy``/``ready``/``state``, ``spec.standby``).

    From the engine's index of unbound handles when it can answer: one read of small summaries instead of every
    handle's document, so a pool run costs the same whatever the pool's size. Otherwise :func:`unbound_handles`.
    The index applies the same rule (:func:`poolboy.domain.binding.candidates.is_unbound`: no claim, not deleting, not
    ignored).
    """
    summaries = ctx.index.summaries(scopes.pool_scope(pool_name)) if ctx.index is not None else None
    if summaries is None:
        return unbound_handles(ctx, pool_name)
    revision_key = ctx.label(pool_revision.ANNOTATION)
    return [{"metadata": {"name": name, "creationTimestamp": entry.get("t") or "",
                          "annotations": {revision_key: entry["v"]} if entry.get("v") else {}},
             "spec": {"standby": entry["sb"]} if "sb" in entry else {},
             "status": {key: value for key, value in (("healthy", entry.get("h")), ("ready", entry.get("r")),
                                                      ("state", entry.get("st"))) if value is not None},
             TIME_TO_READY: entry.get("rt")}
            for name, entry in sorted(summaries.items())]


def cleaning_count(ctx: Context, pool_name: str, reader: kube.Reader | None = None) -> int:
    """How many of the pool's released handles are being cleaned for reuse (:mod:`poolboy.domain.reuse`), from
    ``reader`` (:attr:`Context.kube` unless given): the pool counts them as coming. One list by two indexed labels
    (the pool's, the cleaning label); a handle already being deleted (its cleaning failed) is not coming."""
    selector = f"{ctx.label('resource-pool-name')}={pool_name},{ctx.label(reuse.CLEANING_LABEL)}=true"
    handles = (reader or ctx.kube).list(ctx.settings.api_version, RESOURCE_HANDLE, ctx.settings.operator_namespace,
                                        label_selector=selector)
    return sum(1 for h in handles if not binding.is_deleting(h))


def time_to_ready(handle: dict[str, Any]) -> float | None:
    """Seconds from the handle's creation to ready, from a summary entry or the handle itself."""
    return handle[TIME_TO_READY] if TIME_TO_READY in handle else candidates.time_to_ready(handle)


def measured_time_to_ready(handles: list[dict[str, Any]], previous: Any) -> int | None:
    """The pool's ``status.timeToReadySeconds``: the median time to ready of its ready unbound handles, or the last
    measurement while none is ready (in a queue every handle is bound as soon as it is ready)."""
    values = sorted(v for v in (time_to_ready(h) for h in handles) if v is not None and v >= 0)
    if values:
        return round(values[len(values) // 2])
    return previous if isinstance(previous, int) and not isinstance(previous, bool) else None


def delete_unbound(ctx: Context, pool: dict[str, Any], choose: Callable[[list[dict[str, Any]]], list[dict[str, Any]]],
                   why: str) -> tuple[dict[str, Any], set[str], list[str]]:
    """Delete the handles ``choose`` picks from the pool's unbound handles, as read whole now (with the
    resourceVersions the deletes are conditional on).

    Returns the pool (its status written when a scaling's handle is among them), the names deleted, and the keys
    to wake (the deleted handles, the scalings whose count dropped).
    """
    victims = choose(unbound_handles(ctx, pool["metadata"]["name"]))
    if not victims:
        return pool, set(), []
    pool, touched = _record_scaling_handles(ctx, pool, victims)
    deleted: list[dict[str, Any]] = []
    for handle in victims:
        metadata = handle["metadata"]
        try:
            ctx.kube.delete(handle["apiVersion"], RESOURCE_HANDLE, metadata["name"], metadata["namespace"],
                            uid=metadata.get("uid"), resource_version=metadata.get("resourceVersion"))
        except kube.NotFound:
            continue
        except kube.Conflict:  # changed since read (bound, or became unhealthy/ready): look again next run
            log.info("pool %s: handle %s changed before its deletion (%s); skipped", pool["metadata"]["name"],
                     metadata["name"], why)
            continue
        log.info("pool %s: deleted %s handle %s", pool["metadata"]["name"], why, metadata["name"])
        deleted.append(handle)
    wake = [keys.make(keys.HANDLE, h["metadata"]["namespace"], h["metadata"]["name"]) for h in deleted]
    wake += [keys.make(keys.SCALING, ctx.settings.operator_namespace, s) for s in touched]
    return pool, {h["metadata"]["name"] for h in deleted}, wake


def _record_scaling_handles(ctx: Context, pool: dict[str, Any], victims: list[dict[str, Any]]) -> tuple[
        dict[str, Any], list[str]]:
    """Record the victims a scaling made in the pool's status (before deleting them), so it replaces them."""
    status = dict(pool.get("status") or {})
    record = {k: list(v) for k, v in (status.get(pool_handles.UNHEALTHY_DELETED_KEY) or {}).items()}
    scaling_label = ctx.label("resource-pool-scaling-name")
    touched: list[str] = []
    for handle in victims:
        scaling = (handle["metadata"].get("labels") or {}).get(scaling_label)
        if scaling and handle["metadata"]["name"] not in record.get(scaling, []):
            record.setdefault(scaling, []).append(handle["metadata"]["name"])
            touched.append(scaling)
    if not touched:
        return pool, []
    status[pool_handles.UNHEALTHY_DELETED_KEY] = record
    return write_status(ctx, pool, status), list(dict.fromkeys(touched))


def write_status(ctx: Context, pool: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    """Replace the pool's status when it changed; the pool as the API returned it."""
    if status == (pool.get("status") or {}):
        return pool
    return ctx.kube.replace_status({**pool, "status": status})
