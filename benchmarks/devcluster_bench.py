"""Benchmark devcluster (issue 2.6): with 10 000 ConfigMaps stored, from one keep-alive client, measure GETs/s,
writes/s, full-list latency and watch-event delivery latency. Prints one JSON document; not a test.

Run: ``.venv/bin/python benchmarks/devcluster_bench.py [--objects 10000]``.
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import socket
import statistics
import sys
import threading
import time
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devcluster.testing import DevCluster

NAMESPACE = "bench"
MERGE = {"Content-Type": "application/merge-patch+json"}


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def load(session: requests.Session, url: str, count: int) -> float:
    """Create ``count`` ConfigMaps; returns creates per second."""
    path = f"{url}/api/v1/namespaces/{NAMESPACE}/configmaps"
    started = time.perf_counter()
    for i in range(count):
        body = {"metadata": {"name": f"cm-{i:05d}", "labels": {"shard": str(i % 10)}}, "data": {"i": str(i)}}
        response = session.post(path, json=body)
        response.raise_for_status()
    return count / (time.perf_counter() - started)


def gets_per_second(session: requests.Session, url: str, count: int, stored: int) -> float:
    started = time.perf_counter()
    for _ in range(count):
        name = f"cm-{random.randrange(stored):05d}"
        session.get(f"{url}/api/v1/namespaces/{NAMESPACE}/configmaps/{name}").raise_for_status()
    return count / (time.perf_counter() - started)


def patches_per_second(session: requests.Session, url: str, count: int, stored: int) -> float:
    started = time.perf_counter()
    for i in range(count):
        name = f"cm-{random.randrange(stored):05d}"
        session.patch(f"{url}/api/v1/namespaces/{NAMESPACE}/configmaps/{name}", headers=MERGE,
                      data=json.dumps({"data": {"round": str(i)}})).raise_for_status()
    return count / (time.perf_counter() - started)


def list_seconds(session: requests.Session, url: str, rounds: int) -> list[float]:
    timings = []
    for _ in range(rounds):
        started = time.perf_counter()
        response = session.get(f"{url}/api/v1/namespaces/{NAMESPACE}/configmaps")
        items = response.json()["items"]
        timings.append(time.perf_counter() - started)
        assert len(items) >= 1
    return timings


class WatchTimer:
    """A watch stream read on its own thread and connection, recording when each MODIFIED event arrives."""

    def __init__(self, url: str, resource_version: str) -> None:
        self.arrivals: dict[str, float] = {}
        self.cond = threading.Condition()
        host, port = url.removeprefix("http://").split(":")
        self.connection = http.client.HTTPConnection(host, int(port), timeout=60)
        self.connection.request("GET", f"/api/v1/namespaces/{NAMESPACE}/configmaps?watch=1&resourceVersion="
                                f"{resource_version}&fieldSelector=metadata.name%3Dcm-00000")
        self.response = self.connection.getresponse()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                line = self.response.readline()
            except (OSError, ValueError, AttributeError, http.client.HTTPException):
                return  # the stream was shut down by close()
            if not line:
                return
            event = json.loads(line)
            round_id = event["object"].get("data", {}).get("watch")
            with self.cond:
                if round_id is not None:
                    self.arrivals[round_id] = time.perf_counter()
                self.cond.notify_all()

    def wait(self, round_id: str, timeout: float = 5.0) -> float:
        with self.cond:
            self.cond.wait_for(lambda: round_id in self.arrivals, timeout)
            return self.arrivals[round_id]

    def close(self) -> None:
        # Shut the socket down first: closing the buffered response would wait for the reader's blocked read.
        if self.connection.sock is not None:
            self.connection.sock.shutdown(socket.SHUT_RDWR)
        self.connection.close()


def watch_latencies(session: requests.Session, url: str, rounds: int) -> dict[str, list[float]]:
    path = f"{url}/api/v1/namespaces/{NAMESPACE}/configmaps/cm-00000"
    # Touch the object first: its creation may be older than the event history (→ 410 Expired, as in Kubernetes).
    touched = session.patch(path, headers=MERGE, data=json.dumps({"data": {"watch": "setup"}}))
    timer = WatchTimer(url, touched.json()["metadata"]["resourceVersion"])
    from_request, from_response = [], []
    try:
        for i in range(rounds):
            round_id = str(i)
            sent = time.perf_counter()
            session.patch(path, headers=MERGE, data=json.dumps({"data": {"watch": round_id}})).raise_for_status()
            answered = time.perf_counter()
            arrived = timer.wait(round_id)
            from_request.append(arrived - sent)
            from_response.append(max(0.0, arrived - answered))
    finally:
        timer.close()
    return {"from_request": from_request, "from_response": from_response}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--objects", type=int, default=10000)
    parser.add_argument("--gets", type=int, default=3000)
    parser.add_argument("--writes", type=int, default=2000)
    args = parser.parse_args()
    with DevCluster() as cluster, requests.Session() as session:
        url = cluster.url
        session.post(f"{url}/api/v1/namespaces", json={"metadata": {"name": NAMESPACE}}).raise_for_status()
        creates = load(session, url, args.objects)
        gets = gets_per_second(session, url, args.gets, args.objects)
        patches = patches_per_second(session, url, args.writes, args.objects)
        lists = list_seconds(session, url, 10)
        watch = watch_latencies(session, url, 300)
    ms = 1000.0
    print(json.dumps({
        "objects": args.objects,
        "creates_per_second": round(creates, 1),
        "gets_per_second": round(gets, 1),
        "patches_per_second": round(patches, 1),
        "full_list_ms": {"median": round(statistics.median(lists) * ms, 2), "max": round(max(lists) * ms, 2)},
        "watch_event_ms_after_write_request_sent": {
            "median": round(statistics.median(watch["from_request"]) * ms, 3),
            "p99": round(percentile(watch["from_request"], 0.99) * ms, 3)},
        "watch_event_ms_after_write_response": {
            "median": round(statistics.median(watch["from_response"]) * ms, 3),
            "p99": round(percentile(watch["from_response"], 0.99) * ms, 3)},
        "targets": {"gets_per_second": 1000, "writes_per_second": 500, "full_list_ms": 200, "watch_event_ms": 5},
    }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
