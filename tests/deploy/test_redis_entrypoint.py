"""The Redis image's entrypoint (``scripts/redis-entrypoint.sh``, built into the node's Redis image by
``scripts/node-images.sh``) passes the chart's container arguments on as the official image's does: options alone go
to ``redis-server``, other commands run as given, protected mode is off unless the arguments say otherwise, the umask
is 0077, and as root it gives the working directory to the redis user and drops to it. Run with ``/bin/sh`` and
stand-ins for ``redis-server``, ``redis-cli``, ``id``, ``find`` and ``setpriv`` that print what they were given, so
no image or root is needed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ENTRYPOINT = Path(__file__).resolve().parents[2] / "scripts" / "redis-entrypoint.sh"
PRINT = '#!/bin/sh\necho "$(basename "$0") umask=$(umask)"\nprintf "%s\\n" "$@"\n'


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    for name in ("redis-server", "redis-cli", "find", "setpriv"):
        (tmp_path / name).write_text(PRINT)
        (tmp_path / name).chmod(0o755)
    return tmp_path


def run(bin_dir: Path, *args: str, uid: int = 999, umask: str = "0022") -> list[str]:
    (bin_dir / "id").write_text(f"#!/bin/sh\necho {uid}\n")
    (bin_dir / "id").chmod(0o755)
    result = subprocess.run(["/bin/sh", "-c", f'umask {umask}; exec /bin/sh "$0" "$@"', str(ENTRYPOINT), *args],
                            capture_output=True, text=True, check=True, timeout=10, cwd=bin_dir,
                            env={"PATH": f"{bin_dir}:{os.defpath}"})
    return result.stdout.splitlines()


def test_options_alone_go_to_redis_server_with_protected_mode_off_first(bin_dir: Path) -> None:
    assert run(bin_dir, "--save", "", "--appendonly", "no") == [
        "redis-server umask=0077", "--protected-mode", "no", "--save", "", "--appendonly", "no"]


def test_the_callers_protected_mode_comes_later_and_wins(bin_dir: Path) -> None:
    assert run(bin_dir, "redis-server", "--protected-mode", "yes")[1:] == [
        "--protected-mode", "no", "--protected-mode", "yes"]


def test_a_bare_redis_server_gets_protected_mode_off(bin_dir: Path) -> None:
    assert run(bin_dir, "redis-server")[1:] == ["--protected-mode", "no"]


def test_a_config_file_decides_for_itself(bin_dir: Path) -> None:
    assert run(bin_dir, "/etc/redis.conf", "--port", "1") == [
        "redis-server umask=0077", "/etc/redis.conf", "--port", "1"]


@pytest.mark.parametrize("flag", ["--version", "-v", "--help", "--test-memory"])
def test_flags_that_start_no_server_are_left_alone(bin_dir: Path, flag: str) -> None:
    assert run(bin_dir, flag)[1:] == [flag]


def test_other_commands_run_as_given(bin_dir: Path) -> None:
    assert run(bin_dir, "redis-cli", "--user", "admin", "ping") == [
        "redis-cli umask=0077", "--user", "admin", "ping"]


def test_a_chosen_umask_is_kept(bin_dir: Path) -> None:
    assert run(bin_dir, "redis-server", umask="0027")[0] == "redis-server umask=0027"


def test_as_root_the_server_starts_again_as_redis(bin_dir: Path) -> None:
    assert run(bin_dir, "--port", "1", uid=0) == [
        "find umask=0022", ".", "!", "-user", "redis", "-exec", "chown", "redis", "{}", "+",
        "setpriv umask=0022", "--reuid=redis", "--regid=redis", "--init-groups", str(ENTRYPOINT),
        "redis-server", "--port", "1"]
