"""No tracked file keeps a merge's conflict markers: a half-resolved merge must fail the tests, not reach a reader."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"^(<{7} |>{7} |={7}$)", re.M)


def test_no_tracked_file_has_conflict_markers() -> None:
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.split(b"\0")
    marked = []
    for name in filter(None, files):
        path = ROOT / name.decode()
        if path.suffix not in {".py", ".md", ".yaml", ".yml", ".lua", ".sh", ".toml", ".txt", ".tpl", ".json"}:
            continue
        if path.is_file() and MARKER.search(path.read_text(errors="replace")):
            marked.append(name.decode())
    assert not marked, f"conflict markers left in {marked}"
