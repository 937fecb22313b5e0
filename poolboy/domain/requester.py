"""Who asked for a resource (docs/behaviour.md#requester): the OpenShift user named by the claim namespace's requester
annotation.

The OpenShift ``user.openshift.io`` API is absent on plain Kubernetes (and in devcluster); an absent API, user or
identity is treated exactly like a missing object so that templates see stable placeholder shapes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from poolboy import kube

if TYPE_CHECKING:
    from poolboy.context import Context

REQUESTER_ANNOTATION = "openshift.io/requester"
USER_API = "user.openshift.io/v1"


@dataclass
class Requester:
    user: dict[str, Any] | None = None
    identities: list[dict[str, Any]] = field(default_factory=list)

    @property
    def identity(self) -> dict[str, Any] | None:
        return self.identities[0] if self.identities else None

    def variables(self) -> dict[str, Any]:
        """``requester_user``, ``requester_identity``, ``requester_identities`` (None without a requester)."""
        return {"requester_user": self.user, "requester_identity": self.identity,
                "requester_identities": self.identities if self.user is not None else None}

    def annotations(self, ctx: Context) -> dict[str, str]:
        """``D/resource-requester-*``; omitted without a requester, and each one when its value is unknown."""
        if self.user is None:
            return {}
        result = {ctx.label("resource-requester-user"): self.user["metadata"]["name"]}
        extra = (self.identity or {}).get("extra") or {}
        for key, suffix in (("email", "email"), ("name", "name"), ("preferred_username", "preferred-username")):
            if extra.get(key):
                result[ctx.label(f"resource-requester-{suffix}")] = str(extra[key])
        return result


def _get_optional(ctx: Context, api_version: str, kind: str, name: str) -> dict[str, Any] | None:
    try:
        return ctx.kube.get_or_none(api_version, kind, name)
    except kube.ApiMissing:
        return None


def get_requester(ctx: Context, namespace: str | None) -> Requester:
    """The requester of a claim namespace, or an empty :class:`Requester` when there is none."""
    if not namespace:
        return Requester()
    ns = _get_optional(ctx, "v1", "Namespace", namespace)
    user_name = (((ns or {}).get("metadata") or {}).get("annotations") or {}).get(REQUESTER_ANNOTATION)
    if not user_name:
        return Requester()
    user = _get_optional(ctx, USER_API, "User", user_name) or {"metadata": {"name": user_name}, "identities": []}
    identities = []
    for identity_name in user.get("identities") or []:
        identity = _get_optional(ctx, USER_API, "Identity", identity_name)
        identities.append(identity or {"metadata": {"name": identity_name}, "extra": {}})
    return Requester(user=user, identities=identities)
