"""What the stack's fork server imports once, before it forks each component (:mod:`stack.forked`).

Every component of ``poolboy dev`` used to import the same libraries on its own: about 0.6–0.8 s of CPU each (the
``kubernetes`` configuration loaders alone 0.35 s), so eight workers, the watcher and beat spent 8 s of CPU on two
cores before the first reconcile. Imported once here, the forked components share these pages copy-on-write:
start-up costs each of them only its own set-up, and their proportional memory (PSS) shrinks by the shared part.

Only modules whose import reads no per-component setting may be listed: a component's environment is set after
the fork, so whatever a module decides from ``os.environ`` at import time would be the fork server's decision.
``prometheus_client`` is the one to keep out (it picks its multiprocess mode from ``PROMETHEUS_MULTIPROC_DIR`` at
import time, and each worker sets that itself); ``tests/integration/test_forked_components.py`` holds the list to
it. Celery's process titles stay off in forked components (``NOSETPS``): the stack gives each one the command line
it would have had as a process of its own (:mod:`stack.component`).
"""

from __future__ import annotations

import gc
import importlib
import os

#: imported in this order; each one's import reads no per-component setting (see the module's docstring)
MODULES = (
    "yaml", "orjson", "urllib3", "dateutil.parser",
    "kubernetes.client", "kubernetes.config",
    "redis", "kombu", "kombu.transport.redis",
    "celery", "celery.app.base", "celery.worker", "celery.apps.worker", "celery.beat", "redbeat",
    "jinja2", "jinja2.sandbox", "jsonschema",
)


def load() -> None:
    os.environ.setdefault("NOSETPS", "1")  # before Celery's platforms module reads it
    for name in MODULES:
        importlib.import_module(name)
    # what is imported now stays shared: the collector never writes to these objects' pages after the fork
    gc.freeze()


load()
