"""A work queue on Redis with client-go's contract: add, start (get), done, add after, forget; one run per key at a
time; adds before a run coalesce into it. :mod:`workqueue.queue` is the queue, :mod:`workqueue.delaying` its delays,
:mod:`workqueue.ratelimit` its per-key backoff, :mod:`workqueue.lease` a run's lease, :mod:`workqueue.roundtrip`
the way several steps go to Redis at once, :mod:`workqueue.keyspace` every Redis key the operator writes,
:mod:`workqueue.clock` the time they all read (given to them, so that a test moves it on).

It knows nothing of Celery, Kubernetes or caches: the reconcile engine (:mod:`engine`) builds on it.
"""
