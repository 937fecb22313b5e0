"""The Kubernetes kinds Poolboy defines, named once: code refers to these constants, so a kind is spelled in one
place (the work keys' tokens, :data:`poolboy.keys.KINDS`, map onto them)."""

from __future__ import annotations

RESOURCE_CLAIM = "ResourceClaim"
RESOURCE_HANDLE = "ResourceHandle"
RESOURCE_POOL = "ResourcePool"
RESOURCE_PROVIDER = "ResourceProvider"
RESOURCE_POOL_SCALING = "ResourcePoolScaling"
