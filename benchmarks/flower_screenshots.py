"""Screenshots of Flower's Tasks, Workers and Broker pages for docs/flower.md, taken in headless Chromium.

Starts the local stack with Flower (as ``poolboy dev`` does, on devcluster), applies the examples' namespaces,
provider and pool, creates a burst of claims against the provider, takes the Broker page while their runs queue up,
then the Tasks page (the reconciles, ``?name=poolboy.reconcile``) and the Workers page once every claim is Ready.
Needs Debian's ``chromium`` (scripts/bootstrap.sh installs it).

    .venv/bin/python benchmarks/flower_screenshots.py --out docs/images
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from poolboy.kube import KubeClient  # noqa: E402
from procutil import free_port  # noqa: E402
from stack.local import LocalStack, StackOptions  # noqa: E402
from tests import browser  # noqa: E402
from tests.integration.example_claims import apply_examples, claim_ready, create_claim  # noqa: E402
from tests.waiting import wait_for  # noqa: E402
from workers.names import RECONCILE_PREFIX  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images", help="where the PNGs go")
    parser.add_argument("--claims", type=int, default=40, help="claims in the burst (default 40)")
    args = parser.parse_args()
    if browser.find() is None:
        raise SystemExit("chromium is not installed (scripts/bootstrap.sh installs it)")
    args.out.mkdir(parents=True, exist_ok=True)
    with LocalStack(StackOptions(workers=2, flower_port=free_port())) as stack:
        flower = f"http://127.0.0.1:{stack.options.flower_port}"
        kube = KubeClient.from_settings(kubeconfig=str(stack.kubeconfig))
        apply_examples(kube)
        names = [f"hello-{i}" for i in range(args.claims)]
        for name in names:
            create_claim(kube, name)
        shots = [browser.screenshot(f"{flower}/broker", args.out / "flower-broker.png", size=(1280, 560),
                                    budget_ms=500)]
        wait_for(lambda: all(claim_ready(kube, name) for name in names), timeout=120, interval=0.5,
                 message="every claim of the burst to be Ready")
        shots.append(browser.screenshot(f"{flower}/tasks?name={RECONCILE_PREFIX.rstrip('.')}",
                                        args.out / "flower-tasks.png", size=(1400, 900)))
        shots.append(browser.screenshot(f"{flower}/workers", args.out / "flower-workers.png", size=(1280, 560)))
    for shot in shots:
        print(shot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
