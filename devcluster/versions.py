"""resourceVersions as devcluster writes and reads them: the store's global integer as its decimal text, or, with
``DEVCLUSTER_OPAQUE_RESOURCE_VERSIONS=1``, as text that is no number at all (``rv-<hex>``), so that a test can show
a client treats resourceVersions as the opaque strings the API contract says they are."""

from __future__ import annotations

import os

OPAQUE = os.environ.get("DEVCLUSTER_OPAQUE_RESOURCE_VERSIONS") == "1"
PREFIX = "rv-"


def text(number: int) -> str:
    """The resourceVersion clients see for the store's ``number``."""
    return f"{PREFIX}{number:x}" if OPAQUE else str(number)


def number(version: str) -> int:
    """The store's number behind a resourceVersion a client sent; ValueError when it is none of ours."""
    if OPAQUE:
        if not version.startswith(PREFIX):
            raise ValueError(version)
        return int(version[len(PREFIX):], 16)
    return int(version)
