"""Provider matching, template matching and handle ranking for binding (docs/behaviour.md#provider-selection, #binding).

Why pure: binding must be deterministic and must apply *every* exclusion and ranking criterion (upstream shipped
several of them broken at one time or another), so the whole decision is a function of the claim, the candidate
handles, the providers and one ``now``, with table-driven tests.

Decisions the upstream behaviour leaves open (docs/behaviour.md#binding states the outcome):

- ``matches(match, template)`` is a deep subset: every key of ``match`` must be in ``template`` with a matching
  value; lists match element-wise by index (``match``'s list may be shorter than the template's, never longer);
  scalars compare with JSON equality (``True`` is not ``1``).
- ``select_providers`` ignores providers without a non-empty ``spec.match``: an empty match would match every
  template and make every selection ambiguous.
- Ranking criterion 2 counts a resource-name mismatch only where the claim resource names itself: a claim
  resource without a ``name`` has no preference.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from poolboy import DEFAULT_DOMAIN
from poolboy.domain.handle_state import RESUMING, STANDBY
from poolboy.domain.reuse import is_released
from poolboy.result import PermanentError
from poolboy.utils.jsonpatch import diff, json_equal, path_matches
from poolboy.utils.timeutil import parse_timestamp

__all__ = [
    "EXPIRY_MARGIN",
    "check_match_ignore",
    "exclusion_reason",
    "matches",
    "rank_candidates",
    "rank_key",
    "select_providers",
    "template_diff_ops",
    "template_matches",
]

EXPIRY_MARGIN = timedelta(seconds=120)
_FAR_FUTURE = datetime.max.replace(tzinfo=None)


def matches(match: Any, template: Any) -> bool:
    """Whether ``match`` is a deep subset of ``template`` (see module docstring)."""
    if isinstance(match, dict):
        return isinstance(template, dict) and all(
            key in template and matches(value, template[key]) for key, value in match.items()
        )
    if isinstance(match, list):
        return (
            isinstance(template, list)
            and len(match) <= len(template)
            and all(matches(item, template[index]) for index, item in enumerate(match))
        )
    return json_equal(match, template)


def select_providers(template: dict, providers: list[dict]) -> list[dict]:
    """All providers whose ``spec.match`` is a deep subset of ``template`` (every provider is considered)."""
    selected = []
    for provider in providers:
        match = (provider.get("spec") or {}).get("match")
        if isinstance(match, dict) and match and matches(match, template):
            selected.append(provider)
    return selected


def template_diff_ops(handle_template: Any, claim_template: Any) -> list[dict]:
    """The JSON-patch diff handle → claim keeping only ``add`` and ``replace`` (fields only in the handle ignored)."""
    return [op for op in diff(handle_template or {}, claim_template or {}) if op["op"] in ("add", "replace")]


def template_matches(handle_template: Any, claim_template: Any, match_ignore: list[str] | None) -> bool:
    """Whether every kept diff op's path is fully matched by some ``matchIgnore`` regex (docs/behaviour.md#binding)."""
    patterns = [str(pattern) for pattern in match_ignore or []]
    return all(
        any(path_matches(pattern, op["path"]) for pattern in patterns)
        for op in template_diff_ops(handle_template, claim_template)
    )


