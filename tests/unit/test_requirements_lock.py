"""The image installs its Python dependencies from a hashed lock (``requirements.lock``, compiled by pip-compile from
``requirements-image.in``): every pin of ``requirements.txt`` is in it at the same version, every package in it has
its hashes, and the Dockerfile installs from it with ``--require-hashes``. A pin changed in ``requirements.txt``
without compiling the lock again fails here, naming the command."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PIN = re.compile(r"^([A-Za-z0-9_.-]+)(\[[^\]]*\])?==([^\s;#]+)")


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(text: str) -> dict[str, str]:
    return {normalized(m.group(1)): m.group(3) for line in text.splitlines() if (m := PIN.match(line.strip()))}


def locked() -> dict[str, list[str]]:
    """Each locked requirement (``name==version``) with its hashes."""
    entries: dict[str, list[str]] = {}
    current = ""
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        if PIN.match(line):
            current = line.split()[0]
            entries[current] = []
        elif "--hash=sha256:" in line and current:
            entries[current].append(line.split("--hash=sha256:")[1].split()[0])
    return entries


def test_every_runtime_pin_is_locked_at_its_version() -> None:
    wanted = pins((ROOT / "requirements.txt").read_text())
    have = pins("\n".join(locked()))
    differ = {name: (version, have.get(name)) for name, version in wanted.items() if have.get(name) != version}
    assert not differ, (f"requirements.lock is out of date (pin: requirements.txt, lock): {differ}; compile it again "
                        "with the command in its header")


def test_every_locked_package_has_its_hashes() -> None:
    entries = locked()
    assert len(entries) > len(pins((ROOT / "requirements.txt").read_text()))  # the transitive ones are locked too
    assert "setuptools" in pins("\n".join(entries))  # the build backend of `pip install --no-build-isolation .`
    assert all(hashes and all(re.fullmatch(r"[0-9a-f]{64}", h) for h in hashes) for hashes in entries.values())


def test_the_image_installs_from_the_lock_with_hashes_required() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "pip install --require-hashes --no-deps -r requirements.lock" in dockerfile
    assert "requirements.txt" not in dockerfile.split("COPY requirements.lock")[1]
    assert "pip install --no-deps --no-build-isolation ." in dockerfile
