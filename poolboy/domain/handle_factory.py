"""Every ResourceHandle Poolboy creates is built here (:func:`new_handle`): a claim's own handle, and a pool's.

A claim's handle is created when the claim found no candidate. Its name is derived from the claim's uid, so a
repeated create (a retried reconcile, a second worker after a lost lease) is a 409 that we adopt instead of a
duplicate handle (docs/behaviour.md#design-rules, rule 3). A 409 is adopted only when the existing handle really is
ours (bound to this claim and not deleting); otherwise the next derived name is tried.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from poolboy import kube as kube_errors
from poolboy.domain.binding import bound_to, claim_ref, claim_uid_annotation, is_deleting
from poolboy.kinds import RESOURCE_HANDLE
from poolboy.result import PermanentError

if TYPE_CHECKING:
    from poolboy.context import Context

log = logging.getLogger(__name__)

_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"
_ATTEMPTS = 4


def handle_name(claim_uid: str | None = None, attempt: int = 0) -> str:
    """``guid-`` + 5 lowercase alphanumerics.

    For a claim's handle a pure function of the claim uid (and the attempt number), so that a repeated create
    collides with the first instead of making a second handle; random (``claim_uid`` None) for a pool's handle,
    which no claim owns yet."""
    if claim_uid is None:
        number = secrets.randbits(64)
    else:
        seed = claim_uid if attempt == 0 else f"{claim_uid}/{attempt}"
        number = int.from_bytes(hashlib.sha256(seed.encode()).digest()[:8], "big")
    chars = []
    for _ in range(5):
        number, digit = divmod(number, len(_ALPHABET))
        chars.append(_ALPHABET[digit])
    return "guid-" + "".join(chars)


def is_claims_own(claim_uid: str, name: str) -> bool:
    """Whether ``name`` is one of the names a claim's own handle is created under (:func:`handle_name`)."""
    return any(name == handle_name(claim_uid, attempt) for attempt in range(_ATTEMPTS))


def handle_body(ctx: Context, claim: Mapping[str, Any], name: str, *, provider_spec: dict[str, Any] | None,
                resources: list[dict[str, Any]], lifespan: dict[str, Any] | None,
                annotations: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A ResourceHandle bound to ``claim`` from birth: finalizer D, claim labels and ``spec.resourceClaim``."""
    spec: dict[str, Any] = {"resourceClaim": claim_ref(ctx, claim), "resources": resources}
    if provider_spec is not None:
        spec["provider"] = provider_spec
    if lifespan:
        spec["lifespan"] = lifespan
    labels = {ctx.label("resource-claim-name"): claim["metadata"]["name"],
              ctx.label("resource-claim-namespace"): claim["metadata"]["namespace"]}
    return new_handle(ctx, name, labels=labels, spec=spec,
                      annotations={**claim_uid_annotation(ctx, claim), **(annotations or {})})


def new_handle(ctx: Context, name: str, *, labels: Mapping[str, str], annotations: Mapping[str, str],
               spec: dict[str, Any]) -> dict[str, Any]:
    """A ResourceHandle body in the operator namespace, carrying Poolboy's finalizer from birth (so that no
    handle Poolboy made can vanish before its cleanup ran)."""
    return {
        "apiVersion": ctx.settings.api_version,
        "kind": RESOURCE_HANDLE,
        "metadata": {"name": name, "namespace": ctx.settings.operator_namespace,
                     "finalizers": [ctx.settings.finalizer], "labels": dict(labels), "annotations": dict(annotations)},
        "spec": spec,
    }


def create_or_adopt(ctx: Context, claim: Mapping[str, Any], *, provider_spec: dict[str, Any] | None,
                    resources: list[dict[str, Any]], lifespan: dict[str, Any] | None,
                    annotations: Mapping[str, str] | None = None) -> tuple[dict[str, Any], bool]:
    """Create the claim's handle; ``(handle, created)``. An existing handle of ours is adopted (created False)."""
    uid = claim["metadata"]["uid"]
    for attempt in range(_ATTEMPTS):
        name = handle_name(uid, attempt)
        body = handle_body(ctx, claim, name, provider_spec=provider_spec, resources=resources, lifespan=lifespan,
                           annotations=annotations)
        try:
            return ctx.kube.create(body), True
        except kube_errors.AlreadyExists:
            existing = ctx.kube.get_or_none(ctx.settings.api_version, RESOURCE_HANDLE, name,
                                            ctx.settings.operator_namespace)
            if existing is None:
                raise kube_errors.Conflict(409, "Conflict", f"handle {name} vanished after 409; retrying") from None
            if bound_to(ctx, existing, claim) and not is_deleting(existing):
                log.info("adopting existing handle %s of claim %s/%s", name, claim["metadata"]["namespace"],
                         claim["metadata"]["name"])
                return existing, False
            log.info("handle name %s is taken by another claim or is deleting; trying the next name", name)
    raise PermanentError("HandleNameTaken", f"no free handle name derived from claim uid {uid}")
