"""Poolboy itself, importable without Celery or Redis: the contract the engine shares and the layers below it.

Layers, each importing only the ones before it (and the shared contract modules named below):
:mod:`poolboy.utils` (pure helpers: templating, JSON patch, merge, schema, time), :mod:`poolboy.kube` (the
Kubernetes HTTP client, discovery, and the Event recorder with its own background thread), :mod:`poolboy.domain`
(decisions, mostly pure, plus the few reads and conditional writes that belong to one decision),
:mod:`poolboy.reconcilers` (one per kind). Around them the contract with the engine in ``workers/``:
:mod:`poolboy.settings`, :mod:`poolboy.keys`, :mod:`poolboy.context`, :mod:`poolboy.observability` and
:mod:`poolboy.result`, whose values the engine turns into "done", "again at T" or a retry. Reconcilers are
synchronous: concurrency comes from the engine running many keys at once, never from inside one reconcile.
"""

DEFAULT_DOMAIN = "poolboy.gpte.redhat.com"
API_VERSION = "v1"
