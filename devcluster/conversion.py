"""``events.k8s.io/v1`` Event ⇄ core ``v1`` Event: both APIs serve the same stored objects, as in Kubernetes."""

from __future__ import annotations

from typing import Any

# events.k8s.io/v1 field → core v1 field; fields not listed have the same name in both.
RENAMES = {
    "regarding": "involvedObject", "note": "message", "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp", "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count", "reportingController": "reportingComponent",
}
BACK = {core: new for new, core in RENAMES.items()}


def event_to_core(obj: dict[str, Any]) -> dict[str, Any]:
    converted = {RENAMES.get(k, k): v for k, v in obj.items()}
    converted["apiVersion"] = "v1"
    return converted


def event_from_core(obj: dict[str, Any]) -> dict[str, Any]:
    converted = {BACK.get(k, k): v for k, v in obj.items()}
    converted["apiVersion"] = "events.k8s.io/v1"
    return converted
