"""What the stack's fork server imports once, before it forks each component (:mod:`stack.forked`).

Each component imports the same libraries: about 0.6–0.8 s of CPU each (the ``kubernetes`` configuration loaders
alone 0.35 s), so eight workers, the watcher and beat importing them on their own would spend 8 s of CPU on two
cores before the first reconcile. Imported once here, the forked components share these pages copy-on-write:
start-up costs each of them only its own set-up, and their proportional memory (PSS) shrinks by the shared part.

The project's pure domain (:data:`PACKAGES`: ``poolboy``, which imports neither Celery nor Redis) is imported too:
every worker imports all of it (the reconcilers, templating, schemas), the watcher and beat parts of it, so loaded
once it is one shared copy instead of one private copy per worker, and a component that imports it after the fork
no longer writes its new objects into the server's half-used memory pages (which copies them).

Only modules whose import reads no per-component setting may be listed: a component's environment is set after
the fork, so whatever a module decides from ``os.environ`` at import time would be the fork server's decision.
``prometheus_client`` is the one to keep out (it picks its multiprocess mode from ``PROMETHEUS_MULTIPROC_DIR`` at
import time, and each worker sets that itself), and with it every module of the engine that defines metrics
(``workers``, ``watcher``, ``cache``); ``tests/integration/test_forked_components.py`` holds the lists to it, and
checks that importing the domain reads no environment variable. Celery's process titles stay off in forked
components (``NOSETPS``): the stack gives each one the command line it would have had as a process of its own
(:mod:`stack.component`).
"""

from __future__ import annotations

import gc
import importlib
import os
import pkgutil

#: imported in this order; each one's import reads no per-component setting (see the module's docstring)
MODULES = (
    "yaml", "orjson", "urllib3", "dateutil.parser",
    "kubernetes.client", "kubernetes.config",
    "redis", "kombu", "kombu.transport.redis",
    "celery", "celery.app.base", "celery.worker", "celery.apps.worker", "celery.beat", "redbeat",
    "jinja2", "jinja2.sandbox", "jsonschema",
)
#: the project's packages imported whole, after :data:`MODULES`: pure at import (no setting read, no metric defined)
PACKAGES = ("poolboy",)


def package_modules(name: str) -> list[str]:
    """Every module of package ``name``, the package first."""
    package = importlib.import_module(name)
    return [name, *(info.name for info in pkgutil.walk_packages(package.__path__, f"{name}."))]


def load() -> None:
    """Import :data:`MODULES`, then :data:`PACKAGES`, and keep them out of the collector's reach."""
    os.environ.setdefault("NOSETPS", "1")  # before Celery's platforms module reads it
    for name in MODULES:
        importlib.import_module(name)
    for package in PACKAGES:
        for name in package_modules(package):
            importlib.import_module(name)
    # what is imported now stays shared: the collector never writes to these objects' pages after the fork
    gc.freeze()
