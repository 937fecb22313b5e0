"""Intakes that record the keys a watcher hands over (the tests' :class:`watcher.delivery.Intake`), and a watcher
process that records them to a file: ``python -m tests.integration.watcher_keys FILE --kubeconfig K --identity I``.

:class:`KeyRecorder` records every key of every event delivered, whatever the work queue would make of it, so a test can
count the events that woke a key; given the real intake (:func:`event_intake`), it passes the events on, and records
them once that delivery succeeded.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import redis
from celery import Celery

from cache.writer import CacheWriter
from engine.enqueue import EventIntake
from engine.own_writes import OwnWrites
from poolboy import logs
from poolboy.kube import KubeClient
from poolboy.settings import Settings
from tests.waiting import wait_for
from watcher.delivery import Event, Intake
from watcher.main import Watcher
from workers.messages import enqueuer


class KeyRecorder:
    """A thread-safe intake recording the keys of what it is given; ``inner`` (if any) delivers it first."""

    def __init__(self, inner: Intake | None = None) -> None:
        self.inner = inner
        self.keys: list[str] = []
        self._lock = threading.Lock()

    def deliver_many(self, events: Sequence[Event]) -> list[list[str]]:
        outcomes = (self.inner.deliver_many(events) if self.inner is not None
                    else [["published"] * len(wakes) for _, _, wakes in events])
        self.record([key for _, _, wakes in events for key, _ in wakes])
        return outcomes

    def record(self, keys: list[str]) -> None:
        with self._lock:
            self.keys += keys

    def count(self, key: str) -> int:
        with self._lock:
            return self.keys.count(key)

    def wait(self, key: str, at_least: int = 1, timeout: float = 60) -> None:
        """Until ``key`` was delivered ``at_least`` times; the deadline allows a watcher's first list of a devcluster
        that every test of the session has filled, on two loaded cores."""
        wait_for(lambda: self.count(key) >= at_least, timeout=timeout,
                 message=f"{key} recorded {at_least} time(s); have {self.count(key)}")


class KeyFile(KeyRecorder):
    """Appends the keys to a file, one a line, for a test to read from another process."""

    def __init__(self, path: str | Path) -> None:
        super().__init__()
        self._file = open(path, "a", buffering=1)  # noqa: SIM115 - open for the life of the process

    def record(self, keys: list[str]) -> None:
        with self._lock:
            self._file.write("".join(f"{key}\n" for key in keys))
            self._file.flush()


def event_intake(redis_url: str, client: redis.Redis, cache: CacheWriter | None = None) -> EventIntake:
    """``poolboy watcher``'s intake on ``client``, a client of ``redis_url`` (the broker whose message format the
    queue's scripts push the messages they decide are owed in)."""
    app = Celery("test-watcher", broker=redis_url, set_as_current=False)
    publishing = enqueuer(app, Settings.from_env(), client)
    return EventIntake(publishing, OwnWrites(publishing.queue), cache)


def main(argv: list[str] | None = None) -> int:
    """A watcher (leader election on, no read cache) recording its keys to a file until SIGTERM."""
    parser = argparse.ArgumentParser(prog="python -m tests.integration.watcher_keys")
    parser.add_argument("keys_file")
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--identity", required=True)
    parser.add_argument("--watch-timeout", type=int, default=2)
    args = parser.parse_args(argv)
    logs.configure("INFO", "text")
    settings = Settings.from_env()
    watcher = Watcher(settings, KubeClient.from_settings(settings, kubeconfig=args.kubeconfig), KeyFile(args.keys_file),
                      identity=args.identity, watch_timeout=args.watch_timeout)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: watcher.stop())
    watcher.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
