"""The pinned ``kubectl`` and ``helm``: ``kubetools/build.sh`` builds each once per machine from its Go module, and
``.venv/bin`` links to the build (``./run`` puts that first on PATH). Only where the machine cannot build them (no Go,
no earlier build) is a ``kubectl`` or ``helm`` on PATH used instead, whatever its version."""

from __future__ import annotations

import functools
import os
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD_SCRIPT = ROOT / "kubetools" / "build.sh"
VENV_BIN = ROOT / ".venv" / "bin"


@functools.cache
def binary(name: str) -> str:
    """``name`` (kubectl or helm) at its pinned version, built and linked into ``.venv/bin`` first where missing
    (progress lines on stderr: a few minutes the first time on this machine)."""
    from controlplane.binaries import ControlPlaneUnavailable, run_build  # not in the image, which runs no build

    try:
        built = run_build(BUILD_SCRIPT, f"{name} is built from its Go module, which needs Go 1.26 or newer "
                                        f"(https://go.dev/doc/install); without Go, put a {name} on PATH", name)
    except ControlPlaneUnavailable as unavailable:
        found = shutil.which(name) if shutil.which("go") is None else None  # a failed build is not hidden
        if found is None:
            raise FileNotFoundError(str(unavailable)) from None
        return found
    if not VENV_BIN.is_dir():
        return str(built)
    link = VENV_BIN / name
    if not link.is_symlink() or link.readlink() != built:
        staged = VENV_BIN / f".{name}.{os.getpid()}"  # replaced in one step: a concurrent caller sees one or the other
        staged.unlink(missing_ok=True)
        staged.symlink_to(built)
        os.replace(staged, link)
    return str(link)
