"""An audit of the Kubernetes API requests a process makes, for deriving and checking RBAC.

With ``POOLBOY_API_AUDIT_DIR`` set, every ``poolboy`` process appends one line per request to
``<dir>/<command>-<pid>.jsonl``: ``{"method", "path", "watch"}``. Prefork children get files of their own (the
file is opened per pid). ``tests/deploy/test_rbac.py`` runs a scenario with it and checks that every request is
allowed by the chart's RBAC for that component's ServiceAccount, and that every grant is used.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

ENV = "POOLBOY_API_AUDIT_DIR"


def install_from_env(command: str) -> None:
    directory = os.environ.get(ENV)
    if not directory:
        return
    from poolboy.observability import on_api_call

    lock = threading.Lock()
    files: dict[int, object] = {}

    def record(method: str, path: str, watch: bool) -> None:
        pid = os.getpid()
        with lock:
            handle = files.get(pid)
            if handle is None:
                handle = files[pid] = open(Path(directory) / f"{command}-{pid}.jsonl", "a", buffering=1)  # noqa: SIM115
            handle.write(json.dumps({"method": method, "path": path, "watch": watch}) + "\n")  # type: ignore[attr-defined]

    on_api_call(record)
