"""Headless Chromium (Debian's ``chromium`` package), driven through its command line: a page's DOM once its scripts
have run, and a screenshot of it.

``--virtual-time-budget`` lets a page's timers and requests run for that much page time before the DOM is taken:
Flower's Tasks and Workers pages fill their tables from XHR calls after the page loads, which the budget waits for.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

#: the names Debian's package (``chromium``) and others install the browser under
NAMES = ("chromium", "chromium-browser")
#: page time a page's scripts get before the DOM or the picture is taken, in milliseconds
BUDGET_MS = 5000


def find() -> str | None:
    """The Chromium binary on PATH, or None."""
    return next((found for name in NAMES if (found := shutil.which(name))), None)


def _run(url: str, *flags: str, budget_ms: int, timeout: float) -> str:
    binary = find()
    if binary is None:
        raise FileNotFoundError("chromium is not installed (scripts/bootstrap.sh --all installs Debian's package)")
    with tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        argv = [binary, "--headless", "--disable-gpu", "--no-first-run", "--disable-extensions",
                "--disable-background-networking", f"--user-data-dir={profile}",
                f"--virtual-time-budget={budget_ms}", *flags, url]
        if os.geteuid() == 0:  # Chromium refuses to run as root with its sandbox
            argv.insert(1, "--no-sandbox")
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"chromium exited {done.returncode} on {url}: {done.stderr[-2000:]}")
    return done.stdout


def dump_dom(url: str, budget_ms: int = BUDGET_MS, timeout: float = 60) -> str:
    """The page's DOM, serialised, after ``budget_ms`` of page time."""
    return _run(url, "--dump-dom", budget_ms=budget_ms, timeout=timeout)


def screenshot(url: str, path: Path, size: tuple[int, int] = (1280, 800), budget_ms: int = BUDGET_MS,
               timeout: float = 60) -> Path:
    """A PNG of the page at ``size`` (width, height) after ``budget_ms`` of page time, written to ``path``."""
    _run(url, f"--screenshot={path}", f"--window-size={size[0]},{size[1]}", "--hide-scrollbars",
         budget_ms=budget_ms, timeout=timeout)
    if not path.is_file():
        raise RuntimeError(f"chromium wrote no screenshot of {url} to {path}")
    return path
