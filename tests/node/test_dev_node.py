"""``poolboy dev --cluster node --demo`` as a newcomer runs it: the chart deployed on a node of this machine, the
example claim Ready through it, and Ctrl-C leaving nothing behind (no process, network namespace or mount)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.e2e.test_dev import Dev
from tests.waiting import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def node_leftovers(directory: str) -> list[str]:
    mounts = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    return [m for m in mounts if m.startswith(directory)] + ([directory] if Path(directory).exists() else [])


def test_poolboy_dev_on_a_node_deploys_the_chart_serves_the_demo_and_stops_clean(tmp_path: Path, node: object) -> None:
    """(``node``: this package's node must be startable here; the dev one takes another slot beside it.)"""
    dev = Dev(tmp_path, "--cluster", "node", "--demo")
    try:
        ready = dev.wait_line("poolboy dev ready", timeout=420)
        assert "deployed on node poolboy-node" in ready
        dev.wait_line("condition met", timeout=120)
        dev.wait_line("Press Ctrl-C to stop.", timeout=30)
        kubelet_log = tmp_path / "logs" / "node" / "kubelet.log"
        found = re.search(r'--root-dir="([^"]+)/kubelet"', kubelet_log.read_text())
        assert found, "the kubelet's log names no root directory"
        directory = found.group(1)
    finally:
        status = dev.stop()
    assert status == 0, "\n".join(dev.output()[-30:])
    wait_for(lambda: not node_leftovers(directory), timeout=30, message=f"nothing left of {directory}")
