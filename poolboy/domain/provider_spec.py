"""Typed, read-only access to a ResourceProvider object: its identity and its spec fields
(docs/behaviour.md#resources, #template-variables).

Why a separate base: the fields are plain reads of the spec that every reconciler and the validation need, with
nothing to render and no API to call; the rules built on them live in :class:`poolboy.domain.provider.Provider`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import orjson

from poolboy.kinds import RESOURCE_PROVIDER

#: a template expression that reads the clock: now(...), timestamp(...), datetime.* (over-matching only costs runs)
_CLOCK = re.compile(r"\bnow\s*\(|\btimestamp\b|\bdatetime\b")


@lru_cache(maxsize=256)
def _reads_clock(spec_json: bytes) -> bool:
    return _CLOCK.search(spec_json.decode()) is not None


class ProviderSpec:
    """A ResourceProvider as returned by the API: identity and spec fields."""

    def __init__(self, obj: dict[str, Any]) -> None:
        self.obj = obj

    # --- identity ------------------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        name: str = self.obj["metadata"]["name"]
        return name

    @property
    def namespace(self) -> str:
        namespace: str = self.obj["metadata"].get("namespace", "")
        return namespace

    @property
    def ref(self) -> dict[str, str]:
        """Full reference ``{apiVersion, kind, name, namespace}`` (docs/behaviour.md#conventions)."""
        return {"apiVersion": self.obj.get("apiVersion", ""), "kind": RESOURCE_PROVIDER, "name": self.name,
                "namespace": self.namespace}

    @property
    def spec(self) -> dict[str, Any]:
        return self.obj.get("spec") or {}

    def __repr__(self) -> str:
        return f"Provider({self.name!r})"

    @property
    def reads_clock(self) -> bool:
        """Whether a template of this provider may render differently as time passes (it names ``now()``,
        ``timestamp`` or ``datetime``): its claims and handles then re-run every ``time_dependent_interval``, the
        only periodic work a converged object needs."""
        return _reads_clock(orjson.dumps(self.spec, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS))

    # --- spec fields ---------------------------------------------------------------------------------------

    @property
    def template_enable(self) -> bool:
        return bool((self.spec.get("template") or {}).get("enable"))

    @property
    def approval_required(self) -> bool:
        return bool((self.spec.get("approval") or {}).get("required"))

    @property
    def approval_pending_message(self) -> str:
        return (self.spec.get("approval") or {}).get("pendingMessage") or "Approval pending."

    @property
    def disable_creation(self) -> bool:
        return bool(self.spec.get("disableCreation"))

    @property
    def default(self) -> dict[str, Any] | None:
        return self.spec.get("default")

    @property
    def override(self) -> dict[str, Any] | None:
        return self.spec.get("override")

    @property
    def match(self) -> dict[str, Any] | None:
        return self.spec.get("match")

    @property
    def match_ignore(self) -> list[str]:
        return list(self.spec.get("matchIgnore") or [])

    @property
    def update_filters(self) -> list[dict[str, Any]]:
        return list(self.spec.get("updateFilters") or [])

    @property
    def status_redactions(self) -> list[dict[str, Any]]:
        """``[{pathMatch}]``: fields of the managed resources whose values never reach a status."""
        return list(self.spec.get("statusRedactions") or [])

    @property
    def parameters(self) -> list[dict[str, Any]]:
        return list(self.spec.get("parameters") or [])

    @property
    def vars(self) -> dict[str, Any]:
        return dict(self.spec.get("vars") or {})

    @property
    def resource_name(self) -> str:
        return self.spec.get("resourceName") or self.name

    @property
    def resource_requires_claim(self) -> bool:
        return bool(self.spec.get("resourceRequiresClaim"))

    @property
    def health_check(self) -> str | None:
        return self.spec.get("healthCheck") or None

    @property
    def readiness_check(self) -> str | None:
        return self.spec.get("readinessCheck") or None

    @property
    def status_summary_template(self) -> Any:
        return self.spec.get("statusSummaryTemplate")

    @property
    def linked_resource_providers(self) -> list[dict[str, Any]]:
        return list(self.spec.get("linkedResourceProviders") or [])

    @property
    def template_definition(self) -> dict[str, Any] | None:
        return (self.spec.get("template") or {}).get("definition")

    @property
    def has_template_definition(self) -> bool:
        """docs/behaviour.md#claim-initialisation: a provider with neither ``override`` nor ``template.definition`` is a
        pure linker."""
        return self.override is not None or self.template_definition is not None

    @property
    def resource_claim_labels(self) -> dict[str, str]:
        return dict(self.spec.get("resourceClaimLabels") or {})

    @property
    def resource_claim_annotations(self) -> dict[str, str]:
        return dict(self.spec.get("resourceClaimAnnotations") or {})

    @property
    def lifespan(self) -> dict[str, Any]:
        return dict(self.spec.get("lifespan") or {})

    @property
    def unclaimed(self) -> str | None:
        return self.lifespan.get("unclaimed") or None

    @property
    def validation(self) -> dict[str, Any]:
        return dict(self.spec.get("validation") or {})

    # --- template variables --------------------------------------------------------------------------------

    def template_vars(self, handle: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Provider ``vars`` overlaid by the handle's ``spec.vars`` (docs/behaviour.md#template-variables)."""
        result = self.vars
        if handle is not None:
            result.update((handle.get("spec") or {}).get("vars") or {})
        return result

