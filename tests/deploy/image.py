"""The container image as the Helm chart runs it: built, or reused while its inputs are unchanged, by
``scripts/build-image.sh`` (an OCI layout), unpacked by ``umoci``, and run by ``bwrap`` under what the chart's
securityContext asks for: uid and gid 1000 (``setpriv`` takes root there first, so the kernel sees uid 1000, as in a
pod), the root filesystem read-only, a fresh tmpfs on /tmp (the chart's emptyDir), no capabilities, no new
privileges, and no network, pid, ipc or uts namespace of the host.

The tools come from Debian's packages (``scripts/bootstrap.sh --all`` installs them). Where they are missing the tests
marked ``image`` are skipped with one line; with ``POOLBOY_REQUIRE_IMAGE=1`` (set by ``.ci/run``) the run fails.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = ROOT / "scripts" / "build-image.sh"
REQUIRED = os.environ.get("POOLBOY_REQUIRE_IMAGE") == "1"
#: binary -> the Debian package that has it: the build's (mmdebstrap, buildah) and the run's
TOOLS = {"mmdebstrap": "mmdebstrap", "buildah": "buildah", "umoci": "umoci", "skopeo": "skopeo",
         "bwrap": "bubblewrap", "setpriv": "util-linux"}
#: a cold build: the base from Debian's packages, the pinned dependencies from PyPI
BUILD_TIMEOUT = 1200
RUN_TIMEOUT = 120


def unavailable() -> str | None:
    """Why the image cannot be built and run here, or None when it can."""
    missing = sorted({package for binary, package in TOOLS.items() if shutil.which(binary) is None})
    if missing:
        return f"missing {', '.join(missing)} (apt-get install {' '.join(missing)}; scripts/bootstrap.sh --all does)"
    if os.geteuid() != 0:
        return "building the image needs root (scripts/build-image.sh)"
    return None


def build() -> str:
    """The image reference ``oci:DIR:NAME`` of the current inputs, built unless the cache holds it."""
    result = subprocess.run([str(BUILD_SCRIPT)], capture_output=True, text=True, timeout=BUILD_TIMEOUT)
    if result.returncode != 0:
        raise RuntimeError(f"{BUILD_SCRIPT.name} exited with {result.returncode}:\n{result.stderr}")
    return result.stdout.strip().splitlines()[-1]


def image_config(ref: str) -> dict[str, Any]:
    """The image's OCI configuration (``config``: User, Env, Entrypoint, Cmd, WorkingDir, ExposedPorts)."""
    result = subprocess.run(["skopeo", "inspect", "--config", ref], capture_output=True, text=True, check=True,
                            timeout=RUN_TIMEOUT)
    config: dict[str, Any] = json.loads(result.stdout)["config"]
    return config


@dataclass(frozen=True)
class Container:
    """An unpacked image and the process its configuration describes, run as a pod of the chart runs it."""

    rootfs: Path
    config: dict[str, Any]

    @property
    def user(self) -> tuple[int, int]:
        """The configuration's ``User`` as (uid, gid); a bare uid has the same gid."""
        uid, _, gid = self.config["User"].partition(":")
        return int(uid), int(gid or uid)

    def run(self, *args: str, entrypoint: bool = True) -> subprocess.CompletedProcess[str]:
        """``args`` run inside the image (after its entrypoint unless ``entrypoint`` is False)."""
        command = [*self.config["Entrypoint"], *args] if entrypoint else list(args)
        return subprocess.run([*self._sandbox(), "--", *command], capture_output=True, text=True,
                              timeout=RUN_TIMEOUT, stdin=subprocess.DEVNULL)

    def _sandbox(self) -> list[str]:
        uid, gid = self.user
        # as root, become uid 1000 on the host first: bwrap then maps 1000 to itself, so files the image gives to
        # root stay root's, as in a pod; elsewhere bwrap maps the caller to 1000
        become = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--"] if os.geteuid() == 0 else []
        sandbox = [*become, "bwrap", "--unshare-all", "--die-with-parent", "--new-session",
                   "--uid", str(uid), "--gid", str(gid), "--ro-bind", str(self.rootfs), "/",
                   "--tmpfs", "/tmp", "--proc", "/proc", "--dev", "/dev",
                   "--chdir", self.config["WorkingDir"], "--clearenv"]
        for variable in self.config["Env"]:
            name, _, value = variable.partition("=")
            sandbox += ["--setenv", name, value]
        return sandbox


def unpack(ref: str, into: Path, config: dict[str, Any]) -> Container:
    """``ref``'s root filesystem unpacked into ``into``/rootfs, where uid 1000 reaches it; run as root, its files
    keep the owners the image gives them."""
    rootfs = into / "rootfs"
    rootless = [] if os.geteuid() == 0 else ["--rootless"]
    subprocess.run(["nice", "-n", "10", "umoci", "raw", "unpack", *rootless, "--image", ref.removeprefix("oci:"),
                    str(rootfs)], capture_output=True, text=True, check=True, timeout=RUN_TIMEOUT)
    into.chmod(0o755)
    return Container(rootfs=rootfs, config=config)


def dockerfile_instructions(path: Path = ROOT / "Dockerfile") -> list[tuple[str, str]]:
    """The Dockerfile's instructions as (INSTRUCTION, arguments), continuation lines joined, comments left out."""
    instructions: list[tuple[str, str]] = []
    pending = ""
    for line in path.read_text().splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        pending += line.rstrip().removesuffix("\\") + " "
        if not line.rstrip().endswith("\\"):
            keyword, _, arguments = pending.strip().partition(" ")
            instructions.append((keyword.upper(), " ".join(arguments.split())))
            pending = ""
    return instructions


def last(instructions: Sequence[tuple[str, str]], keyword: str) -> str:
    """The arguments of the last ``keyword`` instruction (the one in force for the final image)."""
    return [arguments for name, arguments in instructions if name == keyword][-1]
