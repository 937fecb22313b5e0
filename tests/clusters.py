"""Which API server the end-to-end tests start under the stack: the real control plane (etcd, kube-apiserver and
kube-controller-manager, :mod:`controlplane`) unless ``POOLBOY_TEST_CLUSTER=devcluster`` says otherwise.

On a machine that cannot build the control plane (no Go), the tests that need it are skipped with one line saying
what to install; with ``POOLBOY_REQUIRE_CONTROL_PLANE=1`` (set by ``.ci/run``) the run fails instead.
"""

from __future__ import annotations

import functools
import os

#: ``real`` or ``devcluster``: the ``cluster`` of every end-to-end stack (``StackOptions.cluster``)
E2E_CLUSTER = os.environ.get("POOLBOY_TEST_CLUSTER", "real")
REQUIRED = os.environ.get("POOLBOY_REQUIRE_CONTROL_PLANE") == "1"


@functools.cache
def unavailable() -> str | None:
    """Why the real control plane cannot run here, or None when it can (its binaries are built or found)."""
    from controlplane import ControlPlaneUnavailable, find_binaries

    try:
        find_binaries()
    except ControlPlaneUnavailable as error:
        return str(error)
    return None
