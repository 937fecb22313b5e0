"""``poolboy dev --demo``: apply the examples and narrate a claim becoming Ready, as a user would see it."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path
from typing import Protocol


class Running(Protocol):
    """What the demo needs of a running system: where its kubeconfig and its logs are."""

    kubeconfig: Path
    log_dir: Path


def _kubectl(stack: Running, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["kubectl", "--kubeconfig", str(stack.kubeconfig), *args],
                          capture_output=True, text=True, check=check)


def run_demo(stack: Running, examples: Path, stop: threading.Event, timeout: float = 60.0) -> bool:
    """Apply ``examples/`` in order and wait for the example claim's Ready condition; True when it is Ready."""
    for manifest in sorted(examples.glob("*.yaml")):
        result = _kubectl(stack, "apply", "-f", str(manifest), check=False)
        print(f"$ kubectl apply -f {manifest.relative_to(examples.parent)}\n{result.stdout}{result.stderr}",
              end="", flush=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not stop.is_set():
        waited = _kubectl(stack, "wait", "--for=condition=Ready", "--timeout=5s", "-n", "demo",
                          "rclaim/hello", check=False)
        if waited.returncode == 0:
            print("$ kubectl wait --for=condition=Ready -n demo rclaim/hello\n" + waited.stdout, flush=True)
            print(_kubectl(stack, "get", "rclaim,rhandle,rpool", "-A").stdout, flush=True)
            print(_kubectl(stack, "get", "configmaps", "-n", "demo").stdout, flush=True)
            return True
    print("demo claim did not become Ready; see the logs in " + str(stack.log_dir), flush=True)
    return False
