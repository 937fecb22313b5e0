"""Idle log volume: lines each component writes per window once the demo is applied and the stack is quiet.

Starts the local stack (`stack.local.LocalStack`, as `poolboy dev` does; no Flower), applies `examples/`, waits
for the demo claim to be Ready plus a settle time, then counts the lines each component's log gains during
``--seconds``. Prints one JSON document. Optional: ``--env POOLBOY_LOG_FORMAT=json`` and the like.

    .venv/bin/python benchmarks/idle_logs.py --seconds 30
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from stack.local import LocalStack, StackOptions  # noqa: E402


def _lines(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(1 for _ in handle)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="measured window (default 30)")
    parser.add_argument("--settle", type=float, default=15.0, help="quiet time before the window (default 15)")
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for every component")
    parser.add_argument("--log-dir", default=None, help="keep the component logs here")
    args = parser.parse_args()
    env = dict(item.split("=", 1) for item in args.env)
    options = StackOptions(env=env, log_dir=Path(args.log_dir) if args.log_dir else None)
    with LocalStack(options) as stack:
        for manifest in sorted((ROOT / "examples").glob("*.yaml")):
            subprocess.run(["kubectl", "--kubeconfig", str(stack.kubeconfig), "apply", "-f", str(manifest)],
                           check=True, capture_output=True)
        subprocess.run(["kubectl", "--kubeconfig", str(stack.kubeconfig), "wait", "--for=condition=Ready",
                        "--timeout=60s", "-n", "demo", "resourceclaim/hello"], check=True, capture_output=True)
        time.sleep(args.settle)
        before = {c.name: _lines(c.log_path) for c in stack.children}
        time.sleep(args.seconds)
        after = {c.name: _lines(c.log_path) for c in stack.children}
    counts = {name: after[name] - before[name] for name in before}
    print(json.dumps({"seconds": args.seconds, "env": env, "lines": counts}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
