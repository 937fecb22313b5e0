"""Request counts from the API server's own audit log, in the shape of devcluster's counters (verb × resource ×
namespace, and by named object), so a test or benchmark asks either cluster the same question.

The API server writes one audit event per request stage; with ``RequestReceived`` omitted, a request is its
``ResponseComplete`` event, and a watch also has a ``ResponseStarted`` one (both carry the same ``auditID``, counted
once); a dry run counts as ``<verb> (dry run)``, since it stores nothing. Requests of the control plane itself (the API
server's loopback client, the controller manager and its controllers' service accounts) are left out: devcluster's
built-in collectors make no requests either.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from devcluster.counters import Counters

POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
"""
#: users whose requests the counters leave out: the control plane's own components, and a node's (node/)
CONTROL_PLANE_USERS = ("system:apiserver", "system:kube-controller-manager", "system:kube-scheduler",
                       "system:kube-proxy")
CONTROL_PLANE_PREFIXES = ("system:serviceaccount:kube-system:", "system:node:", "poolboy-node:")


def apiserver_args(directory: Path) -> list[str]:
    """The flags that make kube-apiserver write a Metadata-level audit log into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    policy = directory / "audit-policy.yaml"
    policy.write_text(POLICY)
    # blocking: each event is written before the response, so counters read right after a request include it
    return [f"--audit-policy-file={policy}", f"--audit-log-path={directory / 'audit.log'}",
            "--audit-log-mode=blocking", "--audit-log-maxsize=0"]


class AuditCounters:
    """Counts the requests in ``log`` written since the last :meth:`reset`."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self._offset = 0
        # what has been counted since the reset, and up to where: each read parses only the lines written since
        self._counts = Counters()
        self._seen: set[str] = set()
        self._counted_to = 0

    def reset(self) -> None:
        """Count from here on: from the end of the last whole line (a line being written counts after the reset)."""
        self._counts, self._seen = Counters(), set()
        self._find_reset_offset()
        self._counted_to = self._offset

    def _find_reset_offset(self) -> None:
        if not self.log.exists():
            self._offset = 0
            return
        with open(self.log, "rb") as log:
            self._offset = log.seek(0, 2)
            while self._offset > 0:
                log.seek(max(0, self._offset - 4096))
                block = log.read(self._offset - max(0, self._offset - 4096))
                if b"\n" in block:
                    self._offset -= len(block) - block.rindex(b"\n") - 1
                    return
                self._offset -= len(block)

    def events(self, since_reset: bool = True) -> list[dict[str, Any]]:
        """The audit events since the last reset, or since the API server started (a last line still being written
        is left for the next read)."""
        if not self.log.exists():
            return []
        with open(self.log, "rb") as log:
            log.seek(self._offset if since_reset else 0)
            lines = log.read().split(b"\n")
        return [orjson.loads(line) for line in lines[:-1] if line.strip()]

    def counters(self) -> dict[str, Any]:
        for event in self._new_events():
            self._count(event)
        return self._counts.to_json()

    def _new_events(self) -> list[dict[str, Any]]:
        """The whole lines written since the last read (a line still being written waits for the next one)."""
        if not self.log.exists():
            return []
        with open(self.log, "rb") as log:
            log.seek(self._counted_to)
            block = log.read()
        end = block.rfind(b"\n") + 1
        self._counted_to += end
        return [orjson.loads(line) for line in block[:end].split(b"\n") if line.strip()]

    def _count(self, event: dict[str, Any]) -> None:
        audit_id = str(event.get("auditID"))
        if audit_id in self._seen or _control_plane(event):
            return
        self._seen.add(audit_id)
        ref = event.get("objectRef") or {}
        if not ref.get("resource"):
            return  # discovery, /version, /readyz: devcluster does not count those either
        resource = f"{ref['resource']}.{ref['apiGroup']}" if ref.get("apiGroup") else ref["resource"]
        verb = str(event.get("verb"))
        if "dryRun=All" in str(event.get("requestURI")):
            verb += " (dry run)"  # answered, nothing stored: not a write
        self._counts.add(verb, resource, ref.get("namespace") or "", ref.get("name") or "")


    def requests(self) -> list[Request]:
        """Every request answered since the API server started, whoever made it, in order: a watch from its start
        (its ``ResponseComplete`` comes only when it ends)."""
        answered: dict[str, dict[str, Any]] = {}
        for event in self.events(since_reset=False):
            if event.get("stage") in ("ResponseStarted", "ResponseComplete"):
                answered.setdefault(str(event.get("auditID")), event)
        return [Request.of(event) for event in answered.values()]

    def denied(self) -> list[Request]:
        """Every request refused with 403 since the API server started: by the authorizer (RBAC) or by an admission
        plugin that checks permissions (OwnerReferencesPermissionEnforcement)."""
        return [request for request in self.requests() if request.code == 403]


@dataclass(frozen=True)
class Request:
    """One request as the audit log names it: who, which verb, on what."""

    user: str
    verb: str
    #: ``<resource>[/<subresource>][.<group>]``, or the path of a request about no resource (discovery)
    resource: str
    namespace: str
    name: str
    code: int = 0
    #: which credential authenticated it (``JTI=<id>`` for a service-account token, the API server's
    #: ``authentication.kubernetes.io/credential-id``)
    credential: str = ""

    @classmethod
    def of(cls, event: dict[str, Any]) -> Request:
        ref = event.get("objectRef") or {}
        resource = ref.get("resource") or str(event.get("requestURI"))
        if ref.get("subresource"):
            resource += "/" + ref["subresource"]
        if ref.get("apiGroup"):
            resource += "." + ref["apiGroup"]
        user = event.get("user") or {}
        credential = ((user.get("extra") or {}).get("authentication.kubernetes.io/credential-id") or [""])[0]
        return cls(str(user.get("username")), str(event.get("verb")), resource, ref.get("namespace") or "",
                   ref.get("name") or "", int((event.get("responseStatus") or {}).get("code") or 0), credential)

    def __str__(self) -> str:
        where = f" in {self.namespace}" if self.namespace else ""
        return f"{self.user}: {self.verb} {self.resource} {self.name}{where}".replace("  ", " ")


def _control_plane(event: dict[str, Any]) -> bool:
    user = str((event.get("user") or {}).get("username") or "")
    return user in CONTROL_PLANE_USERS or user.startswith(CONTROL_PLANE_PREFIXES)
