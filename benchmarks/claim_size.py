"""What one claim costs as it grows: the handle and claim reconciles of claims of 1 to 200 resources, and the claim
checks on deep and large parameter documents. Prints figures; asserts nothing (docs/security.md#4).

The reconciles run in this process against devcluster (a subprocess), driven by :class:`tests.converge.Converger`, so
the CPU time measured is the operator's alone. The CRDs are loaded with their ``maxItems`` bounds lifted, so that
the growth past the limit of 100 resources shows. For each size N:

- ``handle create``: the first handle run, which creates the N ConfigMaps (its API requests, Events included, are
  counted);
- ``handle steady``: a run of the converged handle, which writes nothing (every render, no request but reads);
- ``claim steady``: a run of the bound, converged resources-mode claim (providers matched by template, templates
  validated, propagation, status mirroring);
- ``renders``: the provider overrides rendered by the steady handle run.

Then provider-mode claims whose ``parameterValues`` are deep or large documents: the CPU of the claim's runs
until it is bound or refused, and its ``Synced`` reason.

Run: ``.venv/bin/python benchmarks/claim_size.py [--sizes 1,10,50,100,200]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devcluster.testing import DEFAULT_CRDS, DevCluster
from poolboy.domain.provider import Provider
from poolboy.kube import KubeClient
from poolboy.settings import Settings
from tests.converge import Converger

API = "poolboy.gpte.redhat.com/v1"
OPERATOR_NAMESPACE = "bench-op"
USER_NAMESPACE = "bench-user"


def unbounded_crds(directory: Path) -> Path:
    """The chart's CRDs without ``maxItems``, written into ``directory``."""
    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {key: strip(value) for key, value in node.items() if key != "maxItems"}
        if isinstance(node, list):
            return [strip(item) for item in node]
        return node

    for path in sorted(DEFAULT_CRDS.glob("*.yaml")):
        (directory / path.name).write_text(yaml.safe_dump(strip(yaml.safe_load(path.read_text())), sort_keys=False))
    return directory


@contextmanager
def cpu() -> Iterator[list[float]]:
    """The process CPU seconds spent in the block, appended to the yielded list."""
    spent: list[float] = []
    started = time.process_time()
    yield spent
    spent.append(time.process_time() - started)


def provider_spec() -> dict[str, Any]:
    """A ConfigMap provider matched by label, whose override reads the other resources as providers' do."""
    return {"match": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"labels": {"bench": "size"}}},
            "validation": {"openAPIV3Schema": {"type": "object", "properties": {
                "data": {"type": "object", "additionalProperties": {"type": "string"}}}}},
            "template": {"enable": True},
            "override": {"metadata": {"namespace": USER_NAMESPACE},
                         "data": {"index": "{{ resource_index }}", "of": "{{ resource_templates | length }}"}}}


def document_spec() -> dict[str, Any]:
    """A provider with one parameter that takes any object, rendering a ConfigMap that counts its keys."""
    return {"parameters": [{"name": "doc", "validation": {"openAPIV3Schema": {"type": "object"}}}],
            "template": {"enable": True, "definition": {
                "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": USER_NAMESPACE},
                "data": {"keys": "{{ doc | length }}"}}}}


def claim_resources(size: int) -> list[dict[str, Any]]:
    resources: list[dict[str, Any]] = [
        {"template": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"labels": {"bench": "size"}},
                      "data": {"entry": f"value {index}"}}} for index in range(size)]
    return resources


