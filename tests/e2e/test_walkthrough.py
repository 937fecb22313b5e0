"""The README's walk-through, as a newcomer types it, on both clusters ``poolboy dev`` starts: ``./run dev --demo``
(devcluster) and ``./run dev --cluster real --demo``, there also with the components as the chart's ServiceAccounts
(``--service-accounts``). The demo's claim becomes Ready, nothing warns, every kind's
SYNCED column says so, and each command of the walk-through does what its comment says. On the real control plane,
``poolboy dev`` restarts a process of it that dies, as it does its own components."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import psutil
import pytest

from tests.clusters import E2E_CLUSTER
from tests.e2e.test_dev import Dev
from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.kubectl]


def clusters() -> list[str]:
    return ["devcluster", "real", "real --service-accounts"] if E2E_CLUSTER == "real" else ["devcluster"]


@pytest.mark.parametrize("cluster", clusters())
def test_the_readme_walk_through_on_poolboy_dev(tmp_path: Path, cluster: str) -> None:
    dev = Dev(tmp_path, "--cluster", *cluster.split(), "--demo", "--flower-port", "0")
    kubeconfig = tmp_path / "kubeconfig"

    def kubectl(*args: str) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), *args], capture_output=True, text=True,
                                timeout=60, cwd=ROOT)
        assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
        return result

    try:
        dev.wait_line("poolboy dev ready", timeout=180)
        dev.wait_line("condition met", timeout=90)  # the demo's `kubectl wait` for the claim
        dev.wait_line("Press Ctrl-C to stop.", timeout=60)
        narrated = "\n".join(dev.output())
        assert "Warning" not in narrated and "warning" not in narrated, narrated
        if "--service-accounts" in cluster:
            assert "components run as ServiceAccounts poolboy-watcher, poolboy-worker" in narrated, narrated

        applied = kubectl("apply", "-f", "examples/")  # again, as the walk-through does: unchanged, no warning
        assert "Warning" not in applied.stderr, applied.stderr
        kubectl("wait", "--for=condition=Ready", "-n", "demo", "rclaim/hello", "--timeout=60s")
        claims = kubectl("get", "rclaim", "-n", "demo").stdout.splitlines()
        assert claims[0].split() == ["NAME", "HANDLE", "PROVIDER", "HEALTHY", "READY", "SYNCED", "AGE", "MESSAGE"]
        assert claims[1].split()[2:6] == ["hello", "True", "True", "Synced"], claims
        assert len(claims[1].split()) == 7, f"nothing holds the Ready claim back (MESSAGE empty): {claims}"
        data = kubectl("get", "rclaim", "-n", "demo", "hello", "-o", "jsonpath={.status.resources[0].state.data}")
        assert '"greeting":"hello"' in data.stdout

        def pool_row() -> list[str]:
            rows = kubectl("get", "rpool", "-n", "poolboy").stdout.splitlines()
            return rows[1].split() if len(rows) > 1 else []

        wait_for(lambda: pool_row()[1:5] == ["hello", "2", "2", "2"], timeout=60, interval=0.5,
                 message=f"the pool refilled to 2 available, 2 ready: {pool_row()}")
        header = kubectl("get", "rpool", "-n", "poolboy").stdout.splitlines()[0].split()
        assert pool_row()[header.index("SYNCED")] == "Synced"

        kubectl("patch", "rclaim", "-n", "demo", "hello", "--type", "merge",
                "-p", '{"spec":{"provider":{"parameterValues":{"greeting":"hi"}}}}')
        wait_for(lambda: '"greeting":"hi"' in kubectl("get", "rclaim", "-n", "demo", "hello", "-o",
                                                    "jsonpath={.status.resources[0].state.data}").stdout,
                 timeout=30, interval=0.5, message="the new greeting in the claim's state")
        handle = kubectl("get", "rclaim", "-n", "demo", "hello", "-o", "jsonpath={.status.resourceHandle.name}").stdout
        kubectl("delete", "rclaim", "-n", "demo", "hello", "--timeout=60s")
        wait_for(lambda: handle not in kubectl("get", "rhandle", "-n", "poolboy", "-o", "name").stdout
                 and "hello-" + handle.removeprefix("guid-") not in kubectl("get", "configmaps", "-n", "demo",
                                                                            "-o", "name").stdout,
                 timeout=60, interval=0.5, message="the claim's handle and ConfigMap deleted")
    finally:
        assert dev.stop() == 0


@pytest.mark.skipif(E2E_CLUSTER != "real", reason="the real control plane's processes")
def test_poolboy_dev_restarts_a_control_plane_process_that_dies(tmp_path: Path) -> None:
    dev = Dev(tmp_path, "--cluster", "real", "--flower-port", "0")
    try:
        dev.wait_line("poolboy dev ready", timeout=180)

        def apiservers() -> list[psutil.Process]:
            return [p for p in psutil.Process(dev.process.pid).children(recursive=True)
                    if p.name() == "kube-apiserver" and p.status() != psutil.STATUS_ZOMBIE]

        first = apiservers()
        assert len(first) == 1
        first[0].send_signal(signal.SIGKILL)
        dev.wait_line("kube-apiserver exited (status -9", timeout=30)
        wait_for(lambda: [p.pid for p in apiservers()] not in ([], [first[0].pid]), timeout=60, interval=0.5,
                 message="kube-apiserver started again")
        wait_for(lambda: subprocess.run(["kubectl", "--kubeconfig", str(tmp_path / "kubeconfig"), "get", "rpool",
                                         "-A"], capture_output=True, timeout=30).returncode == 0,
                 timeout=60, interval=0.5, message="the API answering again, Poolboy's kinds served")
        assert dev.process.poll() is None
    finally:
        assert dev.stop() == 0
