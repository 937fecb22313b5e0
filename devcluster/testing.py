"""Testing helpers shipped with devcluster (as ``celery.contrib.testing`` is with Celery): the server as a
subprocess. The implementation lives in :mod:`devcluster.process`, which ``poolboy dev`` uses too; production code
never imports a ``testing`` module."""

from devcluster.process import DEFAULT_CRDS, DevCluster, die_with_parent

__all__ = ["DEFAULT_CRDS", "DevCluster", "die_with_parent"]
