"""``upstream_dev.py dev --use-current-context`` as it is meant to run: upstream Poolboy on a cluster someone else
started.

The harness (``shared/upstream/upstream_dev.py``, not the project's) watches its children in its main loop, devcluster
among them; with ``--use-current-context`` it starts none and the loop's first look at it raises, which stops Kopf
half a second after its ready line. This launcher runs the harness unchanged but for that: the cluster it did not
start counts as running. Arguments are the harness's own.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any


class ClusterNotOurs:
    """Stands for a devcluster the harness did not start: it never exits, and there is nothing to stop."""

    pid = 0
    returncode = None

    def poll(self) -> None:
        return None


def load_harness(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location("upstream_dev", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str]) -> int:
    from benchmarks.systems import upstream_dir

    harness = load_harness(upstream_dir() / "upstream_dev.py")

    class Stack(harness.Stack):  # type: ignore[name-defined,misc]
        def _start_on_existing_cluster(self, *args: Any) -> None:
            super()._start_on_existing_cluster(*args)
            self.devcluster = ClusterNotOurs()

        def stop(self) -> None:
            if isinstance(self.devcluster, ClusterNotOurs):
                self.devcluster = None
            super().stop()

    harness.Stack = Stack
    return int(harness.main(argv) or 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
