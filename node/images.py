"""The images a node runs, from no registry: ``scripts/node-images.sh`` builds the project's image, a Redis image
from Debian's packages and the pause image (each once per machine and input), and names an archive of each, which
the node imports into containerd before the kubelet starts."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from node.binaries import NodeUnavailable

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "node-images.sh"
#: the script's exit status when a tool is missing or it does not run as root
UNAVAILABLE = 2
SANDBOX_REPOSITORY = "poolboy.local/pause"
REDIS_REPOSITORY = "poolboy.local/redis"


@dataclass(frozen=True)
class Image:
    name: str
    archive: Path

    @property
    def repository(self) -> str:
        return self.name.rsplit(":", 1)[0]


def build_images(pause: Path) -> list[Image]:
    """Every image a node needs, built if this machine has not (progress lines on stderr)."""
    result = subprocess.run([str(SCRIPT), str(pause)], stdout=subprocess.PIPE, text=True, check=False)
    if result.returncode == UNAVAILABLE:
        raise NodeUnavailable(f"{SCRIPT} cannot build the node's images here (its reason is above)")
    if result.returncode != 0:
        raise NodeUnavailable(f"{SCRIPT} failed with status {result.returncode} (its output is above)")
    return [Image(name, Path(archive)) for name, archive in
            (line.split(maxsplit=1) for line in result.stdout.splitlines() if line.strip())]


def named(images: list[Image], repository: str) -> str:
    """The name of the image of ``repository`` among ``images``."""
    for image in images:
        if image.repository == repository:
            return image.name
    raise LookupError(f"no {repository} image among {[image.name for image in images]}")
