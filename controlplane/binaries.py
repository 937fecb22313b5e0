"""Where the control plane's binaries come from: ``$KUBEBUILDER_ASSETS`` (envtest's convention, a directory with
``kube-apiserver`` and ``etcd``), else the project's own pinned build (``controlplane/go/build.sh``), made once per
machine into a cache directory keyed by the versions."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

BUILD_SCRIPT = Path(__file__).resolve().parent / "go" / "build.sh"
#: build.sh's exit status when the machine has no Go
NO_GO = 2


class ControlPlaneUnavailable(RuntimeError):
    """The binaries can neither be found nor built here; the message says what to install."""


@dataclass(frozen=True)
class Binaries:
    kube_apiserver: Path
    etcd: Path
    #: None when ``$KUBEBUILDER_ASSETS`` has none (envtest ships none): no garbage collection, no namespace deletion
    kube_controller_manager: Path | None


def find_binaries() -> Binaries:
    """The binaries, building them first if this machine has not (progress lines on stderr)."""
    assets = os.environ.get("KUBEBUILDER_ASSETS")
    directory = Path(assets) if assets else _build()
    missing = [name for name in ("kube-apiserver", "etcd") if not os.access(directory / name, os.X_OK)]
    if missing:
        raise ControlPlaneUnavailable(f"{directory} has no {' and no '.join(missing)}"
                                      f"{' (KUBEBUILDER_ASSETS)' if assets else ''}")
    manager = directory / "kube-controller-manager"
    return Binaries(directory / "kube-apiserver", directory / "etcd",
                    manager if os.access(manager, os.X_OK) else None)


def _build() -> Path:
    return run_build(BUILD_SCRIPT, "the real control plane needs Go 1.26 or newer to build kube-apiserver, etcd and "
                                   "kube-controller-manager (https://go.dev/doc/install), or KUBEBUILDER_ASSETS naming "
                                   "a directory with kube-apiserver and etcd")


def run_build(script: Path, without_go: str, *args: str) -> Path:
    """Run a pinned build script with ``args`` (a no-op once built) and return the path it printed last;
    ``without_go`` is the complaint when the machine has no Go and nothing was built before."""
    # without Go the script can only find an earlier build; its own complaint would repeat the one raised below
    quiet = shutil.which("go") is None
    result = subprocess.run([str(script), *args], stdout=subprocess.PIPE, text=True, check=False,
                            stderr=subprocess.DEVNULL if quiet else None)
    if result.returncode == NO_GO:
        raise ControlPlaneUnavailable(without_go)
    if result.returncode != 0:
        raise ControlPlaneUnavailable(f"{script} failed with status {result.returncode} (its output is above)")
    return Path(result.stdout.strip().splitlines()[-1])