def _get(obj: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def _provider_name(resource: Any) -> str | None:
    name: str | None = _get(resource, "provider", "name")
    return name


def _match_ignore(providers: dict[str, dict], name: str | None) -> list[str]:
    value = _get(providers.get(name or "") or {}, "spec", "matchIgnore")
    return value if isinstance(value, list) else []


def check_match_ignore(providers: dict[str, dict]) -> None:
    """Raise ``InvalidMatchIgnore`` for the first provider whose ``matchIgnore`` holds an invalid regex."""
    for name in sorted(providers):
        for pattern in _match_ignore(providers, name):
            try:
                path_matches(str(pattern), "")
            except ValueError as error:
                raise PermanentError("InvalidMatchIgnore", f"ResourceProvider {name} matchIgnore: {error}") from None


def _pool_name(handle: dict, domain: str) -> str | None:
    return _get(handle, "spec", "resourcePool", "name") or (_get(handle, "metadata", "labels") or {}).get(
        f"{domain}/resource-pool-name"
    )


def end_too_soon(end: str | None, now: datetime) -> bool:
    """A handle whose lifespan ``end`` falls within :data:`EXPIRY_MARGIN` of ``now`` is no candidate
    (docs/behaviour.md#binding)."""
    if not end:
        return False
    try:
        return parse_timestamp(end) < now + EXPIRY_MARGIN
    except ValueError:
        return True  # an unreadable end cannot be trusted to outlive the bind


def _expires_soon(handle: dict, now: datetime) -> bool:
    return end_too_soon(_get(handle, "spec", "lifespan", "end"), now)


def exclusion_reason(
    claim: dict,
    handle: dict,
    providers: dict[str, dict],
    now: datetime,
    *,
    domain: str = DEFAULT_DOMAIN,
    claim_resources: list[dict] | None = None,
) -> str | None:
    """Why ``handle`` cannot bind ``claim`` (docs/behaviour.md#binding candidate rules), or ``None`` when it is a
    candidate."""
    resources = claim_resources if claim_resources is not None else (_get(claim, "spec", "resources") or [])
    handle_resources = _get(handle, "spec", "resources") or []
    now = parse_timestamp(now)  # accepts naive (taken as UTC) and aware datetimes
    if _get(handle, "metadata", "deletionTimestamp"):
        return "deleting"
    if _get(handle, "spec", "resourceClaim"):
        return "already bound"
    if is_released(handle, domain):
        return "cleaning"
    if _get(handle, "status", "healthy") is False:
        return "unhealthy"
    pool = (_get(claim, "metadata", "annotations") or {}).get(f"{domain}/resource-pool-name")
    if pool and _pool_name(handle, domain) != pool:
        return "not in the requested pool"
    if _expires_soon(handle, now):
        return "expires within 120s"
    if len(handle_resources) > len(resources):
        return "more resources than the claim"
    for index, handle_resource in enumerate(handle_resources):
        claim_resource = resources[index]
        if _provider_name(handle_resource) != _provider_name(claim_resource):
            return f"provider mismatch at resource {index}"
        ignore = _match_ignore(providers, _provider_name(claim_resource))
        if not template_matches(handle_resource.get("template"), claim_resource.get("template"), ignore):
            return f"template mismatch at resource {index}"
    return None


def state_rank(state: Any) -> int:
    """Ranking criterion 5a: a running handle binds at once, a resuming one sooner than one on standby (0 for every
    handle of a pool without standby, which keeps their order)."""
    return {RESUMING: 1, STANDBY: 2}.get(state, 0) if isinstance(state, str) else 0


def rank_key(resources: list[dict], handle: dict) -> tuple:
    """Ranking criteria 1–8 of ``handle`` for a claim with ``resources`` (lower is better)."""
    handle_resources = _get(handle, "spec", "resources") or []
    name_mismatches = sum(
        1
        for index, handle_resource in enumerate(handle_resources)
        if resources[index].get("name") and resources[index].get("name") != handle_resource.get("name")
    )
    diff_ops = sum(
        len(template_diff_ops(handle_resource.get("template"), resources[index].get("template")))
        for index, handle_resource in enumerate(handle_resources)
    )
    healthy = _get(handle, "status", "healthy") is True
    ready = _get(handle, "status", "ready") is True  # unknown readiness is not preferred over known unready
    score = _get(handle, "spec", "preferenceScore")
    score = score if isinstance(score, int | float) and not isinstance(score, bool) else 0
    created = _get(handle, "metadata", "creationTimestamp")
    try:
        created_at = parse_timestamp(created).replace(tzinfo=None) if created else _FAR_FUTURE
    except ValueError:
        created_at = _FAR_FUTURE
    return (
        abs(len(resources) - len(handle_resources)),
        name_mismatches,
        diff_ops,
        not healthy,
        not ready,
        state_rank(_get(handle, "status", "state")),
        -score,
        created_at,
        _get(handle, "metadata", "name") or "",
    )


def rank_candidates(
    claim: dict,
    handles: list[dict],
    providers: dict[str, dict],
    now: datetime,
    *,
    domain: str = DEFAULT_DOMAIN,
    claim_resources: list[dict] | None = None,
) -> list[dict]:
    """Candidate handles for ``claim``, best first (docs/behaviour.md#binding exclusions, then ranking criteria 1–8).

    ``claim_resources`` defaults to ``claim.spec.resources``; in provider mode pass the provider's generated list.
    ``providers`` maps provider name → provider object (for ``matchIgnore``). An invalid ``matchIgnore`` regex is
    a :class:`PermanentError` (``InvalidMatchIgnore``) naming the provider, whether or not a diff would reach it,
    so it shows at once rather than when some handle happens to differ; only the claim's own providers are checked,
    so one provider's mistake never blocks claims of another.
    """
    resources = claim_resources if claim_resources is not None else (_get(claim, "spec", "resources") or [])
    check_match_ignore({name: providers[name] for name in map(_provider_name, resources) if name in providers})
    candidates = [
        handle
        for handle in handles
        if exclusion_reason(claim, handle, providers, now, domain=domain, claim_resources=resources) is None
    ]
    return sorted(candidates, key=lambda handle: rank_key(resources, handle))
