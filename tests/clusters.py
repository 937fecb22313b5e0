"""Which API server the end-to-end tests start under the stack: the real control plane (etcd, kube-apiserver and
kube-controller-manager, :mod:`controlplane`) unless ``POOLBOY_TEST_CLUSTER=devcluster`` says otherwise.

On a machine that cannot build the control plane (no Go), the tests that need it are skipped with one line saying
what to install; with ``POOLBOY_REQUIRE_CONTROL_PLANE=1`` (set by ``.ci/run``) the run fails instead.
"""

from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stack.local import StackOptions

#: ``real`` or ``devcluster``: the ``cluster`` of every end-to-end stack (``StackOptions.cluster``)
E2E_CLUSTER = os.environ.get("POOLBOY_TEST_CLUSTER", "real")
REQUIRED = os.environ.get("POOLBOY_REQUIRE_CONTROL_PLANE") == "1"

#: the chart's ``managedResources`` of the end-to-end stacks: every kind their providers create (a test that makes a
#: kind of its own grants it with ``LocalStack.grant``, as an administrator upgrades the chart)
E2E_MANAGED = [
    {"apiGroups": [""], "resources": ["configmaps", "secrets", "services"]},
    {"apiGroups": ["apps"], "resources": ["deployments"]},
    {"apiGroups": ["kinds.example.test"], "resources": ["widgets"]},
]


def e2e_options(**options: Any) -> StackOptions:
    """``StackOptions`` of an end-to-end stack: on the real control plane every component runs as its chart
    ServiceAccount with the chart's RBAC (``service_accounts``), so the API server judges every call it makes."""
    from stack.local import StackOptions

    options.setdefault("managed_resources", list(E2E_MANAGED))
    cluster = options.pop("cluster", E2E_CLUSTER)
    return StackOptions(cluster=cluster, service_accounts=cluster == "real", **options)


@functools.cache
def unavailable() -> str | None:
    """Why the real control plane cannot run here, or None when it can (its binaries are built or found)."""
    from controlplane import ControlPlaneUnavailable, find_binaries

    try:
        find_binaries()
    except ControlPlaneUnavailable as error:
        return str(error)
    return None
