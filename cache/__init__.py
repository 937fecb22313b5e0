"""The shared read cache, in one place (controller-runtime's informer cache, kept in Redis for every process).

* :mod:`cache.model` — pure, no Redis: what is stored, which indexes an object belongs to, how a list is answered;
* :mod:`cache.store` — :class:`~cache.store.ObjectCache`, the Redis layout: objects, indexes, tombstones, the
  ``alive``/``synced`` marks a read checks (:func:`~cache.store.read_if_synced`);
* :mod:`cache.writer` — the active watcher's side: fills the store from lists and watch events, detects a Redis
  that lost its data;
* :mod:`cache.reader` — the workers' side: :class:`~cache.reader.CachedKubeClient`, a
  :class:`poolboy.kube.interfaces.Client` answering reads from the store (a list by label selector, or by one of
  the domain's indexes: :class:`poolboy.kube.interfaces.IndexMatch`), writes through to the API;
* :mod:`cache.journal` — :class:`~cache.journal.RunJournal`, what one run got and wrote through that client, read by
  the engine when the run ends;
* :mod:`cache.handle_index` — what the unbound-handle index answers besides objects: its summaries (ranked without
  reading each handle), reservations, the waiting claims' queues (warm binding).

Both the watcher and the workers import this package; it imports neither. Its Lua scripts are files of
``redisscripts/cache/``, its Redis keys are named in :mod:`workqueue.keyspace`.
"""