class Bench:
    """One devcluster and client for every size."""

    def __init__(self, cluster: DevCluster) -> None:
        self.settings = Settings.from_env(operator_namespace=OPERATOR_NAMESPACE, api_timeout=30.0)
        self.kube = KubeClient.from_settings(self.settings, kubeconfig=str(cluster.kubeconfig))
        self.cluster = cluster
        for name in (OPERATOR_NAMESPACE, USER_NAMESPACE):
            self.kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        for name, spec in (("size", provider_spec()), ("document", document_spec())):
            self.kube.create({"apiVersion": API, "kind": "ResourceProvider",
                              "metadata": {"name": name, "namespace": OPERATOR_NAMESPACE}, "spec": spec})

    def requests(self) -> int:
        return int(self.cluster.counters()["total"])

    def claim(self, name: str, spec: dict[str, Any]) -> tuple[Converger, str, str | None]:
        """A new claim, run once (it creates its handle): the converger, the claim's key and the handle's (None:
        the claim was refused)."""
        self.kube.create({"apiVersion": API, "kind": "ResourceClaim",
                          "metadata": {"name": name, "namespace": USER_NAMESPACE}, "spec": spec})
        converger = Converger(self.kube, self.settings)
        claim_key = f"claim/{USER_NAMESPACE}/{name}"
        converger.reconcile(claim_key)
        handle = self.kube.get(API, "ResourceClaim", name, USER_NAMESPACE)["status"].get("resourceHandle")
        return converger, claim_key, f"handle/{OPERATOR_NAMESPACE}/{handle['name']}" if handle else None

    def document(self, label: str, document: Any) -> tuple[float, str]:
        """CPU of a provider-mode claim's runs with ``document`` as a parameter value, and its Synced reason."""
        name = "d-" + "".join(c for c in label if c.isalnum())
        self.kube.create({"apiVersion": API, "kind": "ResourceClaim",
                          "metadata": {"name": name, "namespace": USER_NAMESPACE},
                          "spec": {"provider": {"name": "document", "parameterValues": {"doc": document}}}})
        converger = Converger(self.kube, self.settings)
        started = time.process_time()
        try:
            converger.run(f"claim/{USER_NAMESPACE}/{name}")
        except Exception as error:  # a figure to print: the run failed, and how
            return time.process_time() - started, f"the run failed: {type(error).__name__}: {error}"
        spent = time.process_time() - started
        claim = self.kube.get(API, "ResourceClaim", name, USER_NAMESPACE)
        synced = [c for c in claim.get("status", {}).get("conditions", []) if c["type"] == "Synced"]
        return spent, synced[0]["reason"] if synced else "-"

    def measure(self, size: int) -> dict[str, float]:
        converger, claim_key, handle_key = self.claim(f"c{size}", {"resources": claim_resources(size)})
        if handle_key is None:  # refused (ClaimTooLarge): only the claim's run has a cost
            with cpu() as refused:
                converger.reconcile(claim_key)
            return {"claim steady s": refused[0]}
        requests = self.requests()
        with cpu() as create:
            converger.reconcile(handle_key)
        create_requests = self.requests() - requests
        converger.run(claim_key, handle_key)
        with counting(Provider, "render_override") as renders, cpu() as steady:
            converger.reconcile(handle_key)
        with cpu() as claim:
            converger.reconcile(claim_key)
        return {"handle create s": create[0], "create requests": create_requests, "handle steady s": steady[0],
                "renders": renders[0], "claim steady s": claim[0]}


@contextmanager
def counting(owner: type, method: str) -> Iterator[list[int]]:
    """Calls of ``owner.method`` in the block, as the single item of the yielded list."""
    original: Callable[..., Any] = getattr(owner, method)
    calls = [0]

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return original(*args, **kwargs)

    setattr(owner, method, counted)
    try:
        yield calls
    finally:
        setattr(owner, method, original)


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"a": value}
    return value


DOCUMENTS: dict[str, Callable[[], Any]] = {
    "depth 10": lambda: nested(10), "depth 60": lambda: nested(60), "depth 300": lambda: nested(300),
    "depth 500": lambda: nested(500), "1 000 keys": lambda: {f"k{i}": i for i in range(1_000)},
    "10 000 keys": lambda: {f"k{i}": i for i in range(10_000)},
    "60 000 keys": lambda: {f"k{i}": i for i in range(60_000)},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1,10,50,100,200")
    args = parser.parse_args()
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    with tempfile.TemporaryDirectory() as directory, DevCluster(crds=[unbounded_crds(Path(directory))]) as cluster:
        bench = Bench(cluster)
        print(f"{'resources':>9} {'handle create s':>15} {'create requests':>15} {'handle steady s':>15} "
              f"{'renders':>8} {'claim steady s':>14}")
        for size in (int(s) for s in args.sizes.split(",")):
            row = bench.measure(size)
            if "renders" not in row:
                print(f"{size:>9} {'refused':>15} {'-':>15} {'-':>15} {'-':>8} {row['claim steady s']:>14.3f}")
                continue
            print(f"{size:>9} {row['handle create s']:>15.3f} {row['create requests']:>15.0f} "
                  f"{row['handle steady s']:>15.3f} {row['renders']:>8.0f} {row['claim steady s']:>14.3f}")
        print()
        print(f"{'parameterValues':>15} {'claim runs s':>12}  Synced")
        for label, make in DOCUMENTS.items():
            seconds, reason = bench.document(label, make())
            print(f"{label:>15} {seconds:>12.3f}  {reason}")


if __name__ == "__main__":
    main()
