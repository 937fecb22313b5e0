"""Poolboy domain layer: pure, synchronous logic over JSON documents.

Nothing in this package imports Celery or Redis. The reconcilers are written against the thin Kubernetes
client wrapper in :mod:`poolboy.kube` and return :class:`poolboy.result.Result` values that the engine in
``workers/`` turns into "done", "again at T" or a retry.
"""

DEFAULT_DOMAIN = "poolboy.gpte.redhat.com"
API_VERSION = "v1"
