"""A claim's way from its watch event to the bind patch: the project modules on the call stacks, as they run.

Runs a small warm burst (:mod:`benchmarks.claims`, W1) on the whole local stack with every process recording, at
three points, the call stack that led there:

* the watcher's informer thread handing a claim's event to its delivery queue (``DeliveryQueue.submit``);
* the watcher's delivery thread publishing a claim's task message (``Enqueuer.publish_many``);
* a worker sending the bind patch of a handle (``KubeClient.patch_json`` with a ``/spec/resourceClaim`` op).

Each stack is cut to the project's own files (no standard library, Celery or kubernetes frames) and printed in
call order; the modules of the three stacks together are the claim's way. Nothing of the project is changed to
record them: a ``sitecustomize`` module on ``PYTHONPATH`` (``benchmarks/claim_path_hook``) installs a profile hook
in every Python process the stack starts, so the stacks are of the code as it runs, threads, forks and the Redis
hop included. The hook slows every process down; read the stacks, not the timings.

    .venv/bin/python benchmarks/claim_path.py            # prints the three stacks and the modules crossed
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: what the hook records: (function name, file under the root) -> which of the three points it is, and the folder
#: its stack starts in (a worker publishes claims' messages too: those are not the watcher's way)
POINTS = {
    ("submit", "watcher/delivery.py"): ("watcher: event queued", "watcher/"),
    ("publish_many", "engine/enqueue.py"): ("watcher: task published", "watcher/"),
    ("patch_json", "poolboy/kube/client.py"): ("worker: bind patch", "workers/"),
}

#: the modules the whole way crossed when last measured (17 when issue 19 was filed, 12 after round 17's first
#: pass, 9 since the watcher's event path, the gate's publishing side and the bind patch each live in one module);
#: the e2e test keeps it from growing again
MAX_MODULES = 9

#: the folder whose ``sitecustomize`` installs the hook
HOOK_DIR = Path(__file__).resolve().parent / "claim_path_hook"


def record(n: int, workers: int) -> list[dict]:
    """Run W1 with ``n`` claims under the hook; every recorded stack."""
    with tempfile.TemporaryDirectory(prefix="claim-path-") as tmp:
        out = Path(tmp) / "out"
        out.mkdir()
        env = {**os.environ, "POOLBOY_CLAIM_PATH_OUT": str(out), "POOLBOY_CLAIM_PATH_ROOT": str(ROOT),
               "POOLBOY_CLAIM_PATH_POINTS": json.dumps(list(POINTS)),
               "PYTHONPATH": os.pathsep.join([str(HOOK_DIR), str(ROOT)])}
        subprocess.run([sys.executable, "benchmarks/claims.py", "--workloads", "W1", "--n", str(n),
                        "--workers", str(workers), "--systems", "project", "--output", str(Path(tmp) / "w1.json")],
                       cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
        return [json.loads(line) for path in sorted(out.glob("*.jsonl")) for line in path.read_text().splitlines()]


def shortest(stacks: list[dict], point: str, start: str) -> list[list[str]]:
    """The shortest stack recorded at ``point`` that starts in ``start``: the way without retries or detours."""
    found = [s["stack"] for s in stacks if s["point"] == point and s["stack"] and s["stack"][0][0].startswith(start)]
    return min(found, key=len) if found else []


def modules(stack: list[list[str]]) -> list[str]:
    """The stack's files in call order, each once."""
    return list(dict.fromkeys(path for path, _ in stack))


def way(stacks: list[dict]) -> dict[str, list[list[str]]]:
    """The claim's way: the shortest stack recorded at each point, by the point's label."""
    return {label: shortest(stacks, name, start) for (name, _), (label, start) in POINTS.items()}


def reentered(stack: list[list[str]]) -> list[str]:
    """The files a stack leaves and comes back into (a back-and-forth between modules), in call order."""
    entered: list[str] = []
    for path, _ in stack:
        if not entered or entered[-1] != path:
            entered.append(path)
    return list(dict.fromkeys(path for index, path in enumerate(entered) if path in entered[:index]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=3, help="claims in the burst (default 3)")
    parser.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    parser.add_argument("--json", action="store_true", help="print the stacks as one JSON document")
    args = parser.parse_args()
    stacks = record(args.n, args.workers)
    found = way(stacks)
    crossed = list(dict.fromkeys(path for stack in found.values() for path in modules(stack)))
    if args.json:
        print(json.dumps({"stacks": found, "modules": crossed}, indent=2))
        return
    for label, stack in found.items():
        back = reentered(stack)
        print(f"{label} ({len(modules(stack))} modules{'; entered again: ' + ', '.join(back) if back else ''})")
        for path, function in stack:
            print(f"    {path}: {function}")
    print(f"\n{len(crossed)} modules in {len({p.split('/')[0] for p in crossed})} folders: {', '.join(crossed)}")


if __name__ == "__main__":
    main()
