"""The profile hook of :mod:`benchmarks.claim_path`: imported by every Python process started with this folder on
``PYTHONPATH`` (Python imports ``sitecustomize`` at start-up), inert unless ``POOLBOY_CLAIM_PATH_OUT`` is set.

Where a watched point is called for a claim (``POOLBOY_CLAIM_PATH_POINTS``: JSON ``[[function, file], ...]``, files
relative to ``POOLBOY_CLAIM_PATH_ROOT``), it appends the call stack, cut to the project's own files, to
``<out>/<pid>.jsonl``.
"""

import json
import os
import sys
import threading
from types import FrameType

OUT = os.environ.get("POOLBOY_CLAIM_PATH_OUT")
ROOT = os.environ.get("POOLBOY_CLAIM_PATH_ROOT", "")
POINTS = {tuple(point) for point in json.loads(os.environ.get("POOLBOY_CLAIM_PATH_POINTS", "[]"))}
NAMES = {name for name, _ in POINTS}


def _ours(path: str) -> bool:
    return path.startswith(ROOT + "/") and "/.venv/" not in path and "site-packages" not in path


def _for_a_claim(point: str, args: dict) -> bool:
    """The call concerns a claim: its watch event, its task message, or the bind patch of a handle."""
    if point == "submit":
        return (args.get("item") or (None, {}))[1].get("kind") == "ResourceClaim"
    if point == "publish_many":
        return any(str(getattr(p, "key", p)).startswith("claim/") for p in args.get("publishes") or ())
    return args.get("kind") == "ResourceHandle" and any(
        str(op.get("path", "")).startswith("/spec/resourceClaim") for op in args.get("ops") or ())


def _hook(frame: FrameType, event: str, arg: object) -> None:
    code = frame.f_code
    if event != "call" or code.co_name not in NAMES or not _ours(code.co_filename):
        return
    if (code.co_name, os.path.relpath(code.co_filename, ROOT)) not in POINTS:
        return
    try:
        if not _for_a_claim(code.co_name, frame.f_locals):
            return
    except Exception:  # an argument of another shape: not a call this hook records
        return
    stack: list[list[str]] = []
    caller: FrameType | None = frame
    while caller is not None:
        if _ours(caller.f_code.co_filename):
            stack.append([os.path.relpath(caller.f_code.co_filename, ROOT), caller.f_code.co_qualname])
        caller = caller.f_back
    with open(os.path.join(OUT, f"{os.getpid()}.jsonl"), "a") as out:
        out.write(json.dumps({"point": code.co_name, "stack": stack[::-1]}) + "\n")


if OUT:
    sys.setprofile(_hook)
    threading.setprofile(_hook)
